// LoadPolicy: resolves the profile chain, validates every key against the schema of
// docs/profiles.md, merges (parents first; lists append, scalars override, tables merge),
// applies the workspace's .ward.toml (narrowing only), then the command-line flags.
// toml++ stays inside this file (it is slow to compile); its exceptions never leave it.
#include "policy/loader.h"

#include "common/sha256.h"

#include "policy/toml.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "policy/builtin_profiles.h"
#include "policy/paths.h"

namespace ward::policy {
namespace {

constexpr int kMaxExtendsDepth = 8;
constexpr int kMaxNestedRepoDepth = 32;
constexpr double kMaxCpuCores = 4096;
constexpr const char* kCommandLine = "command line";

// ---------------------------------------------------------------------------------------------
// Small helpers

// Untrusted text shown in a message: bounded, without control characters.
std::string Quote(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 120)) {
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  }
  if (s.size() > 120) out += "...";
  return out + "'";
}

// A decimal number such as 2, 1.5 or .5 (an exponent allowed, no sign, no spaces): the whole
// text or nothing. strtod in the C locale, not std::from_chars for double, whose library code
// would make ward load libm at every start.
std::optional<double> ParseDecimal(const std::string& s) {
  size_t i = 0, digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++exp_digits;
    if (exp_digits == 0) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

std::string Join(const std::vector<std::string>& items, std::string_view sep = ", ") {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

// "FILE:LINE: KEY: what" (the line and key are left out when unknown).
Status ErrorAt(const Origin& o, std::string_view what) {
  std::string m = o.source.empty() ? "policy" : o.source;
  if (o.line > 0) m += ":" + std::to_string(o.line);
  if (!o.key.empty()) {
    // Keys come from the file: bounded and without control characters.
    std::string key = Quote(o.key);
    m += ": ";
    m += key.substr(1, key.size() - 2);
  }
  m += ": ";
  m += what;
  return InvalidArgument(std::move(m));
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// " (did you mean 'x'?)" when one candidate is close, else "".
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.size() > 64) return "";
  size_t best = SIZE_MAX;
  std::string best_word;
  for (const std::string& c : candidates) {
    size_t d = EditDistance(word, c);
    if (d < best) {
      best = d;
      best_word = c;
    }
  }
  if (best_word.empty() || best == 0) return "";
  if (best <= 2 || best <= word.size() / 3) return " (did you mean '" + best_word + "'?)";
  return "";
}

bool IsEnvName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool IsIdent(std::string_view s) {  // profile, credential and route names
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    bool ok = c == '_' || c == '-' || c == '.' || (c >= 'A' && c <= 'Z') ||
              (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return s[0] != '.';
}

bool IsHeaderToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

bool HasControl(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

std::string Sha256Hex(std::string_view text) { return ward::Sha256Hex(text); }

std::string FormatBytes(uint64_t b) {
  static const std::pair<uint64_t, const char*> kUnits[] = {
      {1ull << 40, "T"}, {1ull << 30, "G"}, {1ull << 20, "M"}, {1ull << 10, "k"}};
  for (auto [mult, suffix] : kUnits) {
    if (b >= mult && b % mult == 0) return std::to_string(b / mult) + suffix;
  }
  return std::to_string(b) + " bytes";
}

std::string FormatMs(uint64_t ms) {
  if (ms % 3600000 == 0 && ms > 0) return std::to_string(ms / 3600000) + "h";
  if (ms % 60000 == 0 && ms > 0) return std::to_string(ms / 60000) + "m";
  if (ms % 1000 == 0 && ms > 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

std::string AccessText(std::optional<Access> a) { return a ? AccessName(*a) : "none"; }
int AccessRank(std::optional<Access> a) { return !a ? 0 : (*a == Access::kRead ? 1 : 2); }

// Whether a host pattern (HOST[:PORT], [V6]:PORT, ADDR/LEN) allows every host, or every host
// under a top-level domain: "*", "*.*", "*.com", "0.0.0.0/0", "::/0".
bool AllowsAnything(std::string_view pattern) {
  std::string_view host = pattern;
  if (!host.empty() && host.front() == '[') {
    size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    std::string_view rest = host.substr(close + 1);
    host = host.substr(1, close - 1);
    if (!rest.empty() && rest.front() == '/') return rest == "/0";  // "[::]/0"
  } else if (std::count(host.begin(), host.end(), ':') < 2) {
    host = host.substr(0, host.find(':'));  // one colon: the port
  }
  if (host.size() >= 2 && host.substr(host.size() - 2) == "/0") return true;
  if (host == "*") return true;
  if (host.substr(0, 2) != "*.") return false;
  std::string_view suffix = host.substr(2);
  if (!suffix.empty() && suffix.back() == '.') suffix.remove_suffix(1);
  return suffix.find('.') == std::string_view::npos;  // "*.*", "*.com"
}

// What a pattern AllowsAnything accepts allows, in words.
std::string WhatItAllows(std::string_view pattern) {
  if (pattern.find('/') != std::string_view::npos) return "every address";
  std::string_view host = pattern.substr(0, pattern.find(':'));
  if (host == "*" || host == "*.*") return "every host";
  return "every host under the top-level domain " + Quote(host.substr(1));
}

// ~ expansion, cwd-relative resolution (command line only) and lexical normalisation.
Result<std::string> ExpandPath(std::string_view p, const std::string& home, const std::string* cwd,
                               const Origin& o) {
  if (p.empty()) return ErrorAt(o, "empty path");
  if (p.find('\0') != std::string_view::npos) return ErrorAt(o, "path contains a NUL character");
  std::string abs;
  if (p == "~" || p.substr(0, 2) == "~/") {
    abs = home + std::string(p.substr(1));
  } else if (p[0] == '~') {
    return ErrorAt(o,
                   "path " + Quote(p) + ": ~user is not supported; use ~/... or an absolute path");
  } else if (p[0] == '/') {
    abs = std::string(p);
  } else if (cwd != nullptr) {
    abs = JoinPath(*cwd, p);
  } else {
    return ErrorAt(
        o, "relative path " + Quote(p) +
               ": paths in profiles must be absolute or start with ~/ (relative paths are for "
               "a workspace's .ward.toml, where they name paths in the workspace)");
  }
  return NormalizePath(abs);
}

// ---------------------------------------------------------------------------------------------
// TOML access. Every accessor turns a wrong shape into "FILE:LINE: KEY: ..." errors.

struct Source {
  std::string display;  // Origin.source: "builtin:default" or a file path
  std::string kind;     // "builtin" | "file" | "workspace"
  std::string name;     // ProfileSource.name: "default" or the file path
};

// TOML allows no control character but tab, LF and CR (the sandbox writes the workspace file, so
// anything may be there): refused before parsing, naming the character and its line (a NUL in a
// table header was one of the inputs that reached toml++'s assertion, see policy/toml.h).
Status RefuseControlCharacters(const Source& src, std::string_view text) {
  int line = 1;
  for (unsigned char c : text) {
    if (c == '\n') ++line;
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "U+%04X", c);
      return ErrorAt(Origin{src.display, line, ""},
                     std::string("invalid TOML: control character ") + hex +
                         " (TOML allows only tab, LF and CR; remove it or write it escaped in a "
                         "string)");
    }
  }
  return Ok();
}

// TOML allows characters beyond ASCII only in strings and comments: refused elsewhere before
// parsing, with the line and the fix (toml++'s own word for some of them is a lookup in its
// character tables, policy/toml.h). Strings and comments are skipped as TOML reads them: "..." and """...""" with
// backslash escapes, '...' and '''...''' without, # to the end of the line.
Status RefuseNonAsciiOutsideStrings(const Source& src, std::string_view text) {
  int line = 1;
  size_t i = 0;
  auto skip_string = [&](std::string_view close, bool escapes) {
    while (i < text.size() && text.compare(i, close.size(), close) != 0) {
      if (escapes && text[i] == '\\') ++i;  // the escaped character is skipped with it
      if (i < text.size() && text[i] == '\n') ++line;
      ++i;
    }
    i += close.size();
    // A multi-line string may end in up to two quotes more than its delimiter ("""a""""" is
    // a""): they are its own, not the start of another string.
    for (int extra = 0; close.size() == 3 && extra < 2 && i < text.size() && text[i] == close[0];
         ++extra)
      ++i;
  };
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (text.compare(i, 3, "\"\"\"") == 0 || text.compare(i, 3, "'''") == 0) {
      std::string_view close = text.substr(i, 3);
      i += 3;
      skip_string(close, close[0] == '"');
    } else if (c == '"' || c == '\'') {
      ++i;
      skip_string(c == '"' ? "\"" : "'", c == '"');
    } else if (c >= 0x80) {
      return ErrorAt(Origin{src.display, line, ""},
                     "invalid TOML: a character beyond ASCII outside a string or comment "
                     "(TOML allows them only in quoted strings and comments; quote the value)");
    } else {
      ++i;
    }
  }
  return Ok();
}

Origin At(const Source& src, const toml::source_region& region, std::string key) {
  return Origin{src.display, static_cast<int>(region.begin.line), std::move(key)};
}

std::string TypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

Status WrongType(const Origin& o, std::string_view expected, const toml::node& n) {
  return ErrorAt(o, "expected " + std::string(expected) + ", got " + TypeName(n));
}

Result<std::string> StringOf(const toml::node& n, const Origin& o, bool allow_empty = false) {
  const auto* s = n.as_string();
  if (s == nullptr) return WrongType(o, "a string", n);
  const std::string& v = s->get();
  if (!allow_empty && v.empty()) return ErrorAt(o, "must not be an empty string");
  if (v.find('\0') != std::string::npos) return ErrorAt(o, "contains a NUL character");
  return v;
}

Result<bool> BoolOf(const toml::node& n, const Origin& o) {
  const auto* b = n.as_boolean();
  if (b == nullptr) return WrongType(o, "a boolean (true or false)", n);
  return b->get();
}

struct Item {
  std::string value;
  Origin origin;
};

// An array of non-empty strings; each item carries its own line.
Result<std::vector<Item>> StringList(const toml::node& n, const Source& src, const Origin& o) {
  const auto* arr = n.as_array();
  if (arr == nullptr) return WrongType(o, "an array of strings", n);
  std::vector<Item> out;
  for (const toml::node& el : *arr) {
    Origin eo = At(src, el.source(), o.key);
    if (eo.line == 0) eo.line = o.line;
    WARD_ASSIGN_OR_RETURN(std::string v, StringOf(el, eo));
    out.push_back(Item{std::move(v), std::move(eo)});
  }
  return out;
}

// Checks that every key of `t` is in `known`; unknown keys get a suggestion.
Status CheckKeys(const toml::table& t, const Source& src, const std::string& prefix,
                 const std::vector<std::string>& known, std::string_view note = {}) {
  for (auto&& [k, v] : t) {
    std::string name(k.str());
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string full = prefix.empty() ? name : prefix + "." + name;
    Origin o = At(src, k.source(), full);
    return ErrorAt(o, "unknown key" + DidYouMean(name, known) + " (known keys" +
                          (prefix.empty() ? std::string() : " of [" + prefix + "]") + ": " +
                          Join(known) + ")" + (note.empty() ? "" : "; ") + std::string(note));
  }
  return Ok();
}

const toml::table* TableOf(const toml::node& n) { return n.as_table(); }

// ---------------------------------------------------------------------------------------------
// The merge state

struct CredentialBuild {
  std::optional<CredentialSource> from;
  std::vector<std::string> hosts;
  std::optional<CredentialInject> inject;
  std::optional<std::string> env, route;
  std::map<std::string, std::string> route_env;
  bool enabled = false;
  Origin origin;  // where it was first defined
};

const std::vector<std::string> kTopKeys = {"description", "extends", "workspace", "filesystem",
                                           "env",         "network", "limits",    "credentials",
                                           "approvals",   "sandbox"};
const std::vector<std::string> kLimitKeys = {
    "memory", "pids", "cpu", "timeout", "tmp_size", "file_size", "proxy_connections"};
const char* kNarrowOnly =
    "a workspace file (.ward.toml) may only narrow the policy: it may set filesystem.deny, "
    "filesystem.protected, network.deny, network.transparent (false only), limits.* (lower "
    "only) and workspace.access (narrower only)";

class Loader {
 public:
  Loader(const RunFlags& flags, const Context& ctx, const FileReader& reader)
      : flags_(flags), ctx_(ctx), reader_(reader) {}

  Result<Policy> Run() {
    WARD_TRY(CheckContext());
    policy_.home = ctx_.home;
    policy_.workspace = ctx_.workspace;
    policy_.workspace_origin = Origin{"built-in default", 0, "workspace.access"};

    Origin cli{kCommandLine, 0, "--profile"};
    if (flags_.profile.empty()) return ErrorAt(cli, "empty profile name");
    WARD_TRY(LoadProfile(flags_.profile, /*from_cli=*/true, cli));
    policy_.profile = top_profile_;

    WARD_TRY(LoadWorkspaceFile());
    WARD_TRY(ApplyFlags());
    WARD_TRY(FinishCredentials());
    AllowRuleHosts();
    return std::move(policy_);
  }

 private:
  Status CheckContext() {
    Origin o{"context", 0, ""};
    for (auto [name, value] : {std::pair<const char*, std::string*>{"HOME", &ctx_.home},
                               {"cwd", &ctx_.cwd},
                               {"workspace", &ctx_.workspace}}) {
      if (value->empty() || (*value)[0] != '/' || value->find('\0') != std::string::npos) {
        return ErrorAt(o, std::string(name) + " must be an absolute path, got " + Quote(*value));
      }
      *value = NormalizePath(*value);
    }
    if (!ctx_.config_dir.empty()) {
      if (ctx_.config_dir[0] != '/') {
        return ErrorAt(o, "config dir must be an absolute path, got " + Quote(ctx_.config_dir));
      }
      ctx_.config_dir = NormalizePath(ctx_.config_dir);
    }
    return Ok();
  }

  // ----- profile resolution

  struct Resolved {
    Source src;
    std::string text;
    std::string sha256;  // known for built-in profiles (hashed at build time), else computed
  };

  Result<Resolved> Builtin(const std::string& name, const Origin& at) {
    std::vector<std::string> names;
    for (const BuiltinProfile& p : BuiltinProfiles()) {
      if (p.name == name) {
        return Resolved{Source{"builtin:" + name, "builtin", name}, std::string(p.text),
                        std::string(p.sha256)};
      }
      names.emplace_back(p.name);
    }
    return ErrorAt(at, "unknown profile " + Quote(name) + DidYouMean(name, names) +
                           " (built-in profiles: " + Join(names) + ")");
  }

  Result<std::optional<std::string>> ReadOptional(const std::string& path, const Origin& at) {
    Result<std::string> r = reader_(path);
    if (r.ok()) return std::optional<std::string>(std::move(r).value());
    if (r.status().code() == Code::kNotFound) return std::optional<std::string>();
    Status s = std::move(r).take_status();
    return ErrorAt(at, "reading " + path + ": " + s.ToString());
  }

  Result<Resolved> Resolve(const std::string& ref, bool from_cli, const Origin& at) {
    if (ref.rfind("builtin:", 0) == 0) return Builtin(ref.substr(8), at);
    bool is_file = ref.find('/') != std::string::npos ||
                   (ref.size() > 5 && ref.compare(ref.size() - 5, 5, ".toml") == 0);
    if (is_file) {
      std::string path;
      if (from_cli) {
        WARD_ASSIGN_OR_RETURN(path, ExpandPath(ref, ctx_.home, &ctx_.cwd, at));
      } else {
        if (ref[0] != '/' && ref[0] != '~') {
          return ErrorAt(at, "relative profile path " + Quote(ref) +
                                 ": use an absolute path, ~/..., or a profile name");
        }
        WARD_ASSIGN_OR_RETURN(path, ExpandPath(ref, ctx_.home, nullptr, at));
      }
      WARD_ASSIGN_OR_RETURN(std::optional<std::string> text, ReadOptional(path, at));
      if (!text) return ErrorAt(at, "profile file not found: " + path);
      return Resolved{Source{path, "file", path}, std::move(*text)};
    }
    if (!IsIdent(ref)) {
      return ErrorAt(at, "invalid profile name " + Quote(ref) +
                             " (letters, digits, '.', '-' and '_'; or a path to a .toml file)");
    }
    if (!ctx_.config_dir.empty()) {
      std::string path = ctx_.config_dir + "/profiles/" + ref + ".toml";
      WARD_ASSIGN_OR_RETURN(std::optional<std::string> text, ReadOptional(path, at));
      if (text) return Resolved{Source{path, "file", path}, std::move(*text)};
    }
    return Builtin(ref, at);
  }

  Result<toml::table> Parse(const Source& src, const std::string& text) {
    WARD_TRY(RefuseControlCharacters(src, text));
    WARD_TRY(RefuseNonAsciiOutsideStrings(src, text));
    try {
      return toml::parse(text, src.display);
    } catch (const toml::parse_error& e) {
      Origin o{src.display, static_cast<int>(e.source().begin.line), ""};
      return ErrorAt(o, "invalid TOML: " + std::string(e.description()));
    }
  }

  Status LoadProfile(const std::string& ref, bool from_cli, const Origin& at) {
    WARD_ASSIGN_OR_RETURN(Resolved r, Resolve(ref, from_cli, at));
    const std::string& id = r.src.display;
    if (from_cli) top_profile_ = r.src.kind == "builtin" ? r.src.name : r.src.display;
    if (std::find(stack_.begin(), stack_.end(), id) != stack_.end()) {
      std::string chain = Join(stack_, " -> ") + " -> " + id;
      std::string hint;
      bool builtin_exists = std::any_of(BuiltinProfiles().begin(), BuiltinProfiles().end(),
                                        [&](const BuiltinProfile& b) { return b.name == ref; });
      if (r.src.kind == "file" && builtin_exists) {
        hint =
            "; to extend the built-in profile of the same name, write extends = \"builtin:" + ref +
            "\"";
      }
      return ErrorAt(at, "extends cycle: " + chain + hint);
    }
    if (done_.count(id) != 0) return Ok();  // reached twice through different parents
    if (static_cast<int>(stack_.size()) >= kMaxExtendsDepth) {
      return ErrorAt(at, "extends chain is deeper than " + std::to_string(kMaxExtendsDepth) +
                             " profiles: " + Join(stack_, " -> ") + " -> " + id);
    }
    WARD_ASSIGN_OR_RETURN(toml::table tbl, Parse(r.src, r.text));
    if (tbl.empty()) {
      return ErrorAt(Origin{id, 0, ""},
                     "the profile defines nothing (the file is empty or holds only comments); it "
                     "probably lacks extends = \"default\" (a profile builds on the default "
                     "one and adds to it)");
    }

    stack_.push_back(id);
    if (const toml::node* ext = tbl.get("extends")) {
      Origin eo = At(r.src, ext->source(), "extends");
      std::vector<Item> parents;
      if (ext->is_string()) {
        WARD_ASSIGN_OR_RETURN(std::string v, StringOf(*ext, eo));
        parents.push_back(Item{std::move(v), eo});
      } else if (ext->is_array()) {
        WARD_ASSIGN_OR_RETURN(parents, StringList(*ext, r.src, eo));
      } else {
        return WrongType(eo, "a profile name or an array of names", *ext);
      }
      for (const Item& p : parents) WARD_TRY(LoadProfile(p.value, false, p.origin));
    }
    stack_.pop_back();

    WARD_TRY(ApplyProfile(tbl, r.src));
    policy_.sources.push_back(
        ProfileSource{r.src.name, r.src.kind, r.sha256.empty() ? Sha256Hex(r.text) : r.sha256});
    done_.insert(id);
    return Ok();
  }

  // ----- one profile's keys

  Status ApplyProfile(const toml::table& tbl, const Source& src) {
    WARD_TRY(CheckKeys(tbl, src, "", kTopKeys));
    for (auto&& [k, v] : tbl) {
      std::string key(k.str());
      Origin o = At(src, k.source(), key);
      if (key == "description") {
        WARD_ASSIGN_OR_RETURN(policy_.description, StringOf(v, o, true));
      } else if (key == "extends") {
        // handled by LoadProfile
      } else if (key == "workspace") {
        WARD_TRY(ApplyWorkspaceTable(v, src, o, /*narrow=*/false));
      } else if (key == "filesystem") {
        WARD_TRY(ApplyFilesystem(v, src, o, false));
      } else if (key == "env") {
        WARD_TRY(ApplyEnv(v, src, o));
      } else if (key == "network") {
        WARD_TRY(ApplyNetwork(v, src, o, false));
      } else if (key == "limits") {
        WARD_TRY(ApplyLimits(v, src, o, false));
      } else if (key == "credentials") {
        WARD_TRY(ApplyCredentials(v, src, o));
      } else if (key == "approvals") {
        WARD_TRY(ApplyApprovals(v, src, o));
      } else if (key == "sandbox") {
        WARD_TRY(ApplySandbox(v, src, o));
      }
    }
    return Ok();
  }

  Result<const toml::table*> SubTable(const toml::node& v, const Origin& o) {
    const toml::table* t = TableOf(v);
    if (t == nullptr) return WrongType(o, "a table ([" + o.key + "])", v);
    return t;
  }

  Status ApplyWorkspaceTable(const toml::node& v, const Source& src, const Origin& o, bool narrow) {
    WARD_ASSIGN_OR_RETURN(const toml::table* t, SubTable(v, o));
    WARD_TRY(CheckKeys(*t, src, "workspace", {"access"}, narrow ? kNarrowOnly : ""));
    if (const toml::node* a = t->get("access")) {
      Origin ao = At(src, a->source(), "workspace.access");
      WARD_ASSIGN_OR_RETURN(std::string s, StringOf(*a, ao));
      std::optional<Access> access;
      if (s == "write") {
        access = Access::kWrite;
      } else if (s == "read") {
        access = Access::kRead;
      } else if (s != "none") {
        return ErrorAt(ao, "expected \"write\", \"read\" or \"none\", got " + Quote(s) +
                               DidYouMean(s, {"write", "read", "none"}));
      }
      if (narrow && AccessRank(access) > AccessRank(policy_.workspace_access)) {
        return ErrorAt(ao, "\"" + s + "\" is wider than the effective access \"" +
                               AccessText(policy_.workspace_access) + "\" (" +
                               policy_.workspace_origin.ToString() + "); " + kNarrowOnly);
      }
      policy_.workspace_access = access;
      policy_.workspace_origin = ao;
    }
    return Ok();
  }

  Result<std::string> BindPath(const Item& it, const std::string* cwd) {
    WARD_ASSIGN_OR_RETURN(std::string path, ExpandPath(it.value, ctx_.home, cwd, it.origin));
    if (HasGlob(path)) {
      return ErrorAt(it.origin, "path " + Quote(it.value) +
                                    ": glob characters are only allowed in deny rules");
    }
    if (path == "/") {
      return ErrorAt(it.origin,
                     "binding the whole root defeats deny-by-construction; name the "
                     "directories the sandbox needs");
    }
    if (PathIsWithin(path, "/proc") || PathIsWithin(path, "/dev")) {
      return ErrorAt(it.origin, path +
                                    ": /proc and /dev are the sandbox's own and cannot be "
                                    "bound");
    }
    return path;
  }

  Result<std::string> DenyPattern(const Item& it, const std::string* cwd) {
    WARD_ASSIGN_OR_RETURN(std::string path, ExpandPath(it.value, ctx_.home, cwd, it.origin));
    if (path == "/") return ErrorAt(it.origin, "cannot deny the root itself");
    if (HasGlob(ParentPath(path))) {
      return ErrorAt(it.origin, "pattern " + Quote(it.value) +
                                    ": a glob ('*', '?', '[') is only allowed in the last "
                                    "path component");
    }
    return path;
  }

  // A deny rule of the workspace file: a relative path names a path in the workspace (a committed
  // file must be portable across checkouts), and may not leave it with "..".
  Result<std::string> WorkspaceDenyPattern(const Item& it) {
    const std::string& s = it.value;
    if (s.empty() || s[0] == '/' || s[0] == '~') return DenyPattern(it, nullptr);
    WARD_ASSIGN_OR_RETURN(std::string path, DenyPattern(it, &ctx_.workspace));
    if (path == ctx_.workspace || !PathIsWithin(path, ctx_.workspace)) {
      return ErrorAt(it.origin, Quote(s) +
                                    ": a relative path in .ward.toml names a path inside the "
                                    "workspace, and this one leaves it (or is the workspace "
                                    "itself); write a path below the workspace, or an absolute "
                                    "one");
    }
    return path;
  }

  Result<std::string> RelPath(const Item& it) {
    const std::string& s = it.value;
    if (s[0] == '/' || s[0] == '~') {
      return ErrorAt(it.origin, Quote(s) +
                                    ": protected paths are relative to every writable "
                                    "root (e.g. \".git/hooks\"), not absolute");
    }
    if (HasGlob(s)) return ErrorAt(it.origin, Quote(s) + ": globs are not allowed here");
    std::string norm = NormalizePath("/" + s);
    for (const std::string& comp : PathComponents(s)) {
      if (comp == "..") {
        return ErrorAt(it.origin, Quote(s) + ": '..' is not allowed in a protected path");
      }
    }
    if (norm == "/") return ErrorAt(it.origin, Quote(s) + ": names no path below the root");
    return norm.substr(1);
  }

  Status ApplyFilesystem(const toml::node& v, const Source& src, const Origin& o, bool narrow) {
    WARD_ASSIGN_OR_RETURN(const toml::table* t, SubTable(v, o));
    WARD_TRY(CheckKeys(*t, src, "filesystem",
                       {"read", "write", "deny", "protected", "nested_repo_depth"},
                       narrow ? kNarrowOnly : ""));
    if (narrow) {
      for (const char* wide : {"read", "write", "nested_repo_depth"}) {
        if (const toml::node* n = t->get(wide)) {
          Origin no = At(src, n->source(), std::string("filesystem.") + wide);
          return ErrorAt(no, std::string("not allowed here: ") + kNarrowOnly);
        }
      }
    }
    // read before write: at equal paths within one file, write wins (the later rule).
    for (auto [name, access] :
         {std::pair<const char*, Access>{"read", Access::kRead}, {"write", Access::kWrite}}) {
      const toml::node* n = t->get(name);
      if (n == nullptr) continue;
      Origin no = At(src, n->source(), std::string("filesystem.") + name);
      WARD_ASSIGN_OR_RETURN(std::vector<Item> items, StringList(*n, src, no));
      for (const Item& it : items) {
        WARD_ASSIGN_OR_RETURN(std::string path, BindPath(it, nullptr));
        policy_.paths.push_back(PathRule{path, access, /*optional=*/true, it.origin});
      }
    }
    if (const toml::node* n = t->get("deny")) {
      Origin no = At(src, n->source(), "filesystem.deny");
      WARD_ASSIGN_OR_RETURN(std::vector<Item> items, StringList(*n, src, no));
      for (const Item& it : items) {
        WARD_ASSIGN_OR_RETURN(std::string path,
                              narrow ? WorkspaceDenyPattern(it) : DenyPattern(it, nullptr));
        policy_.deny.push_back(DenyRule{path, it.origin});
      }
    }
    if (const toml::node* n = t->get("protected")) {
      Origin no = At(src, n->source(), "filesystem.protected");
      WARD_ASSIGN_OR_RETURN(std::vector<Item> items, StringList(*n, src, no));
      for (const Item& it : items) {
        WARD_ASSIGN_OR_RETURN(std::string rel, RelPath(it));
        policy_.protected_paths.push_back(ProtectedRule{rel, it.origin});
      }
    }
    if (const toml::node* n = t->get("nested_repo_depth")) {
      Origin no = At(src, n->source(), "filesystem.nested_repo_depth");
      const auto* i = n->as_integer();
      if (i == nullptr) return WrongType(no, "an integer", *n);
      if (i->get() < 0 || i->get() > kMaxNestedRepoDepth) {
        return ErrorAt(no, "must be between 0 and " + std::to_string(kMaxNestedRepoDepth));
      }
      policy_.nested_repo_depth = static_cast<int>(i->get());
    }
    return Ok();
  }

  Status ApplyEnv(const toml::node& v, const Source& src, const Origin& o) {
    WARD_ASSIGN_OR_RETURN(const toml::table* t, SubTable(v, o));
    WARD_TRY(CheckKeys(*t, src, "env", {"pass", "set"}));
    if (const toml::node* n = t->get("pass")) {
      Origin no = At(src, n->source(), "env.pass");
      WARD_ASSIGN_OR_RETURN(std::vector<Item> items, StringList(*n, src, no));
      for (const Item& it : items) {
        WARD_TRY(CheckPassName(it.value, it.origin));
        policy_.env.push_back(EnvRule{it.value, std::nullopt, it.origin});
      }
    }
    if (const toml::node* n = t->get("set")) {
      Origin no = At(src, n->source(), "env.set");
      WARD_ASSIGN_OR_RETURN(const toml::table* set, SubTable(*n, no));
      for (auto&& [k, val] : *set) {
        std::string name(k.str());
        Origin ko = At(src, k.source(), "env.set." + name);
        WARD_ASSIGN_OR_RETURN(std::string value, StringOf(val, ko, /*allow_empty=*/true));
        WARD_TRY(CheckSetName(name, ko));
        policy_.env.push_back(EnvRule{name, value, ko});
      }
    }
    return Ok();
  }

  Status CheckPassName(const std::string& name, const Origin& o) {
    if (name == "*") {
      return ErrorAt(o,
                     "passing the whole environment is not supported: name the variables "
                     "(a prefix pattern such as \"LC_*\" is allowed)");
    }
    std::string base = name.back() == '*' ? name.substr(0, name.size() - 1) : name;
    if (!IsEnvName(base)) {
      return ErrorAt(o, "invalid variable name " + Quote(name) +
                            " (letters, digits and '_'; a trailing '*' matches a prefix)");
    }
    return Ok();
  }

  Status CheckSetName(const std::string& name, const Origin& o) {
    if (!IsEnvName(name)) return ErrorAt(o, "invalid variable name " + Quote(name));
    if (name == "HOME") {
      return ErrorAt(o,
                     "HOME cannot be set: inside it is always the caller's HOME path (a "
                     "private tmpfs)");
    }
    return Ok();
  }

  Status CheckHost(const Item& it) {
    const std::string& s = it.value;
    if (HasControl(s) || s.find(' ') != std::string::npos) {
      return ErrorAt(it.origin, "host pattern " + Quote(s) +
                                    " contains whitespace or a "
                                    "control character");
    }
    if (s.find("://") != std::string::npos) {
      return ErrorAt(it.origin, Quote(s) +
                                    " is a URL; expected a host pattern such as "
                                    "example.com, *.example.com or example.com:443");
    }
    if (s.size() > 300) return ErrorAt(it.origin, "host pattern is too long");
    return Ok();
  }

  // An allow rule that matches every host, or every host of a top-level domain ("*", "*.*",
  // "*.com", "0.0.0.0/0", "::/0"), is no list at all: refused unless the run says
  // --allow-net-anything.
  Status CheckAllowIsNarrow(const Item& it) {
    if (flags_.allow_net_anything || !AllowsAnything(it.value)) return Ok();
    return ErrorAt(it.origin, Quote(it.value) + " would allow " + WhatItAllows(it.value) +
                                  "; list the hosts the command needs, or add "
                                  "--allow-net-anything to the command line if that is what "
                                  "you mean");
  }

  // A credential's hosts receive its secret: never every host, whatever the run allows.
  Status CheckSecretHost(const Item& it) {
    if (!AllowsAnything(it.value)) return Ok();
    return ErrorAt(it.origin, Quote(it.value) + " would send the secret to " +
                                  WhatItAllows(it.value) + "; name the hosts that need it");
  }

  Status ApplyNetwork(const toml::node& v, const Source& src, const Origin& o, bool narrow) {
    WARD_ASSIGN_OR_RETURN(const toml::table* t, SubTable(v, o));
    WARD_TRY(CheckKeys(*t, src, "network", {"allow", "deny", "transparent", "rules"},
                       narrow ? kNarrowOnly : ""));
    if (const toml::node* n = t->get("rules")) {
      Origin no = At(src, n->source(), "network.rules");
      if (narrow) return ErrorAt(no, std::string("not allowed here: ") + kNarrowOnly);
      WARD_TRY(ApplyRequestRules(*n, src, no));
    }
    if (const toml::node* n = t->get("transparent")) {
      Origin no = At(src, n->source(), "network.transparent");
      WARD_ASSIGN_OR_RETURN(bool on, BoolOf(*n, no));
      if (narrow && on) {
        return ErrorAt(no, std::string("may only be false here: ") + kNarrowOnly);
      }
      policy_.network.transparent = on;
      policy_.network.transparent_origin = no;
    }
    for (auto [name, list] :
         {std::pair<const char*, std::vector<HostRule>*>{"allow", &policy_.network.allow},
          {"deny", &policy_.network.deny}}) {
      const toml::node* n = t->get(name);
      if (n == nullptr) continue;
      Origin no = At(src, n->source(), std::string("network.") + name);
      if (narrow && list == &policy_.network.allow) {
        return ErrorAt(no, std::string("not allowed here: ") + kNarrowOnly);
      }
      WARD_ASSIGN_OR_RETURN(std::vector<Item> items, StringList(*n, src, no));
      for (const Item& it : items) {
        WARD_TRY(CheckHost(it));
        if (list == &policy_.network.allow) WARD_TRY(CheckAllowIsNarrow(it));
        list->push_back(HostRule{it.value, it.origin});
      }
    }
    return Ok();
  }

  // [[network.rules]]: tables of host, methods, paths and action, appended in order.
  Status ApplyRequestRules(const toml::node& n, const Source& src, const Origin& o) {
    const auto* arr = n.as_array();
    if (arr == nullptr) return WrongType(o, "an array of tables ([[network.rules]])", n);
    for (const toml::node& el : *arr) {
      Origin eo = At(src, el.source(), "network.rules");
      if (eo.line == 0) eo.line = o.line;
      WARD_ASSIGN_OR_RETURN(const toml::table* t, SubTable(el, eo));
      WARD_TRY(CheckKeys(*t, src, "network.rules", {"host", "methods", "paths", "action"}));
      RequestRule rule;
      rule.origin = eo;
      const toml::node* host = t->get("host");
      if (host == nullptr) {
        return ErrorAt(eo, "a rule needs a host (host = \"api.example.com\")");
      }
      Origin ho = At(src, host->source(), "network.rules.host");
      WARD_ASSIGN_OR_RETURN(rule.host, StringOf(*host, ho));
      if (const toml::node* m = t->get("methods")) {
        Origin mo = At(src, m->source(), "network.rules.methods");
        WARD_ASSIGN_OR_RETURN(std::vector<Item> items, StringList(*m, src, mo));
        for (const Item& it : items) rule.methods.push_back(it.value);
      }
      if (const toml::node* p = t->get("paths")) {
        Origin po = At(src, p->source(), "network.rules.paths");
        WARD_ASSIGN_OR_RETURN(std::vector<Item> items, StringList(*p, src, po));
        for (const Item& it : items) rule.paths.push_back(it.value);
      }
      if (const toml::node* a = t->get("action")) {
        Origin ao = At(src, a->source(), "network.rules.action");
        WARD_ASSIGN_OR_RETURN(std::string action, StringOf(*a, ao));
        WARD_ASSIGN_OR_RETURN(rule.action, RequestActionOf(action, ao));
      }
      WARD_TRY(CheckRequestRule(rule));
      policy_.network.rules.push_back(std::move(rule));
    }
    return Ok();
  }

  static Result<RequestRule::Action> RequestActionOf(const std::string& s, const Origin& o) {
    for (auto a : {RequestRule::Action::kAllow, RequestRule::Action::kDeny,
                   RequestRule::Action::kAsk}) {
      if (s == RequestActionName(a)) return a;
    }
    return ErrorAt(o, Quote(s) + " is not an action: use \"allow\", \"deny\" or \"ask\"");
  }

  // A rule's host is one host (a name, "*.name" or an address, with an optional port), its
  // methods tokens, its paths absolute.
  Status CheckRequestRule(RequestRule& rule) {
    const Origin& o = rule.origin;
    WARD_TRY(CheckHost(Item{rule.host, o}));
    if (rule.host.find('/') != std::string::npos) {
      return ErrorAt(o, "rule host " + Quote(rule.host) +
                            " is a network; a rule names one host (a name, *.name or an address)");
    }
    if (rule.action != RequestRule::Action::kDeny) WARD_TRY(CheckAllowIsNarrow(Item{rule.host, o}));
    for (std::string& m : rule.methods) {
      const bool token = !m.empty() && m.size() <= 32 &&
                         std::all_of(m.begin(), m.end(), [](char c) {
                           return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '-';
                         });
      if (!token) {
        return ErrorAt(o, "method " + Quote(m) + " is not an HTTP method (GET, POST, PUT, ...)");
      }
      std::transform(m.begin(), m.end(), m.begin(),
                     [](char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; });
    }
    for (const std::string& p : rule.paths) {
      if ((p[0] != '/' && p[0] != '*') || HasControl(p) || p.find(' ') != std::string::npos ||
          p.size() > 1024) {
        return ErrorAt(o, "path " + Quote(p) +
                              " must start with / (or *), without spaces or control characters");
      }
    }
    return Ok();
  }

  // One -n / --deny-net value: a host pattern for `out`, or (-n with a space) a method and
  // path rule.
  Status AddNetFlag(const std::string& h, const Origin& o, std::vector<HostRule>* out,
                    size_t* rule_at) {
    Item it{h, o};
    if (h.empty()) return ErrorAt(it.origin, "empty host pattern");
    if (out == &policy_.network.allow && h.find(' ') != std::string::npos) {
      return AddRuleFlag(h, it.origin, rule_at);
    }
    WARD_TRY(CheckHost(it));
    if (out == &policy_.network.allow) WARD_TRY(CheckAllowIsNarrow(it));
    out->push_back(HostRule{h, it.origin});
    return Ok();
  }

  // `-n 'GET,HEAD host[:port][/path]'`: one allow rule, before the profiles' rules.
  Status AddRuleFlag(const std::string& spec, const Origin& o, size_t* at) {
    const size_t space = spec.find(' ');
    RequestRule rule;
    rule.origin = o;
    std::string methods = spec.substr(0, space);
    std::string target = spec.substr(space + 1);
    while (!target.empty() && target[0] == ' ') target.erase(0, 1);
    for (size_t start = 0; start <= methods.size();) {
      size_t comma = methods.find(',', start);
      if (comma == std::string::npos) comma = methods.size();
      rule.methods.push_back(methods.substr(start, comma - start));
      start = comma + 1;
    }
    const size_t slash = target.find('/');
    rule.host = target.substr(0, slash);
    if (slash != std::string::npos) rule.paths.push_back(target.substr(slash));
    if (rule.host.empty()) {
      return ErrorAt(o, Quote(spec) + " names no host; expected 'GET host' or 'GET,HEAD host/path*'");
    }
    WARD_TRY(CheckRequestRule(rule));
    policy_.network.rules.insert(policy_.network.rules.begin() + static_cast<long>((*at)++),
                                 std::move(rule));
    return Ok();
  }

  // A host that an allow or ask rule names is reachable by name (its requests are then limited
  // by its rules), like a credential's hosts: it joins `network.allow` with the rule's origin.
  void AllowRuleHosts() {
    std::vector<HostRule>& allow = policy_.network.allow;
    for (const RequestRule& r : policy_.network.rules) {
      if (r.action == RequestRule::Action::kDeny) continue;
      const bool listed = std::any_of(allow.begin(), allow.end(),
                                      [&](const HostRule& a) { return a.pattern == r.host; });
      if (!listed) allow.push_back(HostRule{r.host, r.origin});
    }
  }

  // Values shared by profiles and the command line.
  Result<uint64_t> SizeValue(const toml::node& n, const Origin& o) {
    if (const auto* i = n.as_integer()) {
      if (i->get() <= 0) return ErrorAt(o, "must be a positive number of bytes");
      const uint64_t bytes = static_cast<uint64_t>(i->get());
      Status bare = CheckBareSize(std::to_string(bytes), bytes);
      if (!bare.ok()) return ErrorAt(o, bare.message());
      return bytes;
    }
    WARD_ASSIGN_OR_RETURN(std::string s, StringOf(n, o));
    Result<uint64_t> r = ParseSize(s);
    if (!r.ok()) return ErrorAt(o, r.status().message());
    if (*r == 0) return ErrorAt(o, "must be larger than zero");
    Status bare = CheckBareSize(s, *r);
    if (!bare.ok()) return ErrorAt(o, bare.message());
    return *r;
  }

  Result<uint64_t> DurationValue(const toml::node& n, const Origin& o) {
    if (const auto* i = n.as_integer()) {
      if (i->get() <= 0) return ErrorAt(o, "must be a positive number of seconds");
      if (i->get() > static_cast<int64_t>(UINT64_MAX / 1000 / 2)) return ErrorAt(o, "too long");
      return static_cast<uint64_t>(i->get()) * 1000;
    }
    WARD_ASSIGN_OR_RETURN(std::string s, StringOf(n, o));
    Result<uint64_t> r = ParseDurationMs(s);
    if (!r.ok()) return ErrorAt(o, r.status().message());
    if (*r == 0) return ErrorAt(o, "must be longer than zero");
    return *r;
  }

  Result<uint64_t> PidsValue(const toml::node& n, const Origin& o) {
    const auto* i = n.as_integer();
    if (i == nullptr) return WrongType(o, "an integer", n);
    if (i->get() <= 0) return ErrorAt(o, "must be a positive number of processes");
    return static_cast<uint64_t>(i->get());
  }

  Result<uint64_t> ProxyConnectionsValue(const toml::node& n, const Origin& o) {
    const auto* i = n.as_integer();
    if (i == nullptr) return WrongType(o, "an integer", n);
    if (i->get() <= 0 || static_cast<uint64_t>(i->get()) > kMaxProxyConnections) {
      return ErrorAt(o, "must be a number of connections between 1 and " +
                            std::to_string(kMaxProxyConnections));
    }
    return static_cast<uint64_t>(i->get());
  }

  Result<double> CpuValue(const toml::node& n, const Origin& o) {
    double d;
    if (const auto* i = n.as_integer()) {
      d = static_cast<double>(i->get());
    } else if (const auto* f = n.as_floating_point()) {
      d = f->get();
    } else {
      return WrongType(o, "a number of cores (e.g. 2 or 1.5)", n);
    }
    if (!std::isfinite(d) || d <= 0 || d > kMaxCpuCores) {
      return ErrorAt(o, "must be a number of cores between 0 and " +
                            std::to_string(static_cast<int>(kMaxCpuCores)));
    }
    return d;
  }

  template <typename T>
  Status SetLimit(std::optional<T>* field, T value, const std::string& key, const Origin& o,
                  bool narrow, const std::string& shown, const std::string& current) {
    if (narrow && field->has_value() && value > **field) {
      return ErrorAt(o, shown + " is above the effective limit " + current + " (" +
                            policy_.limits.origins[key].ToString() +
                            "); a workspace file (.ward.toml) may only lower limits");
    }
    *field = value;
    policy_.limits.origins[key] = o;
    return Ok();
  }

  Status ApplyLimits(const toml::node& v, const Source& src, const Origin& o, bool narrow) {
    WARD_ASSIGN_OR_RETURN(const toml::table* t, SubTable(v, o));
    WARD_TRY(CheckKeys(*t, src, "limits", kLimitKeys, narrow ? kNarrowOnly : ""));
    Limits& l = policy_.limits;
    for (auto&& [k, n] : *t) {
      std::string key(k.str());
      Origin ko = At(src, k.source(), "limits." + key);
      if (key == "memory" || key == "tmp_size" || key == "file_size") {
        std::optional<uint64_t>* field = key == "memory"     ? &l.memory_bytes
                                         : key == "tmp_size" ? &l.tmp_size_bytes
                                                             : &l.file_size_bytes;
        WARD_ASSIGN_OR_RETURN(uint64_t b, SizeValue(n, ko));
        WARD_TRY(SetLimit(field, b, key, ko, narrow, FormatBytes(b),
                          *field ? FormatBytes(**field) : ""));
      } else if (key == "pids") {
        WARD_ASSIGN_OR_RETURN(uint64_t p, PidsValue(n, ko));
        WARD_TRY(SetLimit(&l.pids, p, key, ko, narrow, std::to_string(p),
                          l.pids ? std::to_string(*l.pids) : ""));
      } else if (key == "cpu") {
        WARD_ASSIGN_OR_RETURN(double c, CpuValue(n, ko));
        WARD_TRY(SetLimit(&l.cpu_cores, c, key, ko, narrow, std::to_string(c),
                          l.cpu_cores ? std::to_string(*l.cpu_cores) : ""));
      } else if (key == "timeout") {
        WARD_ASSIGN_OR_RETURN(uint64_t ms, DurationValue(n, ko));
        WARD_TRY(SetLimit(&l.timeout_ms, ms, key, ko, narrow, FormatMs(ms),
                          l.timeout_ms ? FormatMs(*l.timeout_ms) : ""));
      } else if (key == "proxy_connections") {
        WARD_ASSIGN_OR_RETURN(uint64_t c, ProxyConnectionsValue(n, ko));
        // Unset is not unlimited here but the default: a workspace file may not go above it.
        if (narrow && !l.proxy_connections && c > kDefaultProxyConnections) {
          return ErrorAt(ko, std::to_string(c) + " is above the default limit " +
                                 std::to_string(kDefaultProxyConnections) +
                                 "; a workspace file (.ward.toml) may only lower limits");
        }
        WARD_TRY(SetLimit(&l.proxy_connections, c, key, ko, narrow, std::to_string(c),
                          l.proxy_connections ? std::to_string(*l.proxy_connections) : ""));
      }
    }
    return Ok();
  }

  Status ApplyApprovals(const toml::node& v, const Source& src, const Origin& o) {
    WARD_ASSIGN_OR_RETURN(const toml::table* t, SubTable(v, o));
    WARD_TRY(
        CheckKeys(*t, src, "approvals", {"enabled", "auto_deny", "auto_allow_once", "timeout"}));
    ApprovalsPolicy& a = policy_.approvals;
    a.origin = o;
    for (auto&& [k, n] : *t) {
      std::string key(k.str());
      Origin ko = At(src, k.source(), "approvals." + key);
      if (key == "enabled") {
        WARD_ASSIGN_OR_RETURN(a.enabled, BoolOf(n, ko));
      } else if (key == "timeout") {
        WARD_ASSIGN_OR_RETURN(a.timeout_ms, DurationValue(n, ko));
      } else {
        WARD_ASSIGN_OR_RETURN(std::vector<Item> items, StringList(n, src, ko));
        std::vector<std::string>& list = key == "auto_deny" ? a.auto_deny : a.auto_allow_once;
        for (const Item& it : items) {
          if (HasControl(it.value)) return ErrorAt(it.origin, "contains a control character");
          list.push_back(it.value);
        }
      }
    }
    return Ok();
  }

  Status AddLayer(const std::string& name, const Origin& o) {
    std::optional<Layer> layer = ParseLayer(name);
    if (!layer) {
      std::vector<std::string> names;
      for (Layer l : {Layer::kLandlock, Layer::kSeccomp, Layer::kLimits}) {
        names.emplace_back(LayerName(l));
      }
      return ErrorAt(o, "unknown layer " + Quote(name) + DidYouMean(name, names) +
                            " (layers that may be degraded: " + Join(names) + ")");
    }
    policy_.allow_degraded.insert(*layer);
    policy_.degraded_origins.emplace(*layer, o);
    return Ok();
  }

  Status ApplySandbox(const toml::node& v, const Source& src, const Origin& o) {
    WARD_ASSIGN_OR_RETURN(const toml::table* t, SubTable(v, o));
    WARD_TRY(CheckKeys(*t, src, "sandbox", {"allow_degraded"}));
    if (const toml::node* n = t->get("allow_degraded")) {
      Origin no = At(src, n->source(), "sandbox.allow_degraded");
      WARD_ASSIGN_OR_RETURN(std::vector<Item> items, StringList(*n, src, no));
      for (const Item& it : items) WARD_TRY(AddLayer(it.value, it.origin));
    }
    return Ok();
  }

  // ----- credentials

  Result<CredentialSource> ParseFrom(const std::string& s, const Origin& o) {
    CredentialSource from;
    if (s.rfind("env:", 0) == 0) {
      from.kind = CredentialSource::Kind::kEnv;
      from.value = s.substr(4);
      if (!IsEnvName(from.value)) return ErrorAt(o, "invalid variable name in " + Quote(s));
    } else if (s.rfind("file:", 0) == 0) {
      from.kind = CredentialSource::Kind::kFile;
      WARD_ASSIGN_OR_RETURN(from.value, ExpandPath(s.substr(5), ctx_.home, nullptr, o));
    } else if (s.rfind("command:", 0) == 0) {
      from.kind = CredentialSource::Kind::kCommand;
      from.value = s.substr(8);
      if (from.value.find_first_not_of(' ') == std::string::npos) {
        return ErrorAt(o, "empty command");
      }
    } else {
      return ErrorAt(o, "expected \"env:NAME\", \"file:PATH\" or \"command:CMD\", got " + Quote(s));
    }
    return from;
  }

  static bool HasSecret(const std::string& s) { return s.find("{secret}") != std::string::npos; }

  Result<CredentialInject> ParseInject(const toml::node& v, const Source& src, const Origin& o) {
    WARD_ASSIGN_OR_RETURN(const toml::table* t, SubTable(v, o));
    WARD_TRY(CheckKeys(*t, src, o.key, {"header", "value", "basic", "query"}));
    int kinds = (t->get("header") ? 1 : 0) + (t->get("basic") ? 1 : 0) + (t->get("query") ? 1 : 0);
    if (kinds != 1) {
      return ErrorAt(o,
                     "needs exactly one of header = \"NAME\" (with value = \"... {secret}\"), "
                     "basic = \"USER\" or query = \"PARAM\"");
    }
    auto field = [&](const char* name) -> Result<std::optional<Item>> {
      const toml::node* n = t->get(name);
      if (n == nullptr) return std::optional<Item>();
      Origin no = At(src, n->source(), o.key + "." + name);
      WARD_ASSIGN_OR_RETURN(std::string s, StringOf(*n, no));
      if (HasControl(s)) return ErrorAt(no, "contains a control character");
      return std::optional<Item>(Item{s, no});
    };
    WARD_ASSIGN_OR_RETURN(std::optional<Item> value, field("value"));
    if (value && !HasSecret(value->value)) {
      return ErrorAt(value->origin, "the template must contain {secret}, e.g. \"Bearer {secret}\"");
    }
    CredentialInject inj;
    WARD_ASSIGN_OR_RETURN(std::optional<Item> header, field("header"));
    WARD_ASSIGN_OR_RETURN(std::optional<Item> basic, field("basic"));
    WARD_ASSIGN_OR_RETURN(std::optional<Item> query, field("query"));
    if (header) {
      if (!IsHeaderToken(header->value)) {
        return ErrorAt(header->origin, "invalid header name " + Quote(header->value));
      }
      if (!value) {
        return ErrorAt(o,
                       "header injection needs value = \"... {secret}\" (e.g. \"Bearer "
                       "{secret}\")");
      }
      inj.kind = CredentialInject::Kind::kHeader;
      inj.name = header->value;
      inj.template_ = value->value;
    } else if (basic) {
      if (basic->value.find(':') != std::string::npos) {
        return ErrorAt(basic->origin, "a basic-auth user name cannot contain ':'");
      }
      if (value) {
        return ErrorAt(value->origin, "basic auth takes no value: the secret is the password");
      }
      inj.kind = CredentialInject::Kind::kBasic;
      inj.template_ = basic->value;
    } else {
      for (char c : query->value) {
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.' || c == '~';
        if (!ok) return ErrorAt(query->origin, "invalid query parameter " + Quote(query->value));
      }
      inj.kind = CredentialInject::Kind::kQuery;
      inj.name = query->value;
      inj.template_ = value ? value->value : "{secret}";
    }
    return inj;
  }

  Status ApplyCredentials(const toml::node& v, const Source& src, const Origin& o) {
    WARD_ASSIGN_OR_RETURN(const toml::table* t, SubTable(v, o));
    for (auto&& [k, cv] : *t) {
      WARD_TRY(ApplyCredential(std::string(k.str()), k.source(), cv, src));
    }
    return Ok();
  }

  // One [credentials.NAME] table, merged into what earlier profiles defined under that name.
  Status ApplyCredential(const std::string& name, const toml::source_region& at,
                         const toml::node& cv, const Source& src) {
    std::string prefix = "credentials." + name;
    Origin co = At(src, at, prefix);
    if (!IsIdent(name)) return ErrorAt(co, "invalid credential name " + Quote(name));
    WARD_ASSIGN_OR_RETURN(const toml::table* ct, SubTable(cv, co));
    WARD_TRY(CheckKeys(*ct, src, prefix,
                       {"from", "hosts", "inject", "env", "route", "route_env", "enabled"}));
    auto [it, fresh] = creds_.try_emplace(name);
    CredentialBuild& c = it->second;
    if (fresh) c.origin = co;
    for (auto&& [fk, fv] : *ct) {
      std::string field(fk.str());
      Origin fo = At(src, fk.source(), prefix + "." + field);
      WARD_TRY(ApplyCredentialField(field, fv, src, fo, &c));
    }
    return Ok();
  }

  Status ApplyCredentialField(const std::string& field, const toml::node& fv, const Source& src,
                              const Origin& fo, CredentialBuild* c) {
    if (field == "from") {
      WARD_ASSIGN_OR_RETURN(std::string s, StringOf(fv, fo));
      WARD_ASSIGN_OR_RETURN(c->from, ParseFrom(s, fo));
    } else if (field == "hosts") {
      WARD_ASSIGN_OR_RETURN(std::vector<Item> items, StringList(fv, src, fo));
      for (const Item& h : items) {
        WARD_TRY(CheckHost(h));
        WARD_TRY(CheckSecretHost(h));
        c->hosts.push_back(h.value);
      }
    } else if (field == "inject") {
      WARD_ASSIGN_OR_RETURN(c->inject, ParseInject(fv, src, fo));
    } else if (field == "env") {
      WARD_ASSIGN_OR_RETURN(std::string s, StringOf(fv, fo));
      WARD_TRY(CheckSetName(s, fo));
      c->env = s;
    } else if (field == "route") {
      WARD_ASSIGN_OR_RETURN(std::string s, StringOf(fv, fo));
      if (!IsIdent(s)) return ErrorAt(fo, "invalid route name " + Quote(s));
      c->route = s;
    } else if (field == "route_env") {
      WARD_TRY(ApplyRouteEnv(fv, src, fo, &c->route_env));
    } else if (field == "enabled") {
      WARD_ASSIGN_OR_RETURN(c->enabled, BoolOf(fv, fo));
    }
    return Ok();
  }

  // route_env: the variables set inside for a routed credential (never its secret).
  Status ApplyRouteEnv(const toml::node& fv, const Source& src, const Origin& fo,
                       std::map<std::string, std::string>* route_env) {
    WARD_ASSIGN_OR_RETURN(const toml::table* re, SubTable(fv, fo));
    for (auto&& [rk, rv] : *re) {
      std::string var(rk.str());
      Origin ro = At(src, rk.source(), fo.key + "." + var);
      WARD_TRY(CheckSetName(var, ro));
      WARD_ASSIGN_OR_RETURN(std::string val, StringOf(rv, ro));
      if (HasSecret(val)) {
        return ErrorAt(ro,
                       "must not contain {secret}: the real secret never enters the "
                       "sandbox (use {route_url})");
      }
      (*route_env)[var] = val;
    }
    return Ok();
  }

  // ----- .ward.toml

  Status LoadWorkspaceFile() {
    std::string path = WorkspaceFilePath(policy_.workspace);
    Origin at{path, 0, ""};
    Result<std::string> read = reader_(path);
    if (!read.ok() && read.status().code() == Code::kNotFound) return Ok();
    // The reader's refusal says what the file is and what to do about it.
    if (!read.ok()) return ErrorAt(at, read.status().ToString());
    const std::string text = std::move(read).value();
    Source src{path, "workspace", path};
    WARD_ASSIGN_OR_RETURN(toml::table tbl, Parse(src, text));
    for (auto&& [k, v] : tbl) {
      std::string key(k.str());
      Origin o = At(src, k.source(), key);
      if (key == "workspace") {
        WARD_TRY(ApplyWorkspaceTable(v, src, o, /*narrow=*/true));
      } else if (key == "filesystem") {
        WARD_TRY(ApplyFilesystem(v, src, o, true));
      } else if (key == "network") {
        WARD_TRY(ApplyNetwork(v, src, o, true));
      } else if (key == "limits") {
        WARD_TRY(ApplyLimits(v, src, o, true));
      } else if (key == "extends") {
        return ErrorAt(o, std::string("a workspace file cannot extend profiles; ") + kNarrowOnly);
      } else if (std::find(kTopKeys.begin(), kTopKeys.end(), key) != kTopKeys.end()) {
        return ErrorAt(o, std::string("not allowed here: ") + kNarrowOnly);
      } else {
        return ErrorAt(o, "unknown key" + DidYouMean(key, kTopKeys) + "; " + kNarrowOnly);
      }
    }
    policy_.sources.push_back(ProfileSource{path, "workspace", Sha256Hex(text)});
    return Ok();
  }

  // ----- command line

  Status ApplyFlags() {
    auto cli = [](const char* flag) { return Origin{kCommandLine, 0, flag}; };
    for (auto [list, access, flag] :
         {std::tuple<const std::vector<std::string>*, Access, const char*>{&flags_.read,
                                                                           Access::kRead, "--read"},
          {&flags_.write, Access::kWrite, "--write"}}) {
      for (const std::string& p : *list) {
        Item it{p, cli(flag)};
        WARD_ASSIGN_OR_RETURN(std::string path, BindPath(it, &ctx_.cwd));
        policy_.paths.push_back(PathRule{path, access, /*optional=*/false, it.origin});
      }
    }
    for (const std::string& p : flags_.deny) {
      Item it{p, cli("--deny")};
      WARD_ASSIGN_OR_RETURN(std::string path, DenyPattern(it, &ctx_.cwd));
      policy_.deny.push_back(DenyRule{path, it.origin});
    }
    for (const std::string& e : flags_.env) {
      Origin o = cli("--env");
      if (e.find('\0') != std::string::npos) return ErrorAt(o, "contains a NUL character");
      size_t eq = e.find('=');
      if (eq == std::string::npos) {
        if (e.empty()) return ErrorAt(o, "empty variable name");
        WARD_TRY(CheckPassName(e, o));
        policy_.env.push_back(EnvRule{e, std::nullopt, o});
      } else {
        std::string name = e.substr(0, eq);
        WARD_TRY(CheckSetName(name, o));
        policy_.env.push_back(EnvRule{name, e.substr(eq + 1), o});
      }
    }
    for (auto [list, out, flag] :
         {std::tuple<const std::vector<std::string>*, std::vector<HostRule>*, const char*>{
              &flags_.allow_net, &policy_.network.allow, "--allow-net"},
          {&flags_.deny_net, &policy_.network.deny, "--deny-net"}}) {
      size_t rule_at = 0;
      for (const std::string& h : *list) WARD_TRY(AddNetFlag(h, cli(flag), out, &rule_at));
    }
    for (const std::string& spec : flags_.allow_degraded) {
      Origin o = cli("--allow-degraded");
      size_t start = 0;
      do {
        size_t comma = spec.find(',', start);
        std::string name =
            spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        WARD_TRY(AddLayer(name, o));
        start = comma == std::string::npos ? spec.size() + 1 : comma + 1;
      } while (start <= spec.size());
    }
    WARD_TRY(ApplyCredentialFlags());
    WARD_TRY(ApplyLimitFlags());
    if (flags_.approvals) {
      policy_.approvals.enabled = *flags_.approvals;
      policy_.approvals.origin = cli("--ask");
    }
    if (flags_.no_audit) policy_.audit = false;
    return Ok();
  }

  Status ApplyCredentialFlags() {
    for (const std::string& name : flags_.credentials) {
      Origin o{kCommandLine, 0, "--credential"};
      auto it = creds_.find(name);
      if (it == creds_.end()) {
        std::vector<std::string> names;
        for (const auto& [n, c] : creds_) names.push_back(n);
        return ErrorAt(o, "no credential named " + Quote(name) + " is defined by profile " +
                              Quote(policy_.profile) + DidYouMean(name, names) + " (defined: " +
                              (names.empty() ? std::string("none") : Join(names)) + ")");
      }
      it->second.enabled = true;
    }
    for (const std::string& spec : flags_.credential_env) {
      Origin o{kCommandLine, 0, "--credential-env"};
      size_t eq = spec.find('=');
      std::string var = spec.substr(0, eq);
      if (eq == std::string::npos || !IsEnvName(var)) {
        return ErrorAt(o, "expected VAR=HOST[,HOST...], got " + Quote(spec));
      }
      if (creds_.count(var) != 0) {
        return ErrorAt(o, "a credential named " + Quote(var) + " is already defined (" +
                              creds_[var].origin.ToString() + "); use --credential " + var);
      }
      CredentialBuild c;
      c.origin = o;
      c.from = CredentialSource{CredentialSource::Kind::kEnv, var};
      c.env = var;
      c.inject =
          CredentialInject{CredentialInject::Kind::kHeader, "Authorization", "Bearer {secret}"};
      c.enabled = true;
      std::string hosts = spec.substr(eq + 1);
      size_t start = 0;
      while (start <= hosts.size()) {
        size_t comma = hosts.find(',', start);
        if (comma == std::string::npos) comma = hosts.size();
        Item h{hosts.substr(start, comma - start), o};
        if (h.value.empty()) return ErrorAt(o, "empty host in " + Quote(spec));
        WARD_TRY(CheckHost(h));
        WARD_TRY(CheckSecretHost(h));
        c.hosts.push_back(h.value);
        start = comma + 1;
      }
      creds_[var] = std::move(c);
    }
    return Ok();
  }

  Status ApplyLimitFlags() {
    auto cli = [](const char* flag) { return Origin{kCommandLine, 0, flag}; };
    Limits& l = policy_.limits;
    for (auto [raw, field, flag, key] :
         {std::tuple<const std::optional<std::string>*, std::optional<uint64_t>*, const char*,
                     const char*>{&flags_.memory, &l.memory_bytes, "--memory", "memory"},
          {&flags_.tmp_size, &l.tmp_size_bytes, "--tmp-size", "tmp_size"},
          {&flags_.file_size, &l.file_size_bytes, "--file-size", "file_size"}}) {
      if (!*raw) continue;
      Result<uint64_t> r = ParseSize(**raw);
      if (!r.ok()) return ErrorAt(cli(flag), r.status().message());
      if (*r == 0) return ErrorAt(cli(flag), "must be larger than zero");
      Status bare = CheckBareSize(**raw, *r);
      if (!bare.ok()) return ErrorAt(cli(flag), bare.message());
      *field = *r;
      l.origins[key] = cli(flag);
    }
    if (flags_.pids) {
      const std::string& s = *flags_.pids;
      uint64_t v = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v == 0) {
        return ErrorAt(cli("--pids"), "expected a positive number of processes, got " + Quote(s));
      }
      l.pids = v;
      l.origins["pids"] = cli("--pids");
    }
    if (flags_.proxy_connections) {
      const std::string& s = *flags_.proxy_connections;
      uint64_t v = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v == 0 ||
          v > kMaxProxyConnections) {
        return ErrorAt(cli("--proxy-connections"),
                       "expected a number of connections between 1 and " +
                           std::to_string(kMaxProxyConnections) + ", got " + Quote(s));
      }
      l.proxy_connections = v;
      l.origins["proxy_connections"] = cli("--proxy-connections");
    }
    if (flags_.cpu) {
      const std::string& s = *flags_.cpu;
      const std::optional<double> parsed = ParseDecimal(s);
      const double v = parsed.value_or(0);
      if (!parsed || !std::isfinite(v) || v <= 0 || v > kMaxCpuCores) {
        return ErrorAt(cli("--cpu"),
                       "expected a number of cores such as 2 or 1.5, got " + Quote(s));
      }
      l.cpu_cores = v;
      l.origins["cpu"] = cli("--cpu");
    }
    if (flags_.timeout) {
      Result<uint64_t> r = ParseDurationMs(*flags_.timeout);
      if (!r.ok()) return ErrorAt(cli("--timeout"), r.status().message());
      if (*r == 0) return ErrorAt(cli("--timeout"), "must be longer than zero");
      l.timeout_ms = *r;
      l.origins["timeout"] = cli("--timeout");
    }
    return Ok();
  }

  // ----- final checks

  // Who owns what among the enabled credentials: each route and each variable set inside has
  // one owner.
  struct CredentialClaims {
    std::map<std::string, std::string> routes;       // route -> credential
    std::map<std::string, std::string> secret_vars;  // variable -> credential (enabled only)
    std::map<std::string, std::string> inside_vars;  // variable set inside -> credential
  };

  Status FinishCredentials() {
    CredentialClaims claims;
    for (auto& [name, c] : creds_) {
      WARD_TRY(CheckCredentialComplete(c));
      Credential out = BuildCredential(name, c);
      if (out.enabled) WARD_TRY(ClaimCredential(out, c.origin, &claims));
      policy_.credentials[name] = std::move(out);
    }
    AllowCredentialHosts();
    return CheckEnvRulesSpareSecrets(claims.secret_vars);
  }

  // Credentials need egress: each enabled credential's hosts join `network.allow` (with the
  // credential's origin, so `ward explain` and `ward why` name it) unless already listed. A
  // deny rule still wins over them.
  void AllowCredentialHosts() {
    std::vector<HostRule>& allow = policy_.network.allow;
    for (const auto& [name, c] : policy_.credentials) {
      if (!c.enabled) continue;
      for (const std::string& h : c.hosts) {
        const bool listed = std::any_of(allow.begin(), allow.end(),
                                        [&](const HostRule& r) { return r.pattern == h; });
        if (!listed) allow.push_back(HostRule{h, c.origin});
      }
    }
  }

  // A credential says where its secret comes from, where it may go, and has the route its
  // route_env refers to.
  static Status CheckCredentialComplete(const CredentialBuild& c) {
    if (!c.from) {
      return ErrorAt(c.origin,
                     "credential has no 'from' (where its secret comes from: "
                     "\"env:NAME\", \"file:PATH\" or \"command:CMD\")");
    }
    if (c.hosts.empty()) {
      return ErrorAt(c.origin,
                     "credential has no hosts: list the hosts its secret may be "
                     "sent to");
    }
    bool wants_route = false;
    for (const auto& [var, val] : c.route_env) {
      if (val.find("{route_url}") != std::string::npos) wants_route = true;
    }
    if (wants_route && !c.route) {
      return ErrorAt(c.origin, "route_env uses {route_url} but the credential has no route");
    }
    return Ok();
  }

  static Credential BuildCredential(const std::string& name, const CredentialBuild& c) {
    Credential out;
    out.name = name;
    out.from = *c.from;
    out.hosts = c.hosts;
    out.inject = c.inject.value_or(
        CredentialInject{CredentialInject::Kind::kHeader, "Authorization", "Bearer {secret}"});
    out.env = c.env.value_or("");
    out.route = c.route.value_or("");
    out.route_env = c.route_env;
    out.enabled = c.enabled;
    out.origin = c.origin;
    return out;
  }

  // Claims the enabled credential's route and variables, refusing one another credential has.
  static Status ClaimCredential(const Credential& out, const Origin& origin,
                                CredentialClaims* claims) {
    const std::string& name = out.name;
    if (!out.route.empty()) {
      auto [it, fresh] = claims->routes.emplace(out.route, name);
      if (!fresh) {
        return ErrorAt(origin, "route " + Quote(out.route) + " is also used by credential " +
                                   Quote(it->second));
      }
    }
    // Variables the supervisor sets inside: one owner each.
    std::vector<std::string> owned = {};
    if (!out.env.empty()) owned.push_back(out.env);
    for (const auto& [var, val] : out.route_env) owned.push_back(var);
    for (const std::string& var : owned) {
      auto [it, fresh] = claims->inside_vars.emplace(var, name);
      if (!fresh && it->second != name) {
        return ErrorAt(origin, "variable " + Quote(var) + " is also set by credential " +
                                   Quote(it->second) + "; enable only one of them");
      }
      claims->secret_vars.emplace(var, name);
    }
    if (out.from.kind == CredentialSource::Kind::kEnv) {
      claims->secret_vars.emplace(out.from.value, name);
    }
    return Ok();
  }

  // A variable that holds (or points at) a brokered secret must not also be passed or set:
  // inside, it holds the phantom, never the caller's value.
  Status CheckEnvRulesSpareSecrets(const std::map<std::string, std::string>& secret_vars) const {
    for (const EnvRule& r : policy_.env) {
      if (r.name.back() == '*') continue;  // prefix patterns skip these names when building
      auto it = secret_vars.find(r.name);
      if (it != secret_vars.end()) {
        return ErrorAt(r.origin, Quote(r.name) + " belongs to credential " + Quote(it->second) +
                                     " (the sandbox sees a phantom value there); remove it from "
                                     "the environment rules");
      }
    }
    return Ok();
  }

  RunFlags flags_;
  Context ctx_;
  const FileReader& reader_;
  Policy policy_;
  std::map<std::string, CredentialBuild> creds_;
  std::vector<std::string> stack_;
  std::set<std::string> done_;
  std::string top_profile_;
};

}  // namespace

std::string WorkspaceFilePath(const std::string& workspace) {
  return JoinPath(workspace, kWorkspaceFileName);
}

Result<Policy> LoadPolicy(const RunFlags& flags, const Context& ctx, const FileReader& reader) {
  try {
    Loader loader(flags, ctx, reader);
    return loader.Run();
  } catch (const std::exception& e) {
    // Nothing above should throw; if a library does, fail closed with a Status.
    return Status(Code::kInternal, std::string("loading the policy: ") + e.what());
  } catch (...) {
    return Status(Code::kInternal, "loading the policy: unexpected exception");
  }
}

}  // namespace ward::policy
