// The sandbox's process side of the launch sequence: clone into new namespaces (parent), then
// in sandbox init build the root, and in the command apply the process layers in order and
// execve. The supervisor (src/supervisor) drives this and serves what init hands back.
#pragma once

#include <signal.h>
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
  // Readable once init has exited: its pidfd, or, where the kernel has none (gVisor, Linux <
  // 5.3), the read end of a pipe whose write end only init holds (close-on-exec, so the command
  // drops it; init kills everything inside before it exits).
  UniqueFd pidfd;
  bool has_pidfd = true;  // `pidfd` is a pidfd (else signal and reap by pid: SignalInit)
  bool user_ns = true;    // init has a user namespace of its own (LaunchPlan::user_ns)
  UniqueFd control;
  // An eventfd written after each message init waits for during its setup (go, the late setup,
  // the seccomp program). Init sleeps on it, not on the control socket: a unix socket's wakeup
  // is a "sync" one, which moves the sleeper onto the sender's CPU in the expectation that the
  // sender is about to sleep, and the supervisor is not (it goes on to compile the filter and
  // open the audit trail): init would wait for the supervisor's CPU while another sat idle.
  UniqueFd kick;
  // The ids init's user namespace maps, and whether init was born in the run's cgroup
  // (CLONE_INTO_CGROUP) or is still to be moved into it (see StartSandbox).
  uid_t uid = 0;
  gid_t gid = 0;
  bool privileged = false;
  bool in_cgroup = false;
  bool maps_pending = false;  // init maps its own ids (unprivileged) and has not said so yet
  // Listening sockets inside the sandbox's network namespace, for the supervisor to serve (the
  // proxy and the DNS stub; see StartSandboxNet).
  std::vector<std::pair<FdKind, UniqueFd>> egress_sockets;
  // The sandbox's network namespace, for connections into it (a container's exposed ports).
  UniqueFd netns;
  // The namespace's IP counters, for CountUnroutedSends after the run (see SandboxNet).
  UniqueFd net_snmp, net_snmp6;
  // Transparent capture (SandboxNet): why it is off although planned (""), and whether it
  // covers IPv6.
  std::string capture_error;
  bool capture_v6 = false;
};

// `ward run` clones sandbox init first thing, before its command line is parsed: the clone of a
// process that has done nothing yet is cheap, and init's first wakeup, which on a busy machine
// can take a millisecond, passes while the supervisor parses, loads the policy and plans.
// StartSandbox takes it. Best effort: when the clone fails here, StartSandbox clones again and
// reports the failure. Not done as root on a cgroup2-only host (see DiscardPreclonedInit).
// Call while single-threaded.
void PrecloneSandboxInit();
// Kills and reaps a pre-cloned init that no run took (a usage error, a refused run), and before
// a v2 cgroup is made: init is then cloned into it, and a process left in the supervisor's
// cgroup could keep the supervisor from making that cgroup a parent (v2 allows no processes in a
// cgroup whose controllers are enabled for its children).
void DiscardPreclonedInit();

// Starts sandbox init in new user, mount, pid, ipc, uts and cgroup namespaces, the caller's ids
// mapped to themselves (as root with setgroups allowed, so that init drops the supplementary
// groups; otherwise init writes its own maps, setgroups denied), and sends it the plan. Takes
// the pre-cloned init when its ids are the plan's and no v2 cgroup is given; otherwise clones
// one, into the v2 cgroup where the kernel can (5.7; else it is moved there and enters a cgroup
// namespace rooted there). A v1 cgroup is joined later (SendCgroupJoin). Unless init was
// pre-cloned, the caller must be single-threaded.
Result<Sandbox> StartSandbox(const LaunchPlan& plan, Cgroup* cgroup = nullptr);

// The sandbox's network namespace, owned by init's user namespace, made from here while init
// builds the root (see CreateSandboxNet), and sent to init, which joins it before its sysctls
// and the command. Its listening sockets go to sb->egress_sockets. After StartSandbox and the
// late setup, before the seccomp program; the caller must be single-threaded.
Status StartSandboxNet(Sandbox* sb, const LaunchPlan& plan);

// A plan planned with PlanInput::prepare_seccomp = false starts without its filter: init builds
// the root meanwhile and waits, before it forks the command, for the program sent here (the
// supervisor sends it once it has opened the audit trail, made the network namespace and, on
// cgroup v1, the cgroups). Call once, after StartSandbox; on an error the caller kills the
// sandbox.
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

// Sends init `sig`: through its pidfd, or by pid where there is none (init is the caller's child
// and is reaped only by the caller, so its pid cannot name another process meanwhile).
void SignalInit(const Sandbox& sb, int sig);
// Reaps init once it has exited (waitid with WEXITED, by pidfd or pid).
void ReapInit(const Sandbox& sb, siginfo_t* si);

// `failed` (a send to init, or init's end during its setup), or init's own report of why when it
// sent one before it exited: that says more than the broken pipe does.
Status InitsOwnError(const Sandbox& sb, Status failed);

// Human text for a setup failure: "mount: attaching /usr: Permission denied".
std::string DescribeChildError(const ChildError& e);

}  // namespace ward::enforce
