// The creation guard's end of its channel to the guard agent inside the sandbox
// (enforce/guard_agent.h): one request out with its directory descriptors, one reply back.
#pragma once

#include <initializer_list>

#include "common/unique_fd.h"
#include "enforce/guard_agent.h"

namespace ward::supervisor {

class GuardChannel {
 public:
  // `sock`: the supervisor's end of the socketpair; `wake`: an eventfd that ends a wait when
  // the run is torn down.
  GuardChannel(UniqueFd sock, int wake) : sock_(std::move(sock)), wake_(wake) {}

  // Sends `req` with `fds` attached and waits for the agent's answer. Returns the agent's result
  // (0 or -errno); an fd that came back is in *out. -EACCES once the agent is gone (it never
  // restarts: every later request fails closed) or the run is ending.
  int Call(const enforce::GuardRequest& req, std::initializer_list<int> fds, UniqueFd* out);
  bool lost() const { return lost_; }

 private:
  UniqueFd sock_;
  int wake_;
  bool lost_ = false;
};

}  // namespace ward::supervisor
