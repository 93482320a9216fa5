// The creation guard's channel to the guard agent (guard_channel.h). Below Landlock ABI 6 the
// command can signal the agent: killed, every creation it would have made is refused (EACCES),
// never allowed, and the agent is not asked again.
#include "supervisor/guard_channel.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "common/unix_socket.h"

namespace ward::supervisor {
namespace {

struct Pair {
  UniqueFd guard, agent;
};

Pair MakePair() {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

TEST(GuardChannelTest, AnAgentThatAnswersIsHeard) {  // the positive control
  Pair p = MakePair();
  UniqueFd wake(eventfd(0, EFD_CLOEXEC));
  GuardChannel channel(std::move(p.guard), wake.get());
  std::thread agent([&] {
    enforce::GuardRequest req;
    int fds[2], nfds = 0;
    bool truncated = false;
    ASSERT_EQ(RecvWithFds(p.agent.get(), &req, sizeof req, fds, 2, &nfds, &truncated),
              static_cast<ssize_t>(sizeof req));
    enforce::GuardReply reply;
    reply.result = -EROFS;
    ASSERT_EQ(SendWithFds(p.agent.get(), &reply, sizeof reply, nullptr, 0),
              static_cast<ssize_t>(sizeof reply));
  });
  enforce::GuardRequest req;
  UniqueFd out;
  EXPECT_EQ(channel.Call(req, {}, &out), -EROFS);
  EXPECT_FALSE(channel.lost());
  agent.join();
}

TEST(GuardChannelTest, AKilledAgentMakesEveryLaterCreationFailClosed) {
  Pair p = MakePair();
  UniqueFd wake(eventfd(0, EFD_CLOEXEC));
  GuardChannel channel(std::move(p.guard), wake.get());
  p.agent.reset();  // what the agent's death does to its end
  enforce::GuardRequest req;
  UniqueFd out;
  EXPECT_EQ(channel.Call(req, {}, &out), -EACCES);
  EXPECT_TRUE(channel.lost());
  EXPECT_FALSE(out);
  EXPECT_EQ(channel.Call(req, {}, &out), -EACCES);  // never asked again
}

TEST(GuardChannelTest, AStoppedAgentWaitsUntilTheRunEnds) {
  Pair p = MakePair();  // the agent's end stays open and never answers
  UniqueFd wake(eventfd(0, EFD_CLOEXEC));
  GuardChannel channel(std::move(p.guard), wake.get());
  std::thread end([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    uint64_t one = 1;
    ASSERT_EQ(write(wake.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  });
  enforce::GuardRequest req;
  UniqueFd out;
  EXPECT_EQ(channel.Call(req, {}, &out), -EACCES);
  EXPECT_TRUE(channel.lost());
  end.join();
}

}  // namespace
}  // namespace ward::supervisor
