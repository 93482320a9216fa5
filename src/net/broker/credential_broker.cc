#include "net/broker/credential_broker.h"

#include <string.h>

#include <algorithm>
#include <mutex>
#include <set>

#include "libssl/on_use.h"
#include "net/broker/masker.h"
#include "net/broker/phantom.h"
#include "net/broker/source.h"
#include "net/request_rules.h"
#include "net/text_util.h"

namespace ward::net {

namespace {

constexpr size_t kMinPhantomKey = 16;  // shorter random parts would match by accident
constexpr size_t kMaxDnsReported = 1024;

std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

// memmem is linear in glibc (two-way): hostile text built from a phantom's prefix repeated
// cannot make scanning quadratic.
const char* Find(std::string_view s, std::string_view needle) {
  if (needle.empty() || s.size() < needle.size()) return nullptr;
  return static_cast<const char*>(memmem(s.data(), s.size(), needle.data(), needle.size()));
}

bool Contains(std::string_view s, std::string_view needle) { return Find(s, needle) != nullptr; }

std::string LooseName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    if (c != '.') out += AsciiLower(c);
  }
  return out;
}

// "Basic <base64>" (scheme without case); the decoded credentials, or nullopt.
std::optional<std::string> DecodeBasic(std::string_view value) {
  value = TrimOws(value);
  if (value.size() < 6 || !StartsWithIgnoreCase(value, "basic ")) return std::nullopt;
  return Base64Decode(TrimOws(value.substr(6)));
}

std::string Fill(std::string_view tmpl, std::string_view secret) {
  return ReplaceAll(tmpl, "{secret}", secret);
}

// Whether the query of an origin-form target has a parameter of that (decoded) name.
bool QueryHas(std::string_view target, std::string_view name) {
  size_t q = target.find('?');
  if (q == std::string_view::npos) return false;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    std::string_view key = pair.substr(0, pair.find('='));
    if (PercentDecode(key) == name) return true;
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return false;
}

// ------------------------------------------------------------------ building a credential

// One host of a credential: a name or a single address, which the session CA may then sign.
Result<HostRule> ParseCredentialHost(const std::string& what, const policy::HostRule& h,
                                     TlsAuthorityOptions& ca) {
  auto rule = HostRule::Parse(h);
  if (!rule.ok()) return Status(rule.status().code(), what + ": " + rule.status().message());
  switch (rule->kind) {
    case HostRule::Kind::kExact:
    case HostRule::Kind::kWildcard:
      if (rule->name.empty()) {
        return InvalidArgument(what + ": host " + h.pattern +
                               ": a secret goes to named hosts, not to every host");
      }
      if (std::find(ca.permitted_names.begin(), ca.permitted_names.end(), rule->name) ==
          ca.permitted_names.end()) {
        ca.permitted_names.push_back(rule->name);
      }
      break;
    case HostRule::Kind::kAddress: {
      IpAddress a = rule->net.address();
      if (std::find(ca.permitted_addresses.begin(), ca.permitted_addresses.end(), a) ==
          ca.permitted_addresses.end()) {
        ca.permitted_addresses.push_back(a);
      }
      break;
    }
    case HostRule::Kind::kNet:
      return InvalidArgument(what + ": host " + h.pattern +
                             ": a secret goes to named hosts or single addresses, not to a "
                             "whole network");
  }
  return rule;
}

// A route goes to the credential's first host.
Status SetRoute(const std::string& what, BrokeredCredential& c, std::set<std::string>& routes) {
  if (!routes.insert(c.route).second) {
    return InvalidArgument(what + ": route " + c.route + " is used twice");
  }
  const HostRule& first = c.hosts.front();
  if (first.kind == HostRule::Kind::kExact) {
    c.route_host.name = first.name;
  } else if (first.kind == HostRule::Kind::kAddress) {
    c.route_host.address = first.net.address();
  } else {
    return InvalidArgument(what + ": the route goes to the first host, " + first.text +
                           ", which must be one name or address (not a wildcard)");
  }
  c.route_port = first.ports == HostRule::Ports::kOne ? first.port : 443;
  return Ok();
}

// The spec's phantom, or a new one shaped like the secret.
Status SetPhantom(const std::string& what, CredentialSpec& s, BrokeredCredential& c) {
  if (s.phantom.empty()) {
    WARD_ASSIGN_OR_RETURN(s.phantom, MakePhantom(s.secret));
  }
  c.phantom = s.phantom;
  PhantomShape shape = DescribePhantomShape(s.secret);
  std::string_view key = c.phantom;
  if (key.starts_with(shape.prefix) && key.ends_with(shape.suffix)) {
    key = PhantomRandomPart(key, shape);
  }
  c.phantom_key = LooseName(key);
  if (c.phantom_key.size() < kMinPhantomKey || Contains(c.secret, c.phantom) ||
      Contains(c.phantom, c.secret)) {
    return InvalidArgument(what +
                           ": the phantom value is unusable (too short or overlapping "
                           "the secret)");
  }
  return Ok();
}

// The names seen so far (names, routes) and the names the session CA may sign (ca) grow with
// each credential.
Result<BrokeredCredential> BuildCredential(CredentialSpec& s, std::set<std::string>& names,
                                           std::set<std::string>& routes, TlsAuthorityOptions& ca) {
  const std::string what = "credential " + s.name;
  if (s.name.empty()) return InvalidArgument("a credential without a name");
  if (!names.insert(s.name).second) return InvalidArgument(what + ": defined twice");
  auto clean = CleanSecret(s.secret);
  if (!clean.ok() || *clean != s.secret) {
    return InvalidArgument(what + ": the secret must be one trimmed line of printable text");
  }
  if (s.hosts.empty()) return InvalidArgument(what + ": no hosts");
  BrokeredCredential c;
  c.name = s.name;
  c.secret = s.secret;
  c.inject = s.inject;
  c.route = s.route;
  for (const policy::HostRule& h : s.hosts) {
    WARD_ASSIGN_OR_RETURN(HostRule rule, ParseCredentialHost(what, h, ca));
    c.hosts.push_back(std::move(rule));
  }
  if (!c.route.empty()) WARD_TRY(SetRoute(what, c, routes));
  WARD_TRY(SetPhantom(what, s, c));
  return c;
}

// ------------------------------------------------------------------ applying credentials

// The phantoms in a request's text. One of a credential for host:port, on a request the
// broker's TLS carries, is marked seen (to be replaced by its secret); any other is a leak.
class PhantomScan {
 public:
  PhantomScan(const std::vector<BrokeredCredential>& creds, const Host& host, uint16_t port,
              bool tls, CredentialBroker::Verdict& v)
      : creds_(creds), host_(host), port_(port), tls_(tls), v_(v), seen_(creds.size(), false) {}

  // True (and v filled in) when a phantom may not go where this request goes.
  bool operator()(std::string_view text, std::string_view where) {
    for (size_t i = 0; i < creds_.size(); ++i) {
      const BrokeredCredential& c = creds_[i];
      if (!Contains(text, c.phantom)) continue;
      if (!tls_ || !c.MatchesHost(host_, port_)) {
        v_.leaked = &c;
        v_.where = std::string(where);
        return true;
      }
      seen_[i] = true;
    }
    return false;
  }

  // The target, then every header; true at the first leak.
  bool Request(const HttpHeaders& headers, const std::string& origin_form) {
    PhantomScan& scan = *this;
    if (scan(origin_form, "url") || scan(PercentDecode(origin_form), "url")) return true;
    for (const HttpHeader& h : headers.entries()) {
      // Proxy-* fields are for the proxy and are removed before forwarding.
      if (StartsWithIgnoreCase(h.name, "Proxy-")) continue;
      if (scan(h.name, "header name")) return true;
      bool token = !h.name.empty() && std::all_of(h.name.begin(), h.name.end(), IsTokenChar);
      if (scan(h.value, "header " + (token ? h.name.substr(0, 64) : QuoteUntrusted(h.name, 64)))) {
        return true;
      }
      if (auto basic = DecodeBasic(h.value); basic && scan(*basic, "basic auth")) return true;
    }
    return false;
  }

  const std::vector<bool>& seen() const { return seen_; }

 private:
  const std::vector<BrokeredCredential>& creds_;
  const Host& host_;
  const uint16_t port_;
  const bool tls_;
  CredentialBroker::Verdict& v_;
  std::vector<bool> seen_;
};

// One header value with the seen phantoms replaced by their secrets, in Basic credentials too.
std::string ReplacePhantomsInValue(const std::vector<BrokeredCredential>& creds,
                                   const std::vector<bool>& seen, std::string value) {
  std::optional<std::string> basic = DecodeBasic(value);
  bool basic_changed = false;
  for (size_t i = 0; i < creds.size(); ++i) {
    if (!seen[i]) continue;
    const BrokeredCredential& c = creds[i];
    value = ReplaceAll(value, c.phantom, c.secret);
    if (basic && Contains(*basic, c.phantom)) {
      *basic = ReplaceAll(*basic, c.phantom, c.secret);
      basic_changed = true;
    }
  }
  if (basic_changed) value = "Basic " + Base64Encode(*basic);
  return value;
}

// The seen phantoms replaced by their secrets, in every header and in the target; those
// credentials are then used.
void ReplacePhantoms(const std::vector<BrokeredCredential>& creds, const std::vector<bool>& seen,
                     HttpHeaders& headers, std::string& origin_form,
                     std::vector<const BrokeredCredential*>& used) {
  HttpHeaders rewritten;
  for (const HttpHeader& h : headers.entries()) {
    rewritten.Add(h.name, ReplacePhantomsInValue(creds, seen, h.value));
  }
  headers = std::move(rewritten);
  for (size_t i = 0; i < creds.size(); ++i) {
    if (!seen[i]) continue;
    origin_form =
        ReplaceAll(origin_form, creds[i].phantom, PercentEncodeComponent(creds[i].secret));
    used.push_back(&creds[i]);
  }
}

void AppendQueryParameter(std::string& origin_form, std::string_view name, std::string_view value) {
  size_t hash = origin_form.find('#');  // never sent, but keep any fragment last
  std::string frag;
  if (hash != std::string::npos) {
    frag = origin_form.substr(hash);
    origin_form.resize(hash);
  }
  origin_form += origin_form.find('?') == std::string::npos ? '?' : '&';
  origin_form += PercentEncodeComponent(name) + "=" + PercentEncodeComponent(value);
  origin_form += frag;
}

// Adds c where the client left its place empty; returns whether it did.
bool InjectCredential(const BrokeredCredential& c, HttpHeaders& headers, std::string& origin_form) {
  switch (c.inject.kind) {
    case policy::CredentialInject::Kind::kHeader:
      if (headers.Get(c.inject.name)) return false;
      headers.Add(c.inject.name, Fill(c.inject.template_, c.secret));
      return true;
    case policy::CredentialInject::Kind::kBasic:
      if (headers.Get("Authorization")) return false;
      headers.Add("Authorization", "Basic " + Base64Encode(c.inject.template_ + ":" + c.secret));
      return true;
    case policy::CredentialInject::Kind::kQuery:
      if (QueryHas(origin_form, c.inject.name)) return false;
      AppendQueryParameter(origin_form, c.inject.name, Fill(c.inject.template_, c.secret));
      return true;
  }
  return false;
}
}  // namespace

// ------------------------------------------------------------------ encodings

std::string Base64Encode(std::string_view data) {
  return Base64EncodeWith(data, /*alphabet=*/0, /*pad=*/true);
}

std::optional<std::string> Base64Decode(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;  // standard and URL-safe alphabets
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

std::string PercentDecode(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else if (s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string PercentEncodeComponent(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += c;
    } else {
      out += '%';
      out += kHex[static_cast<uint8_t>(c) >> 4];
      out += kHex[static_cast<uint8_t>(c) & 15];
    }
  }
  return out;
}

// ------------------------------------------------------------------ credentials

bool BrokeredCredential::MatchesHost(const Host& host, uint16_t port) const {
  for (const HostRule& r : hosts) {
    bool name = host.is_address() ? r.MatchesAddress(*host.address) : r.MatchesName(host.name);
    if (name && r.MatchesPort(port, /*deny_rule=*/false)) return true;
  }
  return false;
}

CredentialBroker::~CredentialBroker() = default;

Result<std::unique_ptr<CredentialBroker>> CredentialBroker::Create(
    std::vector<CredentialSpec> specs, BrokerOptions options) {
  // Phantoms, the session CA and the upstream TLS all need OpenSSL (src/libssl/on_use.h).
  if (const std::string& e = libssl::Load(); !e.empty()) {
    return Error(Code::kFailedPrecondition, "the credential broker needs OpenSSL: " + e);
  }
  std::unique_ptr<CredentialBroker> b(new CredentialBroker());
  b->options_ = std::move(options);
  std::set<std::string> names, routes;
  TlsAuthorityOptions ca;
  for (CredentialSpec& s : specs) {
    WARD_ASSIGN_OR_RETURN(BrokeredCredential c, BuildCredential(s, names, routes, ca));
    b->creds_.push_back(std::move(c));
  }
  for (const policy::HostRule& h : b->options_.inspect_hosts) {
    WARD_ASSIGN_OR_RETURN(HostRule rule, ParseCredentialHost("network.rules", h, ca));
    b->inspect_.push_back(std::move(rule));
  }
  std::vector<SecretForm> forms;
  for (const BrokeredCredential& c : b->creds_) {
    std::vector<SecretForm> f = SecretForms(c.secret, c.phantom);
    forms.insert(forms.end(), std::make_move_iterator(f.begin()), std::make_move_iterator(f.end()));
  }
  b->mask_table_ = std::make_unique<SecretMaskTable>(std::move(forms));
  WARD_ASSIGN_OR_RETURN(b->upstream_ctx_, MakeUpstreamTlsContext(b->options_.upstream));
  if (b->options_.intercept && (!b->creds_.empty() || !b->inspect_.empty())) {
    WARD_ASSIGN_OR_RETURN(b->authority_, TlsAuthority::Create(std::move(ca)));
  }
  return b;
}

const BrokeredCredential* CredentialBroker::FindRoute(std::string_view route) const {
  for (const BrokeredCredential& c : creds_) {
    if (!c.route.empty() && c.route == route) return &c;
  }
  return nullptr;
}

bool CredentialBroker::Intercepts(const Host& host, uint16_t port) const {
  if (!authority_) return false;
  for (const BrokeredCredential& c : creds_) {
    if (c.MatchesHost(host, port)) return true;
  }
  return std::any_of(inspect_.begin(), inspect_.end(),
                     [&](const HostRule& r) { return RuleHostMatches(r, host, port); });
}

const BrokeredCredential* CredentialBroker::FindPhantomInName(std::string_view name) const {
  if (creds_.empty()) return nullptr;
  std::string loose = LooseName(name);
  for (const BrokeredCredential& c : creds_) {
    if (Contains(loose, c.phantom_key)) return &c;
  }
  return nullptr;
}

CredentialBroker::Verdict CredentialBroker::ApplyToRequest(const Host& host, uint16_t port,
                                                           bool tls, HttpHeaders& headers,
                                                           std::string& origin_form) const {
  Verdict v;
  if (creds_.empty()) return v;
  PhantomScan scan(creds_, host, port, tls, v);
  if (scan.Request(headers, origin_form)) return v;
  if (!tls) return v;

  // Phantoms of this host's credentials, wherever the client put them.
  const std::vector<bool>& seen = scan.seen();
  if (std::find(seen.begin(), seen.end(), true) != seen.end()) {
    ReplacePhantoms(creds_, seen, headers, origin_form, v.used);
  }
  // This host's other credentials: added where the client left their place empty.
  for (size_t i = 0; i < creds_.size(); ++i) {
    const BrokeredCredential& c = creds_[i];
    if (seen[i] || !c.MatchesHost(host, port)) continue;
    if (InjectCredential(c, headers, origin_form)) v.used.push_back(&c);
  }
  return v;
}

// ------------------------------------------------------------------ body scanner

CredentialBroker::BodyScanner::BodyScanner(const CredentialBroker& broker, const Host& host,
                                           uint16_t port, bool tls) {
  for (const BrokeredCredential& c : broker.creds_) {
    if (tls && c.MatchesHost(host, port)) continue;
    watch_.push_back(&c);
    keep_ = std::max(keep_, c.phantom.size() - 1);
  }
}

const BrokeredCredential* CredentialBroker::BodyScanner::Feed(std::string_view data) {
  if (watch_.empty() || data.empty()) return nullptr;
  // A match across the previous piece and this one lies within carry_ + the start of data.
  std::string boundary = carry_;
  boundary.append(data.substr(0, std::min(data.size(), keep_)));
  for (const BrokeredCredential* c : watch_) {
    if (Contains(boundary, c->phantom) || Contains(data, c->phantom)) return c;
  }
  if (data.size() >= keep_) {
    carry_.assign(data.substr(data.size() - keep_));
  } else {
    carry_.append(data);
    if (carry_.size() > keep_) carry_.erase(0, carry_.size() - keep_);
  }
  return nullptr;
}

// ------------------------------------------------------------------ masker

std::string CredentialBroker::MaskSecrets(std::string_view s) const {
  SecretMasker m(*mask_table_);
  std::string out = m.Process(s);
  out += m.Flush();
  return out;
}

// ------------------------------------------------------------------ TLS and DNS

Result<std::shared_ptr<SSL_CTX>> CredentialBroker::InterceptContext(const Host& host) const {
  if (!authority_) return Error(Code::kFailedPrecondition, "interception is off");
  return authority_->ServerContext(host);
}

const std::string& CredentialBroker::ca_pem() const {
  static const std::string kNone;
  return authority_ ? authority_->ca_pem() : kNone;
}

std::function<bool(std::string_view)> CredentialBroker::DnsNameCheck(EventSink* events) const {
  // Resolvers repeat a query (A and AAAA, retries): one event per name.
  struct Seen {
    std::mutex mu;
    std::set<std::string> names;
  };
  auto seen = std::make_shared<Seen>();
  return [this, events, seen](std::string_view name) {
    const BrokeredCredential* c = FindPhantomInName(name);
    if (c == nullptr) return false;
    std::string shown = QuoteUntrusted(name, 255);
    {
      std::lock_guard<std::mutex> lock(seen->mu);
      if (seen->names.size() >= kMaxDnsReported) seen->names.clear();
      if (!seen->names.insert(shown).second) return true;
    }
    if (events != nullptr) {
      try {
        events->Emit("credential.leak_attempt",
                     {{"credential", c->name}, {"host", shown}, {"where", "dns"}});
      } catch (...) {
        // A sink must not throw; losing the event beats losing the DNS stub.
      }
    }
    return true;
  };
}

}  // namespace ward::net
