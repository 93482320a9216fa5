#include "net/proxy.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <cerrno>

#include "net/proxy_connection.h"

namespace ward::net {

const char* HostTransportName(HostTransport t) {
  switch (t) {
    case HostTransport::kConnect:
      return "connect";
    case HostTransport::kHttp:
      return "http";
    case HostTransport::kSocks5:
      return "socks5";
    case HostTransport::kTransparent:
      return "transparent";
  }
  return "?";
}

namespace internal {

namespace {

constexpr size_t kMinScratch = 16 << 10;
constexpr size_t kMaxScratch = 1 << 20;
constexpr size_t kMaxRejecting = 64;  // over-cap connections answered at once; beyond: closed
constexpr int kAcceptBurst = 64;      // accepts per wake-up, so one listener cannot starve I/O

asio::awaitable<void> AcceptLoop(std::shared_ptr<ProxyCore> core, asio::ip::tcp::acceptor* acc,
                                 int family, bool transparent) {
  // Out of descriptors, the pending connection stays in the backlog: counted, not spun on.
  const AcceptHandlers handlers = {
      [core] { return core->stopped; },
      [core, family, transparent](int fd) { core->OnAccepted(fd, family, transparent); },
                                   [core] { core->stats.errors++; }};
  co_await AcceptEach(acc, kAcceptBurst, handlers);
}

}  // namespace

ProxyCore::ProxyCore(asio::io_context& c, EgressRules r, Resolver* res, EventSink* ev,
                     ProxyOptions o)
    : ctx(c),
      rules(std::move(r)),
      broker(o.credentials),
      resolver(res),
      events(ev),
      options(std::move(o)) {
  scratch.resize(std::clamp(options.buffer_high_watermark, kMinScratch, kMaxScratch));
}

bool ProxyCore::IsTlsPort(uint16_t port) const {
  return std::find(options.tls_ports.begin(), options.tls_ports.end(), port) !=
         options.tls_ports.end();
}

void ProxyCore::OnAccepted(int fd, int family, bool transparent) {
  stats.accepted++;
  if (transparent) stats.transparent++;
  asio::ip::tcp::socket sock(ctx);
  asio::error_code ec;
  sock.assign(family == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    stats.errors++;
    return;
  }
  sock.non_blocking(true, ec);
  sock.set_option(asio::ip::tcp::no_delay(true), ec);
  bool over_cap = stats.active.load() >= options.max_connections;
  if (over_cap) {
    stats.refused_over_cap++;
    ReportOverCap(/*final=*/false);
    if (rejecting >= kMaxRejecting) return;  // closed by the socket's destructor
  }
  auto conn = std::make_shared<Connection>(shared_from_this(), std::move(sock), over_cap,
                                           transparent ? family : 0);
  Connection::Start(conn);
}

void ProxyCore::ResolveGovernedNames() {
  const std::vector<Host> names = options.request_rules.NamedHosts();
  if (names.empty() || resolver == nullptr) return;
  governed_ready = std::make_unique<asio::steady_timer>(ctx, Clock::time_point::max());
  governed_pending = names.size();
  std::weak_ptr<ProxyCore> weak = weak_from_this();
  for (const Host& h : names) {
    resolver->Resolve(h.name, [weak, h](Result<std::vector<IpAddress>> addrs) {
      auto core = weak.lock();
      if (!core) return;
      if (addrs.ok()) {
        for (const IpAddress& a : *addrs) core->governed_addresses.emplace(a, h);
      }
      if (--core->governed_pending == 0) core->governed_ready->cancel();
    });
  }
}

void ProxyCore::ReportOverCap(bool final) {
  const uint64_t refused = stats.refused_over_cap.load();
  if (refused == over_cap_reported) return;
  if (!final && refused < next_over_cap_report) return;
  while (next_over_cap_report <= refused) next_over_cap_report *= 10;
  over_cap_reported = refused;
  Emit("net.limit", {{"limit", "proxy_connections"},
                     {"cap", options.max_connections},
                     {"refused", refused},
                     {"active", stats.active.load()}});
}

void ProxyCore::Stop() {
  if (stopped) return;
  ReportOverCap(/*final=*/true);
  for (auto& l : listeners) {
    asio::error_code ec;
    l->close(ec);
  }
  std::vector<std::shared_ptr<Connection>> conns;
  for (Connection* c : connections) {
    if (auto sp = c->weak_from_this().lock()) conns.push_back(std::move(sp));
  }
  for (auto& c : conns) c->Abort();
  stopped = true;
}

}  // namespace internal

EgressProxy::EgressProxy(asio::io_context& ctx, EgressRules rules, Resolver* resolver,
                         EventSink* events, ProxyOptions options)
    : core_(std::make_shared<internal::ProxyCore>(ctx, std::move(rules), resolver, events,
                                                  std::move(options))) {
  core_->ResolveGovernedNames();
}

EgressProxy::~EgressProxy() { Stop(); }

Status EgressProxy::Serve(UniqueFd listening_socket) {
  return core_->Serve(std::move(listening_socket), /*transparent=*/false);
}

Status EgressProxy::ServeTransparent(UniqueFd listening_socket) {
  if (core_->options.synthetic == nullptr) {
    return Status(Code::kFailedPrecondition, "transparent capture without synthetic names");
  }
  return core_->Serve(std::move(listening_socket), /*transparent=*/true);
}

namespace internal {

Status ProxyCore::Serve(UniqueFd listening_socket, bool transparent) {
  if (stopped) return Status(Code::kFailedPrecondition, "the proxy was stopped");
  WARD_ASSIGN_OR_RETURN(int family,
                        CheckServerSocket(listening_socket.get(), SOCK_STREAM));
  int flags = fcntl(listening_socket.get(), F_GETFL);
  if (flags < 0 || fcntl(listening_socket.get(), F_SETFL, flags | O_NONBLOCK) != 0 ||
      fcntl(listening_socket.get(), F_SETFD, FD_CLOEXEC) != 0) {
    return Errno("proxy listener: fcntl");
  }
  const std::string& cc = options.loopback_congestion_control;
  if (!cc.empty() && IsLoopbackBound(listening_socket.get())) {
    // Best effort (see ProxyOptions): refused, the system's default stays, which only costs
    // throughput.
    (void)SetCongestionControl(listening_socket.get(), cc);
  }
  auto acc = std::make_unique<asio::ip::tcp::acceptor>(ctx);
  asio::error_code ec;
  acc->assign(family == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4(),
              listening_socket.get(), ec);
  if (ec) return ErrnoError("proxy listener", ec.value());
  listening_socket.release();
  asio::ip::tcp::acceptor* raw = acc.get();
  listeners.push_back(std::move(acc));
  asio::co_spawn(ctx, AcceptLoop(shared_from_this(), raw, family, transparent),
                 [core = shared_from_this()](std::exception_ptr e) {
                   if (e) core->stats.errors++;
                 });
  return Ok();
}

}  // namespace internal

void EgressProxy::Stop() { core_->Stop(); }

EgressProxy::Stats EgressProxy::stats() const {
  const auto& c = core_->stats;
  Stats s;
  s.accepted = c.accepted.load();
  s.active = c.active.load();
  s.denied = c.denied.load();
  s.allowed = c.allowed.load();
  s.refused_over_cap = c.refused_over_cap.load();
  s.errors = c.errors.load();
  s.bytes_up = c.bytes_up.load();
  s.bytes_down = c.bytes_down.load();
  s.buffered = c.buffered.load();
  s.intercepted = c.intercepted.load();
  s.credential_uses = c.credential_uses.load();
  s.leak_attempts = c.leak_attempts.load();
  s.held = c.held.load();
  s.asked = c.asked.load();
  s.transparent = c.transparent.load();
  return s;
}

}  // namespace ward::net
