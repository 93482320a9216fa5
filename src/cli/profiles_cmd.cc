// `ward profiles list` and `ward profiles show NAME`: the profiles `-p NAME` can name (built-in
// ones and the user's own in <config dir>/profiles), where each comes from, and what one says.
#include <dirent.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "audit/sessions.h"
#include "cli/commands.h"
#include "cli/run_options.h"
#include "policy/builtin_profiles.h"
#include "policy/loader.h"
#include "policy/policy_json.h"

namespace ward::cli {
namespace profiles_cmd {

struct ProfilesOptions {
  bool json = false;
  bool names = false;
  std::string name;
  bool effective = false;
};

// One profile `-p` can name. A user's file of a built-in's name shadows it: `-p NAME` is the
// file, `-p builtin:NAME` the built-in.
struct Entry {
  std::string name;  // as -p takes it: "default", or "builtin:default" when shadowed
  std::string path;  // the user's file; "" for a built-in
  std::string text;
  bool shadows = false;      // a user file with a built-in's name
  bool shadowed = false;     // a built-in with a user file of its name
  std::string description;   // of the loaded profile (after extends)
  std::string error;         // why it does not load, "" when it does
};

// A name -p looks up in the config dir (the loader's rule: letters, digits, '.', '-', '_').
bool IsProfileName(std::string_view s) {
  if (s.empty() || s.size() > 64 || s[0] == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == '_' || c == '-' || c == '.' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9');
  });
}

Result<std::string> ReadProfileFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFound(path + ": no such file");
    return ErrnoError("reading " + path, errno);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return ErrnoError("reading " + path, errno);
  return ss.str();
}

std::string HomeDir() {
  const char* h = getenv("HOME");
  if (h && *h == '/') return h;
  struct passwd* pw = getpwuid(getuid());
  return pw && pw->pw_dir ? pw->pw_dir : "/";
}

// The caller's context for loading a profile alone: no workspace file applies (it is a
// profile that is shown, not a run).
policy::Context ProfileContext() {
  policy::Context ctx;
  ctx.home = HomeDir();
  char buf[PATH_MAX];
  ctx.cwd = getcwd(buf, sizeof buf) ? std::string(buf) : ctx.home;
  ctx.workspace = ctx.cwd;
  ctx.config_dir = UserConfigDir();
  return ctx;
}

Result<policy::Policy> LoadProfileAlone(const std::string& ref) {
  policy::RunFlags flags;
  flags.profile = ref;
  policy::Context ctx = ProfileContext();
  const std::string workspace_file = policy::WorkspaceFilePath(ctx.workspace);
  return policy::LoadPolicy(flags, ctx, [&](const std::string& path) -> Result<std::string> {
    if (path == workspace_file) return NotFound(path);
    return ReadProfileFile(path);
  });
}

// The user's profiles: <config dir>/profiles/NAME.toml, by name.
std::vector<Entry> UserProfiles(const std::string& config_dir) {
  std::vector<Entry> out;
  const std::string dir = config_dir + "/profiles";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (struct dirent* e = ::readdir(d)) {
    std::string file = e->d_name;
    if (file.size() <= 5 || file.compare(file.size() - 5, 5, ".toml") != 0) continue;
    std::string name = file.substr(0, file.size() - 5);
    if (!IsProfileName(name)) continue;
    Entry entry;
    entry.name = name;
    entry.path = dir + "/" + file;
    struct stat st {};
    if (::stat(entry.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    Result<std::string> text = ReadProfileFile(entry.path);
    if (text.ok()) {
      entry.text = std::move(text).value();
    } else {
      entry.error = text.status().ToString();
    }
    out.push_back(std::move(entry));
  }
  ::closedir(d);
  return out;
}

// What the loader is given for this entry: the file's path, or builtin:NAME.
std::string RefOf(const Entry& e) {
  if (!e.path.empty()) return e.path;
  return e.name.rfind("builtin:", 0) == 0 ? e.name : "builtin:" + e.name;
}

bool IsBuiltin(const std::string& name) {
  const auto& all = policy::BuiltinProfiles();
  return std::any_of(all.begin(), all.end(), [&](const auto& p) { return p.name == name; });
}

// Every profile, by name; a built-in shadowed by a user file right after that file.
std::vector<Entry> Catalog() {
  std::vector<Entry> all = UserProfiles(UserConfigDir());
  std::vector<std::string> user_names;
  for (Entry& e : all) {
    e.shadows = IsBuiltin(e.name);
    user_names.push_back(e.name);
  }
  for (const auto& p : policy::BuiltinProfiles()) {
    Entry e;
    e.name = std::string(p.name);
    e.text = std::string(p.text);
    e.shadowed = std::find(user_names.begin(), user_names.end(), e.name) != user_names.end();
    if (e.shadowed) e.name = "builtin:" + e.name;
    all.push_back(std::move(e));
  }
  auto key = [](const Entry& e) {
    return e.name.rfind("builtin:", 0) == 0 ? e.name.substr(8) + "~" : e.name;
  };
  std::sort(all.begin(), all.end(), [&](const Entry& a, const Entry& b) { return key(a) < key(b); });
  for (Entry& e : all) {
    if (!e.error.empty()) continue;
    Result<policy::Policy> pol = LoadProfileAlone(RefOf(e));
    if (pol.ok()) {
      e.description = pol->description;
    } else {
      e.error = pol.status().ToString();
    }
  }
  return all;
}

std::string SourceText(const Entry& e) {
  if (e.path.empty()) {
    return e.shadowed ? "built-in (shadowed by your file; -p " + e.name + " names it)"
                      : "built-in";
  }
  return e.path + (e.shadows ? " (shadows the built-in " + e.name + ")" : "");
}

int RunList(const ProfilesOptions& o) {
  std::vector<Entry> all = Catalog();
  if (o.names) {
    for (const Entry& e : all) {
      if (!e.shadowed) std::printf("%s\n", e.name.c_str());
    }
    return kExitOk;
  }
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const Entry& e : all) {
      out.push_back({{"name", e.name},
                     {"source", e.path.empty() ? "built-in" : e.path},
                     {"shadows_builtin", e.shadows},
                     {"shadowed", e.shadowed},
                     {"description", e.description},
                     {"error", e.error.empty() ? nlohmann::json() : nlohmann::json(e.error)}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  size_t width = 4;
  for (const Entry& e : all) width = std::max(width, e.name.size());
  for (const Entry& e : all) {
    std::printf("%-*s  %s\n", static_cast<int>(width), e.name.c_str(),
                audit::SanitizeForTerminal(SourceText(e)).c_str());
    const std::string about = e.error.empty() ? e.description : "does not load: " + e.error;
    if (!about.empty()) {
      std::printf("%-*s    %s\n", static_cast<int>(width), "",
                  audit::SanitizeForTerminal(about).c_str());
    }
  }
  return kExitOk;
}

size_t Distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

Status UnknownProfile(const std::string& name, const std::vector<Entry>& all) {
  std::string best;
  size_t best_d = SIZE_MAX;
  std::string names;
  for (const Entry& e : all) {
    names += (names.empty() ? "" : ", ") + e.name;
    size_t d = Distance(name, e.name);
    if (d < best_d) best_d = d, best = e.name;
  }
  std::string hint;
  if (!best.empty() && name.size() <= 64 && (best_d <= 2 || best_d <= name.size() / 3)) {
    hint = " (did you mean '" + best + "'?)";
  }
  return NotFound("unknown profile '" + audit::SanitizeForTerminal(name) + "'" + hint +
                  "; profiles: " + names);
}

// NAME as -p takes it: builtin:NAME, a file (a '/' or .toml), or a name (the user's file
// first, then the built-in).
Result<Entry> Find(const std::string& name) {
  std::vector<Entry> all = Catalog();
  for (const Entry& e : all) {
    if (e.name == name) return e;
  }
  if (name.rfind("builtin:", 0) == 0) {
    for (const auto& p : policy::BuiltinProfiles()) {
      if (p.name == name.substr(8)) return Entry{name, "", std::string(p.text)};
    }
  } else if (name.find('/') != std::string::npos ||
             (name.size() > 5 && name.compare(name.size() - 5, 5, ".toml") == 0)) {
    std::string path = name;
    if (path.rfind("~/", 0) == 0) path = HomeDir() + path.substr(1);
    Result<std::string> text = ReadProfileFile(path);
    if (!text.ok()) return text.status();
    return Entry{name, path, std::move(text).value()};
  }
  return UnknownProfile(name, all);
}

int RunShow(const ProfilesOptions& o) {
  Result<Entry> e = Find(o.name);
  if (!e.ok()) {
    std::fprintf(stderr, "ward profiles: %s\n",
                 audit::SanitizeForTerminal(e.status().ToString()).c_str());
    return kExitFailed;
  }
  if (o.effective) {
    Result<policy::Policy> pol = LoadProfileAlone(RefOf(*e));
    if (!pol.ok()) {
      std::fprintf(stderr, "ward profiles: %s\n",
                   audit::SanitizeForTerminal(pol.status().ToString()).c_str());
      return kExitFailed;
    }
    std::printf("%s\n", policy::PolicyToJson(*pol).dump(2).c_str());
    return kExitOk;
  }
  // The source as a TOML comment: the output stays a profile one can save and edit.
  std::printf("# ward profile %s: %s\n", e->name.c_str(),
              audit::SanitizeForTerminal(SourceText(*e)).c_str());
  if (isatty(STDOUT_FILENO) != 1) {
    std::fwrite(e->text.data(), 1, e->text.size(), stdout);
  } else {  // a file of the user's, but shown on a terminal: no control sequences
    std::istringstream lines(e->text);
    for (std::string line; std::getline(lines, line);) {
      std::printf("%s\n", audit::SanitizeForTerminal(line).c_str());
    }
  }
  if (!e->text.empty() && e->text.back() != '\n' && isatty(STDOUT_FILENO) != 1) std::printf("\n");
  return kExitOk;
}

}  // namespace profiles_cmd

void AddProfilesCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<profiles_cmd::ProfilesOptions>();
  CLI::App* profiles = app.add_subcommand(
      "profiles", "The profiles -p can name: built-in, and yours in $XDG_CONFIG_HOME/ward/profiles");
  profiles->require_subcommand(1);
  CLI::App* list = profiles->add_subcommand("list", "Every profile, with where it comes from");
  list->add_flag("--json", o->json, "One JSON array");
  list->add_flag("--names", o->names, "Only the names, one per line (for shell completion)");
  list->callback([o, exit_code] { *exit_code = profiles_cmd::RunList(*o); });
  CLI::App* show = profiles->add_subcommand("show", "A profile's text as written, and its source");
  show->add_option("NAME", o->name, "Profile NAME, builtin:NAME or FILE")->required();
  show->add_flag("--effective", o->effective,
                 "The resolved policy after extends, as JSON (without a workspace's .ward.toml)");
  show->callback([o, exit_code] { *exit_code = profiles_cmd::RunShow(*o); });
}

}  // namespace ward::cli
