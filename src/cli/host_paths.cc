#include "cli/host_paths.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>

#include "enforce/plan.h"

namespace ward::cli {
namespace {

constexpr int kMaxSymlinkHops = 40;  // as the kernel's MAXSYMLINKS

void PushComponentsFront(std::deque<std::string>* todo, const std::string& path) {
  std::deque<std::string> comps;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    if (next > pos) comps.push_back(path.substr(pos, next - pos));
    pos = next + 1;
  }
  todo->insert(todo->begin(), comps.begin(), comps.end());
}

std::string Parent(const std::string& dir) {
  size_t slash = dir.find_last_of('/');
  return slash == std::string::npos ? "" : dir.substr(0, slash);
}

}  // namespace

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
