// The egress proxy: the sandbox's only way out. It runs in the supervisor (outside the
// sandbox) on the supervisor's event loop and serves a listening socket that sandbox init
// created inside the sandbox's network namespace; upstream sockets are opened in the
// supervisor's own namespace.
//
// One port speaks HTTP/1.1 (CONNECT tunnels and absolute-URI forwarding of plain HTTP) and
// SOCKS5 (no authentication, CONNECT only), told apart by the first byte. For every
// destination: the rules decide on the name before any resolution; the supervisor resolves; the
// addresses are pinned for that connection and each must pass the address rules; for TLS ports
// the ClientHello's SNI must name the requested host before any byte goes upstream. Every
// denial answers at once (HTTP 403 naming the rule, SOCKS reply 2, a TLS alert) and emits
// exactly one `net.deny` event; every upstream connection ends with one `net.allow` event.
//
// Bounded: a connection cap (max_connections), per-direction buffers of at most
// buffer_high_watermark bytes (a side is not read while what it sent is still buffered), and
// timeouts for the request head, the TLS peek, connecting and idleness. Descriptors: a connection
// holds its client socket, at most one upstream socket and, while a direction carries a bulk
// transfer (splice(2) moves it without copying it through user space), a pipe: at most 6,
// usually 2. Network input never throws or aborts: a hostile client costs its own connection only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/events.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "net/content_decoder.h"
#include "net/egress_rules.h"
#include "net/http_parser.h"
#include "net/request_rules.h"
#include "net/resolver.h"
#include "net/synthetic_names.h"

namespace asio {
class io_context;
}

namespace ward::net {

class CredentialBroker;

// A question for the approver: a destination that is denied only because no allow rule
// names it. Not asked for explicit deny rules, blocked address ranges, phantom leaks or port 0.
enum class HostTransport : uint8_t { kConnect, kHttp, kSocks5, kTransparent };
// "connect" | "http" | "socks5" | "transparent"
const char* HostTransportName(HostTransport t);

struct HostQuestion {
  std::string host;  // normalised: a lower-case name, or an address ("2001:db8::1", no brackets)
  uint16_t port = 0;
  HostTransport transport = HostTransport::kConnect;
  uint64_t connection = 0;  // the client connection's id in this proxy (1, 2, ...)
  // A request an "ask" method and path rule matched (ProxyOptions::request_rules); both empty
  // for a question about the host itself.
  std::string method;
  std::string path;  // the request's path and query, as the rules read it
  std::string rule;  // the asking rule, as RequestRules::Decision::rule
};
// `done(true)` approves. Call it at most once (later calls are ignored), from any thread, while
// the proxy's io_context exists; an answer after the hold ended (timeout, the client left, the
// proxy stopped) is ignored.
using HostAnswerFn = std::function<void(bool allow)>;
using AskHostFn = std::function<void(const HostQuestion& question, HostAnswerFn done)>;

struct ProxyOptions {
  // Client connections served at once (per sandbox: one proxy serves one sandbox, all its
  // listeners together). Beyond it a connection is refused as it is accepted: 503 / SOCKS reply
  // 1 within a second, or closed at once when many are refused together; the first refusal and
  // then the 10th, 100th, ... emit `net.limit` (and Stop() the last count).
  size_t max_connections = policy::kDefaultProxyConnections;
  // At most this many user-space bytes per direction of a connection; the proxy does not read
  // a side again until what it read from that side has been written to the other one.
  size_t buffer_high_watermark = 256 << 10;
  std::chrono::milliseconds connect_timeout{10000};   // resolution, then all connect attempts
  std::chrono::milliseconds header_timeout{15000};    // a whole request head / SOCKS handshake
  std::chrono::milliseconds idle_timeout{600000};     // no byte moved in either direction
  std::chrono::milliseconds tls_peek_timeout{10000};  // the ClientHello after "200"
  HttpLimits http_limits;
  // CONNECT / SOCKS to these ports must start with a TLS ClientHello whose SNI names the
  // requested host, checked before connecting upstream. On other ports a tunnel that starts
  // with a TLS handshake gets the same check (a missing SNI is accepted there).
  std::vector<uint16_t> tls_ports = {443};
  // Bulk transfers move through a pipe with splice(2) instead of user-space buffers.
  bool splice = true;
  // The TCP congestion control of the connections that a listener bound to a loopback address
  // accepts: the sandbox's side, where the proxy sends every download. A loopback hop has no
  // bottleneck link to probe or pace for, and a pacing algorithm (BBR, a common default) only
  // holds the proxy's sends back while the client is ready for more. Empty: the system's
  // default. Best effort: where the kernel refuses it the default stays. Listeners on other
  // addresses, and upstream connections, keep the system's choice.
  std::string loopback_congestion_control = "reno";
  // The credential broker (net/broker/credential_broker.h; null: none; must outlive the proxy). With it, plain
  // HTTP to `/ROUTE/...` on the proxy's own port is a reverse-proxy route, tunnels to a
  // credential's hosts are intercepted, and phantoms going anywhere else are refused (403 and
  // one `credential.leak_attempt` event each); every request that carries a real secret emits
  // `credential.use`.
  const CredentialBroker* credentials = nullptr;
  // Responses the broker scans (routes, intercepted tunnels) are asked for without a content
  // coding; one that comes encoded all the same (gzip, deflate) is decoded before the scan
  // within these bounds, and one the proxy cannot decode (br, zstd, ...) gets 502. Either
  // refusal emits `credential.response_refused`.
  ContentDecodeLimits decode_limits;
  // Host approvals (null: none; a host without a rule is denied at once). Called on the loop
  // thread while the request is held: nothing more is read from the client until the answer.
  // Approved, the request goes on exactly as if a rule allowed the name (resolution, the address
  // rules and the SNI check still apply; an approved name that resolves to loopback is still
  // refused unless that address is allowed). Denied, timed out or over the cap: 403 / SOCKS
  // reply 2, "not approved". Every request is asked again (also on a kept-alive connection): the
  // approver remembers what it granted.
  AskHostFn ask_host;
  // Transparent capture (null: none; must outlive the proxy): the names behind the synthetic
  // addresses that connections served by ServeTransparent were made to.
  const SyntheticNames* synthetic = nullptr;
  // Transparent connections to these ports must speak HTTP: forwarded request by request, each
  // Host header checked against the name.
  std::vector<uint16_t> http_ports = {80};
  // How a transparent connection's original destination is read (null: SO_ORIGINAL_DST, the
  // destination before capture's redirect). Tests substitute their own.
  std::function<std::optional<std::pair<IpAddress, uint16_t>>(int fd, int family)>
      original_destination;
  // Method and path rules (net/request_rules.h). Each request to a host they govern is checked
  // before it is sent, whichever way it came (forwarded, a route, an intercepted tunnel, a
  // transparent connection to an HTTP port); a refusal is a 403 with the rule and one
  // `net.deny` (reason "request_rule"). A tunnel to a governed host that the credential broker
  // does not intercept is refused: it would hide the requests. Requests an "ask" rule matches
  // go to ask_host with the method and path (HostQuestion::method, path); without ask_host they
  // are refused.
  RequestRules request_rules;
  std::chrono::milliseconds host_hold_timeout{60000};
  size_t max_held_connections = 16;  // per sandbox; beyond it a question is denied unasked
};

namespace internal {
struct ProxyCore;
}

class EgressProxy {
 public:
  // `resolver` and `events` (null: no events) must outlive the proxy.
  EgressProxy(asio::io_context& ctx, EgressRules rules, Resolver* resolver, EventSink* events,
              ProxyOptions options = {});
  ~EgressProxy();  // Stop()s
  EgressProxy(const EgressProxy&) = delete;
  EgressProxy& operator=(const EgressProxy&) = delete;

  // Serves a listening TCP socket (bound and listening already; any family). Callable more than
  // once. Call on the loop's thread (or before it runs).
  Status Serve(UniqueFd listening_socket);
  // Serves transparent capture's listener (enforce/ns/capture.h): each connection was made to a
  // synthetic address, read back with SO_ORIGINAL_DST and mapped to its name, and is then
  // decided like a tunnel to name:port ("transparent" in the events): the name and port by the
  // rules, the addresses it resolves to by the address rules; on a TLS port the ClientHello's
  // SNI must name the host, on port 80 each request's Host header (requests are forwarded one
  // by one), on any other port the name and port alone decide. A connection to an address no
  // name was given is refused (`net.deny`, "unknown_address"). A refusal closes the connection:
  // the client has no proxy to read a 403 from.
  Status ServeTransparent(UniqueFd listening_socket);

  // Closes the listeners and every connection now (emitting their net.allow events); the loop
  // can then finish. Call on the loop's thread (or when it does not run).
  void Stop();

  struct Stats {
    uint64_t accepted = 0;          // client connections accepted, including refused ones
    uint64_t active = 0;            // client connections being served now
    uint64_t denied = 0;            // net.deny events
    uint64_t allowed = 0;           // destinations authorised (tunnels, forwarded requests)
    uint64_t refused_over_cap = 0;  // connections beyond max_connections (net.limit)
    uint64_t errors = 0;            // malformed requests, timeouts, upstream failures
    uint64_t bytes_up = 0;          // written to upstream servers
    uint64_t bytes_down = 0;        // written to clients
    uint64_t buffered = 0;          // user-space bytes waiting for a slow reader, now
    uint64_t intercepted = 0;       // tunnels terminated by the credential broker
    uint64_t credential_uses = 0;   // requests sent with a real secret
    uint64_t leak_attempts = 0;     // requests refused because they carried a phantom
    uint64_t held = 0;              // requests waiting for ask_host's answer, now
    uint64_t asked = 0;             // questions put to ask_host
    uint64_t transparent = 0;       // connections accepted from transparent capture
  };
  // Safe from any thread.
  Stats stats() const;

 private:
  std::shared_ptr<internal::ProxyCore> core_;
};

}  // namespace ward::net
