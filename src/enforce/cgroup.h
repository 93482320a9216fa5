// The per-run cgroup (supervisor side): created before the sandbox starts and joined at the
// clone on v2 (clone3 CLONE_INTO_CGROUP); created while sandbox init builds the root and
// joined by init before it may fork on v1 (a write to each "tasks" file, SendCgroupJoin),
// read for usage and OOM kills at the end, and torn down (everything killed, directories
// removed) also after errors and when the supervisor itself is killed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"
#include "enforce/spec.h"

namespace ward::enforce {

struct CgroupUsage {
  std::optional<uint64_t> memory_peak_bytes;
  uint64_t oom_kills = 0;     // processes the kernel's OOM killer ended inside
  uint64_t pids_refused = 0;  // forks refused at pids.max
  std::optional<uint64_t> cpu_usage_usec;
  uint64_t cpu_throttled_periods = 0;
};

class Cgroup {
 public:
  // Creates the run's cgroup(s) (named "ward-<supervisor pid>-<random>") and writes the limits.
  // Removes stale empty cgroups of dead supervisors first.
  static Result<std::unique_ptr<Cgroup>> Create(const CgroupSpec& spec);
  ~Cgroup();
  Cgroup(const Cgroup&) = delete;
  Cgroup& operator=(const Cgroup&) = delete;

  int version() const { return version_; }
  // v2: a directory fd for clone3(CLONE_INTO_CGROUP); -1 on v1.
  int clone_fd() const { return clone_fd_.get(); }
  // v1: the run's "tasks" files, opened by the supervisor. Sandbox init writes "0" to each before
  // it may fork the command: a thread moving itself skips the global lock (and RCU grace period)
  // that moving a process by pid takes.
  std::vector<int> self_join_fds() const;
  void CloseSelfJoinFds() { join_fds_.clear(); }
  // Moves a process into every directory of the run (v2 without CLONE_INTO_CGROUP).
  Status Attach(pid_t pid);
  // SIGKILL to everything inside (cgroup.kill where the kernel has it).
  void KillAll();
  CgroupUsage ReadUsage() const;
  // Kills what is left, waits until it is gone and removes the directories. Idempotent. With
  // `last_pidfd` (the pidfd of the process expected to leave last, sandbox init), waits for
  // its exit first rather than polling the directories.
  Status Destroy(int last_pidfd = -1);
  // The directories of the run, for messages.
  std::vector<std::string> paths() const { return paths_; }
  // Starts a small reaper process that tears the cgroup down if this process dies without doing
  // so (cgroup_reaper.h: it shares this process's memory instead of copying it). The supervisor
  // calls it right after the clone, while sandbox init builds the root.
  // Destroy tells it to exit and does not wait for that; it is reaped by a later Destroy or
  // StartReaper (WNOHANG), or by whoever inherits it when this process exits.
  // `keep_fd`, when valid, is held by the reaper until it exits: for the sandbox's mount
  // namespace, whose teardown then happens in the reaper's exit, after the run, instead of in
  // sandbox init's, which Destroy waits for before removing the cgroup.
  void StartReaper(int keep_fd = -1);
  // The running reaper's pid; -1 before StartReaper and after Destroy.
  pid_t reaper_pid() const { return reaper_; }

 private:
  Cgroup() = default;
  Status Init(const CgroupSpec& spec);
  Status MakeDir(const std::string& parent, const std::string& name);
  Status MakeV1Dir(const std::string& parent, const std::string& name);
  Status MakeFixedLeaf(const std::string& root, const std::string& leaf);
  Status EnableV2ControllersAbove(const CgroupSpec& spec);
  Status EnableV2Controllers(const CgroupSpec& spec);
  Status MakeSharedV2Parent(const CgroupSpec& spec);

  int version_ = 0;
  bool fixed_ = false;  // the leaf is the engine's path (CgroupSpec::fixed_leaf)
  std::vector<UniqueFd> leaf_locks_;  // the engine's leaves, locked (MakeFixedLeaf)
  std::vector<std::string> paths_;  // created directories, absolute
  std::string memory_dir_, pids_dir_, cpu_dir_;
  UniqueFd clone_fd_;
  std::vector<UniqueFd> join_fds_;
  pid_t reaper_ = -1;
  UniqueFd reaper_pipe_;  // write end; "done" or EOF
  bool destroyed_ = false;
};

}  // namespace ward::enforce
