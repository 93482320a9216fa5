#include "oci/exec.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "common/descriptors.h"
#include "common/unique_fd.h"
#include "common/unix_socket.h"
#include "enforce/exec_wire.h"
#include "enforce/launcher.h"
#include "oci/lifecycle.h"
#include "oci/state.h"

namespace ward::oci {
namespace {

using enforce::ExecMsg;
using enforce::ExecMsgType;

// What the engine may send the process it holds for an exec; each goes on to the exec.
constexpr int kForwardedSignals[] = {SIGHUP,  SIGINT,   SIGQUIT, SIGTERM, SIGUSR1,
                                     SIGUSR2, SIGWINCH, SIGALRM, SIGCONT};

Status CheckExec(const ExecOptions& o) {
  WARD_TRY(CheckContainerId(o.id));
  if (o.process.terminal && o.console_socket.empty()) {
    return InvalidArgument("process.terminal: a terminal needs --console-socket, where its master "
                           "goes");
  }
  if (!o.process.terminal && !o.console_socket.empty()) {
    return InvalidArgument("--console-socket " + o.console_socket +
                           ": the exec asks for no terminal (-t)");
  }
  WARD_TRY(CheckProcessUser(o.process, "process.user"));
  WARD_ASSIGN_OR_RETURN(ContainerState s, LoadState(o.root, o.id));
  const std::string status = ContainerStatus(s);
  if (status != "running") {
    return InvalidArgument("container " + o.id + " is " + status + ", not running: there is " +
                           (status == "created" ? "no exec before its start" : "nothing to exec in"));
  }
  return Ok();
}

// Why the exec did not start, as the exec server or the supervisor said it. A program that is
// not there reads "No such file or directory", which the engines map to 127.
Status Refused(const ExecMsg& m) {
  const std::string message =
      std::strcmp(m.error.stage, "exec") == 0
          ? "cannot run '" + std::string(m.error.detail) + "': " + std::strerror(m.error.err)
          : enforce::DescribeChildError(m.error);
  return Error(Code::kFailedPrecondition, "exec: " + message);
}

// The exec's terminal to the engine's console socket, as runc hands it over. It came from inside
// the container: only a pty's master goes on.
Status HandOverTerminal(int master, const std::string& console_socket) {
  if (!IsPtyMaster(master)) {
    return Error(Code::kInternal, "exec: the container sent no terminal's master for the exec");
  }
  WARD_ASSIGN_OR_RETURN(UniqueFd conn, ConnectUnix(console_socket));
  const char name[] = "ward-exec-pty";
  if (SendWithFds(conn.get(), name, sizeof name - 1, &master, 1) < 0) {
    return Errno("handing the exec's terminal to --console-socket " + console_socket);
  }
  return Ok();
}

// Asks the container's supervisor for the exec, with this process's stdin, stdout and stderr;
// the connection once the exec runs.
Result<UniqueFd> Ask(const ExecOptions& o) {
  WARD_ASSIGN_OR_RETURN(UniqueFd conn,
                        ConnectUnix(StateDir(o.root, o.id) + "/" + kExecSocket, SOCK_SEQPACKET));
  enforce::ExecRequest req;
  req.argv = o.process.args;
  req.env = o.process.env;
  req.cwd = o.process.cwd;
  req.tty = o.process.terminal;
  const std::string encoded = enforce::EncodeExecRequest(req);
  WARD_ASSIGN_OR_RETURN(UniqueFd memfd, enforce::ExecRequestMemfd(encoded));
  ExecMsg m;
  m.type = ExecMsgType::kStart;
  m.length = static_cast<uint32_t>(encoded.size());
  // With a terminal the exec's stdio is its slave: the engine's own stay out of the container.
  UniqueFd null(req.tty ? open("/dev/null", O_RDWR | O_CLOEXEC) : -1);
  if (req.tty && !null) return Errno("/dev/null");
  const int in = req.tty ? null.get() : 0, out = req.tty ? null.get() : 1,
            err = req.tty ? null.get() : 2;
  const int fds[4] = {memfd.get(), in, out, err};
  if (int rc = enforce::SendExecMsg(conn.get(), m, fds, 4); rc != 0) {
    return ErrnoError("asking container " + o.id + " for the exec", -rc);
  }
  UniqueFd back[4];
  const int r = enforce::RecvExecMsg(conn.get(), &m, back);
  if (r == 1 && m.type == ExecMsgType::kStarted) {
    if (req.tty) WARD_TRY(HandOverTerminal(back[0].get(), o.console_socket));
    return conn;
  }
  if (r == 1 && m.type == ExecMsgType::kFailed) return Refused(m);
  return Error(Code::kUnavailable, "container " + o.id + ": its supervisor ended before the exec started");
}

// The process the engine holds for its exec: passes on the signals it gets, and returns the
// exec's wait status (SIGKILL's when the container ended under it). `why` receives the reason
// when the exec's end is not known (its exec server ended).
int Follow(int conn, std::string* why) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : kForwardedSignals) sigaddset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  UniqueFd sfd(signalfd(-1, &mask, SFD_CLOEXEC));
  struct pollfd p[2] = {{conn, POLLIN, 0}, {sfd.get(), POLLIN, 0}};
  while (true) {
    if (poll(p, sfd ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return SIGKILL;
    }
    struct signalfd_siginfo si;
    if ((p[1].revents & POLLIN) && read(sfd.get(), &si, sizeof si) == sizeof si) {
      ExecMsg sig;
      sig.type = ExecMsgType::kSignal;
      sig.value = static_cast<int32_t>(si.ssi_signo);
      enforce::SendExecMsg(conn, sig);
    }
    if (p[0].revents == 0) continue;
    ExecMsg m;
    UniqueFd fds[4];
    const int r = enforce::RecvExecMsg(conn, &m, fds);
    if (r == 1 && m.type == ExecMsgType::kExited) return m.value;
    if (r == 1 && m.type == ExecMsgType::kFailed) {
      *why = Refused(m).message();
      return (m.value & 0xff) << 8;
    }
    if (r != 1 && r != -EPROTO) return SIGKILL;
  }
}

}  // namespace

Result<int> Exec(const ExecOptions& o) {
  WARD_TRY(CheckExec(o));
  WARD_ASSIGN_OR_RETURN(UniqueFd conn, Ask(o));
  if (!o.detach) {
    WARD_TRY(WritePidFile(o.pid_file, getpid()));
    std::string why;
    const int status = Follow(conn.get(), &why);
    if (!why.empty()) return Error(Code::kUnavailable, why);
    return status;
  }
  // Blocked before the fork: the engine may signal the pid it reads from the pid file before
  // the child has come to Follow, and the signal must wait for it there, not kill it.
  sigset_t forwarded, before;
  sigemptyset(&forwarded);
  for (int s : kForwardedSignals) sigaddset(&forwarded, s);
  sigprocmask(SIG_BLOCK, &forwarded, &before);
  const pid_t child = fork();
  if (child != 0) sigprocmask(SIG_SETMASK, &before, nullptr);
  if (child < 0) return Errno("fork");
  if (child == 0) {
    // The engine reads the exec's output until its last writer closes: the exec, not this process.
    StdioToDevNull();
    std::string why;  // no one to tell: the engine reads the status
    ExitAs(Follow(conn.get(), &why));
  }
  // The engine's subreaper adopts the child when this process exits, and waits for it.
  if (Status written = WritePidFile(o.pid_file, child); !written.ok()) {
    kill(child, SIGKILL);  // the exec ends with it
    return written;
  }
  return 0;
}

void ExitAs(int wait_status) {
  if (!WIFSIGNALED(wait_status)) _exit(WEXITSTATUS(wait_status));
  const int sig = WTERMSIG(wait_status);
  const struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(sig, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  sigprocmask(SIG_UNBLOCK, &only, nullptr);
  raise(sig);
  _exit(128 + sig);
}

}  // namespace ward::oci
