// Linux constants newer than the 6.1 uapi headers Debian 12 ships, and thin wrappers for
// syscalls glibc 2.36 does not wrap (or wraps in headers that conflict with linux/mount.h).
// Availability is always probed at run time; these only make the numbers known.
#pragma once

#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

// ---- Landlock (ABI 3..7) ----
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)  // ABI 3
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)  // ABI 5
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)  // ABI 4
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)  // ABI 6
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
#ifndef LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF
#define LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF (1U << 0)  // ABI 7
#define LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON (1U << 1)
#define LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF (1U << 2)
#endif

// ---- fchmodat2 (6.6): fchmodat with flags (AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH) ----
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

namespace ward::sys {

// The ruleset attribute as of ABI 6; the kernel accepts the size it knows.
struct LandlockRulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;  // ABI 4
  uint64_t scoped = 0;              // ABI 6
};

// LANDLOCK_RULE_NET_PORT (ABI 4).
inline constexpr int kLandlockRuleNetPort = 2;
struct __attribute__((packed)) LandlockNetPortAttr {
  uint64_t allowed_access;
  uint64_t port;
};

inline long LandlockCreateRuleset(const LandlockRulesetAttr* attr, size_t size, uint32_t flags) {
  return ::syscall(SYS_landlock_create_ruleset, attr, size, flags);
}
inline long LandlockAddRule(int ruleset_fd, int rule_type, const void* attr, uint32_t flags) {
  return ::syscall(SYS_landlock_add_rule, ruleset_fd, rule_type, attr, flags);
}
inline long LandlockRestrictSelf(int ruleset_fd, uint32_t flags) {
  return ::syscall(SYS_landlock_restrict_self, ruleset_fd, flags);
}

// ---- openat2 / mount API / pidfd / misc ----
// openat2, retried while it answers EAGAIN: with RESOLVE_BENEATH or RESOLVE_IN_ROOT, a ".." in
// the path fails with EAGAIN when any rename or mount on the system raced the lookup, which the
// kernel leaves to the caller to retry. Bounded, so a flood of renames elsewhere costs a caller
// an error, never a hang.
inline int Openat2(int dirfd, const char* path, uint64_t flags, uint64_t mode, uint64_t resolve) {
  struct open_how how = {};
  how.flags = flags;
  how.mode = mode;
  how.resolve = resolve;
  constexpr int kAttempts = 128;
  int fd = -1;
  for (int i = 0; i < kAttempts; ++i) {
    fd = static_cast<int>(::syscall(SYS_openat2, dirfd, path, &how, sizeof(how)));
    if (fd >= 0 || errno != EAGAIN) break;
  }
  return fd;
}
inline int OpenTree(int dirfd, const char* path, unsigned flags) {
  return static_cast<int>(::syscall(SYS_open_tree, dirfd, path, flags));
}
inline int MoveMount(int from_dirfd, const char* from_path, int to_dirfd, const char* to_path,
                     unsigned flags) {
  return static_cast<int>(
      ::syscall(SYS_move_mount, from_dirfd, from_path, to_dirfd, to_path, flags));
}
inline int MountSetattr(int dirfd, const char* path, unsigned flags, struct mount_attr* attr) {
  return static_cast<int>(
      ::syscall(SYS_mount_setattr, dirfd, path, flags, attr, sizeof(struct mount_attr)));
}
inline int Fsopen(const char* fsname, unsigned flags) {
  return static_cast<int>(::syscall(SYS_fsopen, fsname, flags));
}
inline int Fsconfig(int fd, unsigned cmd, const char* key, const void* value, int aux) {
  return static_cast<int>(::syscall(SYS_fsconfig, fd, cmd, key, value, aux));
}
inline int Fsmount(int fd, unsigned flags, unsigned attr_flags) {
  return static_cast<int>(::syscall(SYS_fsmount, fd, flags, attr_flags));
}
inline int PidfdOpen(pid_t pid, unsigned flags) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, flags));
}
inline int PidfdSendSignal(int pidfd, int sig, siginfo_t* info, unsigned flags) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, info, flags));
}
inline int PidfdGetfd(int pidfd, int targetfd, unsigned flags) {
  return static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, targetfd, flags));
}
inline int CloseRange(unsigned first, unsigned last, unsigned flags) {
  return static_cast<int>(::syscall(SYS_close_range, first, last, flags));
}
inline long Clone3(struct clone_args* args) {
  return ::syscall(SYS_clone3, args, sizeof(struct clone_args));
}
inline int PivotRoot(const char* new_root, const char* put_old) {
  return static_cast<int>(::syscall(SYS_pivot_root, new_root, put_old));
}
inline int Seccomp(unsigned op, unsigned flags, void* args) {
  return static_cast<int>(::syscall(SYS_seccomp, op, flags, args));
}
// The capabilities of the calling thread (capset(2) acts on one thread; threads it creates
// later inherit its sets). DropThreadCapabilities empties every set for good;
// SetEffectiveCapabilities(false) empties only the effective one, so that nothing the thread
// does uses a capability until SetEffectiveCapabilities(true) raises the permitted ones again.
// For the supervisor's threads that act on the sandbox's input: as root they then do nothing on
// the host that the sandbox could not. 0 or -errno.
struct CapHeader {
  uint32_t version = 0x20080522;  // _LINUX_CAPABILITY_VERSION_3
  int pid = 0;
};
struct CapData {
  uint32_t effective, permitted, inheritable;
};
inline int DropThreadCapabilities() {
  CapHeader hdr;
  CapData data[2] = {};
  return ::syscall(SYS_capset, &hdr, data) == 0 ? 0 : -errno;
}
inline int SetEffectiveCapabilities(bool raise) {
  CapHeader hdr;
  CapData data[2] = {};
  if (::syscall(SYS_capget, &hdr, data) != 0) return -errno;
  for (CapData& d : data) d.effective = raise ? d.permitted : 0;
  return ::syscall(SYS_capset, &hdr, data) == 0 ? 0 : -errno;
}
// The permitted capabilities made effective for one narrow step that reads what the kernel says
// about another process (a socket peer's namespaces: /proc/<pid>/ns is checked against the
// reader's effective set), then the effective set as it was.
class ScopedEffectiveCapabilities {
 public:
  ScopedEffectiveCapabilities() {
    if (::syscall(SYS_capget, &hdr_, saved_) == 0) {
      CapData raised[2] = {saved_[0], saved_[1]};
      for (CapData& d : raised) d.effective = d.permitted;
      changed_ = ::syscall(SYS_capset, &hdr_, raised) == 0;
    }
  }
  ~ScopedEffectiveCapabilities() {
    if (changed_) ::syscall(SYS_capset, &hdr_, saved_);
  }
  ScopedEffectiveCapabilities(const ScopedEffectiveCapabilities&) = delete;
  ScopedEffectiveCapabilities& operator=(const ScopedEffectiveCapabilities&) = delete;

 private:
  CapHeader hdr_;
  CapData saved_[2] = {};
  bool changed_ = false;
};

}  // namespace ward::sys
