#include "supervisor/trapped_call.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "common/linux.h"

namespace ward::supervisor {
namespace {

// Where each trapped syscall keeps its arguments: the index of each, -1 when it has none.
struct CallShape {
  long nr;
  TrappedOp op;
  const char* name;
  int8_t dirfd, path, dirfd2, path2, flags, mode, dev;
  uint64_t fixed_flags;  // creat: its flags are implied
};

constexpr CallShape kShapes[] = {
#ifdef __NR_open
    {__NR_open, TrappedOp::kOpen, "open", -1, 0, -1, -1, 1, 2, -1, 0},
    {__NR_creat, TrappedOp::kOpen, "creat", -1, 0, -1, -1, -1, 1, -1, O_CREAT | O_WRONLY | O_TRUNC},
    {__NR_mkdir, TrappedOp::kMkdir, "mkdir", -1, 0, -1, -1, -1, 1, -1, 0},
    {__NR_mknod, TrappedOp::kMknod, "mknod", -1, 0, -1, -1, -1, 1, 2, 0},
    {__NR_symlink, TrappedOp::kSymlink, "symlink", -1, 1, -1, 0, -1, -1, -1, 0},
    {__NR_link, TrappedOp::kLink, "link", -1, 1, -1, 0, -1, -1, -1, 0},
    {__NR_rename, TrappedOp::kRename, "rename", -1, 1, -1, 0, -1, -1, -1, 0},
    {__NR_chmod, TrappedOp::kChmod, "chmod", -1, 0, -1, -1, -1, 1, -1, 0},
#endif
    {__NR_openat, TrappedOp::kOpen, "openat", 0, 1, -1, -1, 2, 3, -1, 0},
    {__NR_mkdirat, TrappedOp::kMkdir, "mkdirat", 0, 1, -1, -1, -1, 2, -1, 0},
    {__NR_mknodat, TrappedOp::kMknod, "mknodat", 0, 1, -1, -1, -1, 2, 3, 0},
    {__NR_symlinkat, TrappedOp::kSymlink, "symlinkat", 1, 2, -1, 0, -1, -1, -1, 0},
    {__NR_linkat, TrappedOp::kLink, "linkat", 2, 3, 0, 1, 4, -1, -1, 0},
    {__NR_renameat, TrappedOp::kRename, "renameat", 2, 3, 0, 1, -1, -1, -1, 0},
    {__NR_renameat2, TrappedOp::kRename, "renameat2", 2, 3, 0, 1, 4, -1, -1, 0},
    {__NR_memfd_create, TrappedOp::kMemfd, "memfd_create", -1, 0, -1, -1, 1, -1, -1, 0},
    {__NR_fchmod, TrappedOp::kFchmod, "fchmod", 0, -1, -1, -1, -1, 1, -1, 0},
    {__NR_fchmodat, TrappedOp::kChmod, "fchmodat", 0, 1, -1, -1, -1, 2, -1, 0},
    {SYS_fchmodat2, TrappedOp::kChmod, "fchmodat2", 0, 1, -1, -1, 3, 2, -1, 0},
};

}  // namespace

bool DecodeTrappedCall(const struct seccomp_notif& req, TrappedCall* call) {
  const CallShape* shape = nullptr;
  for (const CallShape& s : kShapes) {
    if (s.nr == req.data.nr) shape = &s;
  }
  if (!shape) return false;
  const __u64* a = req.data.args;
  call->op = shape->op;
  call->syscall = shape->name;
  if (shape->dirfd >= 0) call->dirfd = static_cast<int>(a[shape->dirfd]);
  if (shape->dirfd2 >= 0) call->dirfd2 = static_cast<int>(a[shape->dirfd2]);
  if (shape->path >= 0) call->path_addr = a[shape->path];
  if (shape->path2 >= 0) call->path2_addr = a[shape->path2];
  call->flags = shape->flags >= 0 ? a[shape->flags] : shape->fixed_flags;
  if (shape->mode >= 0) call->mode = a[shape->mode];
  if (shape->dev >= 0) call->dev = a[shape->dev];
  return true;
}

int ReadTrappedStrings(pid_t tid, TrappedCall* call) {
  if (call->op == TrappedOp::kFchmod) return 0;  // a descriptor, no path
  if (int rc = ReadRemoteString(tid, call->path_addr, &call->path); rc != 0) return rc;
  if (call->path2_addr != 0 || call->op == TrappedOp::kLink || call->op == TrappedOp::kRename ||
      call->op == TrappedOp::kSymlink) {
    return ReadRemoteString(tid, call->path2_addr, &call->path2);
  }
  return 0;
}

int ReadRemoteString(pid_t pid, uint64_t addr, std::string* out) {
  out->clear();
  if (addr == 0) return -EFAULT;
  char buf[4096];
  // Most paths are short: read 256 bytes first (never past the page), the rest a page at a time.
  size_t want = 256;
  while (out->size() < PATH_MAX) {
    size_t page_left = 4096 - (addr % 4096);
    size_t len = std::min(page_left, want);
    want = sizeof buf;
    struct iovec local = {buf, len};
    struct iovec remote = {reinterpret_cast<void*>(addr), len};
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) return n < 0 ? -errno : -EFAULT;
    void* nul = std::memchr(buf, '\0', static_cast<size_t>(n));
    if (nul) {
      out->append(buf, static_cast<size_t>(static_cast<char*>(nul) - buf));
      return 0;
    }
    out->append(buf, static_cast<size_t>(n));
    addr += static_cast<uint64_t>(n);
  }
  return -ENAMETOOLONG;
}

}  // namespace ward::supervisor
