#include "supervisor/denials.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "audit/sessions.h"

namespace ward::supervisor {
namespace {

// The record kinds a sandbox can produce in bulk; their records are capped per run.
// The target of the sends the kernel refused for want of a route (one entry, counted).
constexpr std::string_view kDirectSends = "direct connections (not through the proxy)";

constexpr std::string_view kBulkTypes[] = {"file.deny", "net.deny", "dns.deny"};

std::string Str(const nlohmann::json& data, const char* key) {
  if (!data.is_object()) return "";
  auto it = data.find(key);
  if (it == data.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_unsigned() || it->is_number_integer()) return it->dump();
  return "";
}

uint64_t Uint(const nlohmann::json& data, const char* key) {
  if (!data.is_object()) return 0;
  auto it = data.find(key);
  if (it == data.end() || !it->is_number()) return 0;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_number_integer()) return static_cast<uint64_t>(std::max<int64_t>(0, it->get<int64_t>()));
  return 0;
}

std::string Truncated(std::string s) {
  if (s.size() > DenialTally::kMaxText) s.resize(DenialTally::kMaxText);
  return s;
}

// A word a shell takes as it is, else the word in single quotes: what ward suggests can be
// pasted (a path from the sandbox may hold spaces or quotes).
std::string ShellWord(const std::string& s) {
  bool plain = !s.empty();
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("/._-+:@,=~%").find(c) != std::string_view::npos;
    if (!ok) plain = false;
  }
  if (plain) return s;
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

std::string HostPort(const std::string& host, const std::string& port) {
  const bool v6 = host.find(':') != std::string::npos && !host.starts_with("[");
  std::string h = v6 ? "[" + host + "]" : host;
  return port.empty() ? h : h + ":" + port;
}

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// net.deny: a proxy or SOCKS refusal. The record's own allow_with wins (the proxy's words).
Denial NetworkDenial(const nlohmann::json& data) {
  Denial d;
  d.kind = "network";
  const std::string host = Str(data, "host");
  const std::string port = Str(data, "port");
  const std::string reason = Str(data, "reason");
  const std::string rule = Str(data, "rule");
  d.target = HostPort(host, port);
  d.on_purpose = reason == "deny_rule" || (data.is_object() && data.value("on_purpose", false));
  if (reason == "no_rule") {
    d.rule = "no network.allow rule names it";
  } else if (reason == "deny_rule") {
    d.rule = "network.deny " + rule;
  } else if (reason == "address") {
    d.rule = "its address is refused" + (rule.empty() ? "" : " (" + rule + ")");
  } else if (reason == "not_approved") {
    d.rule = "not approved";
  } else {
    d.rule = reason.empty() ? "refused by the proxy" : reason;
    const std::string detail = Str(data, "detail");
    if (!detail.empty()) d.rule += ": " + detail;
  }
  if (data.is_object() && data.contains("allow_with")) {
    d.allow_with = Str(data, "allow_with");
  } else if (!d.on_purpose && (reason == "no_rule" || reason == "not_approved") && !host.empty()) {
    d.allow_with = (port == "80" || port == "443" || port.empty())
                       ? "-n " + ShellWord(host)
                       : "-n " + ShellWord(HostPort(host, port));
  }
  return d;
}

// net.direct.deny: sends that found no route out of the sandbox's namespace, counted by the
// kernel after the run (where they went is not known: only the proxy and the stub lead out).
Denial DirectSendsDenial(const nlohmann::json& data) {
  Denial d;
  d.kind = "network";
  d.target = std::string(kDirectSends);
  d.count = data.is_object() && data.contains("count") && data["count"].is_number_unsigned()
                ? data["count"].get<uint64_t>()
                : 1;
  d.rule = "no route out: only the proxy (HTTP(S)_PROXY, ALL_PROXY) and the DNS stub lead out";
  return d;
}

// dns.deny: the stub answered NXDOMAIN for a name not allowed (other rcodes are not refusals
// of a name: a query type the stub does not answer).
std::optional<Denial> DnsDenial(const nlohmann::json& data) {
  if (Str(data, "rcode") != "NXDOMAIN") return std::nullopt;
  Denial d;
  d.kind = "dns";
  d.target = Str(data, "host");  // the name normalised as the proxy has it (when recorded)
  if (d.target.empty()) d.target = Str(data, "name");
  while (d.target.size() > 1 && d.target.back() == '.') d.target.pop_back();
  const std::string rule = Str(data, "rule");
  d.on_purpose = !rule.empty() || (data.is_object() && data.value("on_purpose", false));
  d.rule = d.on_purpose ? "network.deny " + rule : "no network.allow rule names it";
  if (data.is_object() && data.contains("allow_with")) {
    d.allow_with = Str(data, "allow_with");
  } else if (!d.on_purpose && !d.target.empty()) {
    d.allow_with = "-n " + ShellWord(d.target);
  }
  return d;
}

// syscall.deny: the creation guard's and the file approvals' refusals, and the rest.
Denial SyscallDenial(const nlohmann::json& data) {
  Denial d;
  const std::string rule = Str(data, "rule");
  const std::string path = Str(data, "path");
  const std::string detail = Str(data, "detail");
  if (rule == "filesystem.protected") {
    d.kind = "protected";
    const std::string target = Str(data, "target");
    d.target = target.empty() ? path : target;
    d.rule = "protected: host tools read or run it";
    d.on_purpose = true;
  } else if (rule == "filesystem.deny") {
    d.kind = "file.read";
    d.target = path;
    d.rule = "filesystem.deny" + (detail.empty() ? "" : ": " + detail);
    d.on_purpose = true;
  } else if (rule == "approvals") {
    d.kind = "file.read";
    d.target = path;
    d.rule = "not approved" + (detail.empty() ? "" : ": " + detail);
    if (!path.empty()) d.allow_with = "-r " + ShellWord(path);
  } else {
    d.kind = "syscall";
    const std::string syscall = Str(data, "syscall");
    d.target = path.empty() ? syscall : syscall + " " + path;
    d.rule = rule + (detail.empty() ? "" : ": " + detail);
  }
  return d;
}

// file.deny: a write or creation the guard saw refused (read-only, or outside the writable roots).
std::optional<Denial> FileDenial(const nlohmann::json& data) {
  // The policy allows the write: the file's own permissions refused it, not ward.
  if (data.is_object() && data.value("policy_allows", false)) return std::nullopt;
  Denial d;
  d.kind = "file.write";
  d.target = Str(data, "path");
  if (data.is_object() && data.value("protected", false)) {
    d.kind = "protected";
    d.rule = "protected: host tools read or run it";
    d.on_purpose = true;
    return d;
  }
  const std::string rule = Str(data, "rule");
  const std::string err = Str(data, "errno");
  d.rule = rule.empty() ? err : rule;
  if (!d.target.empty()) d.allow_with = "-w " + ShellWord(DirOf(d.target));
  return d;
}

Denial LimitDenial(const nlohmann::json& data) {
  Denial d;
  d.kind = "limit";
  d.target = Str(data, "limit");
  d.rule = "the " + d.target + " limit" +
           (Str(data, "origin").empty() ? "" : " (" + Str(data, "origin") + ")");
  return d;
}

Denial CredentialDenial(const nlohmann::json& data) {
  Denial d;
  d.kind = "credential";
  d.target = HostPort(Str(data, "host"), Str(data, "port"));
  d.rule = "credential " + Str(data, "credential") + " may go only to its own hosts" +
           (Str(data, "where").empty() ? "" : " (in the " + Str(data, "where") + ")");
  d.on_purpose = true;
  return d;
}

Denial TerminalDenial(const nlohmann::json& data) {
  Denial d;
  d.kind = "terminal";
  d.target = Str(data, "sequence");
  d.rule = "the terminal filter";
  return d;
}

// The order of kinds among entries of the same count.
int KindRank(const std::string& kind) {
  static constexpr std::string_view kOrder[] = {"network", "dns",        "file.write", "file.read",
                                                "protected", "command",  "credential", "limit",
                                                "syscall", "terminal"};
  for (size_t i = 0; i < std::size(kOrder); ++i) {
    if (kOrder[i] == kind) return static_cast<int>(i);
  }
  return static_cast<int>(std::size(kOrder));
}

std::string Plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "(on the host: PATH)" of a command entry's rule.
std::string HostPathIn(const std::string& rule) {
  const std::string_view mark = "(on the host: ";
  size_t at = rule.find(mark);
  if (at == std::string::npos) return "";
  size_t end = rule.rfind(')');
  if (end == std::string::npos || end < at + mark.size()) return "";
  return rule.substr(at + mark.size(), end - at - mark.size());
}

// One summary line (sanitised) for one entry.
std::string LineOf(const Denial& d) {
  auto S = [](const std::string& s) { return audit::SanitizeForTerminal(s); };
  const std::string tail = d.on_purpose       ? " — refused on purpose"
                           : d.allow_with.empty() ? ""
                                                  : " — allow with: " + S(d.allow_with);
  if (d.kind == "network" && d.target == kDirectSends) {
    return "blocked " + Plural(d.count, "direct send", "direct sends") + " (" + S(d.rule) +
           ") — see: docs/network.md";
  }
  if (d.kind == "network") {
    return "blocked " + Plural(d.count, "connection", "connections") + " to " + S(d.target) +
           (d.on_purpose || d.allow_with.empty() ? " (" + S(d.rule) + ")" : "") + tail;
  }
  if (d.kind == "dns") {
    return "blocked " + Plural(d.count, "lookup", "lookups") + " of " + S(d.target) +
           (d.on_purpose ? " (" + S(d.rule) + ")" : "") + tail;
  }
  if (d.kind == "protected") {
    return "blocked " + Plural(d.count, "write", "writes") + " to " + S(d.target) +
           " (protected) — see: ward why " + S(ShellWord(d.target));
  }
  if (d.kind == "file.write") {
    return "blocked " + Plural(d.count, "write", "writes") + " to " + S(d.target) + " (" +
           S(d.rule) + ")" + tail;
  }
  if (d.kind == "file.read") {
    return "blocked " + Plural(d.count, "open", "opens") + " of " + S(d.target) + " (" +
           S(d.rule) + ")" + tail;
  }
  if (d.kind == "command") {
    const std::string host = HostPathIn(d.rule);
    return "'" + S(d.target) + "' is " + S(host) + " on the host, hidden here" +
           (d.allow_with.empty() ? "" : " — add: " + S(d.allow_with));
  }
  if (d.kind == "credential") {
    return "blocked " + Plural(d.count, "attempt", "attempts") + " to send a credential to " +
           S(d.target) + " (" + S(d.rule) + ")" + tail;
  }
  if (d.kind == "terminal") {
    return "blocked " + Plural(d.count, "terminal sequence", "terminal sequences") + ": " +
           S(d.target) + " (" + S(d.rule) + ")";
  }
  return "blocked " + Plural(d.count, "call", "calls") + ": " + S(d.target) + " (" + S(d.rule) +
         ")" + tail;
}

}  // namespace

nlohmann::json DenialToJson(const Denial& d) {
  return {{"kind", d.kind},   {"target", d.target},         {"count", d.count},
          {"rule", d.rule},   {"allow_with", d.allow_with}, {"on_purpose", d.on_purpose}};
}

nlohmann::json DenialsToJson(const std::vector<Denial>& ds) {
  nlohmann::json a = nlohmann::json::array();
  for (const Denial& d : ds) a.push_back(DenialToJson(d));
  return a;
}

std::optional<Denial> DenialOf(std::string_view type, const nlohmann::json& data) {
  if (type == "net.deny") return NetworkDenial(data);
  if (type == "dns.deny") return DnsDenial(data);
  if (type == "syscall.deny") return SyscallDenial(data);
  if (type == "file.deny") return FileDenial(data);
  if (type == "limit.hit") return LimitDenial(data);
  if (type == "credential.leak_attempt") return CredentialDenial(data);
  if (type == "terminal.deny") return TerminalDenial(data);
  if (type == "net.direct.deny") return DirectSendsDenial(data);
  if (type == "hook.decision" && Str(data, "decision") == "deny") {
    Denial d;
    d.kind = Str(data, "op") == "fetch" ? "net" : "file";
    d.target = Str(data, "op") == "fetch" ? Str(data, "url") : Str(data, "path");
    d.rule = Str(data, "why");
    return d;
  }
  if (type == "command.hidden") {
    Denial d;
    d.kind = "command";
    d.target = Str(data, "argv0");
    d.rule = "not in the sandbox's view (on the host: " + Str(data, "host_path") + ")";
    d.allow_with = Str(data, "allow_with");
    return d;
  }
  return std::nullopt;
}

void DenialTally::Add(Denial d) {
  if (d.count == 0) d.count = 1;
  d.target = Truncated(std::move(d.target));
  std::string key = d.kind + '\0' + d.target;
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    it->second.count += d.count;
    return;
  }
  if (entries_.size() >= kMaxDistinct) {
    other_ += d.count;
    return;
  }
  d.rule = Truncated(std::move(d.rule));
  d.allow_with = Truncated(std::move(d.allow_with));
  entries_.emplace(std::move(key), std::move(d));
}

void DenialTally::AddRecord(std::string_view type, const nlohmann::json& data) {
  if (type == "denials.unrecorded") {
    other_ += Uint(data, "count");  // records the run held back: counted, targets unknown
    return;
  }
  if (std::optional<Denial> d = DenialOf(type, data)) Add(std::move(*d));
}

std::vector<Denial> DenialTally::Sorted(size_t max_entries) const {
  std::set<std::string> proxied_hosts;
  for (const auto& [key, d] : entries_) {
    if (d.kind != "network") continue;
    size_t colon = d.target.rfind(':');
    std::string host = colon == std::string::npos ? d.target : d.target.substr(0, colon);
    if (host.starts_with("[") && host.ends_with("]")) host = host.substr(1, host.size() - 2);
    proxied_hosts.insert(host);
  }
  std::vector<Denial> out;
  out.reserve(entries_.size() + 1);
  for (const auto& [key, d] : entries_) {
    if (d.kind == "dns" && proxied_hosts.count(d.target) > 0) continue;
    out.push_back(d);
  }
  std::sort(out.begin(), out.end(), [](const Denial& a, const Denial& b) {
    return std::make_tuple(-static_cast<int64_t>(std::min<uint64_t>(a.count, INT64_MAX)),
                           KindRank(a.kind), std::cref(a.kind), std::cref(a.target)) <
           std::make_tuple(-static_cast<int64_t>(std::min<uint64_t>(b.count, INT64_MAX)),
                           KindRank(b.kind), std::cref(b.kind), std::cref(b.target));
  });
  uint64_t other = other_;
  for (size_t i = max_entries; i < out.size(); ++i) other += out[i].count;
  if (out.size() > max_entries) out.resize(max_entries);
  if (other > 0) {
    Denial o;
    o.kind = "other";
    o.count = other;
    o.rule = "more distinct targets than ward keeps apart, or records the run held back";
    out.push_back(std::move(o));
  }
  return out;
}

void DenialTee::Emit(std::string_view type, nlohmann::json data) {
  bool forward = true;
  if (type == "file.deny" && classify_ && data.is_object()) {
    const std::string c = classify_(Str(data, "path"));
    if (c == "protected") data["protected"] = true;
    if (c == "writable") data["policy_allows"] = true;
  }
  {
    std::lock_guard lock(mu_);
    tally_.AddRecord(type, data);
    for (auto& [id, window] : windows_) window.AddRecord(type, data);
    for (std::string_view bulk : kBulkTypes) {
      if (type != bulk) continue;
      auto it = bulk_seen_.find(type);
      if (it == bulk_seen_.end()) it = bulk_seen_.emplace(std::string(type), 0).first;
      forward = ++it->second <= kMaxRecordsPerType;
    }
  }
  if (forward && next_ != nullptr) next_->Emit(type, std::move(data));
}

std::vector<Denial> DenialTee::Finish() {
  std::lock_guard lock(mu_);
  for (const auto& [type, seen] : bulk_seen_) {
    if (seen > kMaxRecordsPerType && next_ != nullptr) {
      next_->Emit("denials.unrecorded", {{"type", type},
                                         {"count", seen - kMaxRecordsPerType},
                                         {"recorded", kMaxRecordsPerType}});
    }
  }
  bulk_seen_.clear();
  return tally_.Sorted();
}

void DenialTee::OpenWindow(uint64_t id) {
  std::lock_guard lock(mu_);
  windows_[id] = DenialTally();
}

std::vector<Denial> DenialTee::CloseWindow(uint64_t id, size_t max_entries) {
  std::lock_guard lock(mu_);
  auto it = windows_.find(id);
  if (it == windows_.end()) return {};
  std::vector<Denial> ds = it->second.Sorted(max_entries);
  windows_.erase(it);
  return ds;
}

std::vector<std::string> SummaryLines(const std::vector<Denial>& ds, size_t max_lines,
                                      const std::string& more_hint) {
  std::vector<std::string> lines;
  uint64_t more = 0;
  for (const Denial& d : ds) {
    if (d.kind == "limit") continue;
    if (d.kind == "other") {
      more += d.count;
      continue;
    }
    if (lines.size() < max_lines) {
      lines.push_back("ward: " + LineOf(d));
    } else {
      ++more;
    }
  }
  if (more > 0) {
    lines.push_back("ward: and " + std::to_string(more) + " more: " +
                    audit::SanitizeForTerminal(more_hint));
  }
  return lines;
}

}  // namespace ward::supervisor
