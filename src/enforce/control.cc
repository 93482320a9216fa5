#include "enforce/control.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "common/unix_socket.h"

namespace ward::enforce {

int SendControl(int sock, const ControlMsg& msg, int fd) {
  const ssize_t n = SendWithFds(sock, &msg, sizeof msg, &fd, fd >= 0 ? 1 : 0);
  if (n == static_cast<ssize_t>(sizeof msg)) return 0;
  return n < 0 ? static_cast<int>(n) : -EIO;
}

int RecvControl(int sock, ControlMsg* msg, UniqueFd* fd, int flags) {
  int got = -1, nfds = 0;
  bool truncated = false;
  const ssize_t n = RecvWithFds(sock, msg, sizeof *msg, &got, 1, &nfds, &truncated, flags);
  if (fd) fd->reset(nfds == 1 ? got : -1);
  if (nfds == 1 && !fd) close(got);
  if (n < 0) return static_cast<int>(n);
  if (n == 0) return 0;
  if (n != static_cast<ssize_t>(sizeof *msg) || truncated) return -EPROTO;
  return 1;
}

}  // namespace ward::enforce
