#include "enforce/guard_agent.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "common/linux.h"
#include "common/unix_socket.h"

namespace ward::enforce {
namespace {

bool Terminated(const char* s, size_t cap) { return std::memchr(s, '\0', cap) != nullptr; }

// One component: not empty, no '/', not "..". "." names the directory itself (a creation there
// fails as the kernel says: EEXIST, EISDIR).
bool IsComponent(const char* s) {
  return s[0] != '\0' && std::strchr(s, '/') == nullptr && std::strcmp(s, "..") != 0;
}

int Fail() { return -errno; }

int DoOpen(const GuardRequest& r, int dir, int* out) {
  // The guard followed a final symlink itself and checked where it led: one planted since then
  // is refused (ELOOP), not followed. Never a controlling terminal for this process.
  const int flags = (r.flags & ~O_CLOEXEC) | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC;
  int fd = openat(dir, r.name, flags, static_cast<mode_t>(r.mode));
  if (fd < 0) return Fail();
  *out = fd;
  return 0;
}

// A chmod on the file `fd` is. Through fchmodat2's AT_EMPTY_PATH an O_PATH descriptor works
// too; before Linux 6.6, through this process's own /proc/self/fd link to it, which names
// exactly that file.
int DoChmod(const GuardRequest& r, int fd) {
  const mode_t mode = static_cast<mode_t>(r.mode);
  if (r.flags == 0) return fchmod(fd, mode) == 0 ? 0 : Fail();
  if (syscall(SYS_fchmodat2, fd, "", mode, AT_EMPTY_PATH) == 0) return 0;
  if (errno != ENOSYS) return Fail();
  char link[32];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  return fchmodat(AT_FDCWD, link, mode, 0) == 0 ? 0 : Fail();
}

int DoMemfd(const GuardRequest& r, int* out) {
  int fd = static_cast<int>(syscall(SYS_memfd_create, r.name, static_cast<unsigned>(r.flags)));
  if (fd < 0) return Fail();
  *out = fd;
  return 0;
}

int Perform(const GuardRequest& request, const int* fds, int* out) {
  GuardRequest r = request;
  if (r.op != GuardOp::kLink && r.op != GuardOp::kRename && r.op != GuardOp::kMemfd) {
    r.mode &= ~kPrivilegeModeBits;
  }
  switch (r.op) {
    case GuardOp::kOpen:
      return DoOpen(r, fds[0], out);
    case GuardOp::kMkdir:
      return mkdirat(fds[0], r.name, static_cast<mode_t>(r.mode)) == 0 ? 0 : Fail();
    case GuardOp::kMknod:
      return mknodat(fds[0], r.name, static_cast<mode_t>(r.mode), static_cast<dev_t>(r.dev)) == 0
                 ? 0
                 : Fail();
    case GuardOp::kSymlink:
      return symlinkat(r.target, fds[0], r.name) == 0 ? 0 : Fail();
    case GuardOp::kLink:
      return linkat(fds[1], r.name2, fds[0], r.name, r.flags) == 0 ? 0 : Fail();
    case GuardOp::kRename:
      return syscall(SYS_renameat2, fds[1], r.name2, fds[0], r.name,
                     static_cast<unsigned>(r.flags)) == 0
                 ? 0
                 : Fail();
    case GuardOp::kMemfd:
      return DoMemfd(r, out);
    case GuardOp::kChmod:
      return DoChmod(r, fds[0]);
  }
  return -EINVAL;
}

// One request: 1 when read (with *nfds descriptors; negative when malformed, see below), 0
// when the supervisor closed the socket.
int Receive(int sock, GuardRequest* req, int* fds, int* nfds) {
  bool truncated = false;
  const ssize_t n = RecvWithFds(sock, req, sizeof *req, fds, kGuardMaxFds, nfds, &truncated);
  if (n <= 0) return 0;
  if (n != static_cast<ssize_t>(sizeof *req) || truncated) {
    *nfds = -1 - *nfds;  // malformed: the caller closes what came and answers EPROTO
  }
  return 1;
}

void Reply(int sock, int result, int fd) {
  GuardReply reply;
  reply.result = result;
  if (SendWithFds(sock, &reply, sizeof reply, &fd, fd >= 0 ? 1 : 0) < 0) {
    _exit(0);  // the supervisor is gone
  }
}

}  // namespace

bool GuardRequestIsWellFormed(const GuardRequest& r, int nfds) {
  if (!Terminated(r.name, sizeof r.name) || !Terminated(r.name2, sizeof r.name2) ||
      !Terminated(r.target, sizeof r.target)) {
    return false;
  }
  switch (r.op) {
    case GuardOp::kOpen:
    case GuardOp::kMkdir:
    case GuardOp::kMknod:
      return nfds == 1 && IsComponent(r.name);
    case GuardOp::kSymlink:
      return nfds == 1 && IsComponent(r.name) && r.target[0] != '\0';
    case GuardOp::kLink:
      if (nfds != 2 || !IsComponent(r.name)) return false;
      return (r.flags & AT_EMPTY_PATH)
                 ? (r.name2[0] == '\0' && r.flags == AT_EMPTY_PATH)
                 : (IsComponent(r.name2) && (r.flags & ~AT_SYMLINK_FOLLOW) == 0);
    case GuardOp::kRename:
      return nfds == 2 && IsComponent(r.name) && IsComponent(r.name2);
    case GuardOp::kMemfd:
      return nfds == 0;
    case GuardOp::kChmod:
      return nfds == 1 && (r.flags == 0 || r.flags == AT_EMPTY_PATH) && (r.mode & ~07777u) == 0;
  }
  return false;
}

void GuardAgentMain(int sock) {
  prctl(PR_SET_NAME, "ward-guard", 0, 0, 0);
  // Modes arrive with the caller's umask applied.
  umask(0);
  GuardRequest req;
  int fds[kGuardMaxFds];
  int nfds = 0;
  while (Receive(sock, &req, fds, &nfds) == 1) {
    const int held = nfds < 0 ? -1 - nfds : nfds;
    int out = -1;
    const int result = nfds < 0                              ? -EPROTO
                       : GuardRequestIsWellFormed(req, nfds) ? Perform(req, fds, &out)
                                                             : -EINVAL;
    for (int i = 0; i < held; ++i) close(fds[i]);
    Reply(sock, result, out);
    if (out >= 0) close(out);
  }
  _exit(0);
}

}  // namespace ward::enforce
