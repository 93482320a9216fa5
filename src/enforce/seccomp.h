// The seccomp layer: a deny list over the kernel's attack surface, compiled with libseccomp to
// classic BPF when ward is built (seccomp_compile.h, one program per SeccompSpec), checked by the
// parent at each run and loaded last in the child, right before execve.
//
// Verdicts (default ALLOW; the other layers decide what files and hosts exist):
//   KILL_PROCESS  any ABI but the native one (i386 via int 0x80) and x32 syscall numbers
//   EPERM         the dangerous syscalls listed in seccomp_compile.cc, clone with namespace flags,
//                 personality other than the harmless values, ioctl TIOCSTI/TIOCLINUX/...
//   ENOSYS        clone3 (its flags are behind a pointer; libc falls back to clone), memfd_secret
//   EAFNOSUPPORT  socket/socketpair families other than AF_UNIX, AF_INET, AF_INET6
//   EPERM         execveat of a descriptor (AT_EMPTY_PATH), landlock_restrict_self with a log flag
//   ENOSYS        openat2 (its flags and mode are behind a pointer) unless every open is trapped
//   EOPNOTSUPP    setxattr, lsetxattr, fsetxattr, setxattrat (no file capabilities)
//   USER_NOTIF    memfd_create (made sealed against exec), a mode with S_ISUID or S_ISGID
//                 (performed without them), and the creation/open traps of SeccompSpec,
//                 answered by the supervisor
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ward::enforce {

// The errno for a socket family outside the allow list: what a kernel without that family
// says, so programs that probe for netlink, vsock, ... take their "not available" path.
inline constexpr int kSeccompSocketFamilyErrno = EAFNOSUPPORT;

// The return value of a denial with `err`.
inline constexpr uint32_t SeccompRetErrno(int err) {
  return SECCOMP_RET_ERRNO | (static_cast<uint32_t>(err) & SECCOMP_RET_DATA);
}

struct SeccompSpec {  // immutable input of this enforcer only
  // Lets ptrace, process_vm_readv and process_vm_writev through (the same kernel access check).
  // Never true in shipped profiles; for the positive-control tests.
  bool allow_ptrace = false;
  // Trap the syscalls that CREATE or RENAME directory entries with SECCOMP_RET_USER_NOTIF so the
  // supervisor can enforce "protected paths are not creatable" (it performs the operation itself
  // and answers; it never lets a checked call CONTINUE): open/openat/creat with O_CREAT in the
  // flags argument, mkdir, mkdirat, mknod, mknodat, symlink, symlinkat, link, linkat, rename,
  // renameat, renameat2. (openat2, whose flags are behind a pointer, answers ENOSYS.)
  bool notify_creations = false;
  // Trap every open/openat/openat2/creat (for the approvals issue; supersedes notify_creations
  // for the open family).
  bool notify_opens = false;
  // No privilege bits leave a run: a call that would set S_ISUID or S_ISGID (chmod, fchmod,
  // fchmodat, fchmodat2; open/openat/creat creating a file, O_TMPFILE included; mknod, mknodat)
  // is trapped, and the creation guard performs it without those bits. The filter compares the
  // mode argument with a mask, so no other mode is trapped.
  //
  // The kernel has no SECCOMP_RET_USER_NOTIF (gVisor, Linux < 5.5): nothing is trapped; those
  // set-id calls fail with EPERM, and memfd_create, which otherwise goes to the guard agent to
  // be sealed against execution, answers ENOSYS (programs then fall back to files).
  bool no_user_notif = false;

  bool operator==(const SeccompSpec&) const = default;
};

struct SeccompProgram {
  std::vector<struct sock_filter> insns;
};

// Parent side: the filter the build compiled for `spec`, checked (kernel-style validation plus
// a few verdicts that must hold), so a broken build fails here, not in the child.
Result<SeccompProgram> PrepareSeccomp(const SeccompSpec& spec);

// True when the program has a SECCOMP_RET_USER_NOTIF return (it then needs a listener).
bool SeccompNeedsListener(const SeccompProgram& program);

// Child side, async-signal-safe, no allocation. The caller must have set no_new_privs. When
// the program has USER_NOTIF rules it is loaded with SECCOMP_FILTER_FLAG_NEW_LISTENER (plus
// WAIT_KILLABLE_RECV when the kernel has it, so a signal cannot restart a call the supervisor
// already performed) and the listener fd (O_CLOEXEC; the caller hands it to the supervisor
// before execve) is stored in *listener; else *listener = -1. Returns 0 or -errno.
int ApplySeccomp(const SeccompProgram& program, int* listener);

// Child side, async-signal-safe: loads a further (checked) filter on top of those loaded, with
// no flags. Returns 0 or -errno.
int ApplyFurtherSeccomp(const std::vector<struct sock_filter>& insns);

// Pure: runs the classic-BPF program on a seccomp_data, returns the SECCOMP_RET_* value.
// A program the kernel would refuse to load yields SECCOMP_RET_KILL_PROCESS.
uint32_t EvaluateSeccomp(const SeccompProgram& program, const struct seccomp_data& data);

// For `ward explain`: over all native syscall numbers with zeroed args, how many are allowed,
// denied (errno), trapped (user notif), killed; plus the names of the denied/trapped ones.
// TRAP counts as killed (SIGSYS), TRACE as denied (no tracer: ENOSYS), LOG as allowed. With
// zeroed args socket and socketpair count as denied (AF_UNSPEC is not an allowed family).
struct SeccompSummary {
  int allowed = 0, denied = 0, notified = 0, killed = 0;
  std::vector<std::string> denied_names, notified_names;
};
SeccompSummary SummarizeSeccomp(const SeccompProgram& program);

}  // namespace ward::enforce
