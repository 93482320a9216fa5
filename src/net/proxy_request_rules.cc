// Method and path rules on the proxy's requests (ProxyOptions::request_rules): each request to
// a host they govern is decided before it is sent, and a tunnel that would hide such requests
// is refused.
#include "net/proxy_connection.h"
#include "net/text_util.h"

namespace ward::net::internal {

bool Connection::Intercepts(const Target& t) const {
  return core_->broker != nullptr && core_->broker->Intercepts(t.host, t.port);
}

std::optional<Host> Connection::GoverningHost(const Target& t) const {
  const RequestRules& rules = core_->options.request_rules;
  if (rules.empty()) return std::nullopt;
  if (rules.Governs(t.host, t.port)) return t.host;
  std::vector<IpAddress> addrs = t.addrs;
  if (t.host.is_address()) addrs.push_back(*t.host.address);
  for (const IpAddress& a : addrs) {
    Host as_address;
    as_address.address = a;
    if (rules.Governs(as_address, t.port)) return as_address;
    auto it = core_->governed_addresses.find(a);
    if (it != core_->governed_addresses.end()) return it->second;
  }
  return std::nullopt;
}

bool Connection::RefuseUninspectedTunnel(const Target& t) {
  std::optional<Host> governing = GoverningHost(t);
  if (!governing) return false;
  upstream_denied_ = true;
  EmitDeny(t, "request_rule", "", "",
           "requests to " + governing->ToString() +
               " are limited by network.rules, and a tunnel to " + t.host.ToString() +
               " would hide them (its TLS cannot be intercepted here)");
  return true;
}

namespace {

// Headers some frameworks read as the request's method or path, in place of its own.
constexpr std::string_view kOverrideHeaders[] = {"X-HTTP-Method-Override", "X-HTTP-Method",
                                                 "X-Method-Override", "X-Original-URL",
                                                 "X-Rewrite-URL"};
// Methods whose body an origin may not read, leaving it to be taken for the next request.
constexpr std::string_view kBodilessMethods[] = {"GET", "HEAD", "OPTIONS", "TRACE"};

}  // namespace

RequestRules::Decision Connection::CheckGovernedRequest(const HttpRequestHead& head,
                                                        const AbsoluteUri& uri, const Host& host,
                                                        uint16_t port) const {
  RequestRules::Decision refused;
  for (std::string_view h : kOverrideHeaders) {
    if (head.headers.Get(h)) {
      refused.reason = QuoteUntrusted(head.method + " " + host.ToUriString() + uri.origin_form, 300) +
                       " refused: its " + std::string(h) +
                       " header could stand for another method or path than the rules decide on";
      return refused;
    }
  }
  const bool has_body = head.body.kind == BodyKind::kChunked ||
                        (head.body.kind == BodyKind::kContentLength && head.body.length > 0);
  for (std::string_view m : kBodilessMethods) {
    if (has_body && EqualsIgnoreCase(head.method, m)) {
      refused.reason = QuoteUntrusted(head.method + " " + host.ToUriString() + uri.origin_form, 300) +
                       " refused: a body on " + std::string(m) +
                       " could be read as another request, which no rule has seen";
      return refused;
    }
  }
  return core_->options.request_rules.Check(host, port, head.method, uri.origin_form);
}

asio::awaitable<bool> Connection::CheckRequestRules(std::shared_ptr<Connection> self,
                                                    const HttpRequestHead& head,
                                                    const AbsoluteUri& uri, const Target& t) {
  governed_body_ = false;
  std::optional<Host> governing = GoverningHost(t);
  if (!governing) co_return true;
  governed_body_ = true;
  RequestRules::Decision d = CheckGovernedRequest(head, uri, *governing, t.port);
  if (d.action == RequestRules::Decision::Action::kAllow) co_return true;
  // The sentence is the rule's own: the host alone would not say which request was refused.
  const nlohmann::json extra = {{"method", QuoteUntrusted(head.method, 16)},
                                {"path", QuoteUntrusted(uri.origin_form, 200)},
                                {"request_rule", d.rule},
                                {"why", d.reason}};
  if (d.action == RequestRules::Decision::Action::kAsk && core_->options.ask_host) {
    HostQuestion request;
    request.method = head.method;
    request.path = CanonicalRequestPath(uri.origin_form).value_or(uri.origin_form);
    request.rule = d.rule;
    EgressRules::Decision as_host;
    as_host.reason = d.reason;
    Target asked = t;
    std::string detail;
    Fail f = co_await AskHost(asked, as_host, &detail, &request);
    if (f == Fail::kNone) co_return true;
    if (f == Fail::kClosed) co_return false;
  } else {
    if (d.action == RequestRules::Decision::Action::kAsk) {
      d.reason += "; this run asks no one (ward run --ask)";
    }
    EmitDeny(t, "request_rule", "", "", d.reason, extra);
    refusal_ = d.reason;
  }
  co_await SendRefusal(t);
  (void)self;
  co_return false;
}

}  // namespace ward::net::internal
