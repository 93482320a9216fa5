#include "api/claude_file_tools.h"

#include <cctype>
#include <map>

#include "api/jsonrpc.h"
#include "policy/paths.h"

namespace ward::api {
namespace {

using Op = FileAccess::Op;

// Claude Code's tools that touch files, and how: the field that names the path, and whether it
// is a file read, a file write or a directory walked.
struct KnownTool {
  const char* field;
  Op op;
  bool optional;  // the field may be absent: the call's cwd then
};
const std::map<std::string, KnownTool, std::less<>>& KnownFileTools() {
  static const auto* tools = new std::map<std::string, KnownTool, std::less<>>{
      {"Read", {"file_path", Op::kRead, false}},
      {"NotebookRead", {"notebook_path", Op::kRead, false}},
      {"Write", {"file_path", Op::kWrite, false}},
      {"Edit", {"file_path", Op::kWrite, false}},
      {"MultiEdit", {"file_path", Op::kWrite, false}},
      {"NotebookEdit", {"notebook_path", Op::kWrite, false}},
      {"Grep", {"path", Op::kList, true}},
      {"Glob", {"path", Op::kList, true}},
      {"LS", {"path", Op::kList, false}},
  };
  return *tools;
}

// Tools that name no host path, or whose effect ward confines elsewhere.
bool TouchesNoPath(std::string_view tool) {
  return tool == "Bash" || tool == "BashOutput" || tool == "KillShell" || tool == "KillBash" ||
         tool == "Task" || tool == "TodoWrite" || tool == "WebSearch" || tool == "WebFetch" ||
         tool == "ExitPlanMode" || tool.rfind("mcp__", 0) == 0;
}

// The code point at the start (or end) of s, decoded from UTF-8; -1 when malformed.
long FirstCodePoint(std::string_view s, bool from_end) {
  if (s.empty()) return -1;
  size_t start = 0;
  if (from_end) {
    start = s.size() - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  }
  const auto c0 = static_cast<unsigned char>(s[start]);
  int len = c0 < 0x80 ? 1 : (c0 >> 5) == 0x6 ? 2 : (c0 >> 4) == 0xE ? 3 : (c0 >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || start + static_cast<size_t>(len) > s.size()) return -1;
  long cp = len == 1 ? c0 : c0 & (0x7F >> len);
  for (int i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<unsigned char>(s[start + i]) & 0x3F);
  return cp;
}

// What JavaScript's String.prototype.trim() removes (Claude Code trims paths before using them).
bool IsJsWhitespace(long cp) {
  return cp == 0x09 || cp == 0x0A || cp == 0x0B || cp == 0x0C || cp == 0x0D || cp == 0x20 ||
         cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000 || cp == 0xFEFF;
}

// Claude Code turns a path into the one it opens by trimming it, expanding a leading "~" and
// normalising it as text (".." removed before any symlink is followed), and skips that before
// its hooks for paths longer than PATH_MAX. The hook takes the same steps and refuses what
// they could read two ways: whitespace (or malformed UTF-8) at either end of a component, and
// lengths past PATH_MAX.
Status CheckPlainPath(const std::string& field, const std::string& path) {
  if (path.size() > 4096) return InvalidArgument("tool_input." + field + " is longer than 4096");
  if (path.find('\0') != std::string::npos) {
    return InvalidArgument("tool_input." + field + " contains NUL");
  }
  for (const std::string& comp : policy::PathComponents(path)) {
    long first = FirstCodePoint(comp, false);
    long last = FirstCodePoint(comp, true);
    if (first < 0 || last < 0 || IsJsWhitespace(first) || IsJsWhitespace(last)) {
      return InvalidArgument("tool_input." + field + " has a component that begins or ends "
                             "with whitespace (or is not UTF-8): " + comp);
    }
  }
  return Ok();
}

Result<std::string> Absolute(const ClaudeToolCall& call, const std::string& field,
                             const std::string& path) {
  if (path.empty()) return InvalidArgument("tool_input." + field + " is empty");
  WARD_TRY(CheckPlainPath(field, path));
  std::string abs;
  if (path[0] == '/') {
    abs = path;
  } else if (path == "~" || path.rfind("~/", 0) == 0) {
    if (call.home.empty() || call.home[0] != '/') {
      return InvalidArgument("tool_input." + field + " starts with ~ and HOME is not known");
    }
    abs = call.home + path.substr(1);
  } else if (call.cwd.empty() || call.cwd[0] != '/') {
    return InvalidArgument("tool_input." + field + " is relative (" + path +
                           ") and the call has no absolute cwd");
  } else {
    abs = call.cwd + "/" + path;
  }
  return policy::NormalizePath(abs);
}

// The directory a Glob pattern can reach: its components up to the first with a wildcard.
Result<std::string> GlobBase(const std::string& base, const std::string& pattern) {
  WARD_TRY(CheckPlainPath("pattern", pattern));
  std::string p = pattern[0] == '/' ? pattern : base + "/" + pattern;
  std::string out;
  for (const std::string& comp : policy::PathComponents(p)) {
    if (comp == ".") continue;
    if (comp == "..") {
      return InvalidArgument("the Glob pattern " + pattern + " climbs out with \"..\"");
    }
    if (comp.find_first_of("*?[{") != std::string::npos) break;
    out += "/" + comp;
  }
  return out.empty() ? std::string("/") : out;
}

}  // namespace

const char* FileAccessOpName(FileAccess::Op op) {
  switch (op) {
    case Op::kRead:
      return "read";
    case Op::kWrite:
      return "write";
    case Op::kList:
      return "list";
  }
  return "?";
}

Result<std::vector<FileAccess>> FileAccessesOf(const ClaudeToolCall& call) {
  std::vector<FileAccess> out;
  auto field_of = [&](const char* field, bool optional) -> Result<std::optional<std::string>> {
    if (!call.input.contains(field) || call.input[field].is_null()) {
      if (optional) return std::optional<std::string>();
      return InvalidArgument(call.tool + " has no tool_input." + field);
    }
    if (!call.input[field].is_string()) {
      return InvalidArgument("tool_input." + std::string(field) + " is not a string");
    }
    return std::optional<std::string>(call.input[field].get<std::string>());
  };
  auto it = KnownFileTools().find(call.tool);
  if (it != KnownFileTools().end()) {
    const KnownTool& t = it->second;
    WARD_ASSIGN_OR_RETURN(std::optional<std::string> given, field_of(t.field, t.optional));
    std::string base;
    if (given) {
      WARD_ASSIGN_OR_RETURN(base, Absolute(call, t.field, *given));
    } else {
      WARD_ASSIGN_OR_RETURN(base, Absolute(call, "cwd", call.cwd.empty() ? "" : call.cwd));
    }
    out.push_back({t.op, given ? t.field : "cwd", base});
    if (call.tool == "Glob") {
      WARD_ASSIGN_OR_RETURN(std::optional<std::string> pattern, field_of("pattern", false));
      WARD_ASSIGN_OR_RETURN(std::string reach, GlobBase(base, *pattern));
      if (reach != policy::NormalizePath(base)) out.push_back({Op::kList, "pattern", reach});
    }
    return out;
  }
  if (TouchesNoPath(call.tool)) return out;
  for (const char* field : {"file_path", "notebook_path", "path"}) {
    WARD_ASSIGN_OR_RETURN(std::optional<std::string> given, field_of(field, true));
    if (!given) continue;
    WARD_ASSIGN_OR_RETURN(std::string abs, Absolute(call, field, *given));
    out.push_back({Op::kWrite, field, abs});
  }
  return out;
}

std::string WebFetchUrlOf(const ClaudeToolCall& call) {
  if (call.tool != "WebFetch" || !call.input.contains("url") || !call.input["url"].is_string()) {
    return "";
  }
  return call.input["url"].get<std::string>();
}

Result<FetchTarget> FetchTargetOf(std::string_view url) {
  // Clients parse URLs by the WHATWG rules, which drop tabs and newlines anywhere, read "\\" as
  // "/" and decode the host: such URLs are refused rather than read one way here and another
  // way by the fetcher.
  for (char c : url) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7F || c == '\\') {
      return InvalidArgument("the URL contains whitespace, a control character, a backslash or "
                             "a non-ASCII byte (percent-encode it, and write a host in its "
                             "xn-- form)");
    }
  }
  FetchTarget t;
  size_t colon = url.find("://");
  if (colon == std::string_view::npos) return InvalidArgument("not an http(s) URL");
  std::string scheme(url.substr(0, colon));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "http" && scheme != "https") {
    return InvalidArgument("the scheme " + scheme + " is not http or https");
  }
  t.port = scheme == "http" ? 80 : 443;
  std::string_view rest = url.substr(colon + 3);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  std::string_view port;
  const bool bracketed = !authority.empty() && authority.front() == '[';
  if (bracketed) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgument("an unclosed [ in the host");
    t.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return InvalidArgument("text after ] in the host");
      port = after.substr(1);
    }
  } else {
    size_t c = authority.rfind(':');
    t.host = std::string(authority.substr(0, c));
    if (c != std::string_view::npos) port = authority.substr(c + 1);
  }
  if (t.host.empty()) return InvalidArgument("no host");
  for (char c : t.host) {
    const bool ok = bracketed ? (std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.')
                              : (std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
                                 c == '-' || c == '_');
    if (!ok) {
      return InvalidArgument("the host " + t.host + " has a character a host name cannot have");
    }
  }
  if (!port.empty()) {
    unsigned long v = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || (v = v * 10 + static_cast<unsigned long>(c - '0')) > 65535) {
        return InvalidArgument("the port " + std::string(port) + " is not a number 1-65535");
      }
    }
    if (v == 0) return InvalidArgument("port 0");
    t.port = static_cast<uint16_t>(v);
  }
  return t;
}

FileVerdict JudgeFileAccess(const policy::Policy& policy, const FileAccess& access,
                            const std::string& resolved, const policy::PathDecision& d) {
  using V = policy::PathDecision::Visibility;
  const std::string shown =
      resolved == access.path ? resolved : access.path + " (which is " + resolved + ")";
  auto deny = [&](const std::string& what) {
    return FileVerdict{false, "ward: " + shown + " " + what + " (" + d.reason + ")"};
  };
  if (d.visibility == V::kHidden) return deny("is not in the sandbox's view");
  if (d.masked) return deny("is hidden by a deny rule");
  if (!d.host_file) {
    return deny("is private scratch inside a sandbox (" + d.via +
                "), not the host's file: a command sees its own copy there");
  }
  if (access.op == Op::kWrite) {
    if (d.visibility != V::kWrite) return deny("is read-only in the sandbox");
    if (d.is_protected) return deny("is protected: the sandbox can read it but not change it");
    if (d.host_executed) {
      return deny("is content the host runs (git hooks and config): a run's changes there go "
                  "to the quarantine, so a direct write is refused");
    }
  }
  if (access.op == Op::kList) {
    for (const policy::DenyRule& r : policy.deny) {
      if (policy::PathIsWithin(r.path, resolved) && r.path != resolved) {
        return FileVerdict{false, "ward: " + shown + " has paths under it that the sandbox "
                                  "cannot see (deny rule " + r.path + "); name a narrower path"};
      }
    }
  }
  return FileVerdict{true, "ward: " + shown + " may be " +
                               (access.op == Op::kWrite  ? "written"
                                : access.op == Op::kRead ? "read"
                                                         : "searched") +
                               " (" + d.reason + ")"};
}

std::string ClaudeDenyOutput(const std::string& reason) {
  nlohmann::json out = {{"hookSpecificOutput",
                         {{"hookEventName", "PreToolUse"},
                          {"permissionDecision", "deny"},
                          {"permissionDecisionReason", reason}}}};
  return SerializeLine(out);
}

}  // namespace ward::api
