#include "net/egress_rules.h"

#include <algorithm>

#include "net/text_util.h"

namespace ward::net {

std::string FormatOrigin(const policy::Origin& o) {
  std::string s = o.source.empty() ? "unknown" : o.source;
  if (o.line > 0) s += ":" + std::to_string(o.line);
  if (!o.key.empty()) s += " (" + o.key + ")";
  return s;
}

namespace {

constexpr size_t kMaxPatternBytes = kMaxHostInputBytes + 16;

Result<HostRule::Ports> ParsePort(std::string_view p, uint16_t* port) {
  if (p == "*") return HostRule::Ports::kAny;
  if (p.empty() || p.size() > 5) return InvalidArgument("bad port");
  uint32_t v = 0;
  for (char c : p) {
    if (c < '0' || c > '9') return InvalidArgument("bad port");
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  if (v == 0 || v > 65535) return InvalidArgument("port out of range 1..65535");
  *port = static_cast<uint16_t>(v);
  return HostRule::Ports::kOne;
}

Status ParseHostPart(std::string_view h, HostRule* r) {
  if (h.empty()) return InvalidArgument("empty host");
  if (h.find('/') != std::string_view::npos) {
    WARD_ASSIGN_OR_RETURN(r->net, IpNet::Parse(h));
    r->kind = HostRule::Kind::kNet;
    return Ok();
  }
  // Every name. The policy loader accepts it only with --allow-net-anything (policy/loader.h).
  if (h == "*" || h == "*.*") {
    r->kind = HostRule::Kind::kWildcard;
    r->name.clear();
    return Ok();
  }
  if (h.size() >= 2 && h.substr(0, 2) == "*.") {
    std::string_view suffix = h.substr(2);
    if (suffix.find('*') != std::string_view::npos) {
      return InvalidArgument("'*' only as the whole first label ('*.example.com')");
    }
    auto parsed = ParseHost(suffix);
    if (!parsed.ok()) return std::move(parsed).take_status();
    if (parsed->is_address()) return InvalidArgument("a wildcard cannot apply to an IP address");
    r->kind = HostRule::Kind::kWildcard;
    r->name = std::move(parsed->name);
    return Ok();
  }
  if (h.find('*') != std::string_view::npos) {
    return InvalidArgument("'*' only as the whole first label ('*.example.com')");
  }
  if (auto addr = IpAddress::Parse(h); addr.ok()) {
    IpAddress a = addr->Unmapped();
    r->kind = HostRule::Kind::kAddress;
    r->net = IpNet(a, a.is_v4() ? 32 : 128);
    return Ok();
  }
  WARD_ASSIGN_OR_RETURN(Host host, ParseHost(h));
  if (host.is_address()) {
    return InvalidArgument("write the address as " + host.address->ToString());
  }
  r->kind = HostRule::Kind::kExact;
  r->name = std::move(host.name);
  return Ok();
}

Status ParsePattern(std::string_view s, HostRule* r) {
  if (s.empty()) return InvalidArgument("empty pattern");
  if (s.size() > kMaxPatternBytes) return InvalidArgument("pattern too long");
  if (s.find("://") != std::string_view::npos) {
    return InvalidArgument("a host pattern has no scheme (write 'example.com', not a URL)");
  }
  for (char c : s) {
    if (c == '@' || c == '?' || c == '#' || c == ' ' || c == '\t' ||
        static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return InvalidArgument("invalid character " + QuoteUntrusted(std::string_view(&c, 1)));
    }
  }
  std::string_view host = s, port;
  bool has_port = false;
  if (s.front() == '[') {
    size_t close = s.find(']');
    if (close == std::string_view::npos) return InvalidArgument("unbalanced '['");
    std::string_view rest = s.substr(close + 1);
    host = s.substr(0, close + 1);
    if (!rest.empty() && rest.front() == '/') {
      // "[fd00::]/8": the prefix sits outside the brackets; no port then.
      host = s;
      rest = {};
    } else if (host.find('/') != std::string_view::npos) {
      host = s.substr(1, close - 1);  // "[fd00::/8]:443"
    }
    if (!rest.empty()) {
      if (rest.front() != ':') return InvalidArgument("junk after ']'");
      port = rest.substr(1);
      has_port = true;
    }
  } else if (std::count(s.begin(), s.end(), ':') >= 2) {
    host = s;  // bare IPv6 address or block, no port (write "[::1]:3000" for one)
  } else if (size_t colon = s.find(':'); colon != std::string_view::npos) {
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
    has_port = true;
  }
  if (has_port) {
    WARD_ASSIGN_OR_RETURN(r->ports, ParsePort(port, &r->port));
  }
  return ParseHostPart(host, r);
}

std::string Describe(const HostRule& r) {
  return "'" + r.text + "' (" + FormatOrigin(r.origin) + ")";
}

EgressRules::Decision Allow(const HostRule& r) {
  return {true, r.text, r.origin, "allowed by " + Describe(r)};
}

EgressRules::Decision Deny(const HostRule& r) {
  return {false, r.text, r.origin, "denied by " + Describe(r)};
}

EgressRules::Decision DenyNoRule(std::string reason, std::string allow_with = "") {
  return {false, "", policy::Origin{}, std::move(reason), std::move(allow_with)};
}

// Anything outside printable ASCII becomes '?': a refusal's words end up in an HTTP status line
// and on terminals.
std::string Printable(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return s;
}

bool IsAddressRule(const HostRule& r) {
  return r.kind == HostRule::Kind::kAddress || r.kind == HostRule::Kind::kNet;
}

}  // namespace

Result<HostRule> HostRule::Parse(const policy::HostRule& rule) {
  HostRule r;
  r.text = rule.pattern;
  r.origin = rule.origin;
  Status st = ParsePattern(rule.pattern, &r);
  if (!st.ok()) {
    return InvalidArgument("bad host pattern " + QuoteUntrusted(rule.pattern, 128) + " (" +
                           FormatOrigin(rule.origin) + "): " + st.message());
  }
  return r;
}

bool HostRule::MatchesName(std::string_view n) const {
  switch (kind) {
    case Kind::kExact:
      return n == name;
    case Kind::kWildcard:
      if (name.empty()) return true;  // "*"
      return n.size() > name.size() + 1 && n.substr(n.size() - name.size()) == name &&
             n[n.size() - name.size() - 1] == '.';
    default:
      return false;
  }
}

bool HostRule::MatchesAddress(const IpAddress& addr) const {
  if (!IsAddressRule(*this)) return false;
  return net.Contains(addr.Unmapped());
}

EgressRules::NamePorts EgressRules::AllowedNamePorts() const {
  NamePorts out;
  for (const HostRule& r : allow_) {
    if (r.kind != HostRule::Kind::kExact && r.kind != HostRule::Kind::kWildcard) continue;
    switch (r.ports) {
      case HostRule::Ports::kAny:
        out.any = true;
        break;
      case HostRule::Ports::kOne:
        out.ports.push_back(r.port);
        break;
      case HostRule::Ports::kDefault:
        out.ports.push_back(80);
        out.ports.push_back(443);
        break;
    }
  }
  std::sort(out.ports.begin(), out.ports.end());
  out.ports.erase(std::unique(out.ports.begin(), out.ports.end()), out.ports.end());
  return out;
}

bool HostRule::MatchesPort(uint16_t p, bool deny_rule) const {
  switch (ports) {
    case Ports::kAny:
      return true;
    case Ports::kOne:
      return p == port;
    case Ports::kDefault:
      return deny_rule || p == 80 || p == 443;
  }
  return false;
}

Result<EgressRules> EgressRules::Compile(const policy::NetworkPolicy& policy) {
  EgressRules rules;
  for (const policy::HostRule& r : policy.allow) {
    WARD_ASSIGN_OR_RETURN(HostRule compiled, HostRule::Parse(r));
    rules.allow_.push_back(std::move(compiled));
  }
  for (const policy::HostRule& r : policy.deny) {
    WARD_ASSIGN_OR_RETURN(HostRule compiled, HostRule::Parse(r));
    rules.deny_.push_back(std::move(compiled));
  }
  return rules;
}

EgressRules::Decision EgressRules::CheckName(std::string_view host, uint16_t port) const {
  auto parsed = ParseHost(host);
  if (!parsed.ok()) return DenyNoRule(parsed.status().message());
  return CheckHost(*parsed, port);
}

EgressRules::Decision EgressRules::CheckHost(const Host& host, uint16_t port) const {
  if (port == 0) return DenyNoRule("port 0 is not a destination");
  if (host.is_address()) {
    IpAddress a = host.address->Unmapped();
    for (const HostRule& r : deny_) {
      if (r.MatchesAddress(a) && r.MatchesPort(port, true)) return Deny(r);
    }
    for (const HostRule& r : allow_) {
      if (r.MatchesAddress(a) && r.MatchesPort(port, false)) return Allow(r);
    }
    return DenyNoRule("no rule allows " + a.ToUriString() + ":" + std::to_string(port) +
                          " (IP addresses must be allowed by address or CIDR)",
                      AllowFlag(host, port));
  }
  for (const HostRule& r : deny_) {
    if (r.MatchesName(host.name) && r.MatchesPort(port, true)) return Deny(r);
  }
  for (const HostRule& r : allow_) {
    if (r.MatchesName(host.name) && r.MatchesPort(port, false)) return Allow(r);
  }
  return DenyNoRule("no rule allows " + host.name + ":" + std::to_string(port),
                    AllowFlag(host, port));
}

EgressRules::Decision EgressRules::CheckDnsName(std::string_view name) const {
  auto parsed = ParseHost(name);
  if (!parsed.ok()) return DenyNoRule(parsed.status().message());
  if (parsed->is_address()) return DenyNoRule("an IP address is not a name to resolve");
  for (const HostRule& r : deny_) {
    if (r.MatchesName(parsed->name) && r.ports != HostRule::Ports::kOne) return Deny(r);
  }
  for (const HostRule& r : allow_) {
    if (r.MatchesName(parsed->name)) return Allow(r);
  }
  return DenyNoRule("no rule allows " + parsed->name, AllowFlag(*parsed, 443));
}

EgressRules::Decision EgressRules::CheckAddress(const IpAddress& addr, uint16_t port) const {
  if (port == 0) return DenyNoRule("port 0 is not a destination");
  IpAddress a = addr.Unmapped();
  for (const HostRule& r : deny_) {
    if (r.MatchesAddress(a) && r.MatchesPort(port, true)) return Deny(r);
  }
  std::string why;
  if (!IsNonPublic(a, &why)) return {true, "", policy::Origin{}, "public address"};
  for (const HostRule& r : allow_) {
    if (r.MatchesAddress(a) && r.MatchesPort(port, false)) return Allow(r);
  }
  return DenyNoRule(a.ToString() + " is " + why + "; only an address or CIDR rule allows it");
}

std::string AllowFlag(const Host& host, uint16_t port) {
  const bool default_port = port == 80 || port == 443;
  if (host.is_address() && !host.address->is_v4() && default_port) {
    return "-n " + host.ToString();  // a bare IPv6 address has no brackets
  }
  return "-n " + (default_port ? host.ToUriString() : RefusalTarget(host, port));
}

std::string RefusalTarget(const Host& host, uint16_t port) {
  if (port == 80 || port == 443) return host.ToUriString();
  return host.ToUriString() + ":" + std::to_string(port);
}

std::string RefusalSentence(std::string_view target, std::string_view rule,
                            std::string_view origin, bool no_rule, std::string_view detail,
                            std::string_view allow_with) {
  std::string s(target);
  if (!rule.empty()) {
    s += " refused by network.deny rule '" + std::string(rule) + "'";
    if (!origin.empty()) s += " (" + std::string(origin) + ")";
  } else if (no_rule) {
    s += " not allowed";
  } else {
    s += " refused: " + std::string(detail);
  }
  if (!allow_with.empty()) s += " (ward run " + std::string(allow_with) + ")";
  return Printable(std::move(s));
}

}  // namespace ward::net
