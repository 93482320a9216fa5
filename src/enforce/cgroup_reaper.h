// The cgroup reaper: a small process that removes a run's cgroup when the supervisor dies
// without doing so itself (SIGKILL, a crash), and holds one descriptor until it exits.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ward::enforce {

// A run has one cgroup directory per controller hierarchy it uses (v1: memory, pids, cpu, and
// for a container named by its engine cpuacct and blkio).
inline constexpr int kMaxCgroupDirs = 8;

struct CgroupReaperSpec {
  int version = 0;  // 1 or 2
  // The run's directories, removed last first; at most kMaxCgroupDirs.
  std::vector<std::string> dirs;
  int done_fd = -1;  // read end of the supervisor's pipe: 'd' = torn down, EOF = on its own
  int supervisor_pidfd = -1;  // readable once the supervisor has exited; -1 for none
  int keep_fd = -1;           // held until the reaper exits; -1 for none
  int timeout_ms = 0;         // how long it keeps killing and removing
};

// Starts the reaper; its pid, or -1 with errno set. It shares this process's memory rather than
// copying it (a fork of the supervisor cost a root run some 16% of its start-up here: the page
// tables' copy, the copy-on-write faults of the supervisor's later writes, and the copy's
// teardown): a clone with CLONE_VM on a stack of its own, with everything it needs copied
// beside that stack beforehand, and only raw system calls afterwards (it shares this thread's
// TLS, errno included, so it calls nothing that writes it). It is its own process all the same:
// its own descriptors, its own session, every signal blocked, and it outlives this one (the
// shared memory stays mapped while it runs). Under AddressSanitizer, and off x86-64, it is a
// fork running the same code.
pid_t SpawnCgroupReaper(const CgroupReaperSpec& spec);

// SIGKILL to everything in one of a run's cgroup directories: cgroup.kill (v2, Linux 5.14)
// kills the subtree at once, processes forking included; otherwise each pid of cgroup.procs.
void KillCgroupDir(int version, const char* dir);

// Kills and removes `n` (at most kMaxCgroupDirs) directories, the last first, until all are gone or
// `timeout_ms` has passed; true when all are gone. The supervisor's teardown and the reaper's
// are this one function: it makes only raw system calls, as the reaper must.
bool TeardownCgroupDirs(int version, const char* const* dirs, int n, int timeout_ms);

// Hands over a reaper that was told to exit, or left to carry on alone: it is reaped, and its
// stack and arguments unmapped, by a later ReapRetiredCgroupReapers once it has exited.
void RetireCgroupReaper(pid_t pid);

// Reaps, without blocking, the retired reapers that have exited, and frees their memory.
void ReapRetiredCgroupReapers();

}  // namespace ward::enforce
