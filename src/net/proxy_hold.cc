#include "net/proxy_hold.h"

#include <poll.h>
#include <sys/socket.h>

#include <asio/post.hpp>
#include <atomic>
#include <cerrno>
#include <exception>

namespace ward::net::internal {

asio::awaitable<HostHold::Outcome> HostHold::Run(std::shared_ptr<HostHold> self,
                                                 const AskHostFn& ask, HostQuestion question,
                                                 Clock::time_point deadline) {
  if (self->cancelled_) {
    self->over_ = true;
    co_return Outcome::kCancelled;
  }
  self->timer_.expires_at(deadline);
  std::weak_ptr<HostHold> weak = self;
  auto answered = std::make_shared<std::atomic<bool>>(false);
  HostAnswerFn done = [weak, answered, ex = self->timer_.get_executor()](bool allow) {
    if (answered->exchange(true)) return;  // at most once, whichever thread calls
    asio::post(ex, [weak, allow] {
      auto h = weak.lock();
      if (!h || h->over_ || h->cancelled_ || h->answer_) return;
      h->answer_ = allow;
      h->timer_.cancel();
    });
  };
  try {
    ask(question, std::move(done));
  } catch (...) {
    // The hook belongs to the supervisor and must not throw; if it does, nobody approved.
    self->over_ = true;
    co_return Outcome::kDenied;
  }
  // Answers are posted, so none can have arrived yet; wait for one, the deadline or Cancel().
  if (!self->answer_ && !self->cancelled_) {
    asio::error_code ec;
    co_await self->timer_.async_wait(Await(ec));
  }
  self->over_ = true;
  if (self->answer_) co_return *self->answer_ ? Outcome::kAllowed : Outcome::kDenied;
  if (self->cancelled_) co_return Outcome::kCancelled;
  co_return Outcome::kTimeout;
}

void HostHold::Cancel() {
  if (over_) return;
  cancelled_ = true;
  timer_.cancel();
}

bool PeerGone(int fd) {
  char c;
  ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  // Unread bytes hide an end of stream from a peek: ask the socket for a hang-up instead.
  struct pollfd p = {fd, POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace ward::net::internal
