// The proxy's TCP settings on its data path: the client side of a loopback listener gets
// ProxyOptions::loopback_congestion_control (the sockets are found in this process's descriptor
// table, where the proxy under test lives), upstream connections and other listeners keep the
// system's choice, and a name the kernel refuses changes nothing.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "net/proxy_io.h"
#include "proxy_test_util.h"

namespace ward::net {
namespace {

using testing::ConnectTo;
using testing::HttpResult;
using testing::Ip;
using testing::MakeRules;
using testing::OriginServer;
using testing::ProxyHarness;
using testing::RecvHttpResponse;
using testing::SendAll;

std::string DefaultCongestionControl() {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  return internal::CongestionControl(fd.get());
}

// A congestion control this process may set that is not the default ("" when none): the test
// must see a change to prove anything.
std::string OtherCongestionControl() {
  const std::string def = DefaultCongestionControl();
  for (const char* name : {"reno", "cubic"}) {
    if (def == name) continue;
    UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (internal::SetCongestionControl(fd.get(), name).ok()) return name;
  }
  return "";
}

uint16_t LocalPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

uint16_t PeerPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return 0;
}

std::vector<int> OpenFds() {
  std::vector<int> fds;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return fds;
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') fds.push_back(std::atoi(e->d_name));
  }
  closedir(d);
  return fds;
}

// The congestion control of this process's connected TCP socket with that local port (any, when
// 0) and peer port ("" if none).
std::string CongestionControlOf(uint16_t local, uint16_t peer) {
  for (int fd : OpenFds()) {
    if ((local == 0 || LocalPort(fd) == local) && PeerPort(fd) == peer) {
      return internal::CongestionControl(fd);
    }
  }
  return "";
}

class ProxyDataPathTest : public ::testing::Test {
 protected:
  void Start(ProxyOptions options) {
    proxy_ = std::make_unique<ProxyHarness>(MakeRules({"127.0.0.1:*"}), options);
  }

  // A forwarded download, checked intact; while its connections are open, the congestion
  // control of the proxy's client-side and upstream sockets.
  void Download(std::string* client_side, std::string* upstream_side) {
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(fd);
    const uint64_t total = 4 << 20;
    const std::string a = "127.0.0.1:" + std::to_string(origin_.port());
    ASSERT_TRUE(SendAll(fd.get(), "GET http://" + a + "/big/" + std::to_string(total) +
                                      " HTTP/1.1\r\nHost: " + a + "\r\n\r\n"));
    std::string rest;
    HttpResult r = RecvHttpResponse(fd.get(), false, &rest, 20000);
    ASSERT_EQ(r.status, 200);
    ASSERT_EQ(r.body.size(), total);
    for (size_t i = 0; i < r.body.size(); ++i) {
      ASSERT_EQ(r.body[i], static_cast<char>('a' + i % 26)) << "byte " << i;
    }
    // Kept alive: both of the proxy's sockets are still open. Only the proxy's upstream
    // socket has the origin's port as its peer.
    *client_side = CongestionControlOf(proxy_->port(), LocalPort(fd.get()));
    *upstream_side = CongestionControlOf(0, origin_.port());
  }

  OriginServer origin_;
  std::unique_ptr<ProxyHarness> proxy_;
};

TEST_F(ProxyDataPathTest, LoopbackClientsGetTheConfiguredCongestionControl) {
  const std::string def = DefaultCongestionControl();
  const std::string other = OtherCongestionControl();
  if (def.empty() || other.empty()) GTEST_SKIP() << "no second congestion control to set";
  ProxyOptions options;
  options.loopback_congestion_control = other;
  Start(options);
  std::string client_side, upstream_side;
  Download(&client_side, &upstream_side);
  EXPECT_EQ(client_side, other);
  EXPECT_EQ(upstream_side, def);  // the way out keeps the system's choice
}

TEST_F(ProxyDataPathTest, EmptyKeepsTheSystemDefault) {
  const std::string def = DefaultCongestionControl();
  if (def.empty()) GTEST_SKIP() << "TCP_CONGESTION unreadable";
  ProxyOptions options;
  options.loopback_congestion_control.clear();
  Start(options);
  std::string client_side, upstream_side;
  Download(&client_side, &upstream_side);
  EXPECT_EQ(client_side, def);
  EXPECT_EQ(upstream_side, def);
}

TEST_F(ProxyDataPathTest, RefusedCongestionControlChangesNothing) {
  const std::string def = DefaultCongestionControl();
  if (def.empty()) GTEST_SKIP() << "TCP_CONGESTION unreadable";
  ProxyOptions options;
  options.loopback_congestion_control = "no-such-algorithm";
  Start(options);
  std::string client_side, upstream_side;
  Download(&client_side, &upstream_side);
  EXPECT_EQ(client_side, def);
}

TEST(ProxyDataPathListenerTest, OnlyLoopbackListenersAreChanged) {
  const std::string def = DefaultCongestionControl();
  const std::string other = OtherCongestionControl();
  if (def.empty() || other.empty()) GTEST_SKIP() << "no second congestion control to set";
  auto listen_on = [](int family, const char* addr) {
    UniqueFd fd(socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_storage ss{};
    socklen_t len;
    if (family == AF_INET) {
      auto* sa = reinterpret_cast<sockaddr_in*>(&ss);
      sa->sin_family = AF_INET;
      inet_pton(AF_INET, addr, &sa->sin_addr);
      len = sizeof *sa;
    } else {
      auto* sa = reinterpret_cast<sockaddr_in6*>(&ss);
      sa->sin6_family = AF_INET6;
      inet_pton(AF_INET6, addr, &sa->sin6_addr);
      len = sizeof *sa;
    }
    if (!fd || bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
        listen(fd.get(), 16) != 0) {
      return UniqueFd();
    }
    return fd;
  };
  struct Case {
    int family;
    const char* addr;
    bool loopback;
  };
  for (const Case& c : {Case{AF_INET, "127.0.0.1", true}, Case{AF_INET, "127.0.0.2", true},
                        Case{AF_INET6, "::1", true}, Case{AF_INET, "0.0.0.0", false}}) {
    SCOPED_TRACE(c.addr);
    UniqueFd fd = listen_on(c.family, c.addr);
    if (!fd) {
      EXPECT_EQ(c.family, AF_INET6) << "cannot listen on " << c.addr;
      continue;  // no IPv6 loopback here
    }
    EXPECT_EQ(internal::IsLoopbackBound(fd.get()), c.loopback);
    UniqueFd watch(dup(fd.get()));
    asio::io_context ctx;
    testing::FakeResolver resolver(ctx);
    ProxyOptions options;
    options.loopback_congestion_control = other;
    EgressProxy proxy(ctx, MakeRules({"127.0.0.1:*"}), &resolver, nullptr, options);
    ASSERT_TRUE(proxy.Serve(std::move(fd)).ok());
    EXPECT_EQ(internal::CongestionControl(watch.get()), c.loopback ? other : def);
    proxy.Stop();
  }
}

}  // namespace
}  // namespace ward::net
