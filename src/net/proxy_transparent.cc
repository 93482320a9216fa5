// Connections from transparent capture: a client that ignored the proxy variables connected to
// the synthetic address the DNS stub gave it for a name; the connection is decided as a tunnel
// to that name (see EgressProxy::ServeTransparent).
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "net/proxy_connection.h"

namespace ward::net::internal {
namespace {

// netfilter's getsockopt for the destination before NAT (linux/netfilter_ipv4.h,
// linux/netfilter_ipv6/ip6_tables.h: the same number at SOL_IP and SOL_IPV6).
constexpr int kSoOriginalDst = 80;

using Destination = std::pair<IpAddress, uint16_t>;

std::optional<Destination> OriginalDestination(int fd, int family) {
  if (family == AF_INET) {
    struct sockaddr_in sa = {};
    socklen_t len = sizeof sa;
    if (getsockopt(fd, SOL_IP, kSoOriginalDst, &sa, &len) != 0) return std::nullopt;
    return Destination{IpAddress::V4(ntohl(sa.sin_addr.s_addr)), ntohs(sa.sin_port)};
  }
  struct sockaddr_in6 sa = {};
  socklen_t len = sizeof sa;
  if (getsockopt(fd, SOL_IPV6, kSoOriginalDst, &sa, &len) != 0) return std::nullopt;
  std::array<uint8_t, 16> bytes;
  std::memcpy(bytes.data(), &sa.sin6_addr, bytes.size());
  return Destination{IpAddress::V6(bytes).Unmapped(), ntohs(sa.sin6_port)};
}

}  // namespace

std::optional<Connection::Target> Connection::TransparentTarget() {
  Target t;
  t.via = "transparent";
  const auto& read = core_->options.original_destination;
  const int fd = client_.sock.native_handle();
  std::optional<Destination> dst =
      read ? read(fd, transparent_family_) : OriginalDestination(fd, transparent_family_);
  if (!dst) {
    core_->stats.errors++;
    return std::nullopt;
  }
  const auto& [addr, port] = *dst;
  t.port = port;
  std::optional<std::string> name = core_->options.synthetic->NameOf(addr);
  Result<Host> host = name ? ParseHost(*name) : Result<Host>(Status(Code::kNotFound, ""));
  if (!host.ok() || host->is_address()) {
    // Nothing the DNS stub gave out: a guessed address in the range, or the listener itself.
    t.host.address = addr;
    EmitDeny(t, "unknown_address", "", "",
             addr.ToUriString() + " is not an address the sandbox's DNS stub gave out");
    return std::nullopt;
  }
  t.host = std::move(host).value();
  if (CheckNameLeak(t, "transparent target")) return std::nullopt;
  return t;
}

asio::awaitable<void> Connection::ServeTransparent(std::shared_ptr<Connection> self) {
  std::optional<Target> target = TransparentTarget();
  if (!target) co_return;
  Target& t = *target;
  const auto& http = core_->options.http_ports;
  if (std::find(http.begin(), http.end(), t.port) != http.end()) {
    // Plain HTTP: forwarded request by request, each decided (a refusal is a 403 the client
    // reads) and each Host header checked against the name (ForwardTo).
    plain_origin_ = t;
    co_await ServeHttp(self);
    co_return;
  }
  std::string detail;
  Fail f = co_await Authorize(t, &detail);
  if (f != Fail::kNone) co_return;  // the event says why; the client sees the connection end
  if (Intercepts(t)) {
    if (!co_await RequireClientHello(t)) co_return;
    co_await Intercept(self, t);
    co_return;
  }
  if (RefuseUninspectedTunnel(t)) co_return;
  if (core_->IsTlsPort(t.port)) {
    // As for CONNECT: the SNI is checked before the upstream hears of this connection.
    if (!co_await RequireClientHello(t)) co_return;
    if (co_await ConnectUpstream(t, &detail) != Fail::kNone) co_return;
    co_await Tunnel(self, TunnelGate::kNone);
    co_return;
  }
  if (co_await ConnectUpstream(t, &detail) != Fail::kNone) co_return;
  co_await Tunnel(self, TunnelGate::kSniff);
}

}  // namespace ward::net::internal
