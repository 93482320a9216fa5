#include "supervisor/command_lookup.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>

#include "common/sha256.h"
#include "policy/decide.h"
#include "policy/paths.h"

namespace ward::supervisor {
namespace {

struct Found {
  std::string path;       // as PATH names it
  std::string canonical;  // symlinks resolved
};

// The first executable regular file `name` names in the directories of `path_var` that
// `visible` accepts (given the candidate's path as PATH names it and its canonical path). One stat per directory; the
// canonical path is resolved only for a file that is there.
Found FindOnPath(const std::string& name, const std::string& path_var,
                 const std::function<bool(const std::string&, const std::string&)>& visible) {
  size_t start = 0;
  std::string candidate;
  while (start <= path_var.size()) {
    size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    const std::string_view dir(path_var.data() + start, end - start);
    start = end + 1;
    if (dir.empty() || dir[0] != '/') continue;  // relative entries depend on the cwd: skipped
    candidate.assign(dir).append("/").append(name);
    struct stat st;
    if (stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0) {
      continue;
    }
    char buf[PATH_MAX];
    if (realpath(candidate.c_str(), buf) == nullptr) continue;
    if (!visible(candidate, buf)) continue;
    return {candidate, buf};
  }
  return {};
}

bool Within(const std::string& path, const std::string& dir) {
  return !dir.empty() && dir != "/" && policy::PathIsWithin(path, dir);
}

}  // namespace

CommandLookup LookUpCommand(const policy::Policy& policy, const std::string& argv0,
                            const std::string& inside_path, const std::string& host_path) {
  CommandLookup r;
  if (argv0.empty() || argv0.find('/') != std::string::npos) return r;
  const Found host = FindOnPath(argv0, host_path, [](const std::string&, const std::string&) { return true; });
  if (host.path.empty()) return r;
  // Inside, a file is there when the policy shows the host's own file at its path (ward binds
  // host paths at the same path); its private HOME and /tmp hold nothing of the host's. A
  // symlink is followed inside only where it is itself shown: both the path PATH names and the
  // file it resolves to must be.
  auto shown_one = [&](const std::string& p) {
    const policy::PathDecision d = policy::DecidePath(policy, p);
    return d.host_file && d.visibility != policy::PathDecision::Visibility::kHidden;
  };
  auto shown = [&](const std::string& named, const std::string& canonical) {
    return shown_one(named) && (canonical == named || shown_one(canonical));
  };
  // The usual case, the same PATH inside: the host's find, when shown, is the sandbox's too.
  if (inside_path == host_path && shown(host.path, host.canonical)) return r;
  const Found inside = FindOnPath(argv0, inside_path, shown);
  r.host = host.path;
  r.inside = inside.path;
  if (inside.path.empty()) {
    r.kind = CommandLookup::Kind::kHiddenHere;
  } else if (inside.canonical != host.canonical) {
    r.kind = CommandLookup::Kind::kDifferentHere;
  } else {
    return r;
  }
  r.allow_with = "-r " + ReadFlagFor(host.path, policy.home);
  return r;
}

std::string ReadFlagFor(const std::string& host_binary, const std::string& home) {
  const std::string dir = policy::ParentPath(host_binary);
  if (Within(dir, home) && dir != home) {
    const std::string rel = dir.substr(home.size() + 1);
    const std::string first = rel.substr(0, rel.find('/'));
    if (first == ".local" || first == "bin") return "~/" + rel;
    return "~/" + first;
  }
  const std::string parent = policy::ParentPath(dir);
  const bool bin = dir.size() > 4 && dir.ends_with("/bin");
  if (bin && parent != "/" && parent != "/usr" && parent != "/usr/local") return parent;
  return dir;
}

bool FirstNotice(const std::string& state_dir, const std::string& key) {
  if (state_dir.empty() || state_dir[0] != '/') return false;
  Sha256 h;
  h.Update(key);
  const std::string dir = state_dir + "/notices";
  (void)mkdir(state_dir.c_str(), 0700);
  (void)mkdir(dir.c_str(), 0700);
  const std::string marker = dir + "/" + h.FinalHex().substr(0, 32);
  // O_EXCL: whichever run makes the marker says it; O_NOFOLLOW: never a file elsewhere.
  int fd = open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const ssize_t written = write(fd, key.data(), key.size());
  (void)written;  // the marker's existence is what counts
  close(fd);
  return true;
}

}  // namespace ward::supervisor
