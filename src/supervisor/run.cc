#include "supervisor/run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio.hpp>
#include <chrono>
#include <memory>

#include "common/linux.h"
#include "common/trace.h"
#include "enforce/control.h"
#include "enforce/launcher.h"
#include "enforce/probe.h"
#include "supervisor/notifier.h"
#include "supervisor/terminal.h"

namespace ward::supervisor {
namespace {

using Clock = std::chrono::steady_clock;

// Serves one running sandbox: control messages, pty relay, signals, exit.
class Session {
 public:
  Session(const RunRequest& req, enforce::Sandbox sb, const enforce::LaunchPlan& plan,
          TerminalState* term, Outcome* out)
      : req_(req),
        plan_(plan),
        sb_(std::move(sb)),
        term_(term),
        out_(out),
        ctl_(ctx_, dup(sb_.control.get())),
        pidfd_(ctx_, dup(sb_.pidfd.get())),
        signals_(ctx_) {}

  void Serve() {
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH}) signals_.add(s);
    WaitSignal();
    WaitControl();
    pidfd_.async_wait(asio::posix::descriptor_base::wait_read,
                      [this](const asio::error_code&) { OnInitExit(); });
    if (term_->is_tty(0)) {
      stdin_.emplace(ctx_, dup(0));
      term_->MakeRaw();
    }
    ctx_.run();
    term_->Restore();
    if (notifier_) {
      notifier_->Stop();
      out_->notifications = notifier_->handled();
      out_->protected_denials = notifier_->denied();
    }
  }

 private:
  void Emit(std::string_view type, nlohmann::json data) {
    if (req_.events) req_.events->Emit(type, std::move(data));
  }

  void WaitSignal() {
    signals_.async_wait([this](const asio::error_code& ec, int signo) {
      if (ec) return;
      if (signo == SIGWINCH) {
        if (pty_) term_->SyncWindowSize(pty_->native_handle());
      } else {
        // Forwarded to init, which passes it to the command's process group.
        sys::PidfdSendSignal(sb_.pidfd.get(), signo, nullptr, 0);
      }
      WaitSignal();
    });
  }

  void WaitControl() {
    ctl_.async_wait(asio::posix::descriptor_base::wait_read, [this](const asio::error_code& ec) {
      if (ec) return;
      if (DrainControl(/*blocking=*/false)) WaitControl();
    });
  }

  // Returns false at EOF.
  bool DrainControl(bool blocking) {
    while (true) {
      if (!blocking) {
        struct pollfd p = {ctl_.native_handle(), POLLIN, 0};
        if (poll(&p, 1, 0) <= 0) return true;
      }
      enforce::ControlMsg m;
      UniqueFd fd;
      int rc = enforce::RecvControl(ctl_.native_handle(), &m, &fd);
      if (rc <= 0) {
        ctl_eof_ = true;
        return false;
      }
      Handle(m, std::move(fd));
    }
  }

  void Handle(const enforce::ControlMsg& m, UniqueFd fd) {
    switch (m.type) {
      case enforce::MsgType::kMounted:
        TraceMark("root built");
        out_->mounts = m.report;
        break;
      case enforce::MsgType::kFd:
        if (m.fd_kind == enforce::FdKind::kPtyMaster && fd) {
          StartPty(std::move(fd));
        } else if (m.fd_kind == enforce::FdKind::kNotifyListener && fd) {
          notifier_ = std::make_unique<Notifier>(NotifierConfig::From(plan_, out_->mounts));
          notifier_->Start(std::move(fd), req_.events);
        }
        break;
      case enforce::MsgType::kSetupError:
        setup_error_ = true;
        out_->kind = Outcome::Kind::kSetupFailed;
        out_->stage = m.error.stage;
        out_->err = m.error.err;
        out_->message = enforce::DescribeChildError(m.error);
        Emit("setup.error", {{"stage", m.error.stage},
                             {"errno", m.error.err},
                             {"detail", m.error.detail}});
        break;
      case enforce::MsgType::kStarted:
        TraceMark("command started");
        started_ = true;
        Emit("exec", {{"argv", req_.argv}, {"pid_inside", m.value}});
        break;
      case enforce::MsgType::kExecFailed:
        exec_failed_ = true;
        out_->kind = Outcome::Kind::kExecFailed;
        out_->err = m.value;
        out_->stage = "exec";
        out_->exit_code = m.value == ENOENT ? 127 : 126;
        out_->message = "cannot run '" + req_.argv[0] + "': " + std::strerror(m.value);
        break;
      case enforce::MsgType::kExited:
        have_status_ = true;
        wait_status_ = m.value;
        break;
      case enforce::MsgType::kGo:
        break;
    }
  }

  void StartPty(UniqueFd master) {
    fcntl(master.get(), F_SETFL, fcntl(master.get(), F_GETFL) | O_NONBLOCK);
    pty_.emplace(ctx_, master.release());
    term_->SyncWindowSize(pty_->native_handle());
    ReadPty();
    if (stdin_) ReadStdin();
  }

  void ReadPty() {
    pty_->async_wait(asio::posix::descriptor_base::wait_read, [this](const asio::error_code& ec) {
      if (ec) return;
      char buf[65536];
      ssize_t n = read(pty_->native_handle(), buf, sizeof buf);
      if (n > 0) {
        int out = term_->output_fd();
        if (out >= 0) WriteAll(out, buf, n);
        ReadPty();
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        ReadPty();
      } else {
        pty_done_ = true;  // EIO: every slave fd is closed
        MaybeFinish();
      }
    });
  }

  void ReadStdin() {
    stdin_->async_wait(asio::posix::descriptor_base::wait_read, [this](const asio::error_code& ec) {
      if (ec || !pty_ || pty_done_) return;
      char buf[4096];
      ssize_t n = read(stdin_->native_handle(), buf, sizeof buf);
      if (n > 0) {
        // The pty master is non-blocking; a full input queue waits briefly for the reader.
        ssize_t off = 0;
        while (off < n) {
          ssize_t w = write(pty_->native_handle(), buf + off, n - off);
          if (w > 0) {
            off += w;
          } else if (w < 0 && errno == EAGAIN) {
            struct pollfd p = {pty_->native_handle(), POLLOUT, 0};
            if (poll(&p, 1, 100) <= 0) break;
          } else {
            break;
          }
        }
        ReadStdin();
      }
      // EOF or error on the terminal: stop relaying input.
    });
  }

  static void WriteAll(int fd, const char* p, ssize_t n) {
    while (n > 0) {
      ssize_t w = write(fd, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) {
          struct pollfd pf = {fd, POLLOUT, 0};
          poll(&pf, 1, 1000);
          continue;
        }
        return;
      }
      p += w;
      n -= w;
    }
  }

  void OnInitExit() {
    TraceMark("sandbox exited");
    siginfo_t si = {};
    waitid(P_PIDFD, sb_.pidfd.get(), &si, WEXITED);
    init_exited_ = true;
    init_code_ = si.si_code;
    init_status_ = si.si_status;
    DrainControl(/*blocking=*/true);
    MaybeFinish();
  }

  void MaybeFinish() {
    if (!init_exited_) return;
    // Flush whatever the pty still holds (the command's last words), then stop.
    if (pty_ && !pty_done_) {
      char buf[65536];
      ssize_t n;
      int out = term_->output_fd();
      while ((n = read(pty_->native_handle(), buf, sizeof buf)) > 0) {
        if (out >= 0) WriteAll(out, buf, n);
      }
    }
    Finish();
    ctx_.stop();
  }

  void Finish() {
    if (setup_error_ || exec_failed_) return;
    if (have_status_) {
      if (WIFEXITED(wait_status_)) {
        out_->kind = Outcome::Kind::kExited;
        out_->exit_code = WEXITSTATUS(wait_status_);
      } else if (WIFSIGNALED(wait_status_)) {
        out_->kind = Outcome::Kind::kSignaled;
        out_->signal = WTERMSIG(wait_status_);
        out_->exit_code = 128 + out_->signal;
      }
      return;
    }
    // Init ended without reporting the command's status: it was killed from outside.
    if (init_code_ == CLD_KILLED || init_code_ == CLD_DUMPED) {
      out_->kind = Outcome::Kind::kSignaled;
      out_->signal = init_status_;
      out_->exit_code = 128 + init_status_;
      out_->message = "the sandbox was killed by signal " + std::to_string(init_status_);
    } else {
      out_->kind = Outcome::Kind::kSetupFailed;
      out_->stage = "init";
      out_->message = "sandbox init exited with status " + std::to_string(init_status_) +
                      " before the command ran";
      out_->exit_code = 125;
    }
  }

  const RunRequest& req_;
  const enforce::LaunchPlan& plan_;
  enforce::Sandbox sb_;
  TerminalState* term_;
  Outcome* out_;
  asio::io_context ctx_;
  asio::posix::stream_descriptor ctl_;
  asio::posix::stream_descriptor pidfd_;
  asio::signal_set signals_;
  std::optional<asio::posix::stream_descriptor> pty_;
  std::optional<asio::posix::stream_descriptor> stdin_;
  std::unique_ptr<Notifier> notifier_;
  bool ctl_eof_ = false, setup_error_ = false, exec_failed_ = false, started_ = false;
  bool have_status_ = false, init_exited_ = false, pty_done_ = false;
  int wait_status_ = 0, init_code_ = 0, init_status_ = 0;
};

}  // namespace

const char* OutcomeKindName(Outcome::Kind k) {
  switch (k) {
    case Outcome::Kind::kExited: return "exited";
    case Outcome::Kind::kSignaled: return "signaled";
    case Outcome::Kind::kExecFailed: return "exec_failed";
    case Outcome::Kind::kSetupFailed: return "setup_failed";
    case Outcome::Kind::kRefused: return "refused";
  }
  return "unknown";
}

Outcome Run(const RunRequest& req) {
  Outcome out;
  auto start = Clock::now();
  enforce::KernelFeatures features = enforce::ProbeKernel(/*probe_user_ns=*/false);
  TraceMark("kernel probed");
  TerminalState term;
  term.Capture();
  enforce::PlanInput input;
  input.argv = req.argv;
  input.env = req.env;
  for (int fd = 0; fd < 3; ++fd) input.tty[fd] = term.is_tty(fd);
  Result<enforce::LaunchPlan> plan = enforce::PlanLaunch(req.policy, features, input, &out.notes);
  if (!plan.ok()) {
    out.kind = Outcome::Kind::kRefused;
    out.exit_code = 125;
    out.message = plan.status().ToString();
    return out;
  }
  TraceMark("planned (seccomp compiled)");
  plan->has_termios = term.termios(&plan->termios);
  plan->has_winsize = term.winsize(&plan->winsize);

  // A write to a closed pipe must not kill the supervisor (the sandbox would die with it).
  signal(SIGPIPE, SIG_IGN);
  Result<enforce::Sandbox> sb = enforce::StartSandbox(*plan);
  if (!sb.ok()) {
    out.kind = Outcome::Kind::kRefused;
    out.exit_code = 125;
    out.message = sb.status().ToString();
    return out;
  }
  TraceMark("cloned");
  {
    Session session(req, std::move(sb).value(), *plan, &term, &out);
    session.Serve();
  }
  out.duration_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  getrusage(RUSAGE_CHILDREN, &out.rusage);
  return out;
}

}  // namespace ward::supervisor
