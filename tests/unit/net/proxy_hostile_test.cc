// Hostile and broken clients cost their own connection only: garbage, oversized heads,
// slowloris, clients that stop reading (backpressure), the connection cap, idle tunnels.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "proxy_test_util.h"

namespace ward::net {
namespace {

using testing::ConnectTo;
using testing::HttpResult;
using testing::Ip;
using testing::MakeRules;
using testing::OriginServer;
using testing::ProxyHarness;
using testing::RecvExactly;
using testing::RecvHttpResponse;
using testing::RecvUntil;
using testing::SendAll;
using testing::WaitClosed;

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int v : b) s += static_cast<char>(v);
  return s;
}

class ProxyHostileTest : public ::testing::Test {
 protected:
  void Start(ProxyOptions options = {}) {
    proxy_.reset();
    proxy_ = std::make_unique<ProxyHarness>(
        MakeRules({"origin.test:*", "127.0.0.1:*"}), options,
        std::map<std::string, std::vector<IpAddress>>{{"origin.test", {Ip("127.0.0.1")}}});
  }

  std::string Get(const std::string& path, const std::string& extra = "") const {
    std::string a = "origin.test:" + std::to_string(origin_.port());
    return "GET http://" + a + path + " HTTP/1.1\r\nHost: " + a + "\r\n" + extra + "\r\n";
  }

  // A fresh allowed request still gets through.
  void ExpectHealthy() {
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(fd);
    ASSERT_TRUE(SendAll(fd.get(), Get("/alive")));
    HttpResult r = RecvHttpResponse(fd.get());
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "ok /alive");
  }

  OriginServer origin_;
  std::unique_ptr<ProxyHarness> proxy_;
};

TEST_F(ProxyHostileTest, GarbageIsAnsweredOrClosedAndCountsAsErrors) {
  ProxyOptions options;
  options.header_timeout = std::chrono::milliseconds(500);  // for inputs that never end a line
  Start(options);
  std::mt19937 rng(42);
  std::vector<std::string> inputs = {
      Bytes({0, 1, 2, 3, 4, 0xff, 0xfe, '\r', '\n', '\r', '\n'}),
      "GET / HTTP/1.1\r\n\r\n",                               // no Host, origin-form
      "GET http://origin.test/ HTTP/9.9\r\nHost: x\r\n\r\n",  // version
      "GET http://origin.test/ HTTP/1.1\nHost: x\n\n",        // bare LF
      "G\x01T / HTTP/1.1\r\n\r\n",
      Bytes({0x16, 3, 1, 0, 5, 1, 0, 0, 1, 0}),         // TLS on the proxy port
      Bytes({5, 0}),                                    // SOCKS greeting without methods
      Bytes({5, 1, 0, 5, 9, 0, 1, 1, 2, 3, 4, 0, 80}),  // bad SOCKS command
      Bytes({5, 1, 0, 5, 1, 0, 9, 1, 2, 3, 4, 0, 80}),  // bad SOCKS address type
      Bytes({4, 1, 0, 80, 127, 0, 0, 1, 0}),            // SOCKS4
      "POST http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 1\r\n"
      "Transfer-Encoding: chunked\r\n\r\n",  // smuggling attempt
  };
  std::string random(10000, '\0');
  for (char& c : random) c = static_cast<char>(rng());
  random[0] = 'X';
  inputs.push_back(random);
  for (const std::string& in : inputs) {
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(fd);
    SendAll(fd.get(), in);
    std::string got = RecvUntil(
        fd.get(), [](const std::string&) { return false; }, 3000);
    // Closed, after a protocol answer or none; never left hanging.
    EXPECT_TRUE(WaitClosed(fd.get(), 100)) << ::testing::PrintToString(in.substr(0, 40));
    if (!got.empty() && got[0] == 'H') {
      EXPECT_TRUE(got.rfind("HTTP/1.1 4", 0) == 0 || got.rfind("HTTP/1.1 5", 0) == 0) << got;
    }
  }
  EXPECT_GE(proxy_->stats().errors, inputs.size() - 2);
  EXPECT_EQ(origin_.connections(), 0u);
  ExpectHealthy();
  EXPECT_TRUE(proxy_->WaitFor([](const auto& s) { return s.active == 0; }));
}

TEST_F(ProxyHostileTest, OversizedHeadsAreRefused) {
  ProxyOptions options;
  options.http_limits.max_header_bytes = 8 << 10;
  options.http_limits.max_start_line = 1024;
  options.http_limits.max_headers = 20;
  Start(options);
  struct Case {
    std::string request;
    int status;
  };
  std::vector<Case> cases = {
      {Get("/" + std::string(2000, 'a')), 414},
      {Get("/", "X-Big: " + std::string(9000, 'b') + "\r\n"), 431},
      {[&] {
         std::string extra;
         for (int i = 0; i < 30; ++i) extra += "X-H" + std::to_string(i) + ": v\r\n";
         return Get("/", extra);
       }(),
       431},
  };
  for (const Case& c : cases) {
    UniqueFd fd = ConnectTo(proxy_->port());
    SendAll(fd.get(), c.request);
    HttpResult r = RecvHttpResponse(fd.get());
    EXPECT_EQ(r.status, c.status);
  }
  {  // An endless header line: refused once the limit is crossed, not when it ends.
    UniqueFd fd = ConnectTo(proxy_->port());
    SendAll(fd.get(), Get("/").substr(0, 40) + "X-Endless: ");
    std::string chunk(4096, 'z');
    for (int i = 0; i < 4; ++i) SendAll(fd.get(), chunk);
    HttpResult r = RecvHttpResponse(fd.get());
    EXPECT_EQ(r.status, 431);
  }
  EXPECT_EQ(origin_.connections(), 0u);
  ExpectHealthy();
}

TEST_F(ProxyHostileTest, SlowlorisIsCutAtTheHeaderTimeout) {
  ProxyOptions options;
  options.header_timeout = std::chrono::milliseconds(300);
  Start(options);
  UniqueFd idle = ConnectTo(proxy_->port());  // sends nothing at all
  UniqueFd partial = ConnectTo(proxy_->port());
  SendAll(partial.get(), Get("/").substr(0, 30));
  UniqueFd dribble = ConnectTo(proxy_->port());
  auto start = std::chrono::steady_clock::now();
  std::atomic<bool> dribble_closed{false};
  std::thread dribbler([&] {
    // One byte every 40 ms: activity, but the head never completes in time.
    std::string req = Get("/", "X-Pad: " + std::string(200, 'p') + "\r\n");
    for (char c : req) {
      if (!SendAll(dribble.get(), std::string(1, c))) {
        dribble_closed = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
      if (std::chrono::steady_clock::now() - start > std::chrono::seconds(5)) return;
    }
  });
  // Meanwhile others are served.
  ExpectHealthy();
  EXPECT_TRUE(WaitClosed(idle.get(), 3000));
  EXPECT_TRUE(WaitClosed(partial.get(), 3000));
  EXPECT_TRUE(WaitClosed(dribble.get(), 3000));
  auto elapsed = std::chrono::steady_clock::now() - start;
  dribbler.join();
  EXPECT_GE(elapsed, std::chrono::milliseconds(250));
  EXPECT_LT(elapsed, std::chrono::milliseconds(2500));
  EXPECT_GE(proxy_->stats().errors, 3u);
  EXPECT_TRUE(proxy_->WaitFor([](const auto& s) { return s.active == 0; }));
}

// The client reads the response head, then stops reading: the proxy must stop reading the
// origin once its buffer is full, so neither its memory nor the transfer run away.
void CheckBackpressure(ProxyHarness& proxy, OriginServer& origin, int fd, size_t hw,
                       uint64_t total) {
  auto stalled_bytes = [&] {
    uint64_t last = proxy.stats().bytes_down;
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      uint64_t now = proxy.stats().bytes_down;
      if (now == last) return now;
      last = now;
    }
    return uint64_t{0};
  };
  uint64_t stalled = stalled_bytes();
  ASSERT_GT(stalled, 0u) << "the transfer never stalled";
  EXPECT_LT(stalled, total / 2);
  EXPECT_LE(proxy.stats().buffered, hw);
  EXPECT_LT(origin.big_bytes_written(), total / 2);
  // Reading again resumes the transfer, intact.
  uint64_t received = 0;
  bool intact = true;
  while (received < total) {
    std::string got = RecvUntil(
        fd, [](const std::string& b) { return !b.empty(); }, 5000);
    if (got.empty()) break;
    for (size_t i = 0; i < got.size() && intact; ++i) {
      intact = got[i] == static_cast<char>('a' + (received + i) % 26);
    }
    received += got.size();
  }
  EXPECT_EQ(received, total);
  EXPECT_TRUE(intact);
}

TEST_F(ProxyHostileTest, ClientThatStopsReadingStopsTheUpstreamForwarded) {
  ProxyOptions options;
  options.buffer_high_watermark = 64 << 10;
  Start(options);
  const uint64_t total = 192ull << 20;
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Get("/big/" + std::to_string(total))));
  // Read only the head.
  std::string head;
  char c;
  while (head.find("\r\n\r\n") == std::string::npos && recv(fd.get(), &c, 1, 0) == 1) head += c;
  ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  CheckBackpressure(*proxy_, origin_, fd.get(), options.buffer_high_watermark, total);
}

TEST_F(ProxyHostileTest, ClientThatStopsReadingStopsTheUpstreamWithoutSplice) {
  ProxyOptions options;
  options.buffer_high_watermark = 64 << 10;
  options.splice = false;  // user-space buffers only: the same bound must hold
  Start(options);
  const uint64_t total = 192ull << 20;
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Get("/big/" + std::to_string(total))));
  std::string head;
  char c;
  while (head.find("\r\n\r\n") == std::string::npos && recv(fd.get(), &c, 1, 0) == 1) head += c;
  ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  CheckBackpressure(*proxy_, origin_, fd.get(), options.buffer_high_watermark, total);
}

TEST_F(ProxyHostileTest, ClientThatStopsReadingStopsTheUpstreamTunnelled) {
  ProxyOptions options;
  options.buffer_high_watermark = 64 << 10;
  Start(options);
  const uint64_t total = 192ull << 20;
  UniqueFd fd = ConnectTo(proxy_->port());
  std::string a = "origin.test:" + std::to_string(origin_.port());
  ASSERT_TRUE(SendAll(fd.get(), "CONNECT " + a + " HTTP/1.1\r\n\r\n"));
  std::string established = RecvUntil(
      fd.get(), [](const std::string& b) { return b.find("\r\n\r\n") != std::string::npos; });
  ASSERT_EQ(established, "HTTP/1.1 200 Connection established\r\n\r\n");
  ASSERT_TRUE(
      SendAll(fd.get(), "GET /big/" + std::to_string(total) + " HTTP/1.1\r\nHost: o\r\n\r\n"));
  std::string head;
  char c;
  while (head.find("\r\n\r\n") == std::string::npos && recv(fd.get(), &c, 1, 0) == 1) head += c;
  ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  CheckBackpressure(*proxy_, origin_, fd.get(), options.buffer_high_watermark, total);
}

// A bound that is not a pipe size (the kernel rounds pipes up to a power of two pages): the
// pipe holds no more than the bound all the same.
TEST_F(ProxyHostileTest, ClientThatStopsReadingStopsTheUpstreamWithAnOddBound) {
  ProxyOptions options;
  options.buffer_high_watermark = 100000;  // the pipe is 128 KiB
  Start(options);
  const uint64_t total = 192ull << 20;
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Get("/big/" + std::to_string(total))));
  std::string head;
  char c;
  while (head.find("\r\n\r\n") == std::string::npos && recv(fd.get(), &c, 1, 0) == 1) head += c;
  ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  CheckBackpressure(*proxy_, origin_, fd.get(), options.buffer_high_watermark, total);
}

// The same bound with the default options (the buffers, and the splice pipes sized by them,
// as a sandbox gets them).
TEST_F(ProxyHostileTest, ClientThatStopsReadingStopsTheUpstreamWithDefaultBuffers) {
  ProxyOptions options;
  const uint64_t total = 192ull << 20;
  for (bool tunnel : {false, true}) {
    SCOPED_TRACE(tunnel ? "tunnelled" : "forwarded");
    Start(options);  // fresh counters
    OriginServer origin;
    const std::string a = "origin.test:" + std::to_string(origin.port());
    UniqueFd fd = ConnectTo(proxy_->port());
    std::string path = "/big/" + std::to_string(total);
    if (tunnel) {
      ASSERT_TRUE(SendAll(fd.get(), "CONNECT " + a + " HTTP/1.1\r\n\r\n"));
      std::string established = RecvUntil(
          fd.get(), [](const std::string& b) { return b.find("\r\n\r\n") != std::string::npos; });
      ASSERT_EQ(established, "HTTP/1.1 200 Connection established\r\n\r\n");
      ASSERT_TRUE(SendAll(fd.get(), "GET " + path + " HTTP/1.1\r\nHost: o\r\n\r\n"));
    } else {
      ASSERT_TRUE(
          SendAll(fd.get(), "GET http://" + a + path + " HTTP/1.1\r\nHost: " + a + "\r\n\r\n"));
    }
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos && recv(fd.get(), &c, 1, 0) == 1) head += c;
    ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
    CheckBackpressure(*proxy_, origin, fd.get(), options.buffer_high_watermark, total);
  }
}

TEST_F(ProxyHostileTest, ConnectionCapRefusesCleanly) {
  ProxyOptions options;
  options.max_connections = 3;
  Start(options);
  std::vector<UniqueFd> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(ConnectTo(proxy_->port()));
    SendAll(held.back().get(), "GET http://ori");  // an unfinished head holds the slot
  }
  ASSERT_TRUE(proxy_->WaitFor([](const auto& s) { return s.active == 3; }));
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    SendAll(fd.get(), Get("/over"));
    HttpResult r = RecvHttpResponse(fd.get());
    EXPECT_EQ(r.status, 503);
    EXPECT_NE(r.body.find("too many connections"), std::string::npos);
  }
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    SendAll(fd.get(), Bytes({5, 1, 0}));
    EXPECT_EQ(RecvExactly(fd.get(), 2), Bytes({5, 0}));
    SendAll(fd.get(), Bytes({5, 1, 0, 1, 127, 0, 0, 1, 0, 80}));
    std::string rep = RecvExactly(fd.get(), 10);
    ASSERT_EQ(rep.size(), 10u);
    EXPECT_EQ(rep[1], 1);  // general failure
  }
  EXPECT_EQ(proxy_->stats().refused_over_cap, 2u);
  EXPECT_EQ(origin_.requests().size(), 0u);
  ASSERT_EQ(proxy_->events("net.limit").size(), 1u);
  EXPECT_EQ(proxy_->events("net.limit")[0].data["cap"], 3);
  held.pop_back();
  ASSERT_TRUE(proxy_->WaitFor([](const auto& s) { return s.active == 2; }));
  ExpectHealthy();
}

// Idle connections past the default cap: at most the cap stay open, whatever the client
// speaks; the refusals are recorded as net.limit (the first one at once, the last count when
// the proxy stops). Below the cap every connection is served.
TEST_F(ProxyHostileTest, IdleConnectionsBeyondTheDefaultCapAreRefusedAndRecorded) {
  ProxyOptions options;
  EXPECT_EQ(options.max_connections, 128u);
  Start(options);
  std::vector<UniqueFd> held;
  for (int i = 0; i < 128; ++i) {
    held.push_back(ConnectTo(proxy_->port()));
    ASSERT_TRUE(held.back());
  }
  ASSERT_TRUE(proxy_->WaitFor([](const auto& s) { return s.active == 128; }));
  EXPECT_TRUE(proxy_->events("net.limit").empty());
  // Positive control: every one of them is served (a request on the last one is answered).
  ASSERT_TRUE(SendAll(held.back().get(), Get("/under-the-cap")));
  HttpResult ok = RecvHttpResponse(held.back().get());
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "ok /under-the-cap");
  // Beyond: idle connections are closed within a second, and hold nothing.
  std::vector<UniqueFd> over;
  for (int i = 0; i < 272; ++i) over.push_back(ConnectTo(proxy_->port()));
  for (auto& fd : over) EXPECT_TRUE(WaitClosed(fd.get(), 5000));
  EXPECT_EQ(proxy_->stats().active, 128u);
  EXPECT_EQ(proxy_->stats().refused_over_cap, 272u);
  auto events = proxy_->events("net.limit");
  ASSERT_GE(events.size(), 1u);
  EXPECT_EQ(events[0].data["limit"], "proxy_connections");
  EXPECT_EQ(events[0].data["cap"], 128);
  EXPECT_EQ(events[0].data["refused"], 1);
  // 1, 10 and 100 so far; the stop reports the total.
  EXPECT_EQ(events.size(), 3u);
  proxy_->StopAndJoin();
  events = proxy_->events("net.limit");
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events.back().data["refused"], 272);
}

TEST_F(ProxyHostileTest, IdleTunnelIsClosedAndReported) {
  ProxyOptions options;
  options.idle_timeout = std::chrono::milliseconds(300);
  Start(options);
  UniqueFd fd = ConnectTo(proxy_->port());
  std::string a = "origin.test:" + std::to_string(origin_.port());
  ASSERT_TRUE(SendAll(fd.get(), "CONNECT " + a + " HTTP/1.1\r\n\r\n"));
  RecvUntil(fd.get(), [](const std::string& b) { return b.find("\r\n\r\n") != b.npos; });
  ASSERT_TRUE(SendAll(fd.get(), "GET /x HTTP/1.1\r\nHost: o\r\n\r\n"));
  EXPECT_EQ(RecvHttpResponse(fd.get()).body, "ok /x");
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(WaitClosed(fd.get(), 3000));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
  ASSERT_TRUE(proxy_->WaitForEvents("net.allow", 1));
}

TEST_F(ProxyHostileTest, ClientLeavingMidBodyEndsOnlyItsConnection) {
  Start();
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    SendAll(fd.get(), "POST http://origin.test:" + std::to_string(origin_.port()) +
                          "/echo HTTP/1.1\r\nHost: origin.test:" + std::to_string(origin_.port()) +
                          "\r\nContent-Length: 100000\r\n\r\n" + std::string(1000, 'x'));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  {  // A malformed chunked body.
    UniqueFd fd = ConnectTo(proxy_->port());
    SendAll(fd.get(), "POST http://origin.test:" + std::to_string(origin_.port()) +
                          "/echo HTTP/1.1\r\nHost: origin.test:" + std::to_string(origin_.port()) +
                          "\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
    EXPECT_TRUE(WaitClosed(fd.get()));
  }
  EXPECT_TRUE(proxy_->WaitFor([](const auto& s) { return s.active == 0; }));
  ExpectHealthy();
  EXPECT_GE(proxy_->stats().errors, 2u);
}

TEST_F(ProxyHostileTest, StopEndsEverythingAndReportsOpenTunnels) {
  Start();
  UniqueFd fd = ConnectTo(proxy_->port());
  std::string a = "origin.test:" + std::to_string(origin_.port());
  ASSERT_TRUE(SendAll(fd.get(), "CONNECT " + a + " HTTP/1.1\r\n\r\n"));
  RecvUntil(fd.get(), [](const std::string& b) { return b.find("\r\n\r\n") != b.npos; });
  UniqueFd slow = ConnectTo(proxy_->port());
  SendAll(slow.get(), "GET http://x");
  ASSERT_TRUE(proxy_->WaitFor([](const auto& s) { return s.active == 2; }));
  proxy_->StopAndJoin();  // Stop(), then the loop must finish on its own
  EXPECT_TRUE(WaitClosed(fd.get(), 1000));
  EXPECT_TRUE(WaitClosed(slow.get(), 1000));
  auto allow = proxy_->events("net.allow");
  ASSERT_EQ(allow.size(), 1u);
  EXPECT_EQ(allow[0].data["via"], "connect");
}

}  // namespace
}  // namespace ward::net
