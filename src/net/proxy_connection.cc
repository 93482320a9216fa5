#include "net/proxy_connection.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/post.hpp>
#include <asio/write.hpp>
#include <cstring>

#include "net/socks5.h"
#include "net/text_util.h"
#include "net/tls_client_hello.h"

namespace ward::net::internal {

namespace {

constexpr auto kWriteErrorTimeout = std::chrono::milliseconds(5000);
constexpr auto kLingerTimeout = std::chrono::milliseconds(1000);
constexpr auto kOverCapTimeout = std::chrono::milliseconds(1000);
constexpr size_t kLingerMaxBytes = 256 << 10;
constexpr size_t kSniffBytes = 4096;
constexpr size_t kSocksBuffer = kSocks5MaxGreeting + kSocks5MaxRequest + 4096;
constexpr size_t kPendingKeepCapacity = 64 << 10;
// A tunnel direction that has moved this much is a bulk transfer: from then on the kernel moves
// its bytes (splice), and small exchanges never cost a pipe's two descriptors.
constexpr uint64_t kSpliceAfter = 256 << 10;
constexpr int kSpliceRoundsPerYield = 16;  // then let other connections run

constexpr std::string_view kConnectEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
// A fatal TLS alert, access_denied: what a client that sent a refused ClientHello reads.
constexpr char kTlsAlertAccessDenied[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x31};
constexpr uint8_t kTlsHandshakeRecord = 0x16;

const char* StatusText(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 408:
      return "Request Timeout";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

}  // namespace

Connection::Connection(std::shared_ptr<ProxyCore> core, asio::ip::tcp::socket client, bool over_cap,
                       int transparent_family)
    : core_(std::move(core)),
      over_cap_(over_cap),
      transparent_family_(transparent_family),
      client_(core_->ctx),
      upstream_(core_->ctx),
      id_(core_->next_connection_id++),
      watchdog_(core_->ctx) {
  client_.sock = std::move(client);
  last_activity_ = Clock::now();
  if (over_cap_) {
    core_->rejecting++;
  } else {
    core_->stats.active++;
  }
  core_->connections.insert(this);
}

Connection::~Connection() {
  core_->connections.erase(this);
  if (over_cap_) {
    core_->rejecting--;
  } else {
    core_->stats.active--;
  }
  core_->stats.buffered -= client_.pending.size() + upstream_.pending.size();
}

void Connection::Start(const std::shared_ptr<Connection>& conn) {
  asio::co_spawn(conn->core_->ctx, conn->Run(conn), [conn](std::exception_ptr e) {
    // Nothing on the data path throws on purpose; an exception here (allocation failure) ends
    // this connection only.
    if (e) {
      conn->core_->stats.errors++;
      conn->CloseAll();
    }
  });
}

void Connection::Abort() {
  aborted_ = true;
  FinishUpstream();
  CloseAll();
}

void Connection::CloseAll() {
  closed_ = true;
  asio::error_code ec;
  client_.sock.close(ec);
  upstream_.sock.close(ec);
  if (resolve_wait_) resolve_wait_->Cancel();
  if (host_hold_) host_hold_->Cancel();
  watchdog_.cancel();
  armed_ = false;
}

// ------------------------------------------------------------------ watchdog

void Connection::SetDeadline(std::chrono::milliseconds d, Phase phase) {
  phase_ = phase;
  deadline_ = Clock::now() + d;
  Arm(deadline_);
}

void Connection::SetIdle() {
  phase_ = Phase::kIdle;
  Arm(Due());
}

void Connection::ClearDeadline() { phase_ = Phase::kNone; }

Clock::time_point Connection::Due() const {
  if (phase_ == Phase::kIdle) return last_activity_ + core_->options.idle_timeout;
  return deadline_;
}

void Connection::Arm(Clock::time_point at) {
  if (closed_) return;
  // A wait that fires earlier re-checks and re-arms, so moving a deadline later costs nothing.
  if (armed_ && armed_at_ <= at) return;
  armed_ = true;
  armed_at_ = at;
  uint64_t generation = ++generation_;
  watchdog_.expires_at(at);
  watchdog_.async_wait([weak = weak_from_this(), generation](const asio::error_code&) {
    if (auto self = weak.lock()) self->OnWatchdog(generation);
  });
}

void Connection::OnWatchdog(uint64_t generation) {
  if (generation != generation_) return;  // superseded by a re-arm
  armed_ = false;
  if (closed_ || phase_ == Phase::kNone) return;
  Clock::time_point due = Due();
  if (Clock::now() < due) {
    Arm(due);
    return;
  }
  if (phase_ == Phase::kConnect) {
    // Only this attempt: the next pinned address may still answer.
    connect_timed_out_ = true;
    asio::error_code ec;
    upstream_.sock.close(ec);
    return;
  }
  if (phase_ != Phase::kLinger) core_->stats.errors++;
  CloseAll();
}

// ------------------------------------------------------------------ I/O

asio::awaitable<size_t> Connection::ReadSome(Side& s, size_t max, asio::error_code& ec) {
  ec = {};
  max = std::min(max, core_->scratch.size());
  if (max == 0) max = 1;
  if (!s.leftover.empty()) {
    size_t n = std::min(max, s.leftover.size());
    std::memcpy(core_->scratch.data(), s.leftover.data(), n);
    s.leftover.erase(0, n);
    co_return n;
  }
  if (s.tls) co_return co_await TlsReadSome(s, max, ec);
  co_return co_await RawReadSome(s, max, ec);
}

asio::awaitable<size_t> Connection::RawReadSome(Side& s, size_t max, asio::error_code& ec) {
  ec = {};
  max = std::min(max, core_->scratch.size());
  if (max == 0) max = 1;
  while (true) {
    if (closed_) {
      ec = asio::error::operation_aborted;
      co_return 0;
    }
    size_t n = s.sock.read_some(asio::buffer(core_->scratch.data(), max), ec);
    if (!ec) {
      last_activity_ = Clock::now();
      co_return n;
    }
    if (ec != asio::error::would_block && ec != asio::error::try_again) co_return 0;
    co_await s.sock.async_wait(asio::ip::tcp::socket::wait_read, Await(ec));
    if (ec) co_return 0;
  }
}

asio::awaitable<void> Connection::ReadMore(Side& s, size_t limit, asio::error_code& ec) {
  ec = {};
  if (s.leftover.size() >= limit) {
    ec = asio::error::message_size;
    co_return;
  }
  if (s.tls) {
    size_t room = std::min(limit - s.leftover.size(), core_->scratch.size());
    size_t n = co_await TlsReadSome(s, room, ec);
    if (!ec) s.leftover.append(core_->scratch.data(), n);
    co_return;
  }
  while (true) {
    if (closed_) {
      ec = asio::error::operation_aborted;
      co_return;
    }
    size_t room = std::min(limit - s.leftover.size(), core_->scratch.size());
    size_t n = s.sock.read_some(asio::buffer(core_->scratch.data(), room), ec);
    if (!ec) {
      last_activity_ = Clock::now();
      s.leftover.append(core_->scratch.data(), n);
      co_return;
    }
    if (ec != asio::error::would_block && ec != asio::error::try_again) co_return;
    co_await s.sock.async_wait(asio::ip::tcp::socket::wait_read, Await(ec));
    if (ec) co_return;
  }
}

asio::awaitable<void> Connection::WriteAll(Side& s, std::string_view data, asio::error_code& ec) {
  ec = {};
  if (s.tls) {
    if (data.empty()) co_return;
    if (s.tls->Write(data) != TlsChannel::Io::kOk) {
      tls_error_ = s.tls->error();
      ec = asio::error::connection_aborted;
      co_return;
    }
    co_await FlushTls(s, ec);
    co_return;
  }
  co_await RawWriteAll(s, data, ec);
}

asio::awaitable<void> Connection::FlushTls(Side& s, asio::error_code& ec) {
  ec = {};
  if (!s.tls || !s.tls->HasOutput()) co_return;
  std::string out = s.tls->TakeOutput();
  co_await RawWriteAll(s, out, ec);
}

asio::awaitable<size_t> Connection::TlsReadSome(Side& s, size_t max, asio::error_code& ec) {
  ec = {};
  max = std::min(max, core_->scratch.size());
  if (max == 0) max = 1;
  while (true) {
    if (closed_) {
      ec = asio::error::operation_aborted;
      co_return 0;
    }
    size_t n = 0;
    TlsChannel::Io io = s.tls->Read(core_->scratch.data(), max, &n);
    if (s.tls->HasOutput()) {
      // Reading can produce records to send (key updates, alerts). They go out before the
      // plaintext in scratch is used, so keep that in a copy.
      std::string plain(core_->scratch.data(), io == TlsChannel::Io::kOk ? n : 0);
      co_await FlushTls(s, ec);
      if (ec) co_return 0;
      std::memcpy(core_->scratch.data(), plain.data(), plain.size());
    }
    switch (io) {
      case TlsChannel::Io::kOk:
        last_activity_ = Clock::now();
        co_return n;
      case TlsChannel::Io::kClosed:
        ec = asio::error::eof;
        co_return 0;
      case TlsChannel::Io::kError:
        tls_error_ = s.tls->error();
        ec = asio::error::connection_aborted;
        co_return 0;
      case TlsChannel::Io::kWantRead:
        break;
    }
    // A peer that closes without close_notify ends the stream as well: HTTP framing (which the
    // proxy checks) tells a complete message from a truncated one.
    size_t got = co_await RawReadSome(s, core_->scratch.size(), ec);
    if (ec) co_return 0;
    s.tls->Feed(std::string_view(core_->scratch.data(), got));
  }
}

asio::awaitable<void> Connection::TlsHandshake(Side& s, asio::error_code& ec) {
  ec = {};
  while (true) {
    if (closed_) {
      ec = asio::error::operation_aborted;
      co_return;
    }
    TlsChannel::Io io = s.tls->Handshake();
    co_await FlushTls(s, ec);
    if (ec) co_return;
    if (io == TlsChannel::Io::kOk) co_return;
    if (io != TlsChannel::Io::kWantRead) {
      tls_error_ =
          io == TlsChannel::Io::kClosed ? "TLS handshake: the peer closed" : s.tls->error();
      ec = asio::error::connection_aborted;
      co_return;
    }
    if (!s.leftover.empty()) {
      // Ciphertext read before TLS started (the ClientHello that was checked).
      s.tls->Feed(s.leftover);
      s.leftover.clear();
      continue;
    }
    size_t got = co_await RawReadSome(s, core_->scratch.size(), ec);
    if (ec) {
      if (ec == asio::error::eof) tls_error_ = "TLS handshake: the peer closed";
      co_return;
    }
    s.tls->Feed(std::string_view(core_->scratch.data(), got));
  }
}

asio::awaitable<void> Connection::RawWriteAll(Side& s, std::string_view data,
                                              asio::error_code& ec) {
  ec = {};
  const bool up = &s == &upstream_;
  auto account = [&](size_t n) { Account(up, n); };
  // Fast path: the kernel takes it now and nothing is copied.
  while (!data.empty()) {
    if (closed_) {
      ec = asio::error::operation_aborted;
      co_return;
    }
    size_t n = s.sock.write_some(asio::buffer(data.data(), data.size()), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      ec = {};
      break;
    }
    if (ec) co_return;
    account(n);
    data.remove_prefix(n);
  }
  if (data.empty()) co_return;
  // The reader is slower: keep the rest (data may live in the shared scratch buffer) and stop
  // reading the other side until it is written. This is the backpressure.
  s.pending.assign(data.data(), data.size());
  size_t held = s.pending.size();
  core_->stats.buffered += held;
  size_t n = co_await asio::async_write(s.sock, asio::buffer(s.pending), Await(ec));
  core_->stats.buffered -= held;
  account(n);
  if (s.pending.capacity() > kPendingKeepCapacity) {
    std::string().swap(s.pending);
  } else {
    s.pending.clear();
  }
}

void Connection::Account(bool upward, size_t n) {
  if (n == 0) return;
  last_activity_ = Clock::now();
  if (upward) {
    upstream_up_ += n;
    core_->stats.bytes_up += n;
  } else {
    upstream_down_ += n;
    core_->stats.bytes_down += n;
  }
}

asio::awaitable<bool> Connection::SpliceCopy(Side& from, Side& to, uint64_t limit,
                                             asio::error_code& ec) {
  ec = {};
  if (!core_->options.splice || from.tls || to.tls) co_return false;
  std::optional<Pipe> pipe = Pipe::Open(core_->options.buffer_high_watermark);
  if (!pipe) co_return false;
  const bool up = &to == &upstream_;
  // The kernel rounds a pipe's size up to a power of two pages, and keeps its default size when
  // the user's pipe quota is spent: the bound is what the options say, whatever the pipe holds.
  const size_t bound =
      std::max<size_t>(std::min(pipe->capacity, core_->options.buffer_high_watermark), 1);
  size_t in_pipe = 0;  // read from `from`, not yet written to `to`: at most `bound`
  uint64_t to_read = limit;
  bool eof = false;
  int rounds = 0;
  while (true) {
    // Descriptors are fetched after every suspension: a closed socket's number may be reused.
    if (closed_ || !from.sock.is_open() || !to.sock.is_open()) {
      ec = asio::error::operation_aborted;
      break;
    }
    const int in = from.sock.native_handle();
    const int out = to.sock.native_handle();
    bool moved = false, write_blocked = false;
    if (!eof && to_read > 0 && in_pipe < bound) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(bound - in_pipe, to_read));
      ssize_t n = splice(in, nullptr, pipe->write_end.get(), nullptr, want,
                         SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        in_pipe += static_cast<size_t>(n);
        to_read -= static_cast<uint64_t>(n);
        core_->stats.buffered += static_cast<uint64_t>(n);
        last_activity_ = Clock::now();
        moved = true;
      } else if (n == 0) {
        eof = true;
      } else if (errno != EAGAIN && errno != EINTR) {
        ec = asio::error_code(errno, asio::system_category());
        break;
      }
    }
    if (in_pipe > 0) {
      ssize_t m = splice(pipe->read_end.get(), nullptr, out, nullptr, in_pipe,
                         SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (m > 0) {
        in_pipe -= static_cast<size_t>(m);
        core_->stats.buffered -= static_cast<uint64_t>(m);
        Account(up, static_cast<size_t>(m));
        moved = true;
      } else if (m < 0 && errno == EAGAIN) {
        write_blocked = true;
      } else if (m < 0 && errno != EINTR) {
        ec = asio::error_code(errno, asio::system_category());
        break;
      }
    }
    if (in_pipe == 0 && (eof || to_read == 0)) {
      if (eof) ec = asio::error::eof;
      break;
    }
    if (moved) {
      if (++rounds % kSpliceRoundsPerYield == 0)
        co_await asio::post(core_->ctx, asio::use_awaitable);
      continue;
    }
    asio::error_code wait_ec;
    if (in_pipe > 0 && (write_blocked || eof || to_read == 0 || in_pipe >= bound)) {
      co_await to.sock.async_wait(asio::ip::tcp::socket::wait_write, Await(wait_ec));
    } else {
      co_await from.sock.async_wait(asio::ip::tcp::socket::wait_read, Await(wait_ec));
    }
    if (wait_ec) {
      ec = wait_ec;
      break;
    }
  }
  core_->stats.buffered -= in_pipe;
  co_return true;
}

void Connection::PutBack(Side& s, const char* data, size_t n) {
  if (n > 0) s.leftover.insert(0, data, n);
}

asio::awaitable<void> Connection::SendError(int status, const std::string& body,
                                             std::string_view phrase) {
  std::string resp = "HTTP/1.1 " + std::to_string(status) + " " +
                     (phrase.empty() ? std::string(StatusText(status)) : std::string(phrase)) +
                     "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  SetDeadline(std::chrono::duration_cast<std::chrono::milliseconds>(kWriteErrorTimeout),
              Phase::kHead);
  asio::error_code ec;
  co_await WriteAll(client_, resp, ec);
  if (ec) {
    CloseAll();
    co_return;
  }
  co_await LingerClose();
}

asio::awaitable<void> Connection::LingerClose() {
  if (closed_) co_return;
  asio::error_code ec;
  if (client_.tls) {
    client_.tls->Shutdown();
    co_await FlushTls(client_, ec);
  }
  client_.sock.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  SetDeadline(std::chrono::duration_cast<std::chrono::milliseconds>(kLingerTimeout),
              Phase::kLinger);
  size_t drained = 0;
  while (!closed_ && drained < kLingerMaxBytes) {
    size_t n = co_await ReadSome(client_, core_->scratch.size(), ec);
    if (ec) break;
    drained += n;
  }
  CloseAll();
}

// ------------------------------------------------------------------ events

void Connection::EmitDeny(const Target& t, std::string_view reason, std::string_view rule,
                          std::string_view origin, std::string_view detail, nlohmann::json extra,
                          std::string_view allow_with) {
  core_->stats.denied++;
  refusal_ = RefusalSentence(RefusalTarget(t.host, t.port), rule, origin, reason == "no_rule",
                             detail, allow_with);
  nlohmann::json data = {{"host", t.host.ToString()},
                         {"port", t.port},
                         {"reason", reason},
                         {"rule", rule},
                         {"origin", origin},
                         {"detail", detail},
                         {"via", t.via},
                         {"why", refusal_},
                         {"allow_with", allow_with}};
  for (auto& [k, v] : extra.items()) data[k] = v;
  core_->Emit("net.deny", std::move(data));
}

void Connection::EmitError(const Target& t, std::string_view reason, std::string_view detail) {
  core_->stats.errors++;
  core_->Emit("net.error", {{"host", t.host.ToString()},
                            {"port", t.port},
                            {"reason", reason},
                            {"detail", detail},
                            {"via", t.via}});
}

void Connection::FinishUpstream() {
  if (!upstream_open_) return;
  upstream_open_ = false;
  asio::error_code ec;
  upstream_.sock.close(ec);
  upstream_.leftover.clear();
  upstream_.tls.reset();
  if (upstream_denied_) return;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - upstream_start_);
  nlohmann::json data = {{"host", upstream_target_.host.ToString()},
                         {"port", upstream_target_.port},
                         {"addr", upstream_addr_.ToString()},
                         {"rule", upstream_target_.rule},
                         {"origin", upstream_target_.origin},
                         {"bytes_up", upstream_up_},
                         {"bytes_down", upstream_down_},
                         {"duration_ms", ms.count()},
                         {"via", upstream_target_.via}};
  if (std::string_view(upstream_target_.via) == "http") data["requests"] = upstream_requests_;
  if (upstream_target_.approved) data["approval"] = "approved";
  core_->Emit("net.allow", std::move(data));
}

asio::awaitable<void> Connection::SendRefusal(const Target& t) {
  // The status line is what most clients show (npm, pip, git, curl -v); the body is for those
  // that print it.
  const std::string line = "ward: " + refusal_;
  // (A target is a parsed host or address, or quoted by QuoteUntrusted: printable already.)
  co_await SendError(403, line + "\nsee: ward why " + RefusalTarget(t.host, t.port) + "\n", line);
}

asio::awaitable<void> Connection::SendFailure(Fail f, const Target& t, const std::string& detail) {
  switch (f) {
    case Fail::kNone:
    case Fail::kClosed:
      CloseAll();
      break;
    case Fail::kDenied:
      co_await SendRefusal(t);
      break;
    case Fail::kTimeout:
      co_await SendError(504, "ward: " + t.Display() + ": " + detail + "\n");
      break;
    case Fail::kResolve:
    case Fail::kRefused:
    case Fail::kUnreachable:
      co_await SendError(502, "ward: " + t.Display() + ": " + detail + "\n");
      break;
  }
}

// ------------------------------------------------------------------ policy and upstream

asio::awaitable<void> Connection::WaitForGovernedAddresses(const Target& t) {
  if (!t.host.is_address() || core_->governed_pending == 0 || !core_->governed_ready) co_return;
  asio::steady_timer bound(core_->ctx, core_->options.connect_timeout);
  bound.async_wait([ready = core_->governed_ready.get(), core = core_](const asio::error_code& ec) {
    if (!ec && core->governed_pending > 0) ready->cancel();  // a resolver that never answers
  });
  asio::error_code ec;
  co_await core_->governed_ready->async_wait(Await(ec));
}

asio::awaitable<Connection::Fail> Connection::Authorize(Target& t, std::string* detail) {
  co_await WaitForGovernedAddresses(t);
  if (closed_) co_return Fail::kClosed;
  const EgressRules& rules = core_->rules;
  EgressRules::Decision d = rules.CheckHost(t.host, t.port);
  t.approved = false;
  if (!d.allowed && ShouldAskHost(t, d)) {
    Fail f = co_await AskHost(t, d, detail);
    if (f != Fail::kNone) co_return f;
    t.approved = true;
    t.rule.clear();
    t.origin = "approval";
  } else if (!d.allowed) {
    *detail = d.reason;
    EmitDeny(t, d.rule.empty() ? "no_rule" : "deny_rule", d.rule,
             d.rule.empty() ? "" : d.origin.ToString(), d.reason, nlohmann::json::object(),
             d.allow_with);
    co_return Fail::kDenied;
  } else {
    t.rule = d.rule;
    t.origin = d.rule.empty() ? "" : d.origin.ToString();
  }
  std::vector<IpAddress> addrs;
  if (t.host.is_address()) {
    addrs.push_back(*t.host.address);
  } else {
    // Only now, with the name allowed, does it leave the supervisor.
    ClearDeadline();
    auto wait = std::make_shared<ResolveWait>(core_->ctx.get_executor());
    resolve_wait_ = wait;
    auto r = co_await ResolveWait::Run(wait, core_->resolver, t.host.name,
                                       Clock::now() + core_->options.connect_timeout);
    resolve_wait_.reset();
    if (closed_) co_return Fail::kClosed;
    if (!r.ok() || r->empty()) {
      *detail = r.ok() ? "no address for " + t.host.name : r.status().message();
      EmitError(t, "resolve", *detail);
      co_return r.ok() || r.status().code() != Code::kTimeout ? Fail::kResolve : Fail::kTimeout;
    }
    addrs = std::move(r).value();
  }
  // Pin: only addresses the rules allow are ever tried, so a name cannot lead to a loopback or
  // metadata address unless that address itself is allowed.
  t.addrs.clear();
  std::optional<EgressRules::Decision> first_denial;
  IpAddress denied_addr;
  for (const IpAddress& a : addrs) {
    EgressRules::Decision ad = rules.CheckAddress(a, t.port);
    if (ad.allowed) {
      if (std::find(t.addrs.begin(), t.addrs.end(), a) == t.addrs.end()) t.addrs.push_back(a);
    } else if (!first_denial) {
      first_denial = std::move(ad);
      denied_addr = a;
    }
  }
  if (!t.host.is_address() && core_->options.request_rules.Governs(t.host, t.port)) {
    for (const IpAddress& a : t.addrs) core_->governed_addresses.emplace(a, t.host);
  }
  if (t.addrs.empty()) {
    *detail = first_denial->reason;
    EmitDeny(t, "address", first_denial->rule,
             first_denial->rule.empty() ? "" : first_denial->origin.ToString(), *detail,
             {{"addr", denied_addr.ToString()}});
    co_return Fail::kDenied;
  }
  core_->stats.allowed++;
  co_return Fail::kNone;
}

bool Connection::ShouldAskHost(const Target& t, const EgressRules::Decision& d) const {
  if (!core_->options.ask_host || d.allowed || !d.rule.empty() || t.port == 0) return false;
  std::string_view via = t.via;
  if (via != "connect" && via != "http" && via != "socks5" && via != "transparent") return false;
  // An address in a blocked range stays blocked whatever the approver says: do not ask.
  if (t.host.is_address() && !core_->rules.CheckAddress(*t.host.address, t.port).allowed) {
    return false;
  }
  return true;
}

asio::awaitable<Connection::Fail> Connection::AskHost(Target& t, const EgressRules::Decision& d,
                                                      std::string* detail,
                                                      const HostQuestion* request) {
  auto deny = [&](const char* outcome, std::string why) {
    *detail = "not approved: " + why;
    EmitDeny(t, "not_approved", "", "", *detail, {{"approval", outcome}}, d.allow_with);
  };
  if (core_->stats.held.load() >= core_->options.max_held_connections) {
    deny("busy", "too many requests are waiting for approval (" + d.reason + ")");
    co_return Fail::kDenied;
  }
  HostQuestion q;
  q.host = t.host.ToString();
  q.port = t.port;
  std::string_view via = t.via;
  q.transport = via == "http"          ? HostTransport::kHttp
                : via == "socks5"      ? HostTransport::kSocks5
                : via == "transparent" ? HostTransport::kTransparent
                                       : HostTransport::kConnect;
  q.connection = id_;
  if (request != nullptr) {
    q.method = request->method;
    q.path = request->path;
    q.rule = request->rule;
  }
  // The hold has its own bound; the head/handshake deadline does not run while a human thinks.
  ClearDeadline();
  auto hold = std::make_shared<HostHold>(core_->ctx.get_executor());
  host_hold_ = hold;
  core_->stats.held++;
  core_->stats.asked++;
  asio::co_spawn(core_->ctx, WatchHeldClient(shared_from_this(), hold), asio::detached);
  HostHold::Outcome outcome = co_await HostHold::Run(
      hold, core_->options.ask_host, std::move(q), Clock::now() + core_->options.host_hold_timeout);
  core_->stats.held--;
  host_hold_.reset();
  switch (outcome) {
    case HostHold::Outcome::kAllowed:
      if (closed_) co_return Fail::kClosed;
      co_return Fail::kNone;
    case HostHold::Outcome::kDenied:
      if (closed_) co_return Fail::kClosed;
      deny("denied", d.reason);
      co_return Fail::kDenied;
    case HostHold::Outcome::kTimeout: {
      if (closed_) co_return Fail::kClosed;
      int64_t ms = core_->options.host_hold_timeout.count();
      std::string within =
          ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
      deny("timeout", "no answer within " + within + " (" + d.reason + ")");
      co_return Fail::kDenied;
    }
    case HostHold::Outcome::kCancelled:
      // The client left (or the proxy stops): nothing connected, and the trail says so.
      deny("cancelled", "the client left while the request was held (" + d.reason + ")");
      if (!closed_) CloseAll();
      co_return Fail::kClosed;
  }
  co_return Fail::kClosed;
}

asio::awaitable<void> Connection::WatchHeldClient(std::shared_ptr<Connection> self,
                                                  std::shared_ptr<HostHold> hold) {
  asio::steady_timer pause(core_->ctx);
  while (!closed_ && !hold->over()) {
    asio::error_code ec;
    co_await client_.sock.async_wait(asio::ip::tcp::socket::wait_read, Await(ec));
    if (ec || closed_ || hold->over()) break;
    if (PeerGone(client_.sock.native_handle())) {
      hold->Cancel();
      break;
    }
    // Bytes sent early stay unread (the hold does not read): look for a hang-up now and then
    // instead of waking on them again at once.
    pause.expires_after(std::chrono::milliseconds(100));
    co_await pause.async_wait(Await(ec));
  }
  (void)self;
}

asio::awaitable<Connection::Fail> Connection::ConnectUpstream(const Target& t,
                                                              std::string* detail) {
  FinishUpstream();
  upstream_.tls.reset();
  Clock::time_point end = Clock::now() + core_->options.connect_timeout;
  Fail last = Fail::kUnreachable;
  *detail = "no address to connect to";
  for (size_t i = 0; i < t.addrs.size(); ++i) {
    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    if (remaining.count() <= 0) {
      last = Fail::kTimeout;
      *detail = "connecting timed out";
      break;
    }
    const IpAddress& a = t.addrs[i];
    auto sock = OpenTcpSocket(core_->ctx, a.is_v4() ? AF_INET : AF_INET6);
    if (!sock.ok()) {
      *detail = sock.status().ToString();
      last = Fail::kUnreachable;
      break;  // out of descriptors: the next address would fail the same way
    }
    upstream_.sock = std::move(sock).value();
    upstream_.leftover.clear();
    connect_timed_out_ = false;
    SetDeadline(remaining / static_cast<long>(t.addrs.size() - i), Phase::kConnect);
    asio::error_code ec;
    co_await upstream_.sock.async_connect(ToEndpoint(a, t.port), Await(ec));
    ClearDeadline();
    if (closed_) co_return Fail::kClosed;
    if (!ec) {
      upstream_open_ = true;
      upstream_denied_ = false;
      upstream_target_ = t;
      upstream_addr_ = a;
      upstream_start_ = Clock::now();
      upstream_up_ = upstream_down_ = upstream_requests_ = 0;
      co_return Fail::kNone;
    }
    asio::error_code ignored;
    upstream_.sock.close(ignored);
    if (connect_timed_out_) {
      last = Fail::kTimeout;
      *detail = "connecting to " + a.ToUriString() + ":" + std::to_string(t.port) + " timed out";
    } else {
      last = ec == asio::error::connection_refused ? Fail::kRefused : Fail::kUnreachable;
      *detail =
          "connecting to " + a.ToUriString() + ":" + std::to_string(t.port) + ": " + ec.message();
    }
  }
  EmitError(t, last == Fail::kTimeout ? "connect_timeout" : "connect", *detail);
  co_return last;
}

bool Connection::UpstreamReusable() {
  if (!upstream_open_ || !upstream_.leftover.empty() || !upstream_.sock.is_open()) return false;
  // An idle upstream that became readable has closed (or sent junk): not reusable.
  char c;
  ssize_t n = ::recv(upstream_.sock.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
  if (n <= 0 || !upstream_.tls) return false;
  // TLS: late handshake messages (session tickets) are fine; data or an alert is not.
  while (true) {
    ssize_t r = ::recv(upstream_.sock.native_handle(), core_->scratch.data(), core_->scratch.size(),
                       MSG_DONTWAIT);
    if (r > 0) {
      upstream_.tls->Feed(std::string_view(core_->scratch.data(), static_cast<size_t>(r)));
      continue;
    }
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return false;
    break;
  }
  size_t got = 0;
  return upstream_.tls->Read(core_->scratch.data(), core_->scratch.size(), &got) ==
             TlsChannel::Io::kWantRead &&
         !upstream_.tls->HasOutput();
}

// ------------------------------------------------------------------ TLS gate

asio::awaitable<bool> Connection::RequireClientHello(const Target& t) {
  upstream_target_ = t;
  Gate g = co_await CheckClientHello(t, /*required=*/true);
  if (g == Gate::kPass) co_return true;
  if (g == Gate::kClosed && !closed_) core_->stats.errors++;
  co_await LingerClose();
  co_return false;
}

asio::awaitable<Connection::Gate> Connection::CheckClientHello(const Target& t, bool required) {
  SetDeadline(core_->options.tls_peek_timeout, Phase::kTls);
  ClientHelloParse p;
  while (true) {
    p = ParseClientHello(client_.leftover);
    if (p.kind != ClientHelloParse::Kind::kNeedMore) break;
    asio::error_code ec;
    co_await ReadMore(client_, kMaxClientHelloPeek, ec);
    if (ec == asio::error::message_size) {
      p.kind = ClientHelloParse::Kind::kMalformed;
      p.reason = "no ClientHello within " + std::to_string(kMaxClientHelloPeek) + " bytes";
      break;
    }
    if (ec) co_return Gate::kClosed;
  }
  std::string reason, detail;
  nlohmann::json extra = nlohmann::json::object();
  switch (p.kind) {
    case ClientHelloParse::Kind::kNotTls:
      if (!required) co_return Gate::kPass;
      reason = "not_tls";
      detail = "port " + std::to_string(t.port) + " needs TLS: " + p.reason;
      break;
    case ClientHelloParse::Kind::kMalformed:
      reason = "tls_malformed";
      detail = "unusable TLS ClientHello: " + p.reason;
      break;
    case ClientHelloParse::Kind::kHello:
      if (p.hello.encrypted_client_hello) {
        // The real server name is hidden: it cannot be checked against the rules.
        reason = "tls_ech";
        detail = "TLS Encrypted Client Hello hides the server name";
      } else if (!p.hello.sni) {
        if (!required || t.host.is_address()) co_return Gate::kPass;
        reason = "no_sni";
        detail = "TLS ClientHello without a server name for " + t.host.ToString();
      } else if (!t.host.is_address() && p.hello.sni->name == t.host.name) {
        co_return Gate::kPass;
      } else {
        reason = "sni_mismatch";
        detail =
            "TLS server name " + p.hello.sni->ToString() + " does not match " + t.host.ToString();
        extra["sni"] = p.hello.sni->ToString();
      }
      break;
    case ClientHelloParse::Kind::kNeedMore:
      co_return Gate::kClosed;
  }
  upstream_denied_ = true;
  EmitDeny(t, reason, "", "", detail, std::move(extra));
  if (p.kind != ClientHelloParse::Kind::kNotTls) {
    asio::error_code ec;
    SetDeadline(std::chrono::duration_cast<std::chrono::milliseconds>(kWriteErrorTimeout),
                Phase::kHead);
    co_await WriteAll(client_,
                      std::string_view(kTlsAlertAccessDenied, sizeof kTlsAlertAccessDenied), ec);
  }
  co_return Gate::kDenied;
}

// ------------------------------------------------------------------ tunnel

asio::awaitable<void> Connection::Tunnel(std::shared_ptr<Connection> self, TunnelGate gate) {
  if (gate == TunnelGate::kRequired) {
    Gate g = co_await CheckClientHello(upstream_target_, /*required=*/true);
    if (g != Gate::kPass) {
      if (g == Gate::kClosed && !closed_) core_->stats.errors++;
      co_await LingerClose();
      co_return;
    }
  }
  SetIdle();
  down_done_ = false;
  auto done = std::make_shared<asio::steady_timer>(core_->ctx, Clock::time_point::max());
  asio::co_spawn(core_->ctx, Pump(self, /*upward=*/false, /*sniff=*/false),
                 [self, done](std::exception_ptr e) {
                   if (e) self->CloseAll();
                   self->down_done_ = true;
                   done->cancel();
                 });
  co_await Pump(self, /*upward=*/true, gate == TunnelGate::kSniff);
  if (!down_done_) {
    asio::error_code ec;
    co_await done->async_wait(Await(ec));
  }
}

asio::awaitable<void> Connection::Pump(std::shared_ptr<Connection> self, bool upward, bool sniff) {
  Side& from = upward ? client_ : upstream_;
  Side& to = upward ? upstream_ : client_;
  asio::error_code ec;
  if (sniff) {
    // Whatever the protocol, a tunnel that starts a TLS handshake names its server: check it.
    if (from.leftover.empty()) co_await ReadMore(from, kSniffBytes, ec);
    if (!ec && !from.leftover.empty() &&
        static_cast<uint8_t>(from.leftover[0]) == kTlsHandshakeRecord) {
      Gate g = co_await CheckClientHello(upstream_target_, /*required=*/false);
      SetIdle();
      if (g != Gate::kPass) {
        if (g == Gate::kClosed && !closed_) core_->stats.errors++;
        co_await LingerClose();
        co_return;
      }
    }
  }
  uint64_t moved = 0;
  bool pipe_refused = false;
  while (true) {
    size_t n = 0;
    if (moved >= kSpliceAfter && from.leftover.empty() && !pipe_refused) {
      if (co_await SpliceCopy(from, to, UINT64_MAX, ec)) {
        if (!ec) ec = asio::error::eof;  // cannot happen without a limit; treat as the end
      } else {
        pipe_refused = true;
        continue;
      }
    } else {
      n = co_await ReadSome(from, core_->options.buffer_high_watermark, ec);
    }
    if (ec) {
      if (ec == asio::error::eof && !closed_) {
        // Everything read from this side has been written: pass the end of stream on.
        asio::error_code ignored;
        to.sock.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
      } else {
        CloseAll();
      }
      co_return;
    }
    co_await WriteAll(to, std::string_view(core_->scratch.data(), n), ec);
    if (ec) {
      CloseAll();
      co_return;
    }
    moved += n;
  }
  (void)self;
}

// ------------------------------------------------------------------ protocols

asio::awaitable<void> Connection::Run(std::shared_ptr<Connection> self) {
  if (over_cap_) {
    if (transparent_family_ == 0) co_await RejectOverCap();
    CloseAll();
    co_return;
  }
  SetDeadline(core_->options.header_timeout, Phase::kHead);
  if (transparent_family_ != 0) {
    // The head timeout holds until the first request or handshake, as on the proxy's port.
    co_await ServeTransparent(self);
    FinishUpstream();
    CloseAll();
    co_return;
  }
  asio::error_code ec;
  co_await ReadMore(client_, kSniffBytes, ec);
  if (!ec) {
    if (static_cast<uint8_t>(client_.leftover[0]) == kSocks5Version) {
      co_await ServeSocks(self);
    } else {
      co_await ServeHttp(self);
    }
  } else if (ec != asio::error::eof) {
    core_->stats.errors++;
  }
  FinishUpstream();
  CloseAll();
}

asio::awaitable<void> Connection::RejectOverCap() {
  SetDeadline(std::chrono::duration_cast<std::chrono::milliseconds>(kOverCapTimeout), Phase::kHead);
  asio::error_code ec;
  co_await ReadMore(client_, kSniffBytes, ec);
  if (ec) co_return;
  if (static_cast<uint8_t>(client_.leftover[0]) != kSocks5Version) {
    co_await SendError(503, "ward: too many connections through the proxy (limit " +
                                std::to_string(core_->options.max_connections) + ")\n");
    co_return;
  }
  Socks5Greeting greeting;
  Socks5Parse p;
  while ((p = ParseSocks5Greeting(client_.leftover, &greeting)).kind ==
         Socks5Parse::Kind::kNeedMore) {
    co_await ReadMore(client_, kSocksBuffer, ec);
    if (ec) co_return;
  }
  if (p.kind != Socks5Parse::Kind::kDone || !greeting.offers_no_auth) co_return;
  client_.leftover.erase(0, p.consumed);
  co_await WriteAll(client_, BuildSocks5MethodSelection(kSocks5NoAuth), ec);
  Socks5Request req;
  while (!ec &&
         (p = ParseSocks5Request(client_.leftover, &req)).kind == Socks5Parse::Kind::kNeedMore) {
    co_await ReadMore(client_, kSocksBuffer, ec);
  }
  if (ec) co_return;
  co_await WriteAll(client_, BuildSocks5Reply(Socks5Reply::kGeneralFailure), ec);
  co_await LingerClose();
}

asio::awaitable<void> Connection::ServeSocks(std::shared_ptr<Connection> self) {
  asio::error_code ec;
  Socks5Greeting greeting;
  Socks5Parse p;
  while ((p = ParseSocks5Greeting(client_.leftover, &greeting)).kind ==
         Socks5Parse::Kind::kNeedMore) {
    co_await ReadMore(client_, kSocksBuffer, ec);
    if (ec) {
      core_->stats.errors++;
      co_return;
    }
  }
  if (p.kind == Socks5Parse::Kind::kError) {
    core_->stats.errors++;
    co_return;
  }
  client_.leftover.erase(0, p.consumed);
  if (!greeting.offers_no_auth) {
    core_->stats.errors++;
    co_await WriteAll(client_, BuildSocks5MethodSelection(kSocks5NoAcceptableMethod), ec);
    co_await LingerClose();
    co_return;
  }
  co_await WriteAll(client_, BuildSocks5MethodSelection(kSocks5NoAuth), ec);
  if (ec) co_return;

  Socks5Request req;
  while ((p = ParseSocks5Request(client_.leftover, &req)).kind == Socks5Parse::Kind::kNeedMore) {
    co_await ReadMore(client_, kSocksBuffer, ec);
    if (ec) {
      core_->stats.errors++;
      co_return;
    }
  }
  if (p.kind == Socks5Parse::Kind::kError) {
    core_->stats.errors++;
    if (p.send_reply) {
      co_await WriteAll(client_, BuildSocks5Reply(p.reply), ec);
      co_await LingerClose();
    }
    co_return;
  }
  client_.leftover.erase(0, p.consumed);

  auto reply_and_close = [&](Socks5Reply r) -> asio::awaitable<void> {
    asio::error_code wec;
    co_await WriteAll(client_, BuildSocks5Reply(r), wec);
    co_await LingerClose();
  };
  Target t;
  t.via = "socks5";
  t.port = req.port;
  std::string text = req.HostText();
  auto host = ParseHost(text);
  if (!host.ok()) {
    t.host.name = QuoteUntrusted(text, 255);
    EmitDeny(t, "bad_host", "", "", host.status().message());
    co_await reply_and_close(Socks5Reply::kNotAllowed);
    co_return;
  }
  t.host = std::move(host).value();
  if (CheckNameLeak(t, "socks5 target")) {
    co_await reply_and_close(Socks5Reply::kNotAllowed);
    co_return;
  }
  std::string detail;
  Fail f = co_await Authorize(t, &detail);
  const bool intercept =
      f == Fail::kNone && Intercepts(t);
  if (f == Fail::kNone && !intercept && RefuseUninspectedTunnel(t)) f = Fail::kDenied;
  if (f == Fail::kNone && !intercept) f = co_await ConnectUpstream(t, &detail);
  switch (f) {
    case Fail::kNone:
      break;
    case Fail::kClosed:
      co_return;
    case Fail::kDenied:
      co_await reply_and_close(Socks5Reply::kNotAllowed);
      co_return;
    case Fail::kRefused:
      co_await reply_and_close(Socks5Reply::kConnectionRefused);
      co_return;
    case Fail::kResolve:
    case Fail::kUnreachable:
    case Fail::kTimeout:
      co_await reply_and_close(Socks5Reply::kHostUnreachable);
      co_return;
  }
  co_await WriteAll(client_, BuildSocks5Reply(Socks5Reply::kSucceeded), ec);
  if (ec) co_return;
  if (intercept) {
    if (!co_await RequireClientHello(t)) co_return;
    co_await Intercept(self, t);
    co_return;
  }
  co_await Tunnel(self, core_->IsTlsPort(t.port) ? TunnelGate::kRequired : TunnelGate::kSniff);
}

asio::awaitable<void> Connection::ServeHttp(std::shared_ptr<Connection> self) {
  HttpRequestParser parser(core_->options.http_limits);
  bool first = true;
  while (!closed_) {
    parser.Reset();
    if (!first) SetIdle();  // between requests: idle, until the next one starts
    bool started = first;
    HttpParse r;
    while (true) {
      asio::error_code ec;
      size_t n = co_await ReadSome(client_, core_->scratch.size(), ec);
      if (ec) {
        // A keep-alive client that leaves between requests is the normal end.
        if (started && ec != asio::error::operation_aborted) core_->stats.errors++;
        co_return;
      }
      if (!started) {
        started = true;
        SetDeadline(core_->options.header_timeout, Phase::kHead);
      }
      r = parser.Feed(std::string_view(core_->scratch.data(), n));
      if (r.done()) {
        PutBack(client_, core_->scratch.data() + r.consumed, n - r.consumed);
        break;
      }
      if (r.error()) {
        core_->stats.errors++;
        co_await SendError(r.http_status, "ward: " + r.reason + "\n");
        co_return;
      }
    }
    first = false;
    const HttpRequestHead& head = parser.head();
    if (head.method == "CONNECT") {
      if (intercept_ || plain_origin_) {
        core_->stats.errors++;
        co_await SendError(400, "ward: CONNECT on a connection to one host\n");
        co_return;
      }
      co_await HandleConnect(self, head);
      co_return;
    }
    bool keep = co_await Forward(self, head);
    if (!keep) co_return;
  }
}

asio::awaitable<void> Connection::HandleConnect(std::shared_ptr<Connection> self,
                                                const HttpRequestHead& head) {
  FinishUpstream();
  auto hp = ParseAuthorityForm(head.target);
  if (!hp.ok()) {
    core_->stats.errors++;
    co_await SendError(400, "ward: bad CONNECT target " + QuoteUntrusted(head.target) + ": " +
                                hp.status().message() + "\n");
    co_return;
  }
  Target t;
  t.via = "connect";
  t.host = hp->host;
  t.port = hp->port;
  if (CheckNameLeak(t, "connect target")) {
    co_await SendError(403, LeakBody(*core_->broker->FindPhantomInName(t.host.ToString()), t));
    co_return;
  }
  std::string detail;
  Fail f = co_await Authorize(t, &detail);
  if (f != Fail::kNone) {
    co_await SendFailure(f, t, detail);
    co_return;
  }
  asio::error_code ec;
  if (!Intercepts(t) && RefuseUninspectedTunnel(t)) {
    co_await SendRefusal(t);
    co_return;
  }
  if (Intercepts(t)) {
    // A credential's host: the tunnel ends here (whatever the port, it must be TLS).
    co_await WriteAll(client_, kConnectEstablished, ec);
    if (ec) co_return;
    if (!co_await RequireClientHello(t)) co_return;
    co_await Intercept(self, t);
    co_return;
  }
  if (core_->IsTlsPort(t.port)) {
    // The SNI is checked before the upstream ever hears of this connection.
    co_await WriteAll(client_, kConnectEstablished, ec);
    if (ec) co_return;
    if (!co_await RequireClientHello(t)) co_return;
    f = co_await ConnectUpstream(t, &detail);
    if (f != Fail::kNone) {
      CloseAll();  // after "200" there is no way to say why: the event does
      co_return;
    }
    co_await Tunnel(self, TunnelGate::kNone);
    co_return;
  }
  f = co_await ConnectUpstream(t, &detail);
  if (f != Fail::kNone) {
    co_await SendFailure(f, t, detail);
    co_return;
  }
  co_await WriteAll(client_, kConnectEstablished, ec);
  if (ec) co_return;
  co_await Tunnel(self, TunnelGate::kSniff);
}

}  // namespace ward::net::internal
