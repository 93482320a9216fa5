// The credential broker's part of a proxy connection: intercepted tunnels, reverse-proxy
// routes, TLS to the upstream, and the credential events. The rewriting itself is pure
// (net/broker/credential_broker.cc); forwarding is shared with plain HTTP (proxy_http.cc).
#include "net/proxy_connection.h"
#include "net/text_util.h"

namespace ward::net::internal {

bool Connection::CheckNameLeak(const Target& t, std::string_view where) {
  if (core_->broker == nullptr || t.host.is_address()) return false;
  const BrokeredCredential* c = core_->broker->FindPhantomInName(t.host.name);
  if (c == nullptr) return false;
  EmitLeak(*c, t, where);
  return true;
}

void Connection::EmitLeak(const BrokeredCredential& c, const Target& t, std::string_view where) {
  core_->stats.leak_attempts++;
  core_->stats.denied++;
  core_->Emit("credential.leak_attempt", {{"credential", c.name},
                                          {"host", t.host.ToString()},
                                          {"port", t.port},
                                          {"where", where},
                                          {"via", t.via}});
}

void Connection::EmitUse(const BrokeredCredential& c, const Target& t) {
  core_->stats.credential_uses++;
  core_->Emit(
      "credential.use",
      {{"credential", c.name}, {"host", t.host.ToString()}, {"port", t.port}, {"via", t.via}});
}

void Connection::EmitResponseRefused(const Target& t, std::string_view reason,
                                     std::string_view detail) {
  core_->Emit("credential.response_refused", {{"host", t.host.ToString()},
                                              {"port", t.port},
                                              {"via", t.via},
                                              {"reason", reason},
                                              {"detail", detail}});
}

std::string Connection::LeakBody(const BrokeredCredential& c, const Target& t) {
  return "ward: refused: this request to " + t.Display() + " carries the phantom value of " +
         "credential " + c.name + ", which stands for a secret that only goes to that " +
         "credential's own hosts\n";
}

bool Connection::MatchRoute(const HttpRequestHead& head, Target* t, AbsoluteUri* uri) {
  if (core_->broker == nullptr || head.target.empty()) return false;
  std::string path;
  if (head.target[0] == '/') {
    path = head.target;
  } else {
    // A client that sends even the route through its proxy setting: "http://127.0.0.1:PORT/..."
    // naming this very listener is a route request as well.
    auto u = ParseAbsoluteForm(head.target);
    if (!u.ok()) return false;
    asio::error_code ec;
    auto local = client_.sock.local_endpoint(ec);
    if (ec || u->authority.port != local.port()) return false;
    const Host& h = u->authority.host;
    bool self = h.is_address() ? Classify(*h.address).cls == AddressClass::kLoopback
                               : h.name == "localhost";
    if (!self) return false;
    path = u->origin_form;
  }
  std::string_view rest = std::string_view(path).substr(1);
  size_t end = rest.find_first_of("/?");
  std::string_view name = rest.substr(0, end);
  const BrokeredCredential* c = core_->broker->FindRoute(name);
  if (c == nullptr) return false;
  rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  t->host = c->route_host;
  t->port = c->route_port;
  t->via = "route";
  uri->scheme = "https";
  uri->authority = HostPort{t->host, t->port};
  uri->explicit_port = t->port != 443;
  if (rest.empty()) {
    uri->origin_form = "/";
  } else if (rest[0] == '?') {
    uri->origin_form = "/" + std::string(rest);
  } else {
    uri->origin_form = std::string(rest);
  }
  return true;
}

asio::awaitable<bool> Connection::StartUpstreamTls(const Target& t) {
  auto channel = TlsChannel::Client(core_->broker->upstream_context(), t.host.ToString());
  if (!channel.ok()) {
    tls_error_ = channel.status().message();
    upstream_denied_ = true;
    FinishUpstream();
    EmitError(t, "tls_upstream", tls_error_);
    co_return false;
  }
  upstream_.tls = std::move(channel).value();
  SetDeadline(core_->options.connect_timeout, Phase::kTls);
  asio::error_code ec;
  co_await TlsHandshake(upstream_, ec);
  ClearDeadline();
  if (closed_) co_return false;
  if (ec) {
    if (tls_error_.empty()) tls_error_ = "TLS handshake: " + ec.message();
    // The connection never carried a request: a net.error, not a net.allow.
    upstream_denied_ = true;
    FinishUpstream();
    EmitError(t, "tls_upstream", tls_error_);
    co_return false;
  }
  co_return true;
}

asio::awaitable<void> Connection::Intercept(std::shared_ptr<Connection> self, const Target& t) {
  auto ctx = core_->broker->InterceptContext(t.host);
  Result<std::unique_ptr<TlsChannel>> channel =
      ctx.ok() ? TlsChannel::Server(ctx->get()) : Result<std::unique_ptr<TlsChannel>>(ctx.status());
  if (!channel.ok()) {
    EmitError(t, "intercept", channel.status().message());
    CloseAll();
    co_return;
  }
  client_.tls = std::move(channel).value();
  SetDeadline(core_->options.tls_peek_timeout, Phase::kTls);
  tls_error_.clear();
  asio::error_code ec;
  co_await TlsHandshake(client_, ec);
  if (ec) {
    if (!closed_) {
      // Typically a client that does not trust the session CA.
      EmitError(t, "intercept_handshake",
                (tls_error_.empty() ? ec.message() : tls_error_) +
                    " (does the client trust the session CA? SSL_CERT_FILE, "
                    "NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE)");
    }
    CloseAll();
    co_return;
  }
  core_->stats.intercepted++;
  Target inner = t;
  inner.via = "intercept";
  intercept_ = std::move(inner);
  SetDeadline(core_->options.header_timeout, Phase::kHead);
  co_await ServeHttp(self);
}

}  // namespace ward::net::internal
