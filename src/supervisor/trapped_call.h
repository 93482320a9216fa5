// A syscall the sandbox's seccomp filter trapped for the creation guard, decoded from its
// arguments by one table (which argument is the dirfd, the path, the flags ...), with its path
// strings copied out of the caller's memory once.
#pragma once

#include <linux/seccomp.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace ward::supervisor {

// kChmod: chmod, fchmodat, fchmodat2 (a path from a dirfd); kFchmod: fchmod (`dirfd` is the
// descriptor itself). The filter traps them only with a set-id bit in the mode.
enum class TrappedOp : uint8_t {
  kOpen,
  kMkdir,
  kMknod,
  kSymlink,
  kLink,
  kRename,
  kMemfd,
  kChmod,
  kFchmod
};

struct TrappedCall {
  TrappedOp op = TrappedOp::kOpen;
  const char* syscall = "?";  // its name, for the audit trail
  int dirfd = -100;           // AT_FDCWD: the directory `path` is relative to
  int dirfd2 = -100;          // for `path2` (link, rename)
  uint64_t path_addr = 0;     // the entry created (open, mkdir, ...; a memfd's name)
  uint64_t path2_addr = 0;    // the existing entry (link, rename) or a symlink's text
  uint64_t flags = 0, mode = 0, dev = 0;
  std::string path, path2;  // filled by ReadTrappedStrings
};

// False when the syscall is not one the guard handles (the caller answers ENOSYS: openat2 keeps
// its flags behind a pointer, and programs fall back to openat).
bool DecodeTrappedCall(const struct seccomp_notif& req, TrappedCall* call);

// Copies the call's strings out of the caller's memory. 0 or -errno.
int ReadTrappedStrings(pid_t tid, TrappedCall* call);

// Reads a NUL-terminated string of at most PATH_MAX bytes from another process's memory, page
// by page (a string may end just before an unmapped page). 0 or -errno.
int ReadRemoteString(pid_t pid, uint64_t addr, std::string* out);

}  // namespace ward::supervisor
