#include "net/request_rules.h"

#include <algorithm>

#include "net/text_util.h"

namespace ward::net {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool Unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

bool Control(unsigned char c) { return c < 0x20 || c == 0x7f; }

// The path with escapes of unreserved characters decoded (others kept, in upper case); nullopt
// for an escape that is malformed or stands for '/', '\' or NUL, and for a raw '\' or control.
std::optional<std::string> DecodeUnreserved(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    const auto c = static_cast<unsigned char>(path[i]);
    // ';' starts path parameters, which some servers (servlet containers) strip from a segment
    // ("/pub/..;/admin" is "/admin" there).
    if (c == '\\' || c == ';' || Control(c)) return std::nullopt;
    if (c != '%') {
      out += static_cast<char>(c);
      continue;
    }
    if (i + 2 >= path.size()) return std::nullopt;
    const int hi = HexValue(path[i + 1]), lo = HexValue(path[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    const auto v = static_cast<unsigned char>(hi * 16 + lo);
    if (v == '/' || v == '\\' || v == 0) return std::nullopt;
    if (Unreserved(v)) {
      out += static_cast<char>(v);
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += '%';
      out += kHex[v >> 4];
      out += kHex[v & 15];
    }
    i += 2;
  }
  return out;
}

// No "." or ".." segment and no empty one but the last ("/a//b" is "/a/b" to many servers).
bool PlainSegments(std::string_view path) {
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view seg = path.substr(start, end - start);
    if (seg == "." || seg == "..") return false;
    if (seg.empty() && end != path.size()) return false;
    start = end + 1;
  }
  return true;
}

std::string Join(const std::vector<std::string>& v, char sep) {
  std::string out;
  for (const std::string& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

}  // namespace

// A rule's bare host governs every port of it (a host with rules is limited to what they
// allow, whichever port the allow list opens); "host:port" that port only.
bool RuleHostMatches(const HostRule& r, const Host& host, uint16_t port) {
  if (r.ports != HostRule::Ports::kDefault && !r.MatchesPort(port, /*deny_rule=*/false)) {
    return false;
  }
  if (host.is_address()) return r.MatchesAddress(*host.address);
  return r.MatchesName(host.name);
}

std::optional<std::string> CanonicalRequestPath(std::string_view target) {
  if (target.empty() || target[0] != '/' || target.find('#') != std::string_view::npos) {
    return std::nullopt;
  }
  const size_t q = target.find('?');
  std::optional<std::string> path = DecodeUnreserved(target.substr(0, q));
  if (!path || !PlainSegments(*path)) return std::nullopt;
  if (q == std::string_view::npos) return path;
  std::string_view query = target.substr(q);
  if (std::any_of(query.begin(), query.end(),
                  [](char c) { return Control(static_cast<unsigned char>(c)) || c == '\\'; })) {
    return std::nullopt;
  }
  return *path + std::string(query);
}

namespace {

bool LowerEq(char a, char b) { return AsciiLower(a) == AsciiLower(b); }

// MatchPathPattern, ignoring ASCII case when `fold`.
bool Glob(std::string_view pattern, std::string_view text, bool fold) {
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() &&
               (fold ? LowerEq(pattern[p], text[t]) : pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

bool MatchPathPattern(std::string_view pattern, std::string_view text) {
  return Glob(pattern, text, /*fold=*/false);
}

Result<RequestRules> RequestRules::Compile(const std::vector<policy::RequestRule>& rules) {
  RequestRules out;
  for (const policy::RequestRule& r : rules) {
    Rule rule;
    auto host = HostRule::Parse(policy::HostRule{r.host, r.origin});
    if (!host.ok()) return host.status();
    if (host->kind == HostRule::Kind::kNet || (host->kind == HostRule::Kind::kWildcard &&
                                                host->name.empty())) {
      return InvalidArgument(FormatOrigin(r.origin) + ": rule host '" + r.host +
                             "' is more than one host; name one (a name, *.name or an address)");
    }
    rule.host = std::move(host).value();
    rule.methods = r.methods;
    for (const std::string& pattern : r.paths) {
      // Patterns are read as requests are: escapes of unreserved characters decoded.
      const size_t q = pattern.find('?');
      std::optional<std::string> path = DecodeUnreserved(pattern.substr(0, q));
      if (!path) {
        return InvalidArgument(FormatOrigin(r.origin) + ": path '" + pattern +
                               "' has an escape a request path cannot have (%2F, %00, ';', ...)");
      }
      rule.paths.push_back(*path + (q == std::string::npos ? "" : pattern.substr(q)));
    }
    rule.action = r.action;
    rule.origin = r.origin;
    rule.text = (r.methods.empty() ? std::string("*") : Join(r.methods, ',')) + " " + r.host +
                (r.paths.empty() ? std::string() : " " + Join(r.paths, ',')) + " (" +
                policy::RequestActionName(r.action) + ")";
    out.rules_.push_back(std::move(rule));
  }
  return out;
}

std::vector<Host> RequestRules::NamedHosts() const {
  std::vector<Host> out;
  for (const Rule& r : rules_) {
    if (r.host.kind != HostRule::Kind::kExact) continue;
    Host h;
    h.name = r.host.name;
    if (std::find(out.begin(), out.end(), h) == out.end()) out.push_back(std::move(h));
  }
  return out;
}

bool RequestRules::Governs(const Host& host, uint16_t port) const {
  return std::any_of(rules_.begin(), rules_.end(),
                     [&](const Rule& r) { return RuleHostMatches(r.host, host, port); });
}

RequestRules::Decision RequestRules::Check(const Host& host, uint16_t port,
                                           std::string_view method,
                                           std::string_view target) const {
  Decision d;
  const std::string shown = QuoteUntrusted(
      std::string(method.substr(0, 16)) + " " + host.ToUriString() +
          (port == 80 || port == 443 ? "" : ":" + std::to_string(port)) + std::string(target),
      300);
  std::optional<std::string> canon = CanonicalRequestPath(target);
  if (!canon) {
    d.reason = shown + " refused: its path could be read more than one way (\".\" or \"..\" "
                       "segments, an escaped '/', a backslash)";
    return d;
  }
  const std::string path = canon->substr(0, canon->find('?'));
  for (const Rule& r : rules_) {
    if (!RuleHostMatches(r.host, host, port)) continue;
    // Methods without regard to case: some servers read "delete" as DELETE.
    if (!r.methods.empty() &&
        std::none_of(r.methods.begin(), r.methods.end(),
                     [&](const std::string& m) { return EqualsIgnoreCase(m, method); })) {
      continue;
    }
    // Refusing and asking rules match paths without regard to case too (some servers, GitHub's
    // owner and repository names among them, do not tell "/Acme" from "/acme"): over-refusing
    // is safe, under-refusing is not.
    const bool fold = r.action != policy::RequestRule::Action::kAllow;
    const bool path_matches =
        r.paths.empty() || std::any_of(r.paths.begin(), r.paths.end(), [&](const std::string& p) {
          return Glob(p, p.find('?') == std::string::npos ? path : *canon, fold);
        });
    if (!path_matches) continue;
    d.rule = r.text;
    d.origin = r.origin;
    switch (r.action) {
      case policy::RequestRule::Action::kAllow:
        d.action = Decision::Action::kAllow;
        break;
      case policy::RequestRule::Action::kDeny:
        d.action = Decision::Action::kDeny;
        d.reason = shown + " refused by network.rules rule '" + r.text + "' (" +
                   FormatOrigin(r.origin) + ")";
        break;
      case policy::RequestRule::Action::kAsk:
        d.action = Decision::Action::kAsk;
        d.reason = shown + " needs approval (network.rules rule '" + r.text + "', " +
                   FormatOrigin(r.origin) + ")";
        break;
    }
    return d;
  }
  d.reason = shown + " refused: no network.rules rule for " + host.ToString() + " allows it";
  return d;
}

}  // namespace ward::net
