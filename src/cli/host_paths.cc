#include "cli/host_paths.h"

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <fstream>
#include <sstream>

#include "enforce/plan.h"
#include "policy/host_executed.h"
#include "policy/paths.h"

namespace ward::cli {
namespace {

constexpr int kMaxSymlinkHops = 40;  // as the kernel's MAXSYMLINKS

void PushComponentsFront(std::deque<std::string>* todo, const std::string& path) {
  std::vector<std::string> comps = policy::PathComponents(path);
  todo->insert(todo->begin(), comps.begin(), comps.end());
}

std::string Parent(const std::string& dir) {
  size_t slash = dir.find_last_of('/');
  return slash == std::string::npos ? "" : dir.substr(0, slash);
}

bool IsDir(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool IsFile(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string ReadSmallFile(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str().substr(0, 1 << 20);
}

// The shape of `dir` once a file is written at `path` below it (the write makes the missing
// directories on its way).
policy::DirShape ShapeAfterWrite(const std::string& dir, const std::string& path) {
  auto made = [&](const std::string& name, bool as_dir) {
    const std::string entry = dir + "/" + name;
    return as_dir ? enforce::PathIsWithin(path, entry) && path != entry : path == entry;
  };
  policy::DirShape s;
  s.head_file = IsFile(dir + "/HEAD") || made("HEAD", false);
  s.objects_dir = IsDir(dir + "/objects") || made("objects", true);
  s.refs_dir = IsDir(dir + "/refs") || made("refs", true);
  s.commondir_file = IsFile(dir + "/commondir") || made("commondir", false);
  s.named_dot_git = dir.size() >= 5 && dir.compare(dir.size() - 5, 5, "/.git") == 0;
  return s;
}

policy::DirShape ShapeNow(const std::string& dir) {
  policy::DirShape s;
  s.head_file = IsFile(dir + "/HEAD");
  s.objects_dir = IsDir(dir + "/objects");
  s.refs_dir = IsDir(dir + "/refs");
  s.commondir_file = IsFile(dir + "/commondir");
  s.named_dot_git = dir.size() >= 5 && dir.compare(dir.size() - 5, 5, "/.git") == 0;
  return s;
}

// The first hook in `hooks` that is not a sample (git would run it); "" when none.
std::string RunnableHookIn(const std::string& hooks) {
  DIR* d = opendir(hooks.c_str());
  if (d == nullptr) return "";
  std::string found;
  while (struct dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (policy::ClassifyGitDirEntry("hooks/" + name) != policy::GitDirEntry::kInert) {
      found = hooks + "/" + name;
      break;
    }
  }
  closedir(d);
  return found;
}

// What in a git directory that is about to become one git would run: a config that is not
// inert, hooks that are not samples. "" when nothing.
std::string RiskyContentOf(const std::string& gitdir) {
  if (IsFile(gitdir + "/config")) {
    policy::GitConfigReview r = policy::ReviewGitConfig(ReadSmallFile(gitdir + "/config"));
    if (!r.inert) return gitdir + "/config (not inert)";
  }
  if (IsFile(gitdir + "/config.worktree")) return gitdir + "/config.worktree";
  if (IsDir(gitdir + "/hooks")) return RunnableHookIn(gitdir + "/hooks");
  return "";
}

std::string WritableRootOf(const policy::Policy& pol, const std::string& path) {
  std::string best;
  auto consider = [&](const std::string& root) {
    if (enforce::PathIsWithin(path, root) && root.size() > best.size()) best = root;
  };
  if (pol.workspace_access == policy::Access::kWrite) consider(pol.workspace);
  for (const auto& r : pol.paths) {
    if (r.access == policy::Access::kWrite) consider(r.path);
  }
  return best;
}

}  // namespace

std::string HostExecutedWriteWhy(const policy::Policy& pol, const std::string& path) {
  const std::string root = WritableRootOf(pol, path);
  if (root.empty() || path == root) return "";
  const std::string base = path.substr(path.find_last_of('/') + 1);
  if (base == ".git") return "a .git file or directory tells the host's git where its config and hooks are";
  for (std::string dir = Parent(path); dir.size() >= root.size(); dir = Parent(dir)) {
    if (!policy::IsGitDirShape(ShapeAfterWrite(dir, path))) continue;
    const std::string rel = path.substr(dir.size() + 1);
    if (policy::ClassifyGitDirEntry(rel) != policy::GitDirEntry::kInert) {
      return dir + " is a git directory and " + rel + " is what git runs or reads its config from";
    }
    if (!policy::IsGitDirShape(ShapeNow(dir))) {
      if (std::string risky = RiskyContentOf(dir); !risky.empty()) {
        return "the write makes " + dir + " a git directory around " + risky;
      }
    }
    if (dir == root) break;
  }
  return "";
}

Result<std::string> ResolveOnHost(const std::string& abs_path) {
  if (abs_path.empty() || abs_path[0] != '/') {
    return InvalidArgument("not an absolute path: " + abs_path);
  }
  std::deque<std::string> todo;
  PushComponentsFront(&todo, abs_path);
  std::string cur;  // the resolved prefix; "" is the root
  bool missing = false;
  int hops = 0;
  while (!todo.empty()) {
    std::string comp = std::move(todo.front());
    todo.pop_front();
    if (comp == ".") continue;
    if (comp == "..") {
      cur = Parent(cur);
      continue;
    }
    std::string next = cur + "/" + comp;
    struct stat st;
    if (!missing && lstat(next.c_str(), &st) != 0) missing = true;
    if (!missing && S_ISLNK(st.st_mode)) {
      if (++hops > kMaxSymlinkHops) {
        return ErrnoError("resolving " + abs_path + " (symlink chain at " + next + ")", ELOOP);
      }
      char buf[PATH_MAX];
      ssize_t n = readlink(next.c_str(), buf, sizeof buf - 1);
      if (n <= 0) return ErrnoError("readlink " + next, n == 0 ? ENOENT : errno);
      std::string target(buf, static_cast<size_t>(n));
      if (target[0] == '/' && enforce::PathIsWithin(next, "/proc")) {
        // A /proc magic link (cwd, root, exe, fd/N, map_files): what it opens is an object
        // of the process it belongs to, which its text only names; a process other than the
        // one that will open it reads a different one.
        return InvalidArgument(abs_path + " goes through the /proc magic link " + next);
      }
      if (target[0] == '/') cur.clear();
      PushComponentsFront(&todo, target);
      continue;
    }
    cur = std::move(next);
  }
  return cur.empty() ? std::string("/") : cur;
}

std::vector<std::string> NestedRepoRootsOnHost(const policy::Policy& pol, const std::string& path) {
  std::vector<std::string> roots;
  std::vector<std::string> writable;
  if (pol.workspace_access == policy::Access::kWrite) writable.push_back(pol.workspace);
  for (const auto& r : pol.paths) {
    if (r.access == policy::Access::kWrite) writable.push_back(r.path);
  }
  for (const auto& w : writable) {
    if (!enforce::PathIsWithin(path, w) || path == w) continue;
    std::string cur = w;
    std::string rel = path.substr(w.size());
    size_t pos = 1;
    for (int depth = 1; depth <= pol.nested_repo_depth; ++depth) {
      size_t next = rel.find('/', pos);
      if (next == std::string::npos) break;
      std::string comp = rel.substr(pos, next - pos);
      if (comp == ".git" || comp == "node_modules") break;
      cur += "/" + comp;
      struct stat st;
      if (lstat((cur + "/.git").c_str(), &st) == 0) roots.push_back(cur);
      pos = next + 1;
    }
  }
  return roots;
}

}  // namespace ward::cli
