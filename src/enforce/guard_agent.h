// The guard agent: the process that performs the creation guard's operations, inside the
// sandbox. The guard (src/supervisor/notifier.cc) decides from outside whether a trapped
// creation may happen and in which directory; the agent then does it, as a process of the
// sandbox: in its mount namespace and root, under sandbox init's Landlock domain (the command's
// own rules) and seccomp filter, with no capabilities, non-dumpable. So whatever the guard is
// asked to do on the sandbox's behalf is done with at most the sandbox's own authority, and
// what the kernel checks (read-only mounts, mount points, Landlock, device nodes, permissions)
// it checks for the sandbox.
//
// Sandbox init forks the agent the first time the guard needs it (MsgType::kGuardAgent), so a
// run that creates nothing pays nothing. The guard and the agent talk over a SOCK_SEQPACKET
// socketpair the supervisor makes: one GuardRequest per packet with its directory descriptors
// attached, one GuardReply back (with the new descriptor for an open or a memfd).
#pragma once

#include <linux/limits.h>

#include <cstdint>

namespace ward::enforce {

enum class GuardOp : uint32_t {
  kOpen = 1,  // openat(dir, name, flags | O_NOFOLLOW | O_NOCTTY, mode): the new fd comes back
  kMkdir,     // mkdirat(dir, name, mode)
  kMknod,     // mknodat(dir, name, mode, dev)
  kSymlink,   // symlinkat(target, dir, name)
  kLink,      // linkat(dir2, name2, dir, name, flags); AT_EMPTY_PATH: dir2 is the file itself
  kRename,    // renameat2(dir2, name2, dir, name, flags)
  kMemfd,     // memfd_create(name, flags): the new fd comes back
  // The mode of the file the descriptor is: fchmod(fd, mode) when flags is 0 (the caller's own
  // fchmod), else (AT_EMPTY_PATH: an O_PATH descriptor the guard resolved, or the caller's own
  // behind a path or a /proc/self/fd link) fchmodat2(fd, "", mode, AT_EMPTY_PATH).
  kChmod,
};

// The mode bits the agent never sets (S_ISUID, S_ISGID): whatever it is asked for, it makes and
// changes files without them. No privilege bits leave a run.
inline constexpr uint32_t kPrivilegeModeBits = 06000;

struct GuardRequest {
  GuardOp op = GuardOp::kOpen;
  int32_t flags = 0;  // open flags, linkat/renameat2 flags, memfd flags or kChmod's
  uint32_t mode = 0;  // with the caller's umask already applied (not for kChmod)
  uint64_t dev = 0;   // kMknod
  // The entry in the first directory: one path component (".", never ".." or a '/'); for a
  // memfd, its name.
  char name[NAME_MAX + 1] = {};
  // kLink, kRename: the existing entry, in the second directory ("" with AT_EMPTY_PATH).
  char name2[NAME_MAX + 1] = {};
  char target[PATH_MAX] = {};  // kSymlink: the link's text
};

struct GuardReply {
  int32_t result = 0;  // 0, or -errno
};

// Descriptors attached to a request, in this order: the directory that holds `name` (an O_PATH
// directory of the sandbox's view; none for kMemfd; for kChmod the file itself), then for kLink
// and kRename the directory that holds `name2` (for a link with AT_EMPTY_PATH, the file to
// link).
inline constexpr int kGuardMaxFds = 2;

// The agent's whole life: serves requests from `sock` until the supervisor closes it. Forked
// by sandbox init after init confined itself; never returns.
[[noreturn]] void GuardAgentMain(int sock);

// The checks the agent applies to a request before acting, exposed for tests: every string is
// terminated, names are single components, the descriptor count fits the operation.
bool GuardRequestIsWellFormed(const GuardRequest& req, int nfds);

}  // namespace ward::enforce
