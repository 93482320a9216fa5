#include "supervisor/guard_channel.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "common/unix_socket.h"

namespace ward::supervisor {
namespace {

bool Send(int sock, const enforce::GuardRequest& req, std::initializer_list<int> fds) {
  return SendWithFds(sock, &req, sizeof req, fds.begin(), fds.size()) ==
         static_cast<ssize_t>(sizeof req);
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
  int fd = -1, nfds = 0;
  bool truncated = false;
  const ssize_t n = RecvWithFds(sock, reply, sizeof *reply, &fd, 1, &nfds, &truncated);
  out->reset(nfds == 1 ? fd : -1);
  if (n != static_cast<ssize_t>(sizeof *reply) || truncated) {
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
