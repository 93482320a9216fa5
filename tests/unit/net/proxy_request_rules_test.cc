// Method and path rules in the proxy: each request to a governed host is decided before it is
// sent (forwarded requests here; intercepted HTTPS in the integration tests), and a tunnel that
// would hide a governed host's requests is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

class ProxyRequestRulesTest : public ::testing::Test {
 protected:
  void Start(std::vector<policy::RequestRule> rules) {
    ProxyOptions o;
    auto compiled = RequestRules::Compile(rules);
    ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
    o.request_rules = std::move(compiled).value();
    const std::string port = std::to_string(origin_.port());
    proxy_ = std::make_unique<ProxyHarness>(
        MakeRules({"registry.test:" + port, "127.0.0.1:" + port}), std::move(o),
        std::map<std::string, std::vector<IpAddress>>{
            {"registry.test", {IpAddress::V4(127, 0, 0, 1)}}});
  }
  static policy::RequestRule GetOnly(uint16_t port) {
    policy::RequestRule r;
    r.host = "registry.test:" + std::to_string(port);
    r.methods = {"GET", "HEAD"};
    r.origin = {"t.toml", 3, "network.rules"};
    return r;
  }
  std::string Request(const std::string& method, const std::string& path,
                      const std::string& body = "") {
    const std::string authority = "registry.test:" + std::to_string(origin_.port());
    std::string req = method + " http://" + authority + path + " HTTP/1.1\r\nHost: " + authority +
                      "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    return req;
  }

  OriginServer origin_;
  std::unique_ptr<ProxyHarness> proxy_;
};

TEST_F(ProxyRequestRulesTest, APutWithABodyToAGetOnlyHostIsRefusedWithItsReason) {
  Start({GetOnly(origin_.port())});
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Request("GET", "/pkg")));
  testing::HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok /pkg");
  ASSERT_TRUE(SendAll(fd.get(), Request("PUT", "/pkg", "the workspace, exfiltrated")));
  r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.head.find("PUT registry.test"), std::string::npos) << r.head;
  EXPECT_NE(r.body.find("no network.rules rule"), std::string::npos) << r.body;
  ASSERT_EQ(origin_.requests().size(), 1u);  // the PUT and its body never left
  auto deny = proxy_->events("net.deny");
  ASSERT_EQ(deny.size(), 1u);
  EXPECT_EQ(Str(deny[0].data, "reason"), "request_rule");
  EXPECT_EQ(Str(deny[0].data, "method"), "'PUT'");
  EXPECT_NE(Str(deny[0].data, "why").find("PUT registry.test"), std::string::npos);
}

TEST_F(ProxyRequestRulesTest, NoSecondRequestHidesInABodyOrAnOverrideHeader) {
  Start({GetOnly(origin_.port())});
  const std::string smuggled = "PUT /smuggled HTTP/1.1\r\nHost: registry.test\r\n\r\n";
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Request("GET", "/a", smuggled)));
  testing::HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("a body on GET"), std::string::npos) << r.body;
  fd = ConnectTo(proxy_->port());
  const std::string authority = "registry.test:" + std::to_string(origin_.port());
  ASSERT_TRUE(SendAll(fd.get(), "GET http://" + authority + "/a HTTP/1.1\r\nHost: " + authority +
                                    "\r\nX-HTTP-Method-Override: DELETE\r\n\r\n"));
  r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("X-HTTP-Method-Override"), std::string::npos) << r.body;
  EXPECT_TRUE(origin_.requests().empty());
}

TEST_F(ProxyRequestRulesTest, AnAddressAGovernedNameResolvesToIsGovernedToo) {
  Start({GetOnly(origin_.port())});
  // The server by its address (allowed by an address rule), before the name was ever asked
  // for: the name's rules hold (the proxy resolved the governed names when it started).
  const std::string addr = "127.0.0.1:" + std::to_string(origin_.port());
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), "PUT http://" + addr + "/pkg HTTP/1.1\r\nHost: " + addr +
                                    "\r\nContent-Length: 1\r\n\r\nx"));
  EXPECT_EQ(RecvHttpResponse(fd.get()).status, 403);
  fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), "CONNECT " + addr + " HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"));
  EXPECT_EQ(RecvHttpResponse(fd.get()).status, 403);
  fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), "GET http://" + addr + "/pkg HTTP/1.1\r\nHost: " + addr +
                                    "\r\n\r\n"));
  EXPECT_EQ(RecvHttpResponse(fd.get()).status, 200);  // what the rules allow
  ASSERT_EQ(origin_.requests().size(), 1u);
  EXPECT_EQ(origin_.requests()[0].method, "GET");
}

TEST_F(ProxyRequestRulesTest, ATunnelThatWouldHideTheRequestsIsRefused) {
  Start({GetOnly(origin_.port())});
  UniqueFd fd = ConnectTo(proxy_->port());
  const std::string authority = "registry.test:" + std::to_string(origin_.port());
  ASSERT_TRUE(SendAll(fd.get(),
                      "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n"));
  testing::HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("network.rules"), std::string::npos) << r.body;
  EXPECT_EQ(origin_.connections(), 0u);
}

TEST_F(ProxyRequestRulesTest, HostsNoRuleNamesAreLeftToTheAllowList) {
  policy::RequestRule other = GetOnly(origin_.port());
  other.host = "other.test";
  Start({other});
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Request("PUT", "/pkg", "body")));
  EXPECT_EQ(RecvHttpResponse(fd.get()).status, 200);
  ASSERT_EQ(origin_.requests().size(), 1u);
  EXPECT_EQ(origin_.requests()[0].body, "body");
}

}  // namespace
}  // namespace ward::net
