#include "supervisor/creation_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/host_executed.h"
#include "policy/paths.h"

namespace ward::supervisor {
namespace {

// The kernel's name for a directory the guard holds: the path from the sandbox's root, with no
// link in it (the descriptor's own path, which the sandbox cannot spell differently).
bool KernelPath(int dirfd, std::string* out) {
  char link[64], buf[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
  ssize_t n = readlink(link, buf, sizeof buf);
  if (n <= 0 || n == static_cast<ssize_t>(sizeof buf) || buf[0] != '/') return false;
  out->assign(buf, static_cast<size_t>(n));
  constexpr std::string_view kDeleted = " (deleted)";
  return !(out->size() >= kDeleted.size() &&
           out->compare(out->size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0);
}

}  // namespace

void CreationJournal::Record(int dirfd, const std::string& name, bool moved) {
  struct stat dir_st, st;
  if (fstat(dirfd, &dir_st) != 0) return;
  const bool is_dir =
      fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
  std::lock_guard lock(mu_);
  if (is_dir) made_dirs_.insert({st.st_dev, st.st_ino});
  if (overflowed_) return;
  std::string dir;
  if (!KernelPath(dirfd, &dir)) {
    // A directory the sandbox removed meanwhile holds nothing any more; anything else that
    // cannot be named is looked for by walking.
    if (dir_st.st_nlink > 0) overflowed_ = true;
    return;
  }
  std::string path = dir == "/" ? "/" + name : dir + "/" + name;
  const bool subtree = moved && is_dir;
  if (!subtree && !policy::IsHostExecutedTrigger(policy::PathComponents(path), protected_)) return;
  if (entries_.size() >= limit_) {
    overflowed_ = true;
    entries_.clear();
    entries_.shrink_to_fit();
    return;
  }
  entries_.push_back({std::move(path), dir_st.st_dev, dir_st.st_ino, subtree});
}

}  // namespace ward::supervisor
