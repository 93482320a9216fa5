#include "enforce/beneath.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/linux.h"
#include "policy/paths.h"

namespace ward::enforce {
namespace {

// As many symlinks as the kernel follows in one resolution before ELOOP.
constexpr int kMaxLinks = 40;

Status SymlinkInside(const std::string& link) {
  return Error(Code::kPermissionDenied,
               link +
                   " is a symbolic link inside the workspace: ward never follows a symlink there "
                   "(a sandboxed command can plant one); name a real directory or file");
}

}  // namespace

int OpenComponentNoFollow(int dir_fd, const char* name, int flags) {
  int fd = sys::Openat2(dir_fd, name, static_cast<uint64_t>(flags) | O_NOFOLLOW | O_CLOEXEC, 0,
                        kResolveBeneath);
  if (fd >= 0 || errno != ENOSYS) return fd;
  // No openat2 (gVisor, Linux < 5.6): for one component that is neither "." nor "..",
  // O_NOFOLLOW resolves exactly what RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS would.
  if (std::strchr(name, '/') != nullptr || std::strcmp(name, ".") == 0 ||
      std::strcmp(name, "..") == 0 || *name == '\0') {
    errno = EINVAL;
    return -1;
  }
  return openat(dir_fd, name, flags | O_NOFOLLOW | O_CLOEXEC);
}

std::optional<std::string> RelativeBeneath(const std::string& dir, const std::string& path) {
  if (!policy::PathIsWithin(path, dir)) return std::nullopt;
  if (path.size() == dir.size()) return std::string();
  return path.substr(dir == "/" ? 1 : dir.size() + 1);
}

Result<UniqueFd> OpenBeneath(int dir_fd, const std::string& shown, const std::string& rel) {
  UniqueFd cur(fcntl(dir_fd, F_DUPFD_CLOEXEC, 3));
  if (!cur) return Errno("duplicating the descriptor of " + shown);
  std::string path = shown;
  for (const std::string& comp : policy::PathComponents(rel)) {
    path += "/" + comp;
    if (comp == "." || comp == "..") {
      return Error(Code::kPermissionDenied, path + ": \"" + comp +
                                                "\" is not allowed here (name the path inside "
                                                "the workspace without it)");
    }
    // O_PATH | O_NOFOLLOW opens a symlink itself (RESOLVE_NO_SYMLINKS would only say ELOOP),
    // so the error can name it.
    UniqueFd next(OpenComponentNoFollow(cur.get(), comp.c_str(), O_PATH));
    if (!next) return ErrnoError(path, errno);
    struct stat st;
    if (fstat(next.get(), &st) != 0) return ErrnoError(path, errno);
    if (S_ISLNK(st.st_mode)) return SymlinkInside(path);
    cur = std::move(next);
  }
  return cur;
}

Result<std::string> RealPathNotFollowingBelow(const std::string& path, const std::string& dir) {
  // What is left to resolve, next component last; and the resolved prefix ("" for "/").
  std::vector<std::string> todo = policy::PathComponents(path);
  std::reverse(todo.begin(), todo.end());
  std::string done;
  int links = 0;
  while (!todo.empty()) {
    std::string comp = std::move(todo.back());
    todo.pop_back();
    if (comp == ".") continue;
    if (comp == "..") {
      done.resize(done.empty() ? 0 : done.rfind('/'));  // "" stays the root
      continue;
    }
    std::string next = done + "/" + comp;
    char target[PATH_MAX];
    ssize_t n = readlink(next.c_str(), target, sizeof target);
    if (n < 0) {
      if (errno != EINVAL) return ErrnoError(next, errno);
      done = std::move(next);  // exists and is not a symlink
      continue;
    }
    if (policy::PathIsWithin(next, dir)) return SymlinkInside(next);
    if (static_cast<size_t>(n) == sizeof target) return ErrnoError(next, ENAMETOOLONG);
    if (++links > kMaxLinks) return ErrnoError(path, ELOOP);
    std::vector<std::string> more = policy::PathComponents(std::string(target, static_cast<size_t>(n)));
    todo.insert(todo.end(), more.rbegin(), more.rend());
    if (target[0] == '/') done.clear();
  }
  return done.empty() ? std::string("/") : done;
}

}  // namespace ward::enforce
