// The port forwarder (connections into a container from its pod): bytes pass both ways, an end
// of stream passes on while the other direction goes on, an exposed port nothing listens on
// inside is closed and said, connections over the caps (all, one address's) are closed, and the
// records stop at their bound with the rest counted. "Inside" is this test's
// own loopback here: the namespace is the caller's affair (supervisor/container_ports.cc).
#include "net/port_forward.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <future>
#include <thread>

#include "proxy_test_util.h"

namespace ward::net {
namespace {

using testing::ConnectTo;
using testing::ListenTcp;
using testing::RecvExactly;
using testing::SendAll;
using testing::WaitClosed;

UniqueFd AcceptWithin(int listener, int timeout_ms = 5000) {
  struct pollfd p = {listener, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) != 1) return UniqueFd();
  return UniqueFd(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
}

class PortForwardTest : public ::testing::Test {
 protected:
  // A forwarder of `inside_port` on a listener of its own; the loop runs on a thread.
  uint16_t Start(uint16_t inside_port, size_t max_connections = 256, size_t max_per_peer = 64,
                 uint64_t max_records = 1000) {
    PortForwardOptions o;
    o.max_connections = max_connections;
    o.max_per_peer = max_per_peer;
    o.max_records = max_records;
    o.socket_inside = [](int family) -> Result<UniqueFd> {
      UniqueFd fd(socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      if (!fd) return Errno("socket");
      return fd;
    };
    forwarder_ = std::make_unique<PortForwarder>(ctx_, &events_, std::move(o));
    testing::Listener outside = ListenTcp();
    EXPECT_TRUE(forwarder_->Serve(inside_port, std::move(outside.fd)).ok());
    loop_ = std::thread([this] { ctx_.run(); });
    return outside.port;
  }
  void TearDown() override {
    if (loop_.joinable()) {
      std::promise<void> stopped;
      asio::post(ctx_, [&] {
        forwarder_->Stop();
        stopped.set_value();
      });
      stopped.get_future().wait();
      work_.reset();
      ctx_.stop();
      loop_.join();
    }
    forwarder_.reset();
  }
  // The net.inbound events so far, waiting up to 5 s for `n` of them.
  std::vector<Event> Inbound(size_t n) {
    std::vector<Event> out;
    for (int i = 0; i < 500; ++i) {
      out.clear();
      for (const Event& e : events_.events()) {
        if (e.type == "net.inbound") out.push_back(e);
      }
      if (out.size() >= n) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return out;
  }

  asio::io_context ctx_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(ctx_);
  MemoryEventSink events_;
  std::unique_ptr<PortForwarder> forwarder_;
  std::thread loop_;
};

TEST_F(PortForwardTest, BytesPassBothWaysAndAnEndOfStreamPassesOn) {
  testing::Listener inside = ListenTcp();
  const uint16_t outside = Start(inside.port);
  UniqueFd client = ConnectTo(outside);
  ASSERT_TRUE(client);
  ASSERT_TRUE(SendAll(client.get(), "ping"));
  UniqueFd server = AcceptWithin(inside.fd.get());
  ASSERT_TRUE(server);
  EXPECT_EQ(RecvExactly(server.get(), 4), "ping");
  ASSERT_TRUE(SendAll(server.get(), "pong"));
  shutdown(server.get(), SHUT_WR);
  EXPECT_EQ(RecvExactly(client.get(), 4), "pong");
  EXPECT_TRUE(WaitClosed(client.get()));  // the server's end of stream reached the client
  // The client's direction goes on after the server's ended.
  ASSERT_TRUE(SendAll(client.get(), "more"));
  EXPECT_EQ(RecvExactly(server.get(), 4), "more");
  client.reset();
  EXPECT_TRUE(WaitClosed(server.get()));
  std::vector<Event> ev = Inbound(1);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data["joined"], true);
  EXPECT_EQ(ev[0].data["port"], inside.port);
  EXPECT_EQ(ev[0].data["bytes_in"], 8);
  EXPECT_EQ(ev[0].data["bytes_out"], 4);
  EXPECT_NE(ev[0].data["peer"].get<std::string>().find("127.0.0.1:"), std::string::npos);
}

TEST_F(PortForwardTest, APortNothingListensOnInsideIsClosedAndSaid) {
  uint16_t unused = 0;
  {
    testing::Listener l = ListenTcp();
    unused = l.port;
  }  // closed: nothing listens there now
  const uint16_t outside = Start(unused);
  UniqueFd client = ConnectTo(outside);
  ASSERT_TRUE(client);
  EXPECT_TRUE(WaitClosed(client.get()));
  std::vector<Event> ev = Inbound(1);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data["joined"], false);
  EXPECT_NE(ev[0].data["reason"].get<std::string>().find("nothing listens on port"),
            std::string::npos)
      << ev[0].data.dump();
}

TEST_F(PortForwardTest, ConnectionsOverTheCapAreClosed) {
  testing::Listener inside = ListenTcp();
  const uint16_t outside = Start(inside.port, /*max_connections=*/1);
  UniqueFd first = ConnectTo(outside);
  ASSERT_TRUE(SendAll(first.get(), "1"));
  UniqueFd server = AcceptWithin(inside.fd.get());
  ASSERT_TRUE(server);
  EXPECT_EQ(RecvExactly(server.get(), 1), "1");  // joined
  UniqueFd second = ConnectTo(outside);
  EXPECT_TRUE(WaitClosed(second.get()));
  std::vector<Event> ev = Inbound(1);
  ASSERT_GE(ev.size(), 1u);
  EXPECT_NE(ev[0].data["reason"].get<std::string>().find("over the cap"), std::string::npos);
  // The first goes on.
  ASSERT_TRUE(SendAll(server.get(), "2"));
  EXPECT_EQ(RecvExactly(first.get(), 1), "2");
}

TEST_F(PortForwardTest, OneAddressCannotTakeEveryConnection) {
  testing::Listener inside = ListenTcp();
  const uint16_t outside = Start(inside.port, /*max_connections=*/10, /*max_per_peer=*/1);
  UniqueFd first = ConnectTo(outside);
  ASSERT_TRUE(SendAll(first.get(), "1"));
  UniqueFd server = AcceptWithin(inside.fd.get());
  ASSERT_TRUE(server);
  EXPECT_EQ(RecvExactly(server.get(), 1), "1");
  UniqueFd second = ConnectTo(outside);  // the same address (127.0.0.1)
  EXPECT_TRUE(WaitClosed(second.get()));
  std::vector<Event> ev = Inbound(1);
  ASSERT_GE(ev.size(), 1u);
  EXPECT_NE(ev[0].data["reason"].get<std::string>().find("from one address"), std::string::npos)
      << ev[0].data.dump();
  // Once the first closes, the address may connect again.
  first.reset();
  EXPECT_TRUE(WaitClosed(server.get()));
  server.reset();
  ASSERT_EQ(Inbound(2).size(), 2u);  // the first's record: both ends have closed
  UniqueFd third = ConnectTo(outside);
  ASSERT_TRUE(SendAll(third.get(), "3"));
  UniqueFd server3 = AcceptWithin(inside.fd.get());
  ASSERT_TRUE(server3);
  EXPECT_EQ(RecvExactly(server3.get(), 1), "3");
}

TEST_F(PortForwardTest, RecordsStopAtTheirBoundAndTheRestAreCounted) {
  uint16_t unused = 0;
  {
    testing::Listener l = ListenTcp();
    unused = l.port;
  }
  const uint16_t outside = Start(unused, 256, 64, /*max_records=*/2);
  for (int i = 0; i < 3; ++i) {
    UniqueFd client = ConnectTo(outside);
    ASSERT_TRUE(client);
    EXPECT_TRUE(WaitClosed(client.get()));
  }
  EXPECT_EQ(Inbound(2).size(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(Inbound(2).size(), 2u);
  std::promise<void> stopped;
  asio::post(ctx_, [&] {
    forwarder_->Stop();
    stopped.set_value();
  });
  stopped.get_future().wait();
  bool counted = false;
  for (const Event& e : events_.events()) {
    if (e.type == "net.inbound.unrecorded") counted = e.data["count"] == 1;
  }
  EXPECT_TRUE(counted);
}

}  // namespace
}  // namespace ward::net
