// Method and path rules on the proxy's requests (ProxyOptions::request_rules): each request to
// a host they govern is decided before it is sent, and a tunnel that would hide such requests
// is refused.
#include "net/proxy_connection.h"
#include "net/text_util.h"

namespace ward::net::internal {

bool Connection::Intercepts(const Target& t) const {
  return core_->broker != nullptr && core_->broker->Intercepts(t.host, t.port);
}

bool Connection::RefuseUninspectedTunnel(const Target& t) {
  if (!core_->options.request_rules.Governs(t.host, t.port)) return false;
  upstream_denied_ = true;
  EmitDeny(t, "request_rule", "", "",
           "requests to " + t.host.ToString() +
               " are limited by network.rules, and a tunnel there would hide them (its TLS "
               "cannot be intercepted here)");
  return true;
}

asio::awaitable<bool> Connection::CheckRequestRules(std::shared_ptr<Connection> self,
                                                    const HttpRequestHead& head,
                                                    const AbsoluteUri& uri, const Target& t) {
  const RequestRules& rules = core_->options.request_rules;
  if (!rules.Governs(t.host, t.port)) co_return true;
  RequestRules::Decision d = rules.Check(t.host, t.port, head.method, uri.origin_form);
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
