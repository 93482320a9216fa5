#include "enforce/control.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace ward::enforce {

int SendControl(int sock, const ControlMsg& msg, int fd) {
  struct iovec iov = {const_cast<ControlMsg*>(&msg), sizeof msg};
  struct msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(struct cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
  if (fd >= 0) {
    std::memset(cbuf, 0, sizeof cbuf);
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof cbuf;
    struct cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  while (true) {
    ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(sizeof msg)) return 0;
    if (n < 0 && errno == EINTR) continue;
    return n < 0 ? -errno : -EIO;
  }
}

int RecvControl(int sock, ControlMsg* msg, UniqueFd* fd, int flags) {
  struct iovec iov = {msg, sizeof *msg};
  struct msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(struct cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
  mh.msg_control = cbuf;
  mh.msg_controllen = sizeof cbuf;
  if (fd) fd->reset();
  ssize_t n;
  do {
    n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  if (n == 0) return 0;
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int got;
      std::memcpy(&got, CMSG_DATA(c), sizeof(int));
      if (fd) {
        fd->reset(got);
      } else {
        close(got);
      }
    }
  }
  if (n != static_cast<ssize_t>(sizeof *msg) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
    return -EPROTO;
  }
  return 1;
}

}  // namespace ward::enforce
