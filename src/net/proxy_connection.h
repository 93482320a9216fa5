// Internal to the egress proxy: the state shared by its connections, and one client connection
// (sniffing, HTTP CONNECT, HTTP forwarding, SOCKS5, the tunnel). See proxy.h for the behaviour.
//
// Concurrency: everything runs on the one event loop. A connection is a coroutine holding a
// shared_ptr to itself; a watchdog timer closes its sockets when the current phase's deadline
// passes, which ends whatever the coroutine waits for. One read buffer (ProxyCore::scratch)
// serves the whole proxy: data read into it is consumed or copied before the next suspension.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "net/broker/credential_broker.h"
#include "net/content_decoder.h"
#include "net/http_parser.h"
#include "net/proxy.h"
#include "net/proxy_hold.h"
#include "net/proxy_io.h"
#include "net/tls_channel.h"

namespace ward::net::internal {

class Connection;

struct ProxyCore : std::enable_shared_from_this<ProxyCore> {
  ProxyCore(asio::io_context& c, EgressRules r, Resolver* res, EventSink* ev, ProxyOptions o);

  void Emit(std::string_view type, nlohmann::json data) {
    if (!stopped) SafeEmit(events, type, std::move(data));
  }
  bool IsTlsPort(uint16_t port) const;
  // A listening socket (transparent: capture's); see EgressProxy::Serve/ServeTransparent.
  Status Serve(UniqueFd listening_socket, bool transparent);
  void OnAccepted(int fd, int family, bool transparent);
  // net.limit for the connection cap: at the first refusal, the 10th, the 100th, ..., and at
  // the end for the last count.
  void ReportOverCap(bool final);
  void Stop();
  // Addresses that hosts the method and path rules govern resolved to (and the host), so that
  // reaching such an address by itself, or by another name, is governed by that host's rules.
  std::map<IpAddress, Host> governed_addresses;
  // The governed names resolved when the proxy starts (their addresses join the map above);
  // until they are, a connection to an address waits (WaitForGovernedAddresses).
  void ResolveGovernedNames();
  size_t governed_pending = 0;
  std::unique_ptr<asio::steady_timer> governed_ready;  // cancelled when none is pending

  asio::io_context& ctx;
  const EgressRules rules;
  const CredentialBroker* const broker;  // options.credentials
  Resolver* const resolver;
  EventSink* const events;
  const ProxyOptions options;
  std::vector<char> scratch;
  bool stopped = false;
  std::unordered_set<Connection*> connections;
  std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> listeners;
  size_t rejecting = 0;               // over-cap connections being answered
  uint64_t over_cap_reported = 0;     // the refusal count in the last net.limit
  uint64_t next_over_cap_report = 1;  // the count that is reported next

  struct Counters {
    std::atomic<uint64_t> accepted{0}, active{0}, denied{0}, allowed{0}, refused_over_cap{0},
        errors{0}, bytes_up{0}, bytes_down{0}, buffered{0}, intercepted{0}, credential_uses{0},
        leak_attempts{0}, held{0}, asked{0}, transparent{0};
  } stats;
  uint64_t next_connection_id = 1;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `transparent_family`: AF_INET or AF_INET6 for a connection from transparent capture's
  // listener of that family, 0 for the proxy's own port.
  Connection(std::shared_ptr<ProxyCore> core, asio::ip::tcp::socket client, bool over_cap,
             int transparent_family = 0);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  static void Start(const std::shared_ptr<Connection>& conn);
  // Stop(): ends the connection now, emitting its net.allow event.
  void Abort();

 private:
  struct Side {
    explicit Side(asio::io_context& ctx) : sock(ctx) {}
    asio::ip::tcp::socket sock;
    std::string leftover;  // read from the socket, not consumed yet (pipelined bytes); with
                           // TLS: plaintext
    std::string pending;   // handed to the kernel, not all taken yet
    std::unique_ptr<TlsChannel> tls;  // set: this side speaks TLS terminated by the proxy
  };

  // A destination being decided or served.
  struct Target {
    Host host;
    uint16_t port = 0;
    const char* via = "";          // "connect", "http", "socks5", "route", "intercept"
    std::string rule;              // the allowing rule; "" for a public address of an IP literal
    std::string origin;            // where that rule came from
    std::vector<IpAddress> addrs;  // pinned: resolved and allowed, tried in order
    bool approved = false;         // allowed by ask_host, not by a rule
    std::string Display() const { return host.ToUriString() + ":" + std::to_string(port); }
  };

  enum class Fail { kNone, kDenied, kResolve, kRefused, kUnreachable, kTimeout, kClosed };
  enum class Gate { kPass, kDenied, kClosed };
  enum class Phase { kNone, kHead, kConnect, kTls, kIdle, kLinger };

  asio::awaitable<void> Run(std::shared_ptr<Connection> self);
  asio::awaitable<void> RejectOverCap();
  asio::awaitable<void> ServeSocks(std::shared_ptr<Connection> self);
  // proxy_transparent.cc: a connection from transparent capture (EgressProxy::ServeTransparent).
  asio::awaitable<void> ServeTransparent(std::shared_ptr<Connection> self);
  // Its name and port, from the original destination; nullopt when refused (event emitted).
  std::optional<Target> TransparentTarget();
  asio::awaitable<void> ServeHttp(std::shared_ptr<Connection> self);
  asio::awaitable<void> HandleConnect(std::shared_ptr<Connection> self,
                                      const HttpRequestHead& head);
  // proxy_http.cc. Returns whether the client connection stays open for another request.
  asio::awaitable<bool> Forward(std::shared_ptr<Connection> self, const HttpRequestHead& head);
  // How a request reaches its upstream: plain HTTP (absolute-URI forwarding), or over the
  // broker's verified TLS with credentials applied (a route, an intercepted tunnel).
  enum class Mode { kPlain, kRoute, kIntercept };
  asio::awaitable<bool> ForwardTo(std::shared_ptr<Connection> self, const HttpRequestHead& head,
                                  AbsoluteUri uri, Target t, Mode mode);
  // The phases of ForwardTo. Those returning false (or nothing) have answered the client.
  struct UpstreamRequest {
    std::string key;   // the upstream connection it needs (reused only for the same key)
    std::string wire;  // its head, as sent upstream
    bool via_tls = false;
    bool has_body = false;
    bool expect_continue = false;  // the client waits for our 100 before sending its body
    std::vector<const BrokeredCredential*> used;  // credentials the broker put in
  };
  enum class Link { kFailed, kFresh, kReused };
  asio::awaitable<bool> CheckRequestHost(const HttpRequestHead& head, const AbsoluteUri& uri,
                                         const Target& t, Mode mode);
  // proxy_request_rules.cc. A request to a host the method and path rules govern: true when
  // they allow it (or an approver did); otherwise the client has its 403.
  asio::awaitable<bool> CheckRequestRules(std::shared_ptr<Connection> self,
                                          const HttpRequestHead& head, const AbsoluteUri& uri,
                                          const Target& t);
  // The rules' decision on a request to a governed host, after the checks that hold whatever
  // the rules say (no method or path override header, no body on a method without one).
  RequestRules::Decision CheckGovernedRequest(const HttpRequestHead& head, const AbsoluteUri& uri,
                                              const Host& host, uint16_t port) const;
  // A tunnel to t that would carry requests the rules govern unseen (not intercepted): emits
  // net.deny and returns true.
  bool RefuseUninspectedTunnel(const Target& t);
  // The host whose method and path rules decide t's requests: t's own, or, for an address (or
  // a name pinned to one) that a governed host resolved to or that a rule names, that host;
  // nullopt when no rule governs t.
  std::optional<Host> GoverningHost(const Target& t) const;
  bool Intercepts(const Target& t) const;  // the credential broker terminates t's tunnels
  asio::awaitable<std::optional<UpstreamRequest>> PrepareUpstreamRequest(
      const HttpRequestHead& head, AbsoluteUri& uri, const Target& t, Mode mode);
  asio::awaitable<bool> ApplyCredentials(const Target& t, Mode mode, UpstreamRequest& req,
                                         HttpHeaders& headers, std::string& origin_form);
  // Sends the request and reads the response head into rp, once more on a fresh connection
  // when a reused one turns out closed.
  asio::awaitable<bool> Exchange(std::shared_ptr<Connection> self, const HttpRequestHead& head,
                                 Target& t, const UpstreamRequest& req, HttpResponseParser& rp);
  asio::awaitable<Link> ReachUpstream(Target& t, const UpstreamRequest& req, bool may_reuse);
  asio::awaitable<bool> OpenUpstream(Target& t, const UpstreamRequest& req);
  // ec: a failure to send that the caller may retry.
  asio::awaitable<bool> SendRequest(const HttpRequestHead& head, const Target& t,
                                    const UpstreamRequest& req, asio::error_code& ec);
  asio::awaitable<void> SendRequestBody(const HttpRequestHead& head, const UpstreamRequest& req,
                                        asio::error_code& ec);
  // False: the upstream's answer is invalid. ec: it ended (got_bytes: after sending something).
  asio::awaitable<bool> ReadResponseHead(const HttpRequestHead& head, HttpResponseParser& rp,
                                         bool& got_bytes, asio::error_code& ec);
  asio::awaitable<bool> RelayResponse(const HttpRequestHead& head, const Target& t,
                                      const HttpResponseHead& rh);
  asio::awaitable<void> CopyResponseBody(const HttpResponseHead& rh, int minor,
                                         asio::error_code& ec);
  // A response head for the client: masked when the broker watches the response.
  std::string MaskForClient(std::string head) const;
  // proxy_creds.cc: a tunnel to a credential's host, terminated with a session-CA leaf; its
  // requests are served like forwarded ones (ForwardTo, kIntercept).
  asio::awaitable<void> Intercept(std::shared_ptr<Connection> self, const Target& t);
  // A route request ("/ROUTE/rest" on the proxy itself): the route's target and URI.
  bool MatchRoute(const HttpRequestHead& head, Target* t, AbsoluteUri* uri);
  // Opens TLS to the upstream just connected (verifying it); on failure the client gets 502.
  asio::awaitable<bool> StartUpstreamTls(const Target& t);
  asio::awaitable<void> TlsHandshake(Side& s, asio::error_code& ec);
  // A phantom in a destination name: emits credential.leak_attempt; returns whether it did.
  bool CheckNameLeak(const Target& t, std::string_view where);
  void EmitLeak(const BrokeredCredential& c, const Target& t, std::string_view where);
  void EmitUse(const BrokeredCredential& c, const Target& t);
  // A response from a credential's host that could not be scanned for secrets and was withheld
  // (credential.response_refused).
  void EmitResponseRefused(const Target& t, std::string_view reason, std::string_view detail);
  static std::string LeakBody(const BrokeredCredential& c, const Target& t);
  // While a response is awaited: a client that leaves (EOF, reset) ends the connection and its
  // upstream at once instead of at the idle timeout. Pipelined bytes end the watch.
  asio::awaitable<void> WatchClient(std::shared_ptr<Connection> self, uint64_t generation);

  // A destination given as an address waits, bounded, until the governed names' addresses are
  // known: it may be one of them.
  asio::awaitable<void> WaitForGovernedAddresses(const Target& t);
  // Decides t (name, then the pinned addresses); emits net.deny / net.error.
  asio::awaitable<Fail> Authorize(Target& t, std::string* detail);
  // Whether a name denial `d` for t goes to ProxyOptions::ask_host (proxy_hold.cc has the hold).
  bool ShouldAskHost(const Target& t, const EgressRules::Decision& d) const;
  // Holds the request while ask_host decides; kNone when approved. Otherwise emits net.deny
  // ("not_approved") and returns kDenied, or kClosed when the client left or the proxy stops.
  // `request`: the method, path and rule of a request an "ask" rule matched (null: the host).
  asio::awaitable<Fail> AskHost(Target& t, const EgressRules::Decision& d, std::string* detail,
                                const HostQuestion* request = nullptr);
  // While held: a client that hangs up cancels the hold.
  asio::awaitable<void> WatchHeldClient(std::shared_ptr<Connection> self,
                                        std::shared_ptr<HostHold> hold);
  // Connects upstream_ to t's addresses in order, within connect_timeout.
  asio::awaitable<Fail> ConnectUpstream(const Target& t, std::string* detail);
  // Closes upstream_ and emits its net.allow event (once).
  void FinishUpstream();
  // Emits net.deny and keeps its sentence (RefusalSentence) for the 403 that follows.
  // `allow_with`: the flag that would allow t ("" when none would, or a deny rule decided).
  void EmitDeny(const Target& t, std::string_view reason, std::string_view rule,
                std::string_view origin, std::string_view detail,
                nlohmann::json extra = nlohmann::json::object(), std::string_view allow_with = {});
  void EmitError(const Target& t, std::string_view reason, std::string_view detail);
  // The 403 of the last EmitDeny: its sentence in the status line and the body, then a line
  // pointing at `ward why`.
  asio::awaitable<void> SendRefusal(const Target& t);
  asio::awaitable<void> SendFailure(Fail f, const Target& t, const std::string& detail);

  // The first bytes of a tunnel: a TLS ClientHello naming t (required), or anything that is not
  // TLS at all (!required). Buffers what it reads in client_.leftover.
  asio::awaitable<Gate> CheckClientHello(const Target& t, bool required);
  // The gate of a tunnel that must be TLS to t (an intercepted one, or CONNECT to a TLS port):
  // sets upstream_target_, and when the ClientHello does not pass, closes the connection and
  // returns false.
  asio::awaitable<bool> RequireClientHello(const Target& t);

  enum class TunnelGate { kNone, kRequired, kSniff };
  asio::awaitable<void> Tunnel(std::shared_ptr<Connection> self, TunnelGate gate);
  asio::awaitable<void> Pump(std::shared_ptr<Connection> self, bool upward, bool sniff);

  // I/O. ReadSome returns bytes in core_->scratch (leftover first); valid until the next
  // suspension. ec is eof at a clean end of stream.
  asio::awaitable<size_t> ReadSome(Side& s, size_t max, asio::error_code& ec);
  // The socket's bytes (ciphertext on a TLS side), into core_->scratch; leftover untouched.
  asio::awaitable<size_t> RawReadSome(Side& s, size_t max, asio::error_code& ec);
  // Plaintext from s.tls into core_->scratch; leftover untouched.
  asio::awaitable<size_t> TlsReadSome(Side& s, size_t max, asio::error_code& ec);
  // Appends to s.leftover until it holds at least one more byte, up to `limit` bytes in all.
  asio::awaitable<void> ReadMore(Side& s, size_t limit, asio::error_code& ec);
  asio::awaitable<void> WriteAll(Side& s, std::string_view data, asio::error_code& ec);
  asio::awaitable<void> RawWriteAll(Side& s, std::string_view data, asio::error_code& ec);
  // Sends what s.tls has queued (handshake messages, alerts, records).
  asio::awaitable<void> FlushTls(Side& s, asio::error_code& ec);
  void Account(bool upward, size_t n);  // bytes written to upstream (upward) or to the client
  static void PutBack(Side& s, const char* data, size_t n);
  // Bulk transfer in the kernel (splice through a pipe), for at most `limit` bytes or until
  // EOF (ec = eof). from.leftover must be empty. Returns false, having moved nothing, when no
  // pipe was available: the caller copies through user space instead.
  asio::awaitable<bool> SpliceCopy(Side& from, Side& to, uint64_t limit, asio::error_code& ec);
  asio::awaitable<void> CopyExact(Side& from, Side& to, uint64_t n, asio::error_code& ec);
  asio::awaitable<void> CopyChunked(Side& from, Side& to, bool reencode, asio::error_code& ec);
  asio::awaitable<void> CopyUntilEof(Side& from, Side& to, asio::error_code& ec);
  // A response body the broker watches (masker_ set), on its way to the client: decoded when it
  // has a content coding, masked, and framed as PrepareDown told the client. PrepareDown fails
  // for a coding that cannot be decoded; WriteDown and EndDown set down_error_ on corrupt data
  // or a decoding limit.
  Status PrepareDown(const HttpRequestHead& head, HttpResponseHead& shown);
  asio::awaitable<void> WriteDown(std::string_view data, asio::error_code& ec);
  asio::awaitable<void> EndDown(asio::error_code& ec);
  asio::awaitable<void> SendDown(const std::string& data, asio::error_code& ec);
  // An HTTP error answer with "Connection: close", then LingerClose().
  // `phrase`: the status line's reason phrase (printable ASCII); "" for the standard one.
  asio::awaitable<void> SendError(int status, const std::string& body,
                                  std::string_view phrase = {});
  // Half-closes, drains what the client still sends for a moment (so that closing does not
  // reset the connection before the client read our answer), then closes.
  asio::awaitable<void> LingerClose();
  void CloseAll();
  bool UpstreamReusable();

  // Watchdog.
  void SetDeadline(std::chrono::milliseconds d, Phase phase);
  void SetIdle();
  void ClearDeadline();
  Clock::time_point Due() const;
  void Arm(Clock::time_point at);
  void OnWatchdog(uint64_t generation);

  std::shared_ptr<ProxyCore> core_;
  const bool over_cap_;
  const int transparent_family_;  // transparent capture's listener's family; 0: the proxy's port
  Side client_;
  Side upstream_;
  bool closed_ = false;
  bool aborted_ = false;

  // The upstream connection, for its net.allow event and for reuse by the next request.
  bool upstream_open_ = false;
  bool upstream_denied_ = false;  // a net.deny was emitted for it: no net.allow
  Target upstream_target_;
  IpAddress upstream_addr_;
  std::string upstream_key_;
  Clock::time_point upstream_start_;
  uint64_t upstream_up_ = 0, upstream_down_ = 0, upstream_requests_ = 0;

  // Transparent capture, port 80: the target whose requests, in origin form, this connection
  // carries.
  std::optional<Target> plain_origin_;
  // The request being forwarded is to a host the method and path rules govern (its upstream
  // connection is then not kept after a body).
  bool governed_body_ = false;

  // The credential broker's state for the request being forwarded.
  std::optional<Target> intercept_;  // set: this connection is an intercepted tunnel
  std::optional<CredentialBroker::BodyScanner> body_scan_;  // request body, client -> upstream
  const BrokeredCredential* body_leak_ = nullptr;           // what the scanner found
  std::optional<CredentialBroker::Masker> masker_;          // response, upstream -> client
  std::unique_ptr<ContentDecoder> decoder_;                 // the response's content coding
  bool chunk_down_ = false;  // the watched response goes to the client in chunks of our own
  Status down_error_;        // why the watched response could not be passed on
  std::string tls_error_;    // the last TLS failure
  std::string refusal_;      // the sentence of the last net.deny (RefusalSentence)

  std::shared_ptr<ResolveWait> resolve_wait_;
  std::shared_ptr<HostHold> host_hold_;
  const uint64_t id_;
  bool down_done_ = false;
  uint64_t watch_generation_ = 0;

  asio::steady_timer watchdog_;
  Phase phase_ = Phase::kNone;
  Clock::time_point deadline_{};
  Clock::time_point last_activity_{};
  Clock::time_point armed_at_{};
  bool armed_ = false;
  uint64_t generation_ = 0;
  bool connect_timed_out_ = false;
};

}  // namespace ward::net::internal
