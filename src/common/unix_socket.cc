#include "common/unix_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace ward {

namespace {

// The address of the socket at `path`. A path longer than sun_path (a container engine's state
// root with a 64-character id in it, say) is reached through its directory: `dir` holds that
// directory open (O_PATH) and the address is /proc/self/fd/N/NAME, valid while it stays open.
Result<sockaddr_un> SocketAddress(const std::string& path, UniqueFd* dir) {
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::string reachable = path;
  if (path.size() >= sizeof addr.sun_path) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos || path.size() - slash - 1 >= sizeof addr.sun_path - 32) {
      return InvalidArgument("socket path too long: " + path);
    }
    dir->reset(::open(slash == 0 ? "/" : path.substr(0, slash).c_str(),
                      O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!*dir) return Errno("opening the directory of " + path);
    reachable = "/proc/self/fd/" + std::to_string(dir->get()) + path.substr(slash);
  }
  std::memcpy(addr.sun_path, reachable.c_str(), reachable.size() + 1);
  return addr;
}

}  // namespace

Result<UniqueFd> ConnectUnix(const std::string& path, int type) {
  UniqueFd dir;
  WARD_ASSIGN_OR_RETURN(sockaddr_un addr, SocketAddress(path, &dir));
  UniqueFd fd(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
  if (!fd) return Errno("socket");
  while (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno == EINTR) continue;
    return Errno("connecting to " + path);
  }
  return fd;
}

Result<UnixListener> ListenPrivateUnix(const std::string& path, int backlog, int type) {
  if (path.empty() || path[0] != '/') {
    return InvalidArgument("socket path is not absolute: " + path);
  }
  UniqueFd dir;
  WARD_ASSIGN_OR_RETURN(sockaddr_un addr, SocketAddress(path, &dir));
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return InvalidArgument(path + " exists and is not a socket");
    if (ConnectUnix(path, type).ok()) {
      return Error(Code::kFailedPrecondition, "a server is already listening on " + path);
    }
    if (::unlink(path.c_str()) != 0) return Errno("removing the stale socket " + path);
  }
  UnixListener l;
  l.fd = UniqueFd(::socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!l.fd) return Errno("socket");
  // 0600 from the start: no window in which another uid could connect.
  mode_t old = ::umask(0177);
  int rc = ::bind(l.fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  int err = errno;
  ::umask(old);
  if (rc != 0) return ErrnoError("binding " + path, err);
  if (::listen(l.fd.get(), backlog) != 0) {
    Status s = Errno("listening on " + path);
    ::unlink(path.c_str());
    return s;
  }
  if (::lstat(path.c_str(), &st) == 0) l.ino = st.st_ino;
  return l;
}

std::optional<struct ucred> PeerCredentials(int fd) {
  struct ucred cred = {};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
  return cred;
}

ssize_t SendWithFds(int sock, const void* data, size_t len, const int* fds, size_t nfds) {
  constexpr size_t kMaxFds = 8;
  if (nfds > kMaxFds) return -EINVAL;
  struct iovec iov = {const_cast<void*>(data), len};
  struct msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(struct cmsghdr) char cbuf[CMSG_SPACE(kMaxFds * sizeof(int))];
  if (nfds > 0) {
    std::memset(cbuf, 0, sizeof cbuf);
    mh.msg_control = cbuf;
    mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
    struct cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
  }
  ssize_t n;
  do {
    n = sendmsg(sock, &mh, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n < 0 ? -errno : n;
}

ssize_t RecvWithFds(int sock, void* data, size_t len, int* fds, int max_fds, int* nfds,
                    bool* truncated, int flags) {
  constexpr int kMaxFds = 8;
  struct iovec iov = {data, len};
  struct msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(struct cmsghdr) char cbuf[CMSG_SPACE(kMaxFds * sizeof(int))];
  mh.msg_control = cbuf;
  mh.msg_controllen = sizeof cbuf;
  *nfds = 0;
  *truncated = false;
  ssize_t n;
  do {
    n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (*nfds < max_fds) {
        fds[(*nfds)++] = fd;
      } else {
        close(fd);
        *truncated = true;
      }
    }
  }
  if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) *truncated = true;
  return n;
}

}  // namespace ward
