// Starting a process inside the sandbox the way posix_spawn does: its execve arguments prepared
// before, so that the child allocates nothing, and the child on a stack of its own sharing the
// parent's memory until it execs. Used by init for the command and by the exec server for each
// exec.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "enforce/spec.h"

namespace ward::enforce {

// The command's execve arguments and PATH candidates, built by init before it forks the
// command, so that the command's process allocates nothing: once its rlimits are set it cannot
// count on the allocator. RLIMIT_DATA counts every private writable mapping the process
// inherited (all of init's, a copy of the supervisor's), so a limit below that total makes any
// new heap mapping fail; under ASan, whose shadow is terabytes of such mappings, every time.
struct ExecArgs {
  std::vector<char*> argv, envp;   // null-terminated; point into the plan and `env`
  std::vector<std::string> paths;  // where to execve, in order
  bool searched = false;           // the paths come from a PATH search
};

// `argv` (not empty) and `env` must outlive the result, which points into them.
ExecArgs PrepareExec(const std::vector<std::string>& argv, const std::vector<std::string>& env);

// execve with the PATH search done in the caller's view, with a shell's exit-status
// conventions: returns the errno to report (ENOENT: exit 127; else 126). No allocation.
int ExecCommand(const ExecArgs& a);

// Every fd >= 3 close-on-exec (CLOSE_RANGE_CLOEXEC, or each one where the kernel lacks it).
bool CloseOnExecFrom3();

// For errors: the name of a resource the policy limits (static text, nothing allocated).
const char* RlimitName(int resource);

// RLIMIT_CORE 0 and the policy's limits; on failure returns the failing resource's name (else
// nullptr) with errno set. No allocation.
const char* ApplyRlimits(const std::vector<ProcessSpec::Rlimit>& rlimits);

// Runs fn(arg) in a child that shares the caller's memory on a stack of its own until it execs
// or exits (CLONE_VM | CLONE_VFORK); the caller sleeps meanwhile. `fn` may change only what
// belongs to its own process (fds, signal dispositions, rlimits, credentials, Landlock, seccomp)
// and must not allocate. Under AddressSanitizer or ThreadSanitizer, which keep per-thread state
// the child would share, it forks. Returns the child's pid or -1.
pid_t SpawnOnOwnStack(int (*fn)(void*), void* arg);

}  // namespace ward::enforce
