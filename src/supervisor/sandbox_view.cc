#include "supervisor/sandbox_view.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <vector>

#include "common/linux.h"
#include "policy/paths.h"

namespace ward::supervisor {
namespace {

constexpr uint64_t kInRoot = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
constexpr int kMaxLinkHops = 40;

bool ParseFdNumber(const std::string& s, size_t from, int* out) {
  if (from >= s.size() || s.size() - from > 9) return false;
  int n = 0;
  for (size_t i = from; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    n = n * 10 + (s[i] - '0');
  }
  *out = n;
  return true;
}

}  // namespace

std::optional<std::pair<int, std::string>> ThroughCallerFd(const std::string& path) {
  for (const char* prefix : {"/proc/self/fd/", "/proc/thread-self/fd/", "/dev/fd/"}) {
    const std::string p = prefix;
    if (path.compare(0, p.size(), p) != 0) continue;
    const size_t slash = path.find('/', p.size());
    int n;
    if (slash == std::string::npos || !ParseFdNumber(path.substr(0, slash), p.size(), &n)) {
      return std::nullopt;
    }
    return std::make_pair(n, path.substr(slash + 1));
  }
  return std::nullopt;
}

std::optional<int> CallerFdLink(const std::string& path) {
  for (const char* prefix : {"/proc/self/fd/", "/proc/thread-self/fd/", "/dev/fd/"}) {
    const std::string p = prefix;
    int n;
    if (path.compare(0, p.size(), p) == 0 && ParseFdNumber(path, p.size(), &n)) return n;
  }
  return std::nullopt;
}

int SandboxView::DirPath(int dirfd, std::string* out) const {
  char link[64], buf[PATH_MAX];
  if (dirfd == AT_FDCWD) {
    std::snprintf(link, sizeof link, "/proc/%d/cwd", tid_);
  } else {
    std::snprintf(link, sizeof link, "/proc/%d/fd/%d", tid_, dirfd);
  }
  // Text only: the path is resolved again in the sandbox's root.
  ssize_t n = readlink(link, buf, sizeof buf - 1);
  if (n < 0) return errno == ENOENT ? -EBADF : -errno;
  buf[n] = '\0';
  if (buf[0] != '/') return -ENOTDIR;  // a pipe, socket or anon inode: not a directory
  *out = buf;
  return 0;
}

int SandboxView::Absolute(int dirfd, const std::string& path, std::string* abs) const {
  if (path.empty()) return -ENOENT;
  std::string base;
  if (std::optional<std::pair<int, std::string>> via = ThroughCallerFd(path)) {
    // The directory behind the caller's descriptor, read as text like a dirfd's and resolved
    // again in the view: the magic link itself is never followed.
    if (int rc = DirPath(via->first, &base); rc != 0) return rc == -EBADF ? -ENOENT : rc;
    *abs = base + "/" + via->second;
    return 0;
  }
  if (path[0] == '/') {
    *abs = path;
    return 0;
  }
  if (int rc = DirPath(dirfd, &base); rc != 0) return rc;
  *abs = base + "/" + path;
  return 0;
}

int SandboxView::Parent(const std::string& abs, ViewEntry* out) const {
  std::vector<std::string> comps = policy::PathComponents(abs);
  std::string last = comps.empty() ? "." : comps.back();
  std::string dir = "/";
  if (last == "." || last == "..") {
    dir = abs;
    last = ".";
  } else {
    comps.pop_back();
    for (const auto& c : comps) dir += c + "/";
  }
  UniqueFd fd(sys::Openat2(root_, dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, kInRoot));
  if (!fd) return -errno;
  out->dir = std::move(fd);
  out->dir_path = dir;
  out->name = last;
  return 0;
}

int SandboxView::FollowFinalLinks(uint64_t open_flags, ViewEntry* entry,
                                  std::optional<int>* fd_link) const {
  for (int hops = 0;; ++hops) {
    if (hops > kMaxLinkHops) return -ELOOP;
    struct stat st;
    if ((open_flags & (O_NOFOLLOW | O_EXCL)) || entry->name == "." ||
        fstatat(entry->dir.get(), entry->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISLNK(st.st_mode)) {
      return 0;
    }
    char target[PATH_MAX];
    ssize_t n = readlinkat(entry->dir.get(), entry->name.c_str(), target, sizeof target - 1);
    if (n < 0) return -errno;
    target[n] = '\0';
    const std::string text = target;
    if (text.empty()) return -ENOENT;
    if ((*fd_link = CallerFdLink(text))) return 0;
    // A relative link is relative to its directory: the kernel resolves "dir/text" exactly so.
    const std::string next = text[0] == '/' ? text : entry->dir_path + "/" + text;
    ViewEntry followed;
    if (int rc = Parent(next, &followed); rc != 0) return rc;
    *entry = std::move(followed);
  }
}

}  // namespace ward::supervisor
