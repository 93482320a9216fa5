// The control channel between the supervisor and sandbox init (and the command, before it
// execs): a SOCK_SEQPACKET socketpair carrying fixed-size messages, some with one fd attached.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>

#include "common/unique_fd.h"
#include "enforce/child_error.h"
#include "enforce/mount.h"

namespace ward::enforce {

enum class MsgType : uint32_t {
  kGo = 1,      // supervisor -> init: id maps are written, proceed
  kSetupError,  // init/command -> supervisor: {stage, errno, detail}; exit 125 follows
  kFd,          // init/command -> supervisor: an fd (see FdKind)
  kMounted,     // init -> supervisor: the root is built (with MountReport), and an O_PATH
                // descriptor of it: the creation guard resolves the sandbox's paths there
  kStarted,     // init -> supervisor: the command's execve succeeded (pid inside)
  kExecFailed,  // init -> supervisor: the command could not be executed (errno, path)
  kExited,      // init -> supervisor: the command ended (wait status) and every other
                // process inside is killed and reaped; init exits next
  kTerminate,   // supervisor -> init: the deadline passed; SIGTERM to everything inside
  kSeccomp,     // supervisor -> init: `value` instructions follow in the next packet (the
                // filter sent while init built the root; see SendSeccompProgram)
  kLateSetup,   // supervisor -> init: a memfd of `value` bytes with the command's environment
                // and a file's content (see SendLateSetup)
  kNetns,       // supervisor -> init: the sandbox's network namespace (see StartSandboxNet)
  kCgroupJoin,  // supervisor -> init: a v1 "tasks" file of the run's cgroup to write "0" to;
                // `value` more follow (see SendCgroupJoin)
  kMapped,      // init -> supervisor: init wrote its own id maps (unprivileged; see
                // CloneSandboxInit)
  kGuardAgent,  // supervisor -> init: the agent's end of the creation guard's socketpair; init
                // forks the guard agent on it (guard_agent.h)
};

enum class FdKind : uint32_t {
  kNone = 0,
  kPtyMaster = 1,
  kNotifyListener = 2,  // seccomp user-notification listener of the command's filter
  kDetachedMount = 3,   // a detached mount of init's (a cover's template) for the supervisor to
                        // close: the last close waits for an RCU grace period, which the
                        // supervisor, idle while the command starts, waits out instead of init
  kExecServer = 4,      // a live sandbox's exec channel (exec_wire.h), the supervisor's end
  kNetFirst = 16,       // sockets created inside the netns for the supervisor to serve:
  kNetProxy = 16,       //   the proxy's listening TCP socket
  kNetDnsUdp = 17,      //   the DNS stub's UDP socket
  kNetDnsTcp = 18,      //   the DNS stub's listening TCP socket
  kNetCapture = 19,     //   transparent capture's listening TCP socket (IPv4 or IPv6)
};

struct ControlMsg {
  MsgType type = MsgType::kGo;
  FdKind fd_kind = FdKind::kNone;
  int32_t value = 0;         // wait status, errno, pid ...
  struct rusage usage = {};  // kExited: what every process inside used (init's children)
  ChildError error;
  MountReport report;
};

// Async-signal-safe (used after fork). Returns 0 or -errno.
int SendControl(int sock, const ControlMsg& msg, int fd = -1);
// Blocks for one message; *fd receives an attached fd (or -1). Returns 1, 0 on EOF, or -errno.
int RecvControl(int sock, ControlMsg* msg, UniqueFd* fd, int flags = 0);

}  // namespace ward::enforce
