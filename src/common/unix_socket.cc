#include "common/unix_socket.h"

#include <errno.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace ward {

Result<UniqueFd> ConnectUnix(const std::string& path) {
  sockaddr_un addr = {};
  if (path.size() >= sizeof addr.sun_path) return InvalidArgument("socket path too long: " + path);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return Errno("socket");
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  while (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno == EINTR) continue;
    return Errno("connecting to " + path);
  }
  return fd;
}

Result<UnixListener> ListenPrivateUnix(const std::string& path, int backlog) {
  sockaddr_un addr = {};
  if (path.empty() || path[0] != '/' || path.size() >= sizeof addr.sun_path) {
    return InvalidArgument("socket path is not absolute or too long: " + path);
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return InvalidArgument(path + " exists and is not a socket");
    if (ConnectUnix(path).ok()) {
      return Error(Code::kFailedPrecondition, "a server is already listening on " + path);
    }
    if (::unlink(path.c_str()) != 0) return Errno("removing the stale socket " + path);
  }
  UnixListener l;
  l.fd = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!l.fd) return Errno("socket");
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
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

}  // namespace ward
