// The sandbox's process side of the launch sequence: clone into new namespaces (parent), then
// in sandbox init build the root, and in the command apply the process layers in order and
// execve. The supervisor (src/supervisor) drives this and serves what init hands back.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"
#include "enforce/child_error.h"
#include "enforce/control.h"
#include "enforce/spec.h"

namespace ward::enforce {

// Remembers where the process's argv and environment strings live, so that sandbox init (a
// clone of the supervisor, sharing none of its memory afterwards) can wipe them: nothing of the
// caller's command line or environment may be readable through /proc/1/cmdline or environ.
void RememberProcessArgs(int argc, char** argv);
// Wipes them in this process and renames it (helpers forked from the supervisor, whose command
// line would otherwise repeat the caller's).
void HideProcessArgs(const char* name);

class Cgroup;

struct Sandbox {
  pid_t pid = -1;  // sandbox init, as seen from the supervisor
  UniqueFd pidfd;
  UniqueFd control;
  // An eventfd written after each message init waits for during its setup (go, the late setup,
  // the seccomp program). Init sleeps on it, not on the control socket: a unix socket's wakeup
  // is a "sync" one, which moves the sleeper onto the sender's CPU in the expectation that the
  // sender is about to sleep, and the supervisor is not (it goes on to compile the filter and
  // open the audit trail): init would wait for the supervisor's CPU while another sat idle.
  UniqueFd kick;
  // Listening sockets inside the sandbox's network namespace, for the supervisor to serve (the
  // proxy and the DNS stub; see StartSandboxNet).
  std::vector<std::pair<FdKind, UniqueFd>> egress_sockets;
};

// Clones sandbox init into new user, mount, pid, ipc, uts and cgroup namespaces, writes its id
// maps and tells it to proceed. With a cgroup (v2 only), init is in it before it may proceed
// (cloned into it, or moved on kernels before 5.7); a v1 cgroup is joined later (SendCgroupJoin).
// The caller must be single-threaded.
Result<Sandbox> StartSandbox(const LaunchPlan& plan, Cgroup* cgroup = nullptr);

// The sandbox's network namespace, owned by init's user namespace, made from here while init
// builds the root (see CreateSandboxNet), and sent to init, which joins it before its sysctls
// and the command. Its listening sockets go to sb->egress_sockets. After StartSandbox and the
// late setup, before the seccomp program; the caller must be single-threaded.
Status StartSandboxNet(Sandbox* sb, const LaunchPlan& plan);

// A plan planned with PlanInput::compile_seccomp = false starts without its filter: init builds
// the root meanwhile and waits, before it forks the command, for the program sent here (the
// supervisor compiles it in parallel, off the start-up's critical path). Call once, right after
// StartSandbox; on an error the caller kills the sandbox.
Status SendSeccompProgram(const Sandbox& sb, const SeccompProgram& program);

// For a plan with cgroup_after_clone: the run's v1 "tasks" files, which init writes itself into
// after it joined the network namespace and before it takes the seccomp program (a thread that
// moves itself skips the global lock that moving a process by pid takes; see
// Cgroup::self_join_fds). After StartSandboxNet, before SendSeccompProgram; on an error the
// caller kills the sandbox.
Status SendCgroupJoin(const Sandbox& sb, const std::vector<int>& tasks_fds);

// For a plan with await_late_setup: the command's final environment and the content of the
// plan's late_file_op, which init waits for before it builds the root. Call once, right after
// StartSandbox and before SendSeccompProgram; on an error the caller kills the sandbox.
Status SendLateSetup(const Sandbox& sb, const std::vector<std::string>& env,
                     const std::string& file_content);

// Human text for a setup failure: "mount: attaching /usr: Permission denied".
std::string DescribeChildError(const ChildError& e);

}  // namespace ward::enforce
