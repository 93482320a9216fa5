#include "policy/host_executed.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "policy/paths.h"

namespace ward::policy {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Keys (section.name, lower case; a subsection in between is left out) that cannot make git run
// a program or read config, hooks or objects from elsewhere.
const std::set<std::string>& InertKeys() {
  static const std::set<std::string> keys = {
      "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
      "core.ignorecase", "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol",
      "extensions.objectformat", "extensions.refstorage", "extensions.worktreeconfig",
      "remote.url", "remote.pushurl", "remote.fetch", "remote.push", "remote.tagopt",
      "remote.prune", "remote.mirror", "branch.remote", "branch.merge", "user.name",
      "user.email", "init.defaultbranch", "submodule.url", "submodule.active",
      "submodule.path", "clone.defaultremotename", "pull.rebase", "pull.ff", "gc.auto",
  };
  return keys;
}

struct ConfigEntry {
  std::string section;     // lower case
  std::string subsection;  // as written (case-sensitive)
  bool has_sub = false;
  std::string name;        // lower case
  std::string value;       // unquoted, unescaped
  bool has_value = false;
};

// git's config syntax: [section], [section "sub"], [section.sub] (old form), `name = value`,
// `name` alone (true), comments after # or ;, quoted values, backslash escapes and line
// continuations.
class ConfigParser {
 public:
  explicit ConfigParser(std::string_view text) : t_(text) {}

  bool Parse(std::vector<ConfigEntry>* out, std::string* error) {
    while (true) {
      SkipBlankAndComments();
      if (i_ >= t_.size()) return true;
      if (t_[i_] == '[') {
        if (!Section(error)) return false;
        continue;
      }
      ConfigEntry e;
      if (!Entry(&e, error)) return false;
      out->push_back(std::move(e));
    }
  }

 private:
  void SkipBlankAndComments() {
    while (i_ < t_.size()) {
      char c = t_[i_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i_;
      } else if (c == '#' || c == ';') {
        while (i_ < t_.size() && t_[i_] != '\n') ++i_;
      } else {
        return;
      }
    }
  }

  bool Section(std::string* error) {
    ++i_;  // '['
    std::string name;
    while (i_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[i_])) ||
                              t_[i_] == '-' || t_[i_] == '.')) {
      name += t_[i_++];
    }
    section_ = Lower(name);
    subsection_.clear();
    has_sub_ = false;
    if (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t')) {
      while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t')) ++i_;
      if (i_ >= t_.size() || t_[i_] != '"') return Fail(error, "a subsection must be quoted");
      ++i_;
      while (i_ < t_.size() && t_[i_] != '"') {
        if (t_[i_] == '\n') return Fail(error, "a subsection does not end");
        if (t_[i_] == '\\' && i_ + 1 < t_.size()) ++i_;
        subsection_ += t_[i_++];
      }
      if (i_ >= t_.size()) return Fail(error, "a subsection does not end");
      ++i_;
      has_sub_ = true;
    } else if (size_t dot = section_.find('.'); dot != std::string::npos) {
      subsection_ = section_.substr(dot + 1);
      section_ = section_.substr(0, dot);
      has_sub_ = true;
    }
    if (i_ >= t_.size() || t_[i_] != ']') return Fail(error, "a section header does not end");
    ++i_;
    if (section_.empty()) return Fail(error, "a section has no name");
    return true;
  }

  bool Entry(ConfigEntry* e, std::string* error) {
    if (section_.empty()) return Fail(error, "a key before any section");
    std::string name;
    while (i_ < t_.size() &&
           (std::isalnum(static_cast<unsigned char>(t_[i_])) || t_[i_] == '-')) {
      name += t_[i_++];
    }
    if (name.empty()) return Fail(error, "a line that is neither a section nor a key");
    e->section = section_;
    e->subsection = subsection_;
    e->has_sub = has_sub_;
    e->name = Lower(name);
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t')) ++i_;
    if (i_ >= t_.size() || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '#' || t_[i_] == ';') {
      while (i_ < t_.size() && t_[i_] != '\n') ++i_;
      return true;
    }
    if (t_[i_] != '=') return Fail(error, "a key without '='");
    ++i_;
    e->has_value = true;
    return Value(&e->value, error);
  }

  bool Value(std::string* out, std::string* error) {
    bool quoted = false;
    std::string pending_space;
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t')) ++i_;
    while (i_ < t_.size()) {
      char c = t_[i_++];
      if (c == '\n') {
        if (quoted) return Fail(error, "a quoted value does not end");
        return true;
      }
      if (!quoted && (c == '#' || c == ';')) {
        while (i_ < t_.size() && t_[i_] != '\n') ++i_;
        return true;
      }
      if (!quoted && (c == ' ' || c == '\t' || c == '\r')) {
        pending_space += c;
        continue;
      }
      *out += pending_space;
      pending_space.clear();
      if (c == '"') {
        quoted = !quoted;
      } else if (c == '\\') {
        if (i_ >= t_.size()) return Fail(error, "a value ends with a backslash");
        char n = t_[i_++];
        if (n == '\n') continue;
        if (n == 'n') *out += '\n';
        else if (n == 't') *out += '\t';
        else if (n == 'b') out->pop_back();
        else if (n == '"' || n == '\\') *out += n;
        else return Fail(error, "an unknown escape in a value");
      } else {
        *out += c;
      }
    }
    if (quoted) return Fail(error, "a quoted value does not end");
    return true;
  }

  bool Fail(std::string* error, const char* what) {
    *error = what;
    return false;
  }

  std::string_view t_;
  size_t i_ = 0;
  std::string section_, subsection_;
  bool has_sub_ = false;
};

std::string Quote(std::string_view v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string Emit(const std::vector<const ConfigEntry*>& entries) {
  std::string out;
  const ConfigEntry* last = nullptr;
  for (const ConfigEntry* e : entries) {
    if (!last || last->section != e->section || last->has_sub != e->has_sub ||
        last->subsection != e->subsection) {
      out += "[" + e->section;
      if (e->has_sub) out += " " + Quote(e->subsection);
      out += "]\n";
    }
    out += "\t" + e->name;
    if (e->has_value) out += " = " + Quote(e->value);
    out += "\n";
    last = e;
  }
  return out;
}

// The protected names' first components other than the git ones (".envrc", ".vscode", ...).
bool BeginsProtectedName(std::string_view component,
                         const std::vector<std::vector<std::string>>& protected_relpaths) {
  for (const auto& rel : protected_relpaths) {
    if (!rel.empty() && !IsGitProtectedName(rel) && rel.front() == component) return true;
  }
  return false;
}

}  // namespace

bool IsGitDirShape(const DirShape& s) {
  return s.named_dot_git || (s.head_file && ((s.objects_dir && s.refs_dir) || s.commondir_file));
}

GitDirEntry ClassifyGitDirEntry(std::string_view relpath) {
  std::vector<std::string> c = PathComponents(relpath);
  if (c.empty()) return GitDirEntry::kInert;
  // A linked worktree's administrative directory is a git directory of its own, nested here.
  if (c.size() >= 3 && c[0] == "worktrees") c.erase(c.begin(), c.begin() + 2);
  // So is a submodule's, below modules/ under its name, which may have slashes in it: judged by
  // what it ends in.
  if (c.size() >= 3 && c[0] == "modules") {
    for (size_t i = 2; i < c.size(); ++i) {
      if (c[i] != "hooks") continue;
      std::string rest;
      for (size_t k = i; k < c.size(); ++k) rest += (rest.empty() ? "" : "/") + c[k];
      return ClassifyGitDirEntry(rest);
    }
    c.erase(c.begin(), c.end() - 1);
  }
  if (c.empty()) return GitDirEntry::kInert;
  const std::string& first = c.front();
  if (first == "hooks") {
    if (c.size() == 1) return GitDirEntry::kHook;  // the directory itself
    const std::string& name = c.back();
    const bool sample = name.size() > 7 && name.compare(name.size() - 7, 7, ".sample") == 0;
    return sample && c.size() == 2 ? GitDirEntry::kInert : GitDirEntry::kHook;
  }
  if (c.size() == 1 && (first == "config" || first == "config.worktree")) return GitDirEntry::kConfig;
  if (c.size() == 1 && first == "commondir") return GitDirEntry::kCommonDir;
  return GitDirEntry::kInert;
}

bool IsInertCommonDir(std::string_view relpath, std::string_view content) {
  std::vector<std::string> c = PathComponents(relpath);
  while (!content.empty() && (content.back() == '\n' || content.back() == '\r')) {
    content.remove_suffix(1);
  }
  return c.size() == 3 && c[0] == "worktrees" && c[2] == "commondir" && content == "../..";
}

GitConfigReview ReviewGitConfig(std::string_view text) {
  GitConfigReview r;
  std::vector<ConfigEntry> entries;
  if (!ConfigParser(text).Parse(&entries, &r.error)) {
    r.inert = false;
    return r;
  }
  std::vector<const ConfigEntry*> kept;
  for (const ConfigEntry& e : entries) {
    const std::string key = e.section + "." + e.name;
    bool inert = InertKeys().count(key) > 0;
    // Subsections only where git has them (remote "x", branch "x", submodule "x"); a key under
    // core "x" or include "x" is not the same key.
    const bool sub_ok = e.section == "remote" || e.section == "branch" || e.section == "submodule";
    if (e.has_sub != sub_ok) inert = false;
    if (inert) {
      kept.push_back(&e);
    } else {
      r.inert = false;
      std::string shown = e.section;
      if (e.has_sub) shown += "." + e.subsection;
      r.risky_keys.push_back(shown + "." + e.name);
    }
  }
  r.sanitized = Emit(kept);
  return r;
}

std::string GitFileTarget(std::string_view content) {
  constexpr std::string_view kPrefix = "gitdir:";
  if (!StartsWith(content, kPrefix)) return "";
  content.remove_prefix(kPrefix.size());
  while (!content.empty() && (content.front() == ' ' || content.front() == '\t')) {
    content.remove_prefix(1);
  }
  size_t nl = content.find('\n');
  if (nl != std::string_view::npos) content = content.substr(0, nl);
  while (!content.empty() && (content.back() == '\r' || content.back() == ' ')) {
    content.remove_suffix(1);
  }
  return std::string(content);
}

int MatchProtectedName(const std::vector<std::string>& components,
                       const std::vector<std::vector<std::string>>& protected_relpaths,
                       size_t* end) {
  for (size_t i = 0; i < components.size(); ++i) {
    for (const auto& rel : protected_relpaths) {
      if (rel.empty() || i + rel.size() > components.size()) continue;
      if (std::equal(rel.begin(), rel.end(), components.begin() + static_cast<long>(i))) {
        if (end) *end = i + rel.size();
        return static_cast<int>(i);
      }
    }
  }
  return -1;
}

bool IsHostExecutedTrigger(const std::vector<std::string>& components,
                           const std::vector<std::vector<std::string>>& protected_relpaths) {
  if (components.empty()) return false;
  static constexpr std::array<std::string_view, 7> kGitNames = {
      ".git", "HEAD", "config", "config.worktree", "commondir", "gitdir", "hooks"};
  const std::string& name = components.back();
  if (std::find(kGitNames.begin(), kGitNames.end(), name) != kGitNames.end()) return true;
  if (components.size() >= 2 && components[components.size() - 2] == "hooks") return true;
  for (const std::string& c : components) {
    if (BeginsProtectedName(c, protected_relpaths)) return true;
  }
  return false;
}

bool IsGitProtectedName(const std::vector<std::string>& relpath) {
  return !relpath.empty() && relpath.front() == ".git";
}

const std::vector<std::string>& GitDirProtectedRelpaths() {
  static const std::vector<std::string> names = {".git/hooks", ".git/config",
                                                 ".git/config.worktree", ".git/commondir"};
  return names;
}

std::string HostExecutedRuleText() {
  return "host-executed content: the git directory of any repository (found by its structure: "
         "HEAD with objects and refs, or commondir; or named .git) may keep git's data, but its hooks, its "
         "config (unless every key is inert), config.worktree and commondir make the host's git "
         "run code; so do the protected names (.envrc, editor and agent settings, .ward.toml, "
         "...) at any depth. Existing ones are read-only during a run and absent ones at a "
         "writable root's top cannot be created; what a run creates elsewhere is moved to the "
         "quarantine after it (ward quarantine list|show|restore|drop)";
}

}  // namespace ward::policy
