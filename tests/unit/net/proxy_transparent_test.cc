// Transparent connections (EgressProxy::ServeTransparent) over real loopback sockets: the
// original destination is given by the test (capture's redirect is the integration tests'),
// mapped back to its name, and decided like a tunnel to name:port.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "proxy_test_util.h"

namespace ward::net {
namespace {

using testing::ConnectTo;
using testing::Str;
using testing::MakeRules;
using testing::OriginServer;
using testing::ProxyHarness;
using testing::RecvHttpResponse;
using testing::SendAll;
using testing::TlsServer;
using testing::WaitClosed;

class ProxyTransparentTest : public ::testing::Test {
 protected:
  // The proxy with transparent capture, `allow` as its rules, every name resolving to the
  // loopback origins (allowed by address on their ports).
  void Start(std::vector<std::string> allow, ProxyOptions options = {}) {
    for (uint16_t p : {origin_.port(), tls_.port()}) allow.push_back("127.0.0.1:" + std::to_string(p));
    options.synthetic = &names_;
    options.original_destination = [this](int, int) {
      std::lock_guard<std::mutex> lock(mu_);
      return dst_;
    };
    std::map<std::string, std::vector<IpAddress>> table;
    for (const char* n : {"web.test", "tls.test", "raw.test"}) table[n] = {IpAddress::V4(127, 0, 0, 1)};
    proxy_ = std::make_unique<ProxyHarness>(MakeRules(allow), std::move(options), table);
  }
  // The next connection was made to `name`'s synthetic address (v6: its IPv6 one) at `port`.
  void To(const std::string& name, uint16_t port, bool v6 = false) {
    auto pair = names_.AddressesFor(name);
    ASSERT_TRUE(pair.has_value());
    std::lock_guard<std::mutex> lock(mu_);
    dst_ = std::make_pair(v6 ? pair->v6 : pair->v4, port);
  }
  void ToAddress(IpAddress addr, uint16_t port) {
    std::lock_guard<std::mutex> lock(mu_);
    dst_ = std::make_pair(addr, port);
  }
  UniqueFd Connect() { return ConnectTo(proxy_->transparent_port()); }

  OriginServer origin_;
  TlsServer tls_;
  SyntheticNames names_;
  std::mutex mu_;
  std::optional<std::pair<IpAddress, uint16_t>> dst_;
  std::unique_ptr<ProxyHarness> proxy_;
};

TEST_F(ProxyTransparentTest, ATlsPortNeedsTheNamesServerName) {
  ProxyOptions o;
  o.tls_ports = {tls_.port()};
  Start({"tls.test:" + std::to_string(tls_.port())}, o);
  To("tls.test", tls_.port());
  {
    UniqueFd fd = Connect();
    EXPECT_EQ(testing::TlsGet(fd.get(), "evil.test", "evil.test"), std::nullopt);
  }
  ASSERT_TRUE(proxy_->WaitForEvents("net.deny", 1));
  auto deny = proxy_->events("net.deny");
  EXPECT_EQ(Str(deny[0].data, "reason"), "sni_mismatch");
  EXPECT_EQ(Str(deny[0].data, "via"), "transparent");
  EXPECT_EQ(tls_.accepted(), 0u);  // decided before connecting
  {
    UniqueFd fd = Connect();
    EXPECT_EQ(testing::TlsGet(fd.get(), "tls.test", "tls.test"), "hello over tls");
  }
  EXPECT_EQ(tls_.accepted(), 1u);
  EXPECT_EQ(proxy_->stats().transparent, 2u);
}

TEST_F(ProxyTransparentTest, AnHttpPortChecksTheHostOfEveryRequest) {
  ProxyOptions o;
  o.http_ports = {origin_.port()};
  const std::string authority = "web.test:" + std::to_string(origin_.port());
  Start({authority}, o);
  To("web.test", origin_.port());
  UniqueFd fd = Connect();
  ASSERT_TRUE(SendAll(fd.get(), "GET /first HTTP/1.1\r\nHost: " + authority + "\r\n\r\n"));
  testing::HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok /first");
  // The same connection, kept alive, naming another host: refused with a reason.
  ASSERT_TRUE(SendAll(fd.get(), "GET /second HTTP/1.1\r\nHost: evil.test\r\n\r\n"));
  r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("evil.test"), std::string::npos) << r.body;
  ASSERT_EQ(origin_.requests().size(), 1u);
  EXPECT_EQ(origin_.requests()[0].target, "/first");
  auto deny = proxy_->events("net.deny");
  ASSERT_EQ(deny.size(), 1u);
  EXPECT_EQ(Str(deny[0].data, "reason"), "host_mismatch");
  // An absolute URI or CONNECT on it is not a way to another host either.
  fd = Connect();
  ASSERT_TRUE(SendAll(fd.get(), "CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test\r\n\r\n"));
  EXPECT_EQ(RecvHttpResponse(fd.get()).status, 400);
  fd = Connect();
  ASSERT_TRUE(SendAll(fd.get(), "GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n"));
  EXPECT_EQ(RecvHttpResponse(fd.get()).status, 400);
  EXPECT_EQ(origin_.requests().size(), 1u);
}

TEST_F(ProxyTransparentTest, OtherPortsAreDecidedByNameAndPortAlone) {
  Start({"raw.test:" + std::to_string(origin_.port())});
  To("raw.test", origin_.port(), /*v6=*/true);
  UniqueFd fd = Connect();
  // Not checked: whatever the protocol says of its host, the tunnel goes to raw.test.
  ASSERT_TRUE(SendAll(fd.get(), "GET /raw HTTP/1.1\r\nHost: anything.test\r\n\r\n"));
  testing::HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok /raw");
  fd.reset();
  ASSERT_TRUE(proxy_->WaitForEvents("net.allow", 1));
  auto allow = proxy_->events("net.allow");
  EXPECT_EQ(Str(allow[0].data, "host"), "raw.test");
  EXPECT_EQ(Str(allow[0].data, "via"), "transparent");
  // Another port of the same name has no rule.
  To("raw.test", tls_.port());
  fd = Connect();
  EXPECT_TRUE(WaitClosed(fd.get()));
  ASSERT_TRUE(proxy_->WaitForEvents("net.deny", 1));
  EXPECT_EQ(Str(proxy_->events("net.deny")[0].data, "reason"), "no_rule");
  EXPECT_EQ(tls_.accepted(), 0u);
}

TEST_F(ProxyTransparentTest, AConnectionThatSendsNothingIsClosedAtTheHeadTimeout) {
  ProxyOptions o;
  o.http_ports = {origin_.port()};
  o.header_timeout = std::chrono::milliseconds(200);
  Start({"web.test:" + std::to_string(origin_.port())}, o);
  To("web.test", origin_.port());
  UniqueFd fd = Connect();
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(WaitClosed(fd.get(), 3000));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_TRUE(proxy_->WaitFor([](const EgressProxy::Stats& s) { return s.active == 0; }));
}

TEST_F(ProxyTransparentTest, AnAddressNoNameWasGivenIsRefused) {
  Start({"raw.test:" + std::to_string(origin_.port())});
  names_.AddressesFor("raw.test");
  for (IpAddress a : {IpAddress::V4(198, 18, 9, 9), IpAddress::V4(127, 0, 0, 1)}) {
    ToAddress(a, origin_.port());
    UniqueFd fd = Connect();
    EXPECT_TRUE(WaitClosed(fd.get()));
  }
  ASSERT_TRUE(proxy_->WaitForEvents("net.deny", 2));
  for (const Event& e : proxy_->events("net.deny")) {
    EXPECT_EQ(Str(e.data, "reason"), "unknown_address");
  }
  EXPECT_EQ(origin_.connections(), 0u);
  EXPECT_TRUE(proxy_->resolver().asked().empty());
}

}  // namespace
}  // namespace ward::net
