#include "policy/learn.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <tuple>
#include <utility>

#include "policy/toml.h"

#include "policy/paths.h"

namespace ward::policy {
namespace {

// What a flag of allow_with adds to a profile.
struct FlagMeaning {
  const char* section;
  const char* key;
  const char* flag;  // the short spelling the proposal prints
  enum class Value { kPath, kHost, kLimit } value;
};

std::optional<FlagMeaning> MeaningOf(std::string_view flag) {
  using V = FlagMeaning::Value;
  static const std::pair<std::string_view, FlagMeaning> kFlags[] = {
      {"-r", {"filesystem", "read", "-r", V::kPath}},
      {"--read", {"filesystem", "read", "-r", V::kPath}},
      {"-w", {"filesystem", "write", "-w", V::kPath}},
      {"--write", {"filesystem", "write", "-w", V::kPath}},
      {"-n", {"network", "allow", "-n", V::kHost}},
      {"--allow-net", {"network", "allow", "-n", V::kHost}},
      {"--memory", {"limits", "memory", "--memory", V::kLimit}},
      {"--pids", {"limits", "pids", "--pids", V::kLimit}},
      {"--cpu", {"limits", "cpu", "--cpu", V::kLimit}},
      {"--timeout", {"limits", "timeout", "--timeout", V::kLimit}},
      {"--tmp-size", {"limits", "tmp_size", "--tmp-size", V::kLimit}},
      {"--file-size", {"limits", "file_size", "--file-size", V::kLimit}},
      {"--proxy-connections", {"limits", "proxy_connections", "--proxy-connections", V::kLimit}},
  };
  for (const auto& [name, meaning] : kFlags) {
    if (name == flag) return meaning;
  }
  return std::nullopt;
}

// allow_with split like a POSIX shell splits words (quotes and backslashes), without expansion.
std::optional<std::vector<std::string>> ShellWords(std::string_view s) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(std::move(cur));
      cur.clear();
      in_word = false;
    } else if (c == '\'') {
      size_t end = s.find('\'', i + 1);
      if (end == std::string_view::npos) return std::nullopt;
      cur.append(s.substr(i + 1, end - i - 1));
      i = end;
      in_word = true;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < s.size() && s[j] != '"'; ++j) {
        if (s[j] == '\\' && j + 1 < s.size()) ++j;
        cur += s[j];
      }
      if (j >= s.size()) return std::nullopt;
      i = j;
      in_word = true;
    } else if (c == '\\' && i + 1 < s.size()) {
      cur += s[++i];
      in_word = true;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(cur));
  return words;
}

// Whether a value may go into the profile as it is: printable ASCII without the characters a
// TOML string or a shell word would have to escape. Names and paths come from the sandbox; one
// ward cannot write plainly is left to the user rather than encoded.
bool PlainValue(std::string_view v) {
  if (v.empty() || v[0] == '-') return false;
  for (unsigned char c : v) {
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return false;
  }
  return true;
}

// A path of allow_with as the profile writes it: ~/... below HOME, else absolute and
// normalised. nullopt with *why when ward will not propose it.
std::optional<std::string> ProfilePath(const std::string& raw, const LearnInput& in,
                                       std::string* why) {
  std::string abs;
  if (raw == "~" || raw.rfind("~/", 0) == 0) {
    if (in.home.empty()) {
      *why = "a path below HOME, and HOME is not known";
      return std::nullopt;
    }
    abs = JoinPath(in.home, raw.size() > 2 ? raw.substr(2) : "");
  } else if (raw[0] == '/') {
    abs = raw;
  } else if (!in.cwd.empty()) {
    abs = JoinPath(in.cwd, raw);
  } else {
    *why = "a relative path, and the directory it is relative to is not known";
    return std::nullopt;
  }
  abs = NormalizePath(abs);
  if (abs == "/" || (!in.home.empty() && abs == NormalizePath(in.home))) {
    *why = "it would show " + std::string(abs == "/" ? "the whole file system" : "all of HOME");
    return std::nullopt;
  }
  if (PathIsWithin(abs, "/proc") || PathIsWithin(abs, "/dev")) {
    *why = "/proc and /dev are the sandbox's own";
    return std::nullopt;
  }
  if (HasGlob(abs)) {
    *why = "a pattern, not a path";
    return std::nullopt;
  }
  if (!in.home.empty() && PathIsWithin(abs, NormalizePath(in.home))) {
    return "~/" + abs.substr(NormalizePath(in.home).size() + 1);
  }
  return abs;
}

// The deny rule a path lies at or below ("" when none).
std::string DenyRuleOver(const std::string& abs, const std::vector<std::string>& deny_paths) {
  for (const std::string& d : deny_paths) {
    if (!HasGlob(d)) {
      if (PathIsWithin(abs, d)) return d;
      continue;
    }
    const std::string parent = ParentPath(d);
    if (PathDepthBelow(abs, parent) < 1) continue;
    const std::string rest = abs.substr(parent == "/" ? 1 : parent.size() + 1);
    if (MatchComponent(d.substr(parent == "/" ? 1 : parent.size() + 1),
                       rest.substr(0, rest.find('/')))) {
      return d;
    }
  }
  return "";
}

// Where a write changes what the host itself runs or how it starts programs: system
// directories, and the directories under HOME that a login, a desktop session or a shell takes
// commands from. A write there is never proposed, whatever the run needed: a sandboxed command
// could ask for exactly that to reach the host through the next run (the user may still add it).
std::string HostExecutedDir(const std::string& abs, const std::string& home) {
  static constexpr std::string_view kSystem[] = {"/etc",  "/usr",   "/bin",      "/sbin",
                                                 "/lib",  "/lib32", "/lib64",    "/libx32",
                                                 "/boot", "/opt",   "/var/spool"};
  static constexpr std::string_view kHome[] = {".local/bin", "bin", ".config/autostart",
                                               ".config/systemd", ".config/environment.d"};
  for (std::string_view d : kSystem) {
    if (PathIsWithin(abs, d)) return std::string(d);
  }
  if (home.empty()) return "";
  for (std::string_view d : kHome) {
    const std::string full = JoinPath(NormalizePath(home), d);
    if (PathIsWithin(abs, full)) return "~/" + std::string(d);
  }
  return "";
}

// A host of allow_with, when it names exactly one host (and port): never a pattern or a range.
std::optional<std::string> ProfileHost(const std::string& raw, std::string* why) {
  if (raw.find('*') != std::string::npos || raw.find('/') != std::string::npos) {
    *why = "it is a pattern or an address range, not one host";
    return std::nullopt;
  }
  return raw;
}

// The absolute form of a proposed path, to see which one covers another.
std::string AbsoluteOf(const std::string& value, const std::string& home) {
  if (value.rfind("~/", 0) == 0) return NormalizePath(JoinPath(home, value.substr(2)));
  return value;
}

bool MoreFrequent(const LearnDenial& a, const LearnDenial& b) {
  if (a.count != b.count) return a.count > b.count;
  if (a.kind != b.kind) return a.kind < b.kind;
  return a.target < b.target;
}

// One rule absorbs another's denials.
void Absorb(LearnRule* into, LearnRule&& from) {
  for (LearnDenial& d : from.needed_by) into->needed_by.push_back(std::move(d));
  std::sort(into->needed_by.begin(), into->needed_by.end(), MoreFrequent);
  into->count += from.count;
}

// A path rule covered by another (at or below its path; a write covers reads and writes, a
// read covers reads) is merged into it: one line, every denial it answers.
void MergeCoveredPaths(std::vector<LearnRule>* rules, const std::string& home) {
  auto covers = [&](const LearnRule& outer, const LearnRule& inner) {
    if (outer.section != "filesystem" || inner.section != "filesystem") return false;
    if (outer.key == "read" && inner.key == "write") return false;
    return PathIsWithin(AbsoluteOf(inner.value, home), AbsoluteOf(outer.value, home));
  };
  // Writes first, shorter paths first: the widest rule takes what it covers.
  std::vector<size_t> order(rules->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const LearnRule& x = (*rules)[a];
    const LearnRule& y = (*rules)[b];
    if (x.key != y.key) return x.key == "write";
    return AbsoluteOf(x.value, home).size() < AbsoluteOf(y.value, home).size();
  });
  std::vector<bool> gone(rules->size(), false);
  for (size_t oi = 0; oi < order.size(); ++oi) {
    size_t o = order[oi];
    if (gone[o]) continue;
    for (size_t ii = 0; ii < order.size(); ++ii) {
      size_t i = order[ii];
      if (i == o || gone[i] || !covers((*rules)[o], (*rules)[i])) continue;
      Absorb(&(*rules)[o], std::move((*rules)[i]));
      gone[i] = true;
    }
  }
  std::vector<LearnRule> kept;
  for (size_t i = 0; i < rules->size(); ++i) {
    if (!gone[i]) kept.push_back(std::move((*rules)[i]));
  }
  *rules = std::move(kept);
}

int SectionRank(const LearnRule& r) {
  if (r.section == "filesystem") return r.key == "read" ? 0 : 1;
  if (r.section == "network") return 2;
  return 3;
}

std::string TimesWord(uint64_t n) {
  if (n == 1) return "once";
  if (n == 2) return "twice";
  return std::to_string(n) + " times";
}

// Text from the run (a target, a rule) inside a TOML comment: printable ASCII as is, every
// other byte as \xNN, so a name cannot end the comment or carry a terminal sequence.
std::string CommentText(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c <= 0x7e) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// A TOML basic string (the base profile's name or path: the caller's own words).
std::string TomlString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string DenialWords(const LearnDenial& d) {
  return CommentText(d.kind) + " " + CommentText(d.target) + " (" + TimesWord(d.count) + ")";
}

// What needed a rule: its three most frequent denials, then how many more.
std::string NeededByComment(const LearnRule& r) {
  std::string s;
  size_t shown = std::min<size_t>(r.needed_by.size(), 3);
  for (size_t i = 0; i < shown; ++i) s += (i ? "; " : "") + DenialWords(r.needed_by[i]);
  if (r.needed_by.size() > shown) {
    s += "; and " + std::to_string(r.needed_by.size() - shown) + " more";
  }
  return s;
}

std::string CommandLine(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + ShellQuote(a);
  return s;
}

// A rule's value in the profile: limits that are plain numbers stay numbers.
std::string TomlValue(const LearnRule& r) {
  if (r.section == "limits" &&
      (r.key == "pids" || r.key == "proxy_connections" || r.key == "cpu")) {
    bool number = !r.value.empty();
    for (char c : r.value) number = number && ((c >= '0' && c <= '9') || c == '.');
    if (number) return r.value;
  }
  return TomlString(r.value);
}

}  // namespace

std::string ShellQuote(const std::string& word) {
  bool plain = !word.empty();
  for (unsigned char c : word) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("-_./:=@%+,~").find(static_cast<char>(c)) != std::string_view::npos;
    plain = plain && ok;
  }
  // A leading '~' is left to ward, which reads -r/-w ~/... itself; quoting keeps the shell off it
  // only where it would change the word.
  if (plain) return word;
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

namespace {

// Builds a proposal denial by denial: each becomes rules, or is left out with the reason.
class Proposer {
 public:
  explicit Proposer(const LearnInput& in) : in_(in) {}

  // The rules of the profile being rewritten in place: kept, ahead of the new ones.
  void Keep(const std::vector<LearnRule>& previous) {
    for (LearnRule r : previous) {
      r.kept = true;
      if (r.section == "limits") limit_values_.emplace(r.key, r.value);
      index_.emplace(std::make_tuple(r.section, r.key, r.value), p_.rules.size());
      p_.rules.push_back(std::move(r));
    }
  }

  void Add(const LearnDenial& d) {
    if (d.on_purpose) {
      p_.on_purpose.push_back({d, d.rule});
      return;
    }
    if (d.allow_with.empty()) {
      p_.not_proposable.push_back({d, d.rule.empty() ? "ward suggests no flag for it"
                                                     : d.rule + "; ward suggests no flag for it"});
      return;
    }
    std::string why;
    std::vector<LearnRule> rules = RulesOf(d.allow_with, &why);
    if (why.rfind("filesystem.deny ", 0) == 0) {
      p_.on_purpose.push_back({d, why});  // the deny list decides, whatever the denial said
    } else if (!why.empty()) {
      p_.not_proposable.push_back({d, why});
    } else {
      for (LearnRule& r : rules) Answer(std::move(r), d);
    }
  }

  LearnProposal Take() { return std::move(p_); }

 private:
  // The rules an allow_with asks for; none, with *why, when ward learn will not write one of
  // them.
  std::vector<LearnRule> RulesOf(const std::string& allow_with, std::string* why) {
    std::optional<std::vector<std::string>> words = ShellWords(allow_with);
    if (!words || words->empty()) {
      *why = "its suggestion is not a list of flags";
      return {};
    }
    std::vector<LearnRule> rules;
    for (size_t i = 0; i < words->size(); ++i) {
      std::string flag = (*words)[i];
      std::string value;
      size_t eq = flag.find('=');
      if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = flag.substr(eq + 1);
        flag.resize(eq);
      } else if (i + 1 < words->size()) {
        value = (*words)[++i];
      }
      std::optional<LearnRule> r = RuleOf(flag, value, why);
      if (!r) return {};
      rules.push_back(std::move(*r));
    }
    for (const LearnRule& r : rules) {
      if (r.section == "limits") limit_values_.emplace(r.key, r.value);
    }
    return rules;
  }

  // One flag and its value as a profile's rule, or nullopt with *why.
  std::optional<LearnRule> RuleOf(const std::string& flag, const std::string& value,
                                  std::string* why) const {
    std::optional<FlagMeaning> m = MeaningOf(flag);
    if (!m) {
      *why = "its suggestion " + flag + " is not a flag ward learn writes into a profile";
      return std::nullopt;
    }
    if (!PlainValue(value)) {
      *why = "the value of " + flag + " has characters ward learn does not write for you";
      return std::nullopt;
    }
    std::optional<std::string> v;
    switch (m->value) {
      case FlagMeaning::Value::kPath:
        v = ProfilePath(value, in_, why);
        if (v) *why = PathRefusal(*v, m->key);
        if (!why->empty()) return std::nullopt;
        break;
      case FlagMeaning::Value::kHost:
        v = ProfileHost(value, why);
        if (!v) return std::nullopt;
        break;
      case FlagMeaning::Value::kLimit:
        v = value;
        if (auto it = limit_values_.find(m->key); it != limit_values_.end() && it->second != *v) {
          *why = std::string("limits.") + m->key + " = " + it->second + " is proposed already";
          return std::nullopt;
        }
        break;
    }
    LearnRule r;
    r.section = m->section;
    r.key = m->key;
    r.value = *v;
    r.flag = m->flag;
    return r;
  }

  // Why a path rule is not proposed ("" when it is): the deny list covers it, or it is a write
  // where the host takes what it runs from.
  std::string PathRefusal(const std::string& value, const std::string& key) const {
    const std::string abs = AbsoluteOf(value, in_.home);
    const std::string deny = DenyRuleOver(abs, in_.deny_paths);
    if (!deny.empty()) return "filesystem.deny " + deny;
    const std::string host_runs = key == "write" ? HostExecutedDir(abs, in_.home) : "";
    if (!host_runs.empty()) {
      return "a write under " + host_runs +
             " changes what the host runs; ward learn does not propose it (add it yourself if "
             "you mean it)";
    }
    return "";
  }

  // The rule answers the denial: a new line, or one more reason for a line already there.
  void Answer(LearnRule r, const LearnDenial& d) {
    auto key = std::make_tuple(r.section, r.key, r.value);
    auto it = index_.find(key);
    if (it == index_.end()) {
      index_.emplace(key, p_.rules.size());
      r.needed_by.push_back(d);
      r.count = d.count;
      p_.rules.push_back(std::move(r));
      return;
    }
    LearnRule& have = p_.rules[it->second];
    have.needed_by.push_back(d);
    have.count += d.count;
  }

  const LearnInput& in_;
  LearnProposal p_;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> index_;
  std::map<std::string, std::string> limit_values_;  // a limit's first proposed value
};

}  // namespace

LearnProposal ProposeFromDenials(const LearnInput& in) {
  std::vector<LearnDenial> denials = in.denials;
  std::stable_sort(denials.begin(), denials.end(), MoreFrequent);
  Proposer proposer(in);
  proposer.Keep(in.previous);
  for (const LearnDenial& d : denials) proposer.Add(d);
  LearnProposal p = proposer.Take();
  MergeCoveredPaths(&p.rules, in.home);
  std::stable_sort(p.rules.begin(), p.rules.end(), [](const LearnRule& a, const LearnRule& b) {
    if (SectionRank(a) != SectionRank(b)) return SectionRank(a) < SectionRank(b);
    if (a.kept != b.kept) return a.kept;  // the file's own rules first, in its order
    if (a.kept) return false;
    if (a.count != b.count) return a.count > b.count;
    return a.value < b.value;
  });
  return p;
}

std::string ProposalProfileText(const LearnProposal& p, const LearnInput& in) {
  const std::string cmd = CommentText(CommandLine(in.command));
  std::string t;
  t += "# Proposed by `ward learn` after one run of: " + cmd + "\n";
  t += "# Each rule was needed by that run; the comment after it says what needed it and how\n";
  t += "# often. Read them before you use it: ward run -p THIS_FILE -- " + cmd + "\n";
  t += "extends = " + TomlString(in.base_profile) + "\n";
  std::string section;
  std::string key;
  auto close_list = [&] {
    if (!key.empty() && section != "limits") t += "]\n";
    key.clear();
  };
  for (const LearnRule& r : p.rules) {
    if (r.section != section) {
      close_list();
      section = r.section;
      t += "\n[" + section + "]\n";
    }
    const std::string words =
        r.needed_by.empty() ? CommentText(r.kept_comment) : NeededByComment(r);
    const std::string comment = words.empty() ? "\n" : "  # " + words + "\n";
    if (section == "limits") {
      t += r.key + " = " + TomlValue(r) + comment;
      key = r.key;
      continue;
    }
    if (r.key != key) {
      close_list();
      key = r.key;
      t += key + " = [\n";
    }
    t += "  " + TomlValue(r) + "," + comment;
  }
  close_list();
  if (!p.on_purpose.empty()) {
    t += "\n# Needed, refused on purpose (ward learn never proposes these):\n";
    for (const LearnLeftOut& l : p.on_purpose) {
      t += "#   " + DenialWords(l.denial) + ": " + CommentText(l.why) + "\n";
    }
  }
  if (!p.not_proposable.empty()) {
    t += "\n# Refused, with nothing ward learn proposes for it:\n";
    for (const LearnLeftOut& l : p.not_proposable) {
      t += "#   " + DenialWords(l.denial) + ": " + CommentText(l.why) + "\n";
    }
  }
  return t;
}

namespace {

// The section, key and flag of a profile's rule that ward learn rewrites.
std::optional<FlagMeaning> MeaningOfKey(std::string_view section, std::string_view key) {
  for (std::string_view flag : {"-r", "-w", "-n", "--memory", "--pids", "--cpu", "--timeout",
                                "--tmp-size", "--file-size", "--proxy-connections"}) {
    std::optional<FlagMeaning> m = MeaningOf(flag);
    if (m && section == m->section && key == m->key) return m;
  }
  return std::nullopt;
}

// The comment on a value's line, after the value ("" when none).
std::string CommentAfter(const std::string& text, const toml::source_region& at) {
  size_t pos = 0;
  for (uint32_t line = 1; line < at.end.line && pos != std::string::npos; ++line) {
    pos = text.find('\n', pos);
    if (pos != std::string::npos) ++pos;
  }
  if (pos == std::string::npos) return "";
  size_t eol = text.find('\n', pos);
  std::string rest = text.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
  rest = at.end.column - 1 <= rest.size() ? rest.substr(at.end.column - 1) : "";
  size_t hash = rest.find('#');
  if (hash == std::string::npos) return "";
  rest = rest.substr(hash + 1);
  size_t first = rest.find_first_not_of(' ');
  return first == std::string::npos ? "" : rest.substr(first);
}

// The tail of the error for what a learned profile may not hold.
constexpr char kNotRewritten[] =
    ", which ward learn does not rewrite; save the next step to another "
    "file (it will extend this one)";

// The profile being read back: its text (for the comments) and its name (for errors).
struct LearnedSource {
  const std::string& text;
  const std::string& name;
};

// One value of a rule the file keeps, with the comment on its line.
Result<LearnRule> KeptRule(const LearnedSource& src, const FlagMeaning& m, const std::string& full,
                           const toml::node& n) {
  LearnRule r;
  r.section = m.section;
  r.key = m.key;
  r.flag = m.flag;
  if (const auto* s = n.as_string()) {
    r.value = s->get();
  } else if (n.is_integer() || n.is_floating_point()) {
    std::ostringstream os;
    if (n.is_integer()) {
      os << *n.value<int64_t>();
    } else {
      os << *n.value<double>();
    }
    r.value = os.str();
  } else {
    return InvalidArgument(src.name + ": " + full + " holds something other than a string" +
                           kNotRewritten);
  }
  r.kept = true;
  r.kept_comment = CommentAfter(src.text, n.source());
  return r;
}

// The rules of one key: a list of values, or one value for a limit.
Status ParseLearnedKey(const LearnedSource& src, const FlagMeaning& m, const std::string& full,
                       const toml::node& value, std::vector<LearnRule>* rules) {
  if (const toml::array* a = value.as_array()) {
    if (m.value == FlagMeaning::Value::kLimit) {
      return InvalidArgument(src.name + ": " + full + " is a list" + kNotRewritten);
    }
    for (const toml::node& el : *a) {
      WARD_ASSIGN_OR_RETURN(LearnRule r, KeptRule(src, m, full, el));
      rules->push_back(std::move(r));
    }
    return Ok();
  }
  if (m.value != FlagMeaning::Value::kLimit) {
    return InvalidArgument(src.name + ": " + full + " is not a list" + kNotRewritten);
  }
  WARD_ASSIGN_OR_RETURN(LearnRule r, KeptRule(src, m, full, value));
  rules->push_back(std::move(r));
  return Ok();
}

// The rules of one section ([filesystem], [network] or [limits]).
Status ParseLearnedSection(const LearnedSource& src, const std::string& key,
                           const toml::table& section, std::vector<LearnRule>* rules) {
  for (auto&& [sk, sv] : section) {
    const std::string full = key + "." + std::string(sk.str());
    std::optional<FlagMeaning> m = MeaningOfKey(key, sk.str());
    if (!m) return InvalidArgument(src.name + ": it has " + full + kNotRewritten);
    WARD_TRY(ParseLearnedKey(src, *m, full, sv, rules));
  }
  return Ok();
}

}  // namespace

Result<LearnedProfile> ParseLearnedProfile(const std::string& text, const std::string& name) {
  toml::table t;
  try {
    t = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(name + ":" + std::to_string(e.source().begin.line) +
                           ": invalid TOML: " + std::string(e.description()));
  }
  const LearnedSource src{text, name};
  LearnedProfile out;
  for (auto&& [k, v] : t) {
    const std::string key(k.str());
    if (key == "extends") {
      if (!v.is_string()) {
        return InvalidArgument(name + ": extends names several profiles" + kNotRewritten);
      }
      out.extends = *v.value<std::string>();
      continue;
    }
    const toml::table* section = v.as_table();
    if (section == nullptr || (key != "filesystem" && key != "network" && key != "limits")) {
      return InvalidArgument(name + ": it has " + key + kNotRewritten);
    }
    WARD_TRY(ParseLearnedSection(src, key, *section, &out.rules));
  }
  if (out.extends.empty()) {
    return InvalidArgument(name + ": it extends no profile" + kNotRewritten);
  }
  return out;
}

std::string ProposalFlags(const LearnProposal& p, const LearnInput& in) {
  std::string s = "ward run";
  if (in.base_profile != "default") s += " -p " + ShellQuote(in.base_profile);
  for (const LearnRule& r : p.rules) s += " " + r.flag + " " + ShellQuote(r.value);
  return s + " -- " + CommandLine(in.command);
}

}  // namespace ward::policy
