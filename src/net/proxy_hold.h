// Internal to the egress proxy: a connection held while an approver decides on a host the
// allow list does not name (ProxyOptions::ask_host). The answer may come from any thread, at
// most once; it is carried to the loop by a post, and an answer for a hold that is over (timed
// out, cancelled, the connection gone) is dropped.
#pragma once

#include <asio/steady_timer.hpp>
#include <memory>
#include <optional>

#include "net/proxy.h"
#include "net/proxy_io.h"

namespace ward::net::internal {

class HostHold {
 public:
  enum class Outcome { kAllowed, kDenied, kTimeout, kCancelled };

  explicit HostHold(const asio::any_io_executor& ex) : timer_(ex) {}
  // Calls `ask` (here, on the loop thread) and waits for its answer until `deadline`. A hook
  // that throws counts as a denial.
  static asio::awaitable<Outcome> Run(std::shared_ptr<HostHold> self, const AskHostFn& ask,
                                      HostQuestion question, Clock::time_point deadline);
  // Ends the wait now (the client left, the proxy stops). Idempotent; on the loop thread.
  void Cancel();
  bool over() const { return over_; }

 private:
  asio::steady_timer timer_;
  std::optional<bool> answer_;
  bool cancelled_ = false;
  bool over_ = false;  // Run returned: later answers are ignored
};

// Whether the peer of a connected socket has gone (EOF, reset, or a hang-up after bytes it sent
// that nobody read yet). Never reads.
bool PeerGone(int fd);

}  // namespace ward::net::internal
