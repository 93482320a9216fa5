#include "enforce/exec_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <map>

#include "common/descriptors.h"
#include "common/linux.h"
#include "enforce/spawn.h"

namespace ward::enforce {
namespace {

// What one exec's process starts with (ExecChildEntry).
struct ExecChildStart {
  const LaunchPlan* plan;
  const ExecRequest* req;
  const ExecArgs* args;
  int stdio[3];
  bool tty;        // stdio is a terminal's slave: it becomes the session's controlling terminal
  int error_pipe;  // a ChildError is written here when the exec does not happen
};

[[noreturn]] void ExecChildReport(const ExecChildStart& s, const ChildError& err, int code) {
  ssize_t n = write(s.error_pipe, &err, sizeof err);
  (void)n;
  _exit(code);
}

[[noreturn]] void ExecChildFail(const ExecChildStart& s, const char* stage, int e,
                                const char* detail = "") {
  ChildError err;
  err.Set(stage, e, detail);
  ExecChildReport(s, err, 125);
}

// The exec's process: the server's layers are inherited; its own session, stdio, working
// directory, limits and narrowing are set here, then it execs. Allocates nothing.
int ExecChildEntry(void* arg) {
  const ExecChildStart& s = *static_cast<const ExecChildStart*>(arg);
  sigset_t none;
  sigemptyset(&none);
  signal(SIGPIPE, SIG_DFL);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (setsid() < 0) ExecChildFail(s, "setsid", errno);
  for (int fd = 0; fd < 3; ++fd) {
    if (s.stdio[fd] >= 0 && dup2(s.stdio[fd], fd) < 0) ExecChildFail(s, "stdio", errno);
  }
  if (s.tty && ioctl(0, TIOCSCTTY, 0) != 0) ExecChildFail(s, "pty", errno, "TIOCSCTTY");
  const std::string& cwd = s.req->cwd.empty() ? s.plan->process.workdir : s.req->cwd;
  if (chdir(cwd.c_str()) != 0) ExecChildFail(s, "chdir", errno, cwd.c_str());
  if (const char* limit = ApplyRlimits(s.plan->process.rlimits)) {
    ExecChildFail(s, "rlimit", errno, limit);
  }
  if (!CloseOnExecFrom3()) ExecChildFail(s, "close_range", errno);
  const int e = ExecCommand(*s.args);
  ChildError err;
  err.Set("exec", e, s.req->argv[0].c_str());
  ExecChildReport(s, err, e == ENOENT ? 127 : 126);
}

// A terminal from the sandbox's own devpts, for an exec that asks for one.
Status OpenTerminal(UniqueFd* master, UniqueFd* slave) {
  master->reset(posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!*master || unlockpt(master->get()) != 0) return Errno("/dev/ptmx");
  // The slave by its master, not by a path through the container's /dev.
  slave->reset(ioctl(master->get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!*slave) return Errno("TIOCGPTPEER");
  return Ok();
}

class ExecServer {
 public:
  ExecServer(const LaunchPlan& plan, const std::vector<std::string>& env, int sock)
      : plan_(plan), env_(env), sock_(sock) {}

  [[noreturn]] void Serve(int sfd) {
    struct pollfd pfds[2] = {{sock_, POLLIN, 0}, {sfd, POLLIN, 0}};
    while (true) {
      if (poll(pfds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        _exit(125);
      }
      if (pfds[1].revents & POLLIN) Reap(sfd);
      if ((pfds[0].revents & (POLLIN | POLLHUP | POLLERR)) && !OnRequest()) _exit(0);
    }
  }

 private:
  // False when the supervisor is gone: the server ends, and init ends the sandbox with it.
  bool OnRequest() {
    return ForEachExecMsg(sock_, [this](const ExecMsg& m, UniqueFd fds[4]) {
      if (m.type == ExecMsgType::kStart) {
        Start(m, fds);
      } else if (m.type == ExecMsgType::kSignal) {
        Signal(m.id, m.value);
      }
      return true;
    });
  }

  void Start(const ExecMsg& m, UniqueFd fds[4]) {
    ExecRequest req;
    if (Status read = ReadExecRequest(fds[0].get(), m.length, &req); !read.ok()) {
      return Fail(m.id, 125, "request", EINVAL, read.message().c_str());
    }
    const std::vector<std::string> env = MergeEnvironment(env_, req.env);
    const ExecArgs args = PrepareExec(req.argv, env);
    UniqueFd pty_master, pty_slave;
    if (req.tty) {
      if (Status opened = OpenTerminal(&pty_master, &pty_slave); !opened.ok()) {
        return Fail(m.id, 125, "pty", EIO, opened.message().c_str());
      }
    }
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) return Fail(m.id, 125, "pipe", errno);
    UniqueFd error_read(pipe_fds[0]), error_write(pipe_fds[1]);
    const int slave = pty_slave.get();
    ExecChildStart start{&plan_,
                         &req,
                         &args,
                         {req.tty ? slave : fds[1].get(), req.tty ? slave : fds[2].get(),
                          req.tty ? slave : fds[3].get()},
                         req.tty,
                         error_write.get()};
    const pid_t pid = SpawnOnOwnStack(&ExecChildEntry, &start);
    if (pid < 0) return Fail(m.id, 125, "fork", errno);
    error_write.reset();
    ChildError err;
    ssize_t n;
    do {
      n = read(error_read.get(), &err, sizeof err);
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof err)) {
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      ExecMsg out;
      out.type = ExecMsgType::kFailed;
      out.id = m.id;
      out.value = WIFEXITED(status) ? WEXITSTATUS(status) : 125;
      out.error = err;
      SendExecMsg(sock_, out);
      return;
    }
    running_[pid] = m.id;
    ExecMsg out;
    out.type = ExecMsgType::kStarted;
    out.id = m.id;
    out.value = pid;
    const int master = pty_master.get();
    SendExecMsg(sock_, out, pty_master ? &master : nullptr, pty_master ? 1 : 0);
  }

  void Fail(uint64_t id, int code, const char* stage, int e, const char* detail = "") {
    ChildError err;
    err.Set(stage, e, detail);
    Fail(id, code, err);
  }
  void Fail(uint64_t id, int code, const ChildError& err) {
    ExecMsg out;
    out.type = ExecMsgType::kFailed;
    out.id = id;
    out.value = code;
    out.error = err;
    SendExecMsg(sock_, out);
  }

  // To the exec's process group (its session), and to the process itself should it have left it.
  void Signal(uint64_t id, int sig) {
    for (const auto& [pid, exec_id] : running_) {
      if (exec_id != id) continue;
      kill(-pid, sig);
      kill(pid, sig);
      if (sig == SIGTERM || sig == SIGHUP || sig == SIGINT) kill(-pid, SIGCONT);
      return;
    }
  }

  void Reap(int sfd) {
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == sizeof si) {
    }
    int status = 0;
    struct rusage usage = {};
    pid_t w;
    while ((w = wait4(-1, &status, WNOHANG, &usage)) > 0) {
      auto it = running_.find(w);
      if (it == running_.end()) continue;
      ExecMsg out;
      out.type = ExecMsgType::kExited;
      out.id = it->second;
      out.value = status;
      out.usage = usage;
      running_.erase(it);
      SendExecMsg(sock_, out);
    }
  }

  const LaunchPlan& plan_;
  const std::vector<std::string>& env_;
  const int sock_;
  std::map<pid_t, uint64_t> running_;  // pid -> exec id
};

// Only the socket and stdio on /dev/null: the server holds nothing else of init's.
void KeepOnlySocket(int sock) {
  CloseAllFrom3Except({sock});
  StdioToDevNull();
}

int ChildSignalFd() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

}  // namespace

std::vector<std::string> MergeEnvironment(const std::vector<std::string>& base,
                                          const std::vector<std::string>& set) {
  std::vector<std::string> out = base;
  for (const std::string& s : set) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    auto same = [&](const std::string& e) { return e.compare(0, eq + 1, s, 0, eq + 1) == 0; };
    out.erase(std::remove_if(out.begin(), out.end(), same), out.end());
    out.push_back(s);
  }
  return out;
}

[[noreturn]] void ExecServerMain(const LaunchPlan& plan, const std::vector<std::string>& env,
                                 int sock, int ctl, int ready) {
  // Closing init's control socket and the exec pipe (with everything else) tells init the
  // server runs.
  (void)ctl;
  (void)ready;
  KeepOnlySocket(sock);
  const int sfd = ChildSignalFd();
  if (sfd < 0) _exit(125);
  ExecServer(plan, env, sock).Serve(sfd);
}

}  // namespace ward::enforce
