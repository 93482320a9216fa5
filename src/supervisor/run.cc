#include "supervisor/run.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <set>
#include <mutex>
#include <optional>
#include <system_error>

#include "audit/session_log.h"
#include "common/cpu.h"
#include "common/format.h"
#include "common/linux.h"
#include "common/trace.h"
#include "enforce/cgroup.h"
#include "enforce/control.h"
#include "enforce/landlock_coverage.h"
#include "enforce/launcher.h"
#include "enforce/limits.h"
#include "enforce/ns/net.h"
#include "enforce/probe.h"
#include "libssl/on_use.h"
#include "net/dns_stub.h"
#include "net/egress_rules.h"
#include "net/proxy.h"
#include "net/resolver.h"
#include "policy/decide.h"
#include "policy/paths.h"
#include "supervisor/approvals/wiring.h"
#include "supervisor/container_gate.h"
#include "supervisor/container_ports.h"
#include "supervisor/container_execs.h"
#include "supervisor/egress_capture.h"
#include "supervisor/exec_relay.h"
#include "supervisor/notifier.h"
#include "supervisor/review_changes.h"
#include "supervisor/run_credentials.h"
#include "supervisor/run_records.h"
#include "supervisor/terminal.h"

namespace ward::supervisor {
namespace {

using Clock = std::chrono::steady_clock;

// Fail closed: the audit trail's first write error, reported from whichever thread hit it
// (the log's flusher, an emitter), ends the sandbox on the run's own loop once that loop
// serves it, at once if the error came before.
class AuditStop {
 public:
  void Fail(const Status& st) {
    std::lock_guard lock(mu_);
    if (failure_) return;
    failure_ = st;
    if (ctx_ != nullptr) asio::post(*ctx_, [stop = stop_, st] { stop(st); });
  }
  void Attach(asio::io_context* ctx, std::function<void(const Status&)> stop) {
    std::lock_guard lock(mu_);
    ctx_ = ctx;
    stop_ = std::move(stop);
    if (failure_) asio::post(*ctx_, [stop = stop_, st = *failure_] { stop(st); });
  }
  // Before the loop goes: what is reported later is the caller's (the log says so on Close).
  void Detach() {
    std::lock_guard lock(mu_);
    ctx_ = nullptr;
    stop_ = nullptr;
  }

 private:
  std::mutex mu_;
  std::optional<Status> failure_;
  asio::io_context* ctx_ = nullptr;
  std::function<void(const Status&)> stop_;
};

// Serves one running sandbox: control messages, pty relay, signals, exit.
class SandboxServer {
 public:
  SandboxServer(const RunRequest& req, enforce::Sandbox sb, const enforce::LaunchPlan& plan,
          TerminalState* term, Outcome* out, enforce::Cgroup* cgroup,
          const net::EgressRules* egress, const net::ResolverOverrides* overrides,
          const net::CredentialBroker* broker, EventSink* events)
      : req_(req),
        events_(events),
        plan_(plan),
        egress_rules_(egress),
        overrides_(overrides),
        broker_(broker),
        sb_(std::move(sb)),
        cgroup_(cgroup),
        term_(term),
        out_(out),
        ctl_(ctx_, dup(sb_.control.get())),
        pidfd_(ctx_, dup(sb_.pidfd.get())),
        signals_(ctx_) {}

  void StopOnAuditFailure(AuditStop* stop) { audit_stop_ = stop; }
  // The method and path rules the proxy checks requests with (must outlive the server).
  void CheckRequestsWith(const net::RequestRules* rules) { request_rules_ = rules; }
  // Init's messages the container's gate received (AwaitContainerStart), handled before the rest.
  void HandleFirst(std::vector<EarlyControl> early) { early_ = std::move(early); }
  // A live sandbox: the check after each exec (ExecRelay::CheckAfterEachExec).
  void CheckAfterEachExec(std::function<nlohmann::json()> check) {
    check_after_exec_ = std::move(check);
  }
  // A live sandbox: where each exec's denials are gathered (ExecRelay::GatherDenialsIn).
  void GatherExecDenialsIn(DenialTee* tee) { exec_denials_ = tee; }
  // Where the creation guard keeps what the run made that the check after it looks at.
  void RecordCreationsIn(CreationJournal* journal) { journal_ = journal; }

  void Serve() {
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH}) signals_.add(s);
    WaitSignal();
    // `ward serve` starts `ward run` with the forwarded signals blocked (api/exec.cc): one sent
    // while the run was starting is delivered now, to the handler above, and reaches the
    // command instead of killing the supervisor before it could forward anything.
    sigset_t forwarded;
    sigemptyset(&forwarded);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaddset(&forwarded, s);
    pthread_sigmask(SIG_UNBLOCK, &forwarded, nullptr);
    StartOutput();
    if (req_.policy.approvals.enabled) StartApprovals();
    ReportCaptureOff();
    for (auto& [kind, fd] : sb_.egress_sockets) AwaitEgress(kind, std::move(fd));
    sb_.egress_sockets.clear();
    if (req_.container) ServeExposedPorts();
    for (EarlyControl& e : early_) Handle(e.msg, std::move(e.fd));
    early_.clear();
    WaitControl();
    pidfd_.async_wait(asio::posix::descriptor_base::wait_read,
                      [this](const asio::error_code&) { OnInitExit(); });
    // A live sandbox has no deadline of its own: each exec has its timeout (api/exec.h).
    if (plan_.limits.timeout_ms > 0 && !live()) {
      deadline_.emplace(ctx_, std::chrono::milliseconds(plan_.limits.timeout_ms));
      deadline_->async_wait([this](const asio::error_code& ec) {
        if (!ec) OnDeadline();
      });
    }
    if (term_->is_tty(0)) {
      stdin_.emplace(ctx_, dup(0));
      term_->MakeRaw();
    }
    if (audit_stop_) audit_stop_->Attach(&ctx_, [this](const Status& st) { OnAuditFailure(st); });
    ctx_.run();
    if (audit_stop_) audit_stop_->Detach();
    if (ports_) ports_->Stop();
    StopEgress();
    term_->Restore();
    listener_.reset();
    if (notifier_) {
      notifier_->Stop();
      out_->notifications = notifier_->handled();
      out_->protected_denials = notifier_->denied();
    }
    if (approvals_) approvals_->Stop();
  }

 private:
  // Every run has the egress sockets; most never use them. Each waits on this loop until the
  // sandbox first connects or sends to it: only then is it served (and, with the first, the
  // proxy and the stub made), so that a run that reaches for nothing pays for one wait each.
  void AwaitEgress(enforce::FdKind kind, UniqueFd fd) {
    if (!egress_rules_) return;
    out_->egress.enabled = true;
    out_->egress.credentials = broker_ != nullptr;
    auto wait = std::make_shared<asio::posix::stream_descriptor>(ctx_, fd.release());
    egress_waits_.push_back(wait);
    wait->async_wait(asio::posix::descriptor_base::wait_read,
                     [this, kind, wait](const asio::error_code& ec) {
                       if (ec || !wait->is_open()) return;  // StopEgress closed it
                       UniqueFd ready(wait->release());
                       ServeEgress(kind, std::move(ready));
                     });
  }

  // The proxy and the DNS stub, on this loop, for the sockets made inside the sandbox's network
  // namespace (enforce::StartSandboxNet). Upstream connections and lookups happen out here.
  void ServeEgress(enforce::FdKind kind, UniqueFd fd) {
    if (!resolver_) {
      resolver_ =
          net::MakeSystemResolver(ctx_, overrides_ ? *overrides_ : net::ResolverOverrides{});
      net::ProxyOptions po;
      po.credentials = broker_;
      po.max_connections =
          req_.policy.limits.proxy_connections.value_or(policy::kDefaultProxyConnections);
      if (approvals_) {
        // Host approvals: a request for a host without a rule is held while the broker asks.
        po.ask_host = approvals_->HostAsker();
        po.host_hold_timeout = std::chrono::milliseconds(req_.policy.approvals.timeout_ms + 1000);
      }
      if (request_rules_ != nullptr) po.request_rules = *request_rules_;
      net::DnsStubOptions dso;
      if (broker_) dso.name_check = broker_->DnsNameCheck(events_);
      if (Capturing()) {
        // Transparent capture: the stub hands out the synthetic addresses the proxy maps back.
        synthetic_ = std::make_unique<net::SyntheticNames>();
        po.synthetic = synthetic_.get();
        dso.synthetic = synthetic_.get();
        dso.synthetic_v6 = sb_.capture_v6;
      }
      proxy_ =
          std::make_unique<net::EgressProxy>(ctx_, *egress_rules_, resolver_.get(), events_, po);
      dns_ = std::make_unique<net::DnsStub>(ctx_, *egress_rules_, resolver_.get(), events_, dso);
    }
    Status st;
    if (kind == enforce::FdKind::kNetProxy) {
      st = proxy_->Serve(std::move(fd));
    } else if (kind == enforce::FdKind::kNetCapture) {
      st = proxy_->ServeTransparent(std::move(fd));
    } else if (kind == enforce::FdKind::kNetDnsUdp) {
      st = dns_->ServeUdp(std::move(fd));
    } else {
      st = dns_->ServeTcp(std::move(fd));
    }
    if (!st.ok()) Emit("net.error", {{"reason", "serve"}, {"detail", st.ToString()}});
  }

  // Transparent capture is on when it was planned and the namespace has it (the sockets came).
  bool Capturing() const { return plan_.net.capture_port != 0 && sb_.capture_error.empty(); }

  // Said once at the start when capture was planned and could not be set up: the run goes on
  // with the proxy variables alone.
  void ReportCaptureOff() {
    out_->egress.transparent = Capturing();
    if (plan_.net.capture_port == 0 || sb_.capture_error.empty()) return;
    out_->egress.transparent_off = sb_.capture_error;
    Emit("net.error", {{"reason", "capture"}, {"detail", sb_.capture_error}});
  }

  // Connections from the pod's network to the ports the container exposes; one that cannot be
  // served is said, and the container runs without it.
  void ServeExposedPorts() {
    Result<std::unique_ptr<net::PortForwarder>> ports = ServeContainerPorts(
        ctx_, req_.container->exposed, plan_.net.tcp_ports(), std::move(sb_.netns), events_);
    if (ports.ok()) {
      ports_ = std::move(*ports);
    } else {
      Emit("net.error", {{"reason", "expose"}, {"detail", ports.status().ToString()}});
    }
  }

  void StopEgress() {
    for (auto& wait : egress_waits_) {
      asio::error_code ec;
      wait->close(ec);  // the sockets nothing used; a wait already answered sees it closed
    }
    egress_waits_.clear();
    if (proxy_) {
      proxy_->Stop();  // emits the net.allow events of connections still open
      auto ps = proxy_->stats();
      out_->egress.connections = ps.accepted;
      out_->egress.allowed = ps.allowed;
      out_->egress.denied = ps.denied;
      out_->egress.bytes_up = ps.bytes_up;
      out_->egress.bytes_down = ps.bytes_down;
      out_->egress.transparent_connections = ps.transparent;
      out_->egress.intercepted = ps.intercepted;
      out_->egress.credential_uses = ps.credential_uses;
      out_->egress.leak_attempts = ps.leak_attempts;
    }
    if (dns_) {
      dns_->Stop();
      auto ds = dns_->stats();
      out_->egress.dns_queries = ds.queries;
      out_->egress.dns_answered = ds.answered;
      out_->egress.dns_nxdomain = ds.nxdomain;
    }
    proxy_.reset();
    dns_.reset();
    resolver_.reset();  // before the io_context: it joins its workers
  }

  // The pty's way to the terminal: filtered unless --raw-terminal; held while ward asks. A
  // dropped sequence is recorded once per kind (a program may ask the same thing often).
  void StartOutput() {
    if (term_->output_fd() < 0) return;
    TerminalFilter::Options fo;
    fo.encoding = TerminalEncodingFromEnvironment();
    fo.pass_all = req_.raw_terminal;
    output_ = std::make_unique<PtyOutput>(term_->output_fd(), fo);
    output_->set_on_drop([this](std::string_view kind, std::string_view head) {
      if (!reported_drops_.insert(std::string(kind)).second) return;
      Emit("terminal.deny", {{"sequence", std::string(kind)}, {"head", EscapedBytes(head)}});
    });
    output_->set_on_resume([this] { OnOutputResumed(); });
  }

  // A question on the terminal was answered or withdrawn and what the pty wrote meanwhile went
  // out: the pty is read again, and the program is told to repaint (its screen was covered).
  void OnOutputResumed() {
    if (!pty_ || pty_done_ || init_exited_) return;
    if (pty_paused_) {
      pty_paused_ = false;
      ReadPty();
    }
    ShrinkPty(pty_->native_handle());
    repaint_.emplace(ctx_, std::chrono::milliseconds(100));
    repaint_->async_wait([this](const asio::error_code& ec) {
      if (!ec && pty_) term_->SyncWindowSize(pty_->native_handle());
    });
  }

  // Bytes for the audit trail: printable ASCII as is, everything else as \xNN.
  static std::string EscapedBytes(std::string_view b) {
    std::string out;
    for (char c : b) {
      unsigned char u = static_cast<unsigned char>(c);
      if (u >= 0x20 && u < 0x7f && u != '\\') {
        out.push_back(c);
      } else {
        char hex[5];
        std::snprintf(hex, sizeof hex, "\\x%02x", u);
        out += hex;
      }
    }
    return out;
  }

  // Approvals (--ask): the broker, its socket and channels, before the notifier needs them.
  // A failure ends the sandbox before the command runs anything.
  void StartApprovals() {
    // Interactive: the supervisor owns a real terminal (the command gets its own pty).
    if (term_->is_tty(0) && output_) {
      prompter_ = std::make_unique<TerminalPrompter>(0, term_->output_fd(), output_.get());
    }
    Result<std::unique_ptr<ApprovalsRuntime>> rt = ApprovalsRuntime::Start(
        ctx_, req_.policy, plan_, req_.approvals, prompter_.get(), events_);
    if (!rt.ok()) {
      setup_error_ = true;
      out_->kind = Outcome::Kind::kSetupFailed;
      out_->stage = "approvals";
      out_->message = "approvals: " + rt.status().ToString();
      enforce::SignalInit(sb_, SIGKILL);
      return;
    }
    approvals_ = std::move(rt).value();
    std::fprintf(stderr, "ward: approvals on (%s): session %s, socket %s\n",
                 ApprovalChannelsText(approvals_->channels()).c_str(),
                 approvals_->session().c_str(), approvals_->socket_path().c_str());
  }

  void Emit(std::string_view type, nlohmann::json data) {
    if (events_) events_->Emit(type, std::move(data));
  }

  void WaitSignal() {
    signals_.async_wait([this](const asio::error_code& ec, int signo) {
      if (ec) return;
      if (signo == SIGWINCH) {
        if (pty_) term_->SyncWindowSize(pty_->native_handle());
      } else {
        // Forwarded to init, which passes it to the command's process group.
        enforce::SignalInit(sb_, signo);
      }
      WaitSignal();
    });
  }

  void WaitControl() {
    ctl_.async_wait(asio::posix::descriptor_base::wait_read, [this](const asio::error_code& ec) {
      if (ec) return;
      bool open = DrainControl(/*blocking=*/false);
      if (finish_pending_) {
        finish_pending_ = false;
        MaybeFinish();
        return;
      }
      if (open) WaitControl();
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
        if (m.report.chroot) {
          out_->notes.degraded.push_back(
              "root: no pivot_root here; entered with chroot (the host's tree stays in the "
              "sandbox's mount namespace, out of reach of a process without CAP_SYS_CHROOT, which "
              "none inside holds)");
        }
        sandbox_root_ = std::move(fd);
        break;
      case enforce::MsgType::kFd:
        if (m.fd_kind == enforce::FdKind::kPtyMaster && fd) {
          StartPty(std::move(fd));
        } else if (m.fd_kind == enforce::FdKind::kNotifyListener && fd) {
          AwaitFirstNotification(std::move(fd));
        } else if (m.fd_kind == enforce::FdKind::kExecServer && fd) {
          StartExecRelay(std::move(fd));
        }
        // kDetachedMount: `fd` closes here, the last reference (control.h).
        break;
      case enforce::MsgType::kSetupError:
        setup_error_ = true;
        out_->kind = Outcome::Kind::kSetupFailed;
        out_->stage = m.error.stage;
        out_->err = m.error.err;
        out_->message = enforce::DescribeChildError(m.error);
        Emit("setup.error",
             {{"stage", m.error.stage}, {"errno", m.error.err}, {"detail", m.error.detail}});
        break;
      case enforce::MsgType::kStarted:
        TraceMark("command started");
        started_ = true;
        // From here this thread serves the command (proxy, DNS stub, terminal, approvals): as
        // root, with no effective capability. The permitted ones come back for the teardown
        // (the cgroup's removal), once the sandbox is gone (Run).
        sys::SetEffectiveCapabilities(false);
        if (live()) {
          Emit("exec.server", {{"pid_inside", m.value}});
        } else {
          Emit("exec", {{"argv", req_.argv}, {"pid_inside", m.value}});
        }
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
        // The supervisor does not wait for init's own exit, so its RUSAGE_CHILDREN would miss
        // the sandbox: init's count of everything it reaped stands in.
        out_->rusage = m.usage;
        out_->rusage_from_init = true;
        // Nothing of the sandbox runs any more (init reaped it all before saying so): the run
        // is over without waiting for init's own exit and its namespaces' teardown.
        if (!init_exited_) {
          TraceMark("sandbox emptied");
          init_exited_ = true;
          finish_pending_ = true;
        }
        break;
      case enforce::MsgType::kGo:
      case enforce::MsgType::kTerminate:
      case enforce::MsgType::kSeccomp:
      case enforce::MsgType::kLateSetup:
      case enforce::MsgType::kNetns:
      case enforce::MsgType::kCgroupJoin:
      case enforce::MsgType::kMapped:  // taken by LaunchSandbox
      case enforce::MsgType::kGuardAgent:
        break;
    }
  }

  // The notifier's thread starts with the first trapped syscall: a run that creates nothing
  // makes no thread, and its end wakes and joins none. Until then the listener waits on this
  // loop; the trapped thread waits in the kernel meanwhile.
  void AwaitFirstNotification(UniqueFd listener) {
    listener_.emplace(ctx_, listener.release());
    WaitForNotification();
  }

  void WaitForNotification() {
    listener_->async_wait(asio::posix::descriptor_base::wait_read,
                          [this](const asio::error_code& ec) {
                            if (ec || !listener_) return;
                            // Only a pending notification (POLLIN) starts the thread. The
                            // sandbox's end (POLLHUP alone) ends the wait; any other wakeup
                            // waits again: closing the listener would fail every later
                            // trapped syscall with ENOSYS.
                            struct pollfd p = {listener_->native_handle(), POLLIN, 0};
                            int n = poll(&p, 1, 0);
                            if (n == 1 && (p.revents & POLLIN)) {
                              UniqueFd fd(listener_->release());
                              listener_.reset();
                              StartNotifier(std::move(fd));
                            } else if (n == 1 && (p.revents & (POLLHUP | POLLERR))) {
                              listener_.reset();
                            } else {
                              WaitForNotification();
                            }
                          });
  }

  void StartNotifier(UniqueFd listener) {
    NotifierConfig nc = NotifierConfig::From(plan_, out_->mounts);
    nc.journal = journal_;
    if (approvals_) nc.approvals = approvals_->files();
    nc.root = std::move(sandbox_root_);
    nc.agent = StartGuardAgent();
    notifier_ = std::make_unique<Notifier>(std::move(nc));
    notifier_->Start(std::move(listener), events_);
  }

  // Sandbox init forks the guard agent on one end of a new socketpair; the guard keeps the
  // other. Requests sent before the agent runs wait in the socket. On failure the guard's end
  // is closed, and every creation fails closed.
  UniqueFd StartGuardAgent() {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return UniqueFd();
    UniqueFd mine(sv[0]), agents(sv[1]);
    enforce::ControlMsg m;
    m.type = enforce::MsgType::kGuardAgent;
    if (enforce::SendControl(ctl_.native_handle(), m, agents.get()) != 0) return UniqueFd();
    return mine;
  }

  void StartPty(UniqueFd master) {
    fcntl(master.get(), F_SETFL, fcntl(master.get(), F_GETFL) | O_NONBLOCK);
    pty_.emplace(ctx_, master.release());
    term_->SyncWindowSize(pty_->native_handle());
    ReadPty();
    if (stdin_) ReadStdin();
  }

  void ReadPty() {
    // A question holds the output and its bound is reached: the pty is left unread, and the
    // command blocks on its writes until the question closes (OnOutputResumed).
    if (output_ && !output_->accepting()) {
      pty_paused_ = true;
      return;
    }
    pty_->async_wait(asio::posix::descriptor_base::wait_read, [this](const asio::error_code& ec) {
      if (ec) return;
      char buf[65536];
      ssize_t n = read(pty_->native_handle(), buf, sizeof buf);
      if (n > 0) {
        if (output_) output_->Relay(std::string_view(buf, static_cast<size_t>(n)));
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
      // An approval question is open on the terminal: the key is its answer, not input.
      if (n > 0 && prompter_ && prompter_->OnInput(buf, static_cast<size_t>(n))) {
        ReadStdin();
        return;
      }
      if (n <= 0 && prompter_) prompter_->OnInputClosed();
      if (n > 0) {
        WriteToPty(buf, n);
        ReadStdin();
      }
      // EOF or error on the terminal: stop relaying input.
    });
  }

  // The pty master is non-blocking; a full input queue waits briefly for the reader.
  void WriteToPty(const char* buf, ssize_t n) {
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
  }

  // The wall clock ran out: SIGTERM to everything inside (through init), then SIGKILL of the
  // whole tree after the grace period.
  void OnDeadline() {
    if (init_exited_ || have_status_) return;
    const enforce::LimitsSpec& l = plan_.limits;
    LimitsOutcome& lo = out_->limits;
    lo.timed_out = true;
    std::string origin;
    if (auto it = req_.policy.limits.origins.find("timeout");
        it != req_.policy.limits.origins.end()) {
      origin = it->second.ToString();
    }
    LimitHit hit;
    hit.limit = "timeout";
    hit.message = "the wall-clock limit of " + FormatMs(l.timeout_ms) + " was reached" +
                  (origin.empty() ? "" : " (" + origin + ")");
    hit.data = {{"limit", "timeout"},
                {"timeout_ms", l.timeout_ms},
                {"grace_ms", l.grace_ms},
                {"action", "SIGTERM to everything inside, SIGKILL after the grace period"}};
    if (!origin.empty()) hit.data["origin"] = origin;
    Emit("limit.hit", hit.data);
    lo.hits.push_back(std::move(hit));
    enforce::ControlMsg m;
    m.type = enforce::MsgType::kTerminate;
    (void)enforce::SendControl(sb_.control.get(), m);
    grace_.emplace(ctx_, std::chrono::milliseconds(l.grace_ms));
    grace_->async_wait([this](const asio::error_code& ec) {
      if (ec || init_exited_) return;
      out_->limits.killed_after_grace = true;
      KillEverythingInside();
    });
  }

  bool live() const { return req_.exec_channel >= 0; }

  // A live sandbox's execs, or a container's, go through the relay from the moment the exec
  // server is there.
  void StartExecRelay(UniqueFd server) {
    UniqueFd client = live() ? UniqueFd(fcntl(req_.exec_channel, F_DUPFD_CLOEXEC, 3))
                             : StartContainerExecs();
    if (!client) return;
    exec_relay_ = std::make_unique<ExecRelay>(ctx_, std::move(client), std::move(server), events_,
                                              [this](const std::string& why) { OnExecServerEnd(why); });
    exec_relay_->CheckAfterEachExec(check_after_exec_);
    exec_relay_->GatherDenialsIn(exec_denials_);
    exec_relay_->Start();
  }

  // A container's exec socket is served from here on: its client end of the relay.
  UniqueFd StartContainerExecs() {
    if (!req_.container || req_.container->exec_listener < 0) return UniqueFd();
    container_execs_ = std::make_unique<ContainerExecs>(
        ctx_, req_.container->exec_listener, events_, req_.container->exec_socket);
    container_execs_->Start();
    return container_execs_->TakeRelayEnd();
  }

  // A container goes on without its exec server (its command may have killed it): only its
  // execs end.
  void OnExecServerEnd(const std::string& why) {
    if (!container_execs_) return OnLiveEnd(why);
    Emit("exec.server_end", {{"reason", why}});
    container_execs_->Stop(why);
  }

  // The client closed the sandbox (everything inside ends now), or the exec server died (init
  // ends the sandbox itself).
  void OnLiveEnd(const std::string& why) {
    Emit("sandbox.close", {{"reason", why}});
    if (init_exited_) return;
    closed_by_client_ = why == "the sandbox was closed";
    if (closed_by_client_) KillEverythingInside();
  }

  void KillEverythingInside() {
    if (cgroup_) cgroup_->KillAll();
    // Init's death takes the whole pid namespace with it.
    enforce::SignalInit(sb_, SIGKILL);
  }

  // The audit trail could not be written (fail closed): nothing more may happen unrecorded,
  // so everything inside dies at once and the run ends with 125.
  void OnAuditFailure(const Status& st) {
    if (audit_failure_) return;
    audit_failure_ = st;
    if (!init_exited_) KillEverythingInside();
  }

  void OnInitExit() {
    TraceMark("sandbox exited");
    siginfo_t si = {};
    enforce::ReapInit(sb_, &si);
    init_exited_ = true;
    init_code_ = si.si_code;
    init_status_ = si.si_status;
    DrainControl(/*blocking=*/true);
    MaybeFinish();
  }

  void MaybeFinish() {
    if (!init_exited_) return;
    // Nothing is left to approve: an open question closes, and what it held goes out.
    if (prompter_) prompter_->Abandon("the sandbox ended");
    // Flush whatever the pty still holds (the command's last words), then stop.
    if (pty_ && !pty_done_) {
      char buf[65536];
      ssize_t n;
      while ((n = read(pty_->native_handle(), buf, sizeof buf)) > 0) {
        if (output_) output_->Relay(std::string_view(buf, static_cast<size_t>(n)));
      }
    }
    if (output_) output_->End();
    if (exec_relay_) exec_relay_->FailRunning("the sandbox ended");
    Finish();
    ctx_.stop();
  }

  void Finish() {
    if (audit_failure_) {
      out_->kind = Outcome::Kind::kAuditFailed;
      out_->exit_code = 125;
      out_->signal = 0;
      out_->stage = "audit";
      out_->err = audit_failure_->err();
      out_->message = "the audit trail could not be written, so the sandbox was stopped: " +
                      audit_failure_->ToString();
      return;
    }
    if (setup_error_ || exec_failed_) return;
    if (closed_by_client_) {
      out_->kind = Outcome::Kind::kExited;
      out_->exit_code = 0;
      return;
    }
    if (out_->limits.timed_out) {
      out_->kind = Outcome::Kind::kTimedOut;
      out_->exit_code = 124;
      out_->signal = 0;
      out_->message =
          "timed out: " + out_->limits.hits.front().message + "; everything inside got SIGTERM" +
          (out_->limits.killed_after_grace
               ? ", then SIGKILL after the " + FormatMs(plan_.limits.grace_ms) + " grace period"
               : "");
      return;
    }
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
  EventSink* events_;  // the audit sink, or null
  const enforce::LaunchPlan& plan_;
  const net::EgressRules* egress_rules_;
  const net::ResolverOverrides* overrides_;
  const net::CredentialBroker* broker_;
  enforce::Sandbox sb_;
  enforce::Cgroup* cgroup_;
  TerminalState* term_;
  Outcome* out_;
  asio::io_context ctx_;
  asio::posix::stream_descriptor ctl_;
  asio::posix::stream_descriptor pidfd_;
  asio::signal_set signals_;
  std::optional<asio::posix::stream_descriptor> pty_;
  std::optional<asio::posix::stream_descriptor> stdin_;
  std::optional<asio::posix::stream_descriptor> listener_;  // until the first notification
  std::unique_ptr<PtyOutput> output_;            // the pty's output on its way to the terminal
  std::set<std::string> reported_drops_;         // the kinds of sequence recorded as dropped
  bool pty_paused_ = false;                      // not read while a question holds the output
  std::optional<asio::steady_timer> repaint_;    // puts the pty's size back after ShrinkPty
  std::unique_ptr<TerminalPrompter> prompter_;   // outlives the broker's terminal channel
  std::unique_ptr<ApprovalsRuntime> approvals_;  // before notifier_: it outlives it
  std::unique_ptr<Notifier> notifier_;
  std::vector<EarlyControl> early_;
  std::unique_ptr<ContainerExecs> container_execs_;  // a container's exec socket
  std::unique_ptr<ExecRelay> exec_relay_;             // a live sandbox's execs, or a container's
  DenialTee* exec_denials_ = nullptr;
  std::function<nlohmann::json()> check_after_exec_;
  bool closed_by_client_ = false;
  UniqueFd sandbox_root_;  // the sandbox's root (O_PATH), sent by init with kMounted
  // Declared after ctx_: destroyed before it (StopEgress resets them earlier anyway).
  std::unique_ptr<net::Resolver> resolver_;
  std::vector<std::shared_ptr<asio::posix::stream_descriptor>> egress_waits_;  // AwaitEgress
  const net::RequestRules* request_rules_ = nullptr;
  std::unique_ptr<net::SyntheticNames> synthetic_;  // before the proxy and stub that use it
  std::unique_ptr<net::EgressProxy> proxy_;
  std::unique_ptr<net::DnsStub> dns_;
  std::unique_ptr<net::PortForwarder> ports_;  // a container's exposed ports
  std::optional<asio::steady_timer> deadline_, grace_;
  bool ctl_eof_ = false, setup_error_ = false, exec_failed_ = false, started_ = false;
  bool have_status_ = false, init_exited_ = false, pty_done_ = false;
  bool finish_pending_ = false;  // init reported the end: finish once this batch is handled
  int wait_status_ = 0, init_code_ = 0, init_status_ = 0;
  AuditStop* audit_stop_ = nullptr;
  CreationJournal* journal_ = nullptr;
  std::optional<Status> audit_failure_;
};

// What the limits did: usage and OOM kills read from the cgroup before it is removed, and a
// limit.hit event for each limit the run ran into.
void CollectLimits(const RunRequest& req, EventSink* events, const enforce::LaunchPlan& plan,
                   enforce::Cgroup* cg, int init_pidfd, Outcome* out) {
  LimitsOutcome& lo = out->limits;
  // `explains_sigkill`: the hit is the likely cause of a run that ended by SIGKILL, and its
  // message replaces the generic "the sandbox was killed by signal 9" (see the memory hit).
  auto hit = [&](LimitHit h, bool explains_sigkill = false) {
    if (events) events->Emit("limit.hit", h.data);
    bool killed = out->kind == Outcome::Kind::kSignaled && out->signal == SIGKILL;
    if (out->message.empty() || (explains_sigkill && killed)) out->message = h.message;
    lo.hits.push_back(std::move(h));
  };
  const enforce::CgroupSpec& spec = plan.limits.cgroup;
  if (cg) {
    enforce::CgroupUsage u = cg->ReadUsage();
    lo.memory_peak_bytes = u.memory_peak_bytes;
    lo.oom_kills = u.oom_kills;
    lo.pids_refused = u.pids_refused;
    lo.cpu_usage_usec = u.cpu_usage_usec;
    lo.cpu_throttled_periods = u.cpu_throttled_periods;
    if (u.oom_kills > 0 && spec.memory_bytes) {
      LimitHit h;
      h.limit = "memory";
      h.message = "the memory limit of " + FormatSize(*spec.memory_bytes) +
                  " was reached: the kernel's OOM killer ended " + std::to_string(u.oom_kills) +
                  " process(es) inside";
      h.data = {{"limit", "memory"},
                {"limit_bytes", *spec.memory_bytes},
                {"oom_kills", u.oom_kills},
                {"backend", lo.backend}};
      if (u.memory_peak_bytes) h.data["peak_bytes"] = *u.memory_peak_bytes;
      // The OOM killer may end sandbox init rather than the command: init is in the cgroup, and
      // its score counts the pages it shares with the supervisor (v1 picks the largest process;
      // v2's memory.oom.group kills init with everything else). Init then reports no status and
      // the run looks "killed by signal 9" from outside; the memory limit is the reason.
      hit(std::move(h), /*explains_sigkill=*/true);
    }
    if (u.pids_refused > 0 && spec.pids) {
      LimitHit h;
      h.limit = "pids";
      h.message = "the pids limit of " + std::to_string(*spec.pids) +
                  " was reached: " + std::to_string(u.pids_refused) + " fork(s) refused";
      h.data = {{"limit", "pids"},
                {"max", *spec.pids},
                {"refused_forks", u.pids_refused},
                {"backend", lo.backend}};
      hit(std::move(h));
    }
    Status st = cg->Destroy(init_pidfd);
    if (!st.ok()) lo.teardown_error = st.ToString();
  }
  if (out->kind == Outcome::Kind::kSignaled && out->signal == SIGXFSZ &&
      req.policy.limits.file_size_bytes) {
    LimitHit h;
    h.limit = "file_size";
    h.message = "the file size limit of " +
                FormatSize(*req.policy.limits.file_size_bytes) + " was exceeded (SIGXFSZ)";
    h.data = {{"limit", "file_size"}, {"limit_bytes", *req.policy.limits.file_size_bytes}};
    hit(std::move(h));
  }
}

}  // namespace

nlohmann::json LimitsOutcomeToJson(const LimitsOutcome& l) {
  auto opt = [](const std::optional<uint64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  nlohmann::json hits = nlohmann::json::array();
  for (const auto& h : l.hits) hits.push_back(h.data);
  nlohmann::json j = {{"backend", l.backend},
                      {"memory_peak_bytes", opt(l.memory_peak_bytes)},
                      {"oom_kills", l.oom_kills},
                      {"pids_refused", l.pids_refused},
                      {"cpu_usage_usec", opt(l.cpu_usage_usec)},
                      {"cpu_throttled_periods", l.cpu_throttled_periods},
                      {"timed_out", l.timed_out},
                      {"killed_after_grace", l.killed_after_grace},
                      {"hits", hits}};
  if (!l.teardown_error.empty()) j["teardown_error"] = l.teardown_error;
  return j;
}

nlohmann::json EgressToJson(const Outcome::Egress& e) {
  if (!e.enabled) return nullptr;
  nlohmann::json j = {{"connections", e.connections},
                      {"allowed", e.allowed},
                      {"denied", e.denied},
                      {"bytes_up", e.bytes_up},
                      {"bytes_down", e.bytes_down},
                      {"dns_queries", e.dns_queries},
                      {"dns_answered", e.dns_answered},
                      {"dns_nxdomain", e.dns_nxdomain},
                      {"transparent", e.transparent}};
  if (e.transparent) j["transparent_connections"] = e.transparent_connections;
  if (!e.transparent_off.empty()) j["transparent_off"] = e.transparent_off;
  if (e.credentials) {
    j["credentials"] = {{"intercepted", e.intercepted},
                        {"uses", e.credential_uses},
                        {"leak_attempts", e.leak_attempts}};
  }
  return j;
}

const char* OutcomeKindName(Outcome::Kind k) {
  switch (k) {
    case Outcome::Kind::kExited:
      return "exited";
    case Outcome::Kind::kSignaled:
      return "signaled";
    case Outcome::Kind::kExecFailed:
      return "exec_failed";
    case Outcome::Kind::kSetupFailed:
      return "setup_failed";
    case Outcome::Kind::kRefused:
      return "refused";
    case Outcome::Kind::kTimedOut:
      return "timed_out";
    case Outcome::Kind::kAuditFailed:
      return "audit_failed";
  }
  return "unknown";
}

// Direct sends that found no route out (UDP, ICMP, TCP connects Landlock let through): counted
// by the kernel in the sandbox's own namespace, where ward cannot see them one by one.
static void ReportUnroutedSends(int snmp, int snmp6, EventSink* events) {
  if (events == nullptr || (snmp < 0 && snmp6 < 0)) return;
  const uint64_t n = enforce::CountUnroutedSends(snmp, snmp6);
  if (n == 0) return;
  events->Emit("net.direct.deny",
               {{"count", n},
                {"why", std::to_string(n) +
                            " direct send(s) had no route out: only the proxy and the DNS stub "
                            "lead out (HTTP(S)_PROXY, ALL_PROXY, /etc/resolv.conf)"}});
}

// The proxy holds up to six descriptors per connection: use the whole hard limit.
static void RaiseFileLimit() {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

namespace {

// The plan's filter (so that explain and the audit trail describe the loaded program), the one
// the build compiled for its spec and checked here, handed to sandbox init, which waits for it
// before it forks the command.
Status PrepareAndSendSeccomp(const enforce::Sandbox& sb, enforce::LaunchPlan* plan) {
  Result<enforce::SeccompProgram> program = enforce::PrepareSeccomp(plan->seccomp_spec);
  if (!program.ok()) return std::move(program).take_status().With("seccomp");
  plan->seccomp = std::move(program).value();
  return enforce::SendSeccompProgram(sb, plan->seccomp);
}

// Fetches the secrets (a missing source refuses the run before anything ran), builds the
// broker, and gives sandbox init the command's environment with the phantoms and the CA bundle.
Status FetchAndSendCredentials(const RunRequest& req, const RunCredentialsOptions& options,
                               const enforce::Sandbox& sb, enforce::LaunchPlan* plan,
                               net::CredentialSetup* creds) {
  Result<net::CredentialSetup> prepared = PrepareRunCredentials(req.policy, *plan, options);
  if (!prepared.ok()) return prepared.status();
  *creds = std::move(prepared).value();
  ApplyCredentialsToPlan(*creds, plan);
  const std::string& bundle_target = enforce::LateFileTarget(*plan);
  if (!bundle_target.empty() && creds->ca_bundle.empty()) {
    return Error(Code::kInternal, "credentials: no CA bundle for " + bundle_target);
  }
  return enforce::SendLateSetup(sb, plan->process.env, creds->ca_bundle);
}

}  // namespace

namespace {

std::vector<std::vector<std::string>> ProtectedComponents(const std::vector<std::string>& rels) {
  std::vector<std::vector<std::string>> out;
  for (const std::string& r : rels) out.push_back(policy::PathComponents(r));
  return out;
}

// The check after the run (workspace_check.h): host-executed content the run left in a writable
// root goes to the quarantine, and the audit trail and the outcome say what went where.
void CheckWorkspace(const RunRequest& req, const enforce::LaunchPlan& plan,
                    const CreationJournal& journal, const struct timespec& start,
                    std::set<std::string> existed, EventSink* events, Outcome* out) {
  // In review mode the run wrote the overlay's upper layer (or the copy), never the host's
  // workspace: that is for `ward apply` to check, not this.
  std::vector<std::string> roots;
  for (const std::string& r : plan.mount.protect.roots) {
    if (req.workspace_layer.kind == enforce::WorkspaceLayer::Kind::kDirect ||
        r != plan.mount.workdir) {
      roots.push_back(r);
    }
  }
  if (roots.empty()) return;
  QuarantineStore store(req.state_dir.empty() ? audit::DefaultStateDir() : req.state_dir);
  WorkspaceCheckInput in;
  in.roots = roots;
  in.protected_relpaths = plan.mount.protect.relpaths;
  in.journal = plan.seccomp_spec.notify_creations ? &journal : nullptr;
  in.start = start;
  in.existed = std::move(existed);
  in.session = req.approvals.session.empty() ? audit::NewSessionId() : req.approvals.session;
  for (int i = 0; i < out->mounts.nbases && i < enforce::MountReport::kMaxBases; ++i) {
    in.guarded_bases.insert({out->mounts.base_dev[i], out->mounts.base_ino[i]});
  }
  in.store = &store;
  out->workspace = CheckWorkspaceAfterRun(in);
  if (!events) return;
  for (const QuarantineItem& q : out->workspace.quarantined) {
    events->Emit("workspace.quarantined", q.ToJson());
  }
  for (const std::string& p : out->workspace.privilege_bits) {
    events->Emit("workspace.privilege_bits", {{"path", p}, {"action", "setuid/setgid taken off"}});
  }
  for (const std::string& e : out->workspace.errors) {
    events->Emit("workspace.check_error", {{"message", e}});
  }
}

Outcome Refused(Outcome out, std::string message) {
  out.kind = Outcome::Kind::kRefused;
  out.exit_code = 125;
  out.message = std::move(message);
  return out;
}

// --resolve HOST:ADDR[,ADDR], as the proxy's name overrides. Returns the refusal ("" when all
// parse).
std::string AddResolveOverrides(const std::vector<std::string>& resolve,
                                net::ResolverOverrides* overrides) {
  for (const std::string& r : resolve) {
    Status st = net::AddResolveOverride(r, overrides);
    if (!st.ok()) return "--resolve " + r + ": " + st.ToString();
  }
  return "";
}

// The launch plan for this kernel and this terminal.
Result<enforce::LaunchPlan> PlanRun(const RunRequest& req, const enforce::KernelFeatures& features,
                                    const TerminalState& term, enforce::PlanNotes* notes) {
  enforce::PlanInput input;
  input.argv = req.argv;
  input.env = req.env;
  input.exec_server = req.exec_channel >= 0;
  for (int fd = 0; fd < 3; ++fd) input.tty[fd] = term.is_tty(fd);
  // A container's terminal is the engine's: a pty for all three, its master on the console
  // socket.
  if (req.container && !req.container->console_socket.empty()) {
    for (bool& tty : input.tty) tty = true;
  }
  if (enforce::LandlockLacksTruncate(features.landlock_abi)) {
    input.truncatable_stdio = enforce::TruncatableStdio(input.tty);
  }
  // The seccomp filter is sent after the clone, while sandbox init builds the root.
  input.prepare_seccomp = false;
  input.workspace_layer = req.workspace_layer;
  if (req.container) input.image = req.container->image;
  Result<enforce::LaunchPlan> plan = enforce::PlanLaunch(req.policy, features, input, notes);
  // A container's command waits for the seccomp program, which waits for its start.
  if (plan.ok() && req.container && !plan->seccomp_enabled) {
    return InvalidArgument("ward oci needs seccomp, which waits for the container's start");
  }
  return plan;
}

// What the plan still needs before the clone: its credentials, the terminal's settings, and the
// approvals' check. Returns the refusal ("" when the run may go on).
std::string CompletePlan(const RunRequest& req, const RunCredentialsOptions& creds_options,
                         const TerminalState& term, enforce::LaunchPlan* plan) {
  // Credentials: checked now; their secrets are fetched only after the clone, so that sandbox
  // init, a copy of this process's memory, never holds one.
  if (policy::InterceptsTls(req.policy)) {
    Status st = PlanRunCredentials(req.policy, creds_options, plan);
    if (!st.ok()) return std::move(st).With("credentials").ToString();
  }
  plan->has_termios = term.termios(&plan->termios);
  plan->has_winsize = term.winsize(&plan->winsize);
  if (req.policy.approvals.enabled) {
    Status st = CheckApprovalRun(req.approvals);
    if (!st.ok()) return "approvals: " + st.ToString();
  }
  return "";
}

Status CreateRunCgroup(const enforce::LaunchPlan& plan, std::unique_ptr<enforce::Cgroup>* cgroup,
                       Outcome* out) {
  Result<std::unique_ptr<enforce::Cgroup>> cg = enforce::Cgroup::Create(plan.limits.cgroup);
  if (!cg.ok()) return std::move(cg).take_status().With("resource limits");
  *cgroup = std::move(cg).value();
  out->limits.cgroup = (*cgroup)->paths();
  TraceMark("cgroup created");
  return Ok();
}

// v2: made first, and init is cloned into it. v1: made after the clone, while init builds the
// root, off the start-up's path, and joined by init before it may fork the command
// (SendCgroupJoin).
Status CreateCgroupBeforeClone(enforce::LaunchPlan* plan, std::unique_ptr<enforce::Cgroup>* cgroup,
                               Outcome* out) {
  plan->cgroup_after_clone = plan->limits.cgroup.version == 1;
  if (plan->limits.cgroup.version == 0 || plan->cgroup_after_clone) return Ok();
  enforce::DiscardPreclonedInit();  // init is cloned into the v2 cgroup instead
  return CreateRunCgroup(*plan, cgroup, out);
}

// The reaper removes the cgroup if the supervisor dies, so it starts as soon as both the
// cgroup and the sandbox exist, before init may run the command: a supervisor killed while
// the command runs leaves no cgroup behind. Only a kill between the cgroup's mkdir and this
// (the cgroup's own setup on v1; the clone as well on v2) leaves an empty one, for the next
// run's sweep. The reaper also holds the sandbox's mount namespace: its teardown is then the
// reaper's work after the run, not init's exit's, which the cgroup's removal waits for.
void StartReaper(const enforce::Sandbox& sb, enforce::Cgroup* cgroup) {
  UniqueFd mnt_ns(
      open(("/proc/" + std::to_string(sb.pid) + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
  cgroup->StartReaper(mnt_ns.get());
  TraceMark("cgroup reaper started");
}

// What the supervisor still owes init after the clone failed: the half-made sandbox dies
// before anything in it ran, and the run is refused.
Outcome RefuseAfterClone(const enforce::Sandbox& sb, Outcome out, const Status& st) {
  enforce::SignalInit(sb, SIGKILL);
  waitpid(sb.pid, nullptr, 0);
  return Refused(std::move(out), st.ToString());
}

// The host paths the sandbox can write (its HOME and /tmp are tmpfs of its own; in review mode
// the upper layer or the copy, in ward's state directory): the audit trail must not be where
// they could fill its file system.
std::vector<std::string> SandboxWritablePaths(const RunRequest& req) {
  std::vector<std::string> paths;
  if (req.review) paths.push_back(req.review->tree());
  if (req.policy.workspace_access == policy::Access::kWrite) paths.push_back(req.policy.workspace);
  for (const policy::PathRule& r : req.policy.paths) {
    if (r.access == policy::Access::kWrite) paths.push_back(r.path);
  }
  return paths;
}

// After the clone, while init builds the root: ward's own directories out of the view (a run
// refused for it keeps no trail: the trail could be where the sandbox would see it), then the
// audit trail, whose write errors from then on stop the run (audit_stop).
Status CheckAndOpenAudit(const RunRequest& req, const std::shared_ptr<AuditStop>& audit_stop,
                         RunAudit* audit) {
  if (Status hidden = CheckOutOfView(req.policy, req.out_of_view); !hidden.ok()) {
    audit->Forgo();
    return hidden;
  }
  WARD_TRY(audit->Open(SandboxWritablePaths(req)));
  audit->OnFailure([audit_stop](const Status& st) { audit_stop->Fail(st); });
  return Ok();
}

// A run that brokers credentials or asks a webhook needs OpenSSL: opening it overlaps with
// the planning, on a thread settled before the clone (a clone copies only the calling thread).
void StartTlsPreload(const RunRequest& req, std::optional<ElsewhereThread>* preload) {
  if (!policy::InterceptsTls(req.policy) && req.approvals.approver.empty()) return;
  try {
    preload->emplace([] { (void)libssl::Load(); });
  } catch (const std::system_error&) {
    // No thread to be had: the broker or the webhook loads it when it starts.
  }
}

void ClassifyDeniedWrites(const RunRequest& req, DenialTee* denials) {
  denials->ClassifyWrites([&req](const std::string& path) -> std::string {
    const policy::PathDecision d = policy::DecidePath(req.policy, path);
    if (d.is_protected) return "protected";
    if (d.visibility == policy::PathDecision::Visibility::kWrite) return "writable";
    return "";
  });
}

// The rest of init's setup, sent while it builds the root (it waits for all of it before it
// starts the command): the network namespace, a v1 cgroup to join, the seccomp program. A
// container waits for its start before the last.
Status SendRestOfSetup(const RunRequest& req, enforce::Sandbox* sb, enforce::LaunchPlan* plan,
                       std::unique_ptr<enforce::Cgroup>* cgroup, Outcome* out,
                       std::vector<EarlyControl>* early) {
  Status sent = enforce::StartSandboxNet(sb, *plan);
  if (!sent.ok()) return sent;
  TraceMark("network namespace made and sent");
  if (plan->cgroup_after_clone) {
    Status made = CreateRunCgroup(*plan, cgroup, out);
    if (made.ok()) {
      StartReaper(*sb, cgroup->get());
      made = enforce::SendCgroupJoin(*sb, (*cgroup)->self_join_fds());
    }
    if (!made.ok()) return made;
    (*cgroup)->CloseSelfJoinFds();
    if (req.container) WARD_TRY(AwaitInitInCgroup(*sb, **cgroup));
  }
  if (req.container) WARD_TRY(AwaitContainerStart(*req.container, *sb, early));
  if (plan->seccomp_enabled) {
    Status seccomp = PrepareAndSendSeccomp(*sb, plan);
    if (!seccomp.ok()) return seccomp;
    TraceMark("seccomp program sent");
  }
  return Ok();
}

// session.start, built on a thread of its own. Copies: the thread may outlive this plan; the
// request outlives it (Run waits for the record before it returns).
void WriteStartRecord(const RunRequest& req, const enforce::LaunchPlan& plan,
                      const enforce::PlanNotes& notes, const enforce::KernelFeatures& features,
                      RunAudit* audit) {
  if (!audit->open()) return;
  audit->WriteStart([&req, plan, notes, features] { return StartRecord(req, plan, notes, features); });
}

// The credential broker's options: the upstream CAs, and where a container's image keeps its CA
// bundle (the merged one goes there).
RunCredentialsOptions CredentialsOptionsFor(const RunRequest& req) {
  RunCredentialsOptions o;
  o.upstream_ca_files = req.upstream_ca;
  if (req.container) o.bundle_target = req.container->image.ca_bundle;
  return o;
}

// The run from its plan to the end of everything inside; the audit trail is opened on the way.
// The run's egress, checked before anything starts: a bad pattern (an allow or deny rule, a
// method and path rule, a --resolve override) refuses the run naming it.
struct EgressSetup {
  net::EgressRules rules;
  net::RequestRules requests;
  net::ResolverOverrides overrides;
};

Result<EgressSetup> CompileEgress(const RunRequest& req) {
  EgressSetup e;
  WARD_ASSIGN_OR_RETURN(e.rules, net::EgressRules::Compile(req.policy.network));
  WARD_ASSIGN_OR_RETURN(e.requests, net::RequestRules::Compile(req.policy.network.rules));
  if (std::string bad = AddResolveOverrides(req.resolve, &e.overrides); !bad.empty()) {
    return InvalidArgument(bad);
  }
  return e;
}

Outcome LaunchAndServe(const RunRequest& req, RunAudit* audit, CommandLookup* command) {
  Outcome out;
  auto start = Clock::now();
  std::optional<ElsewhereThread> tls_preload;
  StartTlsPreload(req, &tls_preload);
  // The file system's clock (coarse): whatever changes from now on has a ctime at or after it.
  struct timespec run_start = {};
  clock_gettime(CLOCK_REALTIME_COARSE, &run_start);
  Result<EgressSetup> egress = CompileEgress(req);
  if (!egress.ok()) return Refused(std::move(out), egress.status().ToString());
  enforce::KernelFeatures features =
      req.features ? *req.features : enforce::ProbeKernel(/*probe_user_ns=*/false);
  TraceMark("kernel probed");
  TerminalState term;
  term.Capture();
  Result<enforce::LaunchPlan> plan = PlanRun(req, features, term, &out.notes);
  if (!plan.ok()) return Refused(std::move(out), plan.status().ToString());
  PlanTransparentCapture(req.policy, egress->rules, &*plan);
  TraceMark("planned");
  const RunCredentialsOptions creds_options = CredentialsOptionsFor(req);
  if (std::string refused = CompletePlan(req, creds_options, term, &*plan); !refused.empty()) {
    return Refused(std::move(out), std::move(refused));
  }
  // A write to a closed pipe must not kill the supervisor (the sandbox would die with it).
  signal(SIGPIPE, SIG_IGN);
  out.limits.backend = enforce::LimitsBackendName(plan->limits.backend);
  std::unique_ptr<enforce::Cgroup> cgroup;
  if (Status made = CreateCgroupBeforeClone(&*plan, &cgroup, &out); !made.ok()) {
    return Refused(std::move(out), made.ToString());
  }
  if (tls_preload) tls_preload->Settle();
  Result<enforce::Sandbox> sb = enforce::StartSandbox(*plan, cgroup.get());
  if (!sb.ok()) return Refused(std::move(out), sb.status().ToString());
  TraceMark("cloned");
  net::CredentialSetup creds;
  if (plan->await_late_setup) {
    Status sent = FetchAndSendCredentials(req, creds_options, *sb, &*plan, &creds);
    if (!sent.ok()) return RefuseAfterClone(*sb, std::move(out), sent);
    TraceMark("credentials prepared and sent");
  }
  // A v2 cgroup was made before the clone: its reaper starts once init has its late setup,
  // which it waits for before it builds the root. (A v1 cgroup's starts once it is made.)
  if (cgroup && !plan->cgroup_after_clone) StartReaper(*sb, cgroup.get());
  // Init is busy building the root now: the audit trail is opened meanwhile, and before the
  // network namespace and the seccomp program are sent (init waits for both before it starts
  // the command), so that a trail which cannot be written refuses the run before the command
  // ever ran.
  auto audit_stop = std::make_shared<AuditStop>();  // the log may report after Run returned
  if (Status opened = CheckAndOpenAudit(req, audit_stop, audit); !opened.ok()) {
    return RefuseAfterClone(*sb, std::move(out), opened);
  }
  // Every event passes the tee that gathers the run's denials on its way to the trail (or to
  // the caller's sink without one).
  DenialTee denials(audit->open() ? audit->events() : req.events);
  ClassifyDeniedWrites(req, &denials);
  EventSink* events = &denials;
  // The redactor knows every secret before the first record.
  for (const std::string& secret : creds.secrets) audit->AddSecret(secret);
  std::vector<EarlyControl> early;
  if (Status sent = SendRestOfSetup(req, &*sb, &*plan, &cgroup, &out, &early); !sent.ok()) {
    return RefuseAfterClone(*sb, std::move(out), sent);
  }
  // The supervisor has sent init all it needs and waits for it: the lookup's stats and the
  // start record are off the path of the sandbox's own setup.
  *command = LookUpRunCommand(req);
  WriteStartRecord(req, *plan, out.notes, features, audit);
  CreationJournal journal(ProtectedComponents(plan->mount.protect.relpaths));
  // Without the guard, the check tells what the run made at a protected name by what was there.
  std::set<std::string> existed;
  if (!plan->seccomp_spec.notify_creations) {
    existed = ProtectedNamesNow(plan->mount.protect.roots, plan->mount.protect.relpaths);
  }
  // The run ends on init's report, before init's own exit; the cgroup is removed after it.
  UniqueFd init_pidfd(cgroup ? dup(sb->pidfd.get()) : -1);
  // The run's own network counters outlive the sandbox (its namespace stays theirs).
  UniqueFd net_snmp = std::move(sb->net_snmp), net_snmp6 = std::move(sb->net_snmp6);
  {
    if (plan->net.enabled) RaiseFileLimit();
    SandboxServer server(req, std::move(sb).value(), *plan, &term, &out, cgroup.get(),
                         &egress->rules, &egress->overrides, creds.broker.get(), events);
    server.StopOnAuditFailure(audit_stop.get());
    server.CheckRequestsWith(&egress->requests);
    server.HandleFirst(std::move(early));
    server.RecordCreationsIn(&journal);
    if (req.container || req.exec_channel >= 0) server.GatherExecDenialsIn(&denials);
    if (req.exec_channel >= 0) {
      // Each exec's end: what the sandbox made so far is judged now, as after a run (the
      // sandbox's other processes go on, and the check at its close judges again).
      server.CheckAfterEachExec([&] {
        Outcome now;
        now.mounts = out.mounts;
        CheckWorkspace(req, *plan, journal, run_start, existed, events, &now);
        nlohmann::json q = nlohmann::json::array();
        for (const QuarantineItem& item : now.workspace.quarantined) q.push_back(item.ToJson());
        return nlohmann::json{{"quarantined", q}};
      });
    }
    server.Serve();
  }
  // Read only for a command that failed: that is when the user needs to know why, and a run
  // that succeeded does not pay for generating the kernel's counter tables.
  if (out.kind != Outcome::Kind::kExited || out.exit_code != 0) {
    ReportUnroutedSends(net_snmp.get(), net_snmp6.get(), events);
  }
  // Every process of the sandbox is dead now: nothing races the check.
  CheckWorkspace(req, *plan, journal, run_start, std::move(existed), events, &out);
  sys::SetEffectiveCapabilities(true);
  CollectLimits(req, events, *plan, cgroup.get(), init_pidfd.get(), &out);
  if (cgroup) TraceMark("cgroup removed");
  TraceMark("run over");
  out.denials = denials.Finish();
  TraceMark("denials gathered");
  out.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (!out.rusage_from_init) getrusage(RUSAGE_CHILDREN, &out.rusage);
  return out;
}

// A trail that cannot be written ends the run with 125 (fail closed): the message says what
// failed, what was not recorded, and what to do about it.
void ReportAuditFailure(const Status& st, const RunAudit& audit, Outcome* out) {
  std::string what;
  if (out->kind == Outcome::Kind::kAuditFailed) {
    what = out->message;  // the supervisor stopped the sandbox for it
  } else if (out->kind == Outcome::Kind::kRefused) {
    what = out->message + "; and the audit trail could not be written: " + st.ToString();
  } else {
    what = "the audit trail could not be written (the command's own outcome: " +
           std::string(OutcomeKindName(out->kind)) + ", exit status " +
           std::to_string(out->exit_code) + "): " + st.ToString();
  }
  what += audit.FailureAdvice(st);
  if (out->kind != Outcome::Kind::kRefused) {
    out->kind = Outcome::Kind::kAuditFailed;
    out->stage = "audit";
    out->err = st.err();
    out->signal = 0;
  }
  out->exit_code = 125;
  out->message = what;
}

// After the run: what it left for review, the note on its command, and the audit trail's last
// records (a run refused before the clone gets its session now, to say so).
void FinishRun(const RunRequest& req, const CommandLookup& command, RunAudit* audit,
               Outcome* out) {
  // Everything inside is gone: what the run left in the session's tree is final.
  if (req.review) out->review_changed = TreeHoldsChanges(*req.review);
  audit->WaitForStart();
  out->command_note = NoteRunCommand(req, command, audit, out);
  const bool refused = out->kind == Outcome::Kind::kRefused;
  if (refused) audit->OpenForRefusal();
  if (!audit->open()) return;
  out->audit_session = audit->session_id();
  Status closed = audit->Close(req.argv, refused ? out->message : "", EndRecord(req, *out));
  if (!closed.ok()) ReportAuditFailure(closed, *audit, out);
}

}  // namespace

Outcome Run(const RunRequest& req) {
  RunAudit audit(req.audit);
  CommandLookup command;
  Outcome out = LaunchAndServe(req, &audit, &command);
  FinishRun(req, command, &audit, &out);
  return out;
}

}  // namespace ward::supervisor
