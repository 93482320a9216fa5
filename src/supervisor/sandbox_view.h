// Paths named by a sandboxed process, resolved the way the sandbox sees them: in the sandbox's
// own root (the O_PATH descriptor sandbox init sent once its root was built), with
// openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS), so absolute symlinks and ".." stay inside
// the view and no /proc magic link is followed. The caller's cwd and directory descriptors are
// read as text from its /proc entry and resolved again here, never followed.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>

#include "common/unique_fd.h"

namespace ward::supervisor {

// The directory that holds (or will hold) an entry, and the entry's name.
struct ViewEntry {
  UniqueFd dir;          // O_PATH, in the sandbox's view
  std::string dir_path;  // the sandbox path `dir` was resolved from (links in it unresolved)
  std::string name;      // one component; "." when the path names a directory itself
};

class SandboxView {
 public:
  SandboxView(int root, pid_t tid) : root_(root), tid_(tid) {}

  // The sandbox path of dirfd+path (relative paths from the caller's cwd or dirfd; a path below
  // one of the caller's descriptors, /proc/self/fd/N/NAME, from that descriptor's directory, as
  // the kernel reads it: programs create entries in a directory they hold open so). 0 or -errno.
  int Absolute(int dirfd, const std::string& path, std::string* abs) const;

  // Opens the directory that holds the last component of the sandbox path `abs`. A trailing "."
  // or ".." makes the whole path the directory and the name ".". 0 or -errno.
  int Parent(const std::string& abs, ViewEntry* out) const;

  // What an open with O_CREAT reaches: the kernel follows a final symlink (unless O_EXCL or
  // O_NOFOLLOW), so the guard does, one hop at a time, each link's text resolved again in the
  // sandbox's root (a relative one from the sandbox path of its directory). When a hop names a
  // descriptor of the caller (/proc/self/fd/N, /dev/fd/N), *fd_link is set to N and `entry` is
  // left at the link. 0 or -errno (ELOOP past 40 hops).
  int FollowFinalLinks(uint64_t open_flags, ViewEntry* entry, std::optional<int>* fd_link) const;

 private:
  int DirPath(int dirfd, std::string* out) const;

  int root_;
  pid_t tid_;
};

// N when `path` names a descriptor of the calling process itself: /proc/self/fd/N,
// /proc/thread-self/fd/N or /dev/fd/N.
std::optional<int> CallerFdLink(const std::string& path);

// N and the rest when `path` lies below such a descriptor: /proc/self/fd/N/REST.
std::optional<std::pair<int, std::string>> ThroughCallerFd(const std::string& path);

}  // namespace ward::supervisor
