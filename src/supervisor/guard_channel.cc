#include "supervisor/guard_channel.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace ward::supervisor {
namespace {

bool Send(int sock, const enforce::GuardRequest& req, std::initializer_list<int> fds) {
  struct iovec iov = {const_cast<enforce::GuardRequest*>(&req), sizeof req};
  alignas(struct cmsghdr) char cbuf[CMSG_SPACE(enforce::kGuardMaxFds * sizeof(int))] = {};
  struct msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (fds.size() > 0) {
    mh.msg_control = cbuf;
    mh.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
    struct cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.begin(), fds.size() * sizeof(int));
  }
  ssize_t n;
  do {
    n = sendmsg(sock, &mh, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof req);
}

// 1 with the reply, 0 when the agent is gone or the run ends.
int Receive(int sock, int wake, enforce::GuardReply* reply, UniqueFd* out) {
  while (true) {
    struct pollfd p[2] = {{sock, POLLIN, 0}, {wake, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 0;
    }
    if (p[1].revents) return 0;
    if (p[0].revents) break;
  }
  struct iovec iov = {reply, sizeof *reply};
  alignas(struct cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
  struct msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cbuf;
  mh.msg_controllen = sizeof cbuf;
  ssize_t n;
  do {
    n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&mh); n > 0 && c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
      out->reset(fd);
    }
  }
  if (n != static_cast<ssize_t>(sizeof *reply) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
    out->reset();
    return 0;
  }
  return 1;
}

}  // namespace

int GuardChannel::Call(const enforce::GuardRequest& req, std::initializer_list<int> fds,
                       UniqueFd* out) {
  out->reset();
  enforce::GuardReply reply;
  if (lost_ || !Send(sock_.get(), req, fds) || Receive(sock_.get(), wake_, &reply, out) != 1) {
    lost_ = true;
    out->reset();
    return -EACCES;
  }
  if (reply.result > 0 || reply.result < -4095) return -EPROTO;
  return reply.result;
}

}  // namespace ward::supervisor
