// The proxy's host hold (ProxyOptions::ask_host) over real loopback sockets: a request
// for a host without a rule is held while the approver decides, then forwarded (CONNECT, plain
// HTTP, SOCKS5) or refused; timeouts, clients that leave, the cap on held requests, and the
// refusals that are never asked (deny rules, blocked address ranges, an approved name that
// resolves to loopback).
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "credentials_test_util.h"
#include "net/broker/credential_broker.h"
#include "proxy_test_util.h"

namespace ward::net {
namespace {

using testing::ConnectTo;
using testing::Str;
using testing::HttpResult;
using testing::Ip;
using testing::MakeRules;
using testing::OriginServer;
using testing::ProxyHarness;
using testing::RecvExactly;
using testing::RecvHttpResponse;
using testing::RecvUntil;
using testing::SendAll;
using testing::TlsServer;
using testing::WaitClosed;

std::string Connect(const std::string& authority) {
  return "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
}

std::string HeadEnd(int fd) {
  return RecvUntil(fd, [](const std::string& b) { return b.find("\r\n\r\n") != b.npos; });
}

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int v : b) s += static_cast<char>(v);
  return s;
}

std::string SocksDomain(const std::string& host, uint16_t port) {
  std::string r = Bytes({5, 1, 0, 3, static_cast<int>(host.size())}) + host;
  r += static_cast<char>(port >> 8);
  r += static_cast<char>(port & 0xff);
  return r;
}

std::string SocksV4(int a, int b, int c, int d, uint16_t port) {
  return Bytes({5, 1, 0, 1, a, b, c, d, port >> 8, port & 0xff});
}

bool SocksGreet(int fd) {
  return SendAll(fd, Bytes({5, 1, 0})) && RecvExactly(fd, 2) == Bytes({5, 0});
}

// The reply code of a SOCKS request already sent, or -1.
int SocksReply(int fd, int timeout_ms = 5000) {
  std::string rep = RecvExactly(fd, 10, timeout_ms);
  if (rep.size() < 10 || rep[0] != 5) return -1;
  return static_cast<uint8_t>(rep[1]);
}

// Nothing arrives on fd for `ms`: the request is being held.
bool Silent(int fd, int ms = 200) {
  struct pollfd p = {fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 0;
}

// The approver: records every question and answers it as told (hold: the test answers later,
// from its own thread).
class Approver {
 public:
  enum class Mode { kHold, kAllow, kDeny, kAllowInline, kTwice, kThrow };

  AskHostFn Hook() {
    return [this](const HostQuestion& q, HostAnswerFn done) {
      std::unique_lock<std::mutex> lock(mu_);
      questions_.push_back(q);
      Mode mode = mode_;
      if (mode == Mode::kHold) dones_.push_back(done);
      cv_.notify_all();
      lock.unlock();
      switch (mode) {
        case Mode::kHold:
          break;
        case Mode::kAllow:
          std::thread([done] { done(true); }).detach();
          break;
        case Mode::kDeny:
          std::thread([done] { done(false); }).detach();
          break;
        case Mode::kAllowInline:
          done(true);
          break;
        case Mode::kTwice:
          done(false);
          done(true);  // ignored: at most once
          break;
        case Mode::kThrow:
          throw std::runtime_error("approver bug");
      }
    };
  }
  void set_mode(Mode m) {
    std::lock_guard<std::mutex> lock(mu_);
    mode_ = m;
  }
  bool WaitAsked(size_t n, int timeout_ms = 5000) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                        [&] { return questions_.size() >= n; });
  }
  std::vector<HostQuestion> questions() {
    std::lock_guard<std::mutex> lock(mu_);
    return questions_;
  }
  // Answers held question i from this (the test's) thread.
  void Answer(size_t i, bool allow) {
    HostAnswerFn done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done = dones_.at(i);
    }
    done(allow);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  Mode mode_ = Mode::kHold;
  std::vector<HostQuestion> questions_;
  std::vector<HostAnswerFn> dones_;
};

class ProxyApprovalTest : public ::testing::Test {
 protected:
  void SetUp() override { Start({}); }

  void Start(ProxyOptions options) {
    proxy_.reset();
    options.ask_host = approver_.Hook();
    // Loopback is reachable by address only for 127.0.0.1 (where the test servers listen).
    proxy_ = std::make_unique<ProxyHarness>(
        MakeRules({"127.0.0.1:*", "allowed.test:*"}, {"blocked.test"}), options,
        std::map<std::string, std::vector<IpAddress>>{{"asked.test", {Ip("127.0.0.1")}},
                                                      {"allowed.test", {Ip("127.0.0.1")}},
                                                      {"sneaky.test", {Ip("127.0.0.2")}}});
  }

  std::string Asked(uint16_t port) const { return "asked.test:" + std::to_string(port); }

  Approver approver_;  // outlives the proxy, which holds its hook
  OriginServer origin_;
  TlsServer tls_;
  std::unique_ptr<ProxyHarness> proxy_;
};

// ------------------------------------------------------------------ held, then allowed

TEST_F(ProxyApprovalTest, ConnectIsHeldThenTunnelledAfterApproval) {
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect(Asked(tls_.port()))));
  ASSERT_TRUE(approver_.WaitAsked(1));
  HostQuestion q = approver_.questions()[0];
  EXPECT_EQ(q.host, "asked.test");
  EXPECT_EQ(q.port, tls_.port());
  EXPECT_EQ(q.transport, HostTransport::kConnect);
  EXPECT_STREQ(HostTransportName(q.transport), "connect");
  EXPECT_GE(q.connection, 1u);
  // Held: no answer to the client, nothing resolved or connected yet.
  EXPECT_TRUE(Silent(fd.get()));
  EXPECT_EQ(proxy_->stats().held, 1u);
  EXPECT_TRUE(proxy_->resolver().asked().empty());
  EXPECT_EQ(tls_.accepted(), 0u);

  approver_.Answer(0, true);
  EXPECT_EQ(HeadEnd(fd.get()), "HTTP/1.1 200 Connection established\r\n\r\n");
  EXPECT_EQ(testing::TlsGet(fd.get(), "asked.test", "asked.test"), "hello over tls");
  fd.reset();
  ASSERT_TRUE(proxy_->WaitForEvents("net.allow", 1));
  auto allow = proxy_->events("net.allow");
  ASSERT_EQ(allow.size(), 1u);
  EXPECT_EQ(Str(allow[0].data, "host"), "asked.test");
  EXPECT_EQ(Str(allow[0].data, "approval"), "approved");
  EXPECT_EQ(Str(allow[0].data, "origin"), "approval");
  EXPECT_EQ(Str(allow[0].data, "rule"), "");
  EXPECT_TRUE(proxy_->events("net.deny").empty());
  EXPECT_EQ(proxy_->stats().held, 0u);
  EXPECT_EQ(proxy_->stats().asked, 1u);
}

TEST_F(ProxyApprovalTest, ApprovedTunnelStillNeedsAMatchingSni) {
  approver_.set_mode(Approver::Mode::kAllow);
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect(Asked(tls_.port()))));
  EXPECT_EQ(HeadEnd(fd.get()), "HTTP/1.1 200 Connection established\r\n\r\n");
  EXPECT_EQ(testing::TlsGet(fd.get(), "evil.test", "evil.test"), std::nullopt);
  ASSERT_TRUE(proxy_->WaitForEvents("net.deny", 1));
  EXPECT_EQ(Str(proxy_->events("net.deny")[0].data, "reason"), "sni_mismatch");
  EXPECT_EQ(tls_.handshakes(), 0u);
}

TEST_F(ProxyApprovalTest, PlainHttpIsHeldThenForwardedAndAskedAgainOnKeepAlive) {
  UniqueFd fd = ConnectTo(proxy_->port());
  std::string authority = Asked(origin_.port());
  std::string get =
      "GET http://" + authority + "/first HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
  ASSERT_TRUE(SendAll(fd.get(), get));
  ASSERT_TRUE(approver_.WaitAsked(1));
  EXPECT_EQ(approver_.questions()[0].transport, HostTransport::kHttp);
  EXPECT_TRUE(Silent(fd.get()));
  EXPECT_TRUE(origin_.requests().empty());
  approver_.Answer(0, true);
  HttpResult r = RecvHttpResponse(fd.get());
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok /first");

  // The next request on the same client connection is asked again; denied, it is refused even
  // though an upstream connection for that host is open.
  std::string again =
      "GET http://" + authority + "/second HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
  ASSERT_TRUE(SendAll(fd.get(), again));
  ASSERT_TRUE(approver_.WaitAsked(2));
  EXPECT_EQ(approver_.questions()[1].connection, approver_.questions()[0].connection);
  approver_.Answer(1, false);
  r = RecvHttpResponse(fd.get());
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("not approved"), std::string::npos) << r.body;
  ASSERT_EQ(origin_.requests().size(), 1u);
  EXPECT_EQ(origin_.requests()[0].target, "/first");
}

TEST_F(ProxyApprovalTest, SocksIsHeldThenConnectedAfterApproval) {
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SocksGreet(fd.get()));
  ASSERT_TRUE(SendAll(fd.get(), SocksDomain("asked.test", origin_.port())));
  ASSERT_TRUE(approver_.WaitAsked(1));
  HostQuestion q = approver_.questions()[0];
  EXPECT_EQ(q.transport, HostTransport::kSocks5);
  EXPECT_EQ(q.host, "asked.test");
  EXPECT_EQ(q.port, origin_.port());
  EXPECT_TRUE(Silent(fd.get()));
  approver_.Answer(0, true);
  EXPECT_EQ(SocksReply(fd.get()), 0);
  ASSERT_TRUE(SendAll(fd.get(), "GET /socks HTTP/1.1\r\nHost: asked.test\r\n\r\n"));
  HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok /socks");
}

TEST_F(ProxyApprovalTest, AnAnswerGivenInsideTheHookWorks) {
  approver_.set_mode(Approver::Mode::kAllowInline);
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect(Asked(origin_.port()))));
  EXPECT_EQ(HeadEnd(fd.get()), "HTTP/1.1 200 Connection established\r\n\r\n");
}

// ------------------------------------------------------------------ held, then refused

TEST_F(ProxyApprovalTest, DeniedIsA403NamingTheRefusalAndNothingIsResolved) {
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect(Asked(443))));
  ASSERT_TRUE(approver_.WaitAsked(1));
  approver_.Answer(0, false);
  HttpResult r = RecvHttpResponse(fd.get());
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("asked.test refused: not approved: no rule allows asked.test:443 (ward "
                        "run -n asked.test)"),
            std::string::npos)
      << r.body;
  EXPECT_TRUE(WaitClosed(fd.get()));
  auto deny = proxy_->events("net.deny");
  ASSERT_EQ(deny.size(), 1u);
  EXPECT_EQ(Str(deny[0].data, "reason"), "not_approved");
  EXPECT_EQ(Str(deny[0].data, "approval"), "denied");
  EXPECT_EQ(Str(deny[0].data, "via"), "connect");
  EXPECT_TRUE(proxy_->resolver().asked().empty());
  // A second answer to the same question changes nothing.
  approver_.Answer(0, true);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(proxy_->events("net.allow").empty());
}

TEST_F(ProxyApprovalTest, SocksDeniedIsReplyTwo) {
  approver_.set_mode(Approver::Mode::kDeny);
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SocksGreet(fd.get()));
  ASSERT_TRUE(SendAll(fd.get(), SocksDomain("asked.test", origin_.port())));
  EXPECT_EQ(SocksReply(fd.get()), 2);
  EXPECT_EQ(origin_.connections(), 0u);
}

TEST_F(ProxyApprovalTest, OnlyTheFirstAnswerCounts) {
  approver_.set_mode(Approver::Mode::kTwice);  // deny, then allow
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect(Asked(origin_.port()))));
  HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(origin_.connections(), 0u);
}

TEST_F(ProxyApprovalTest, AHookThatThrowsDenies) {
  approver_.set_mode(Approver::Mode::kThrow);
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect(Asked(origin_.port()))));
  HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(proxy_->stats().held, 0u);
}

TEST_F(ProxyApprovalTest, NoAnswerWithinTheHoldTimeoutDenies) {
  ProxyOptions options;
  options.host_hold_timeout = std::chrono::milliseconds(300);
  Start(options);
  UniqueFd fd = ConnectTo(proxy_->port());
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(SendAll(fd.get(), Connect(Asked(origin_.port()))));
  HttpResult r = RecvHttpResponse(fd.get());
  auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("not approved: no answer within 300ms"), std::string::npos) << r.body;
  EXPECT_GE(waited, std::chrono::milliseconds(250));
  auto deny = proxy_->events("net.deny");
  ASSERT_EQ(deny.size(), 1u);
  EXPECT_EQ(Str(deny[0].data, "approval"), "timeout");
  // A late approval is ignored.
  approver_.Answer(0, true);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(origin_.connections(), 0u);
  EXPECT_TRUE(proxy_->events("net.allow").empty());
}

TEST_F(ProxyApprovalTest, AClientThatLeavesWhileHeldCancelsTheHold) {
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(SendAll(fd.get(), Connect(Asked(origin_.port()))));
    ASSERT_TRUE(approver_.WaitAsked(1));
  }
  ASSERT_TRUE(proxy_->WaitFor([](const auto& s) { return s.held == 0 && s.active == 0; }));
  auto deny = proxy_->events("net.deny");
  ASSERT_EQ(deny.size(), 1u);
  EXPECT_EQ(Str(deny[0].data, "approval"), "cancelled");
  // The approver's late yes reaches nothing.
  approver_.Answer(0, true);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(origin_.connections(), 0u);
  EXPECT_TRUE(proxy_->events("net.allow").empty());
}

TEST_F(ProxyApprovalTest, AClientThatSentBytesEarlyAndHangsUpCancelsTheHold) {
  UniqueFd fd = ConnectTo(proxy_->port());
  // Tunnel bytes before the answer (they stay unread), then a half-close.
  ASSERT_TRUE(SendAll(fd.get(), Connect(Asked(origin_.port())) + "early bytes"));
  ASSERT_TRUE(approver_.WaitAsked(1));
  ASSERT_EQ(::shutdown(fd.get(), SHUT_WR), 0);
  ASSERT_TRUE(proxy_->WaitFor([](const auto& s) { return s.held == 0; }));
  EXPECT_TRUE(WaitClosed(fd.get()));
  ASSERT_EQ(proxy_->events("net.deny").size(), 1u);
  EXPECT_EQ(Str(proxy_->events("net.deny")[0].data, "approval"), "cancelled");
}

TEST_F(ProxyApprovalTest, HeldRequestsAreCappedPerProxy) {
  ProxyOptions options;
  options.max_held_connections = 1;
  Start(options);
  UniqueFd first = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(first.get(), Connect(Asked(origin_.port()))));
  ASSERT_TRUE(approver_.WaitAsked(1));
  UniqueFd second = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(second.get(), Connect("other.test:443")));
  HttpResult r = RecvHttpResponse(second.get());
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("too many requests are waiting for approval"), std::string::npos) << r.body;
  EXPECT_EQ(approver_.questions().size(), 1u);
  ASSERT_EQ(proxy_->events("net.deny").size(), 1u);
  EXPECT_EQ(Str(proxy_->events("net.deny")[0].data, "approval"), "busy");
  // The held one is still served.
  approver_.Answer(0, true);
  EXPECT_EQ(HeadEnd(first.get()), "HTTP/1.1 200 Connection established\r\n\r\n");
}

TEST_F(ProxyApprovalTest, StoppingTheProxyEndsHeldRequests) {
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect(Asked(origin_.port()))));
  ASSERT_TRUE(approver_.WaitAsked(1));
  proxy_->StopAndJoin();  // returns: nothing waits for the approver any more
  EXPECT_TRUE(WaitClosed(fd.get()));
  EXPECT_EQ(proxy_->stats().held, 0u);
}

// ------------------------------------------------------------------ never asked

TEST_F(ProxyApprovalTest, AnExplicitDenyRuleIsNeverAsked) {
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect("blocked.test:443")));
  HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 403);
  EXPECT_TRUE(approver_.questions().empty());
  ASSERT_EQ(proxy_->events("net.deny").size(), 1u);
  EXPECT_EQ(Str(proxy_->events("net.deny")[0].data, "reason"), "deny_rule");
}

TEST_F(ProxyApprovalTest, BlockedAddressRangesAreNeverAsked) {
  for (const char* target : {"10.1.2.3:443", "127.0.0.2:80", "[::1]:443", "169.254.169.254:80"}) {
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(SendAll(fd.get(), Connect(target)));
    HttpResult r = RecvHttpResponse(fd.get());
    EXPECT_EQ(r.status, 403) << target;
  }
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(SocksGreet(fd.get()));
    ASSERT_TRUE(SendAll(fd.get(), SocksV4(192, 168, 1, 1, 22)));
    EXPECT_EQ(SocksReply(fd.get()), 2);
  }
  EXPECT_TRUE(approver_.questions().empty());
  EXPECT_EQ(proxy_->stats().asked, 0u);
}

TEST_F(ProxyApprovalTest, AnApprovedNameThatResolvesToLoopbackIsStillRefused) {
  approver_.set_mode(Approver::Mode::kAllow);
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect("sneaky.test:" + std::to_string(origin_.port()))));
  HttpResult r = RecvHttpResponse(fd.get());
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("127.0.0.2 is"), std::string::npos) << r.body;
  EXPECT_EQ(approver_.questions().size(), 1u);
  auto deny = proxy_->events("net.deny");
  ASSERT_EQ(deny.size(), 1u);
  EXPECT_EQ(Str(deny[0].data, "reason"), "address");
  EXPECT_EQ(origin_.connections(), 0u);
}

TEST_F(ProxyApprovalTest, APublicAddressWithoutARuleIsAsked) {
  approver_.set_mode(Approver::Mode::kDeny);  // never connects anywhere
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SocksGreet(fd.get()));
  ASSERT_TRUE(SendAll(fd.get(), SocksV4(203, 0, 113, 5, 443)));
  EXPECT_EQ(SocksReply(fd.get()), 2);
  ASSERT_EQ(approver_.questions().size(), 1u);
  EXPECT_EQ(approver_.questions()[0].host, "203.0.113.5");
}

TEST_F(ProxyApprovalTest, HostsWithARuleAreNotAsked) {
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect("allowed.test:" + std::to_string(origin_.port()))));
  EXPECT_EQ(HeadEnd(fd.get()), "HTTP/1.1 200 Connection established\r\n\r\n");
  EXPECT_TRUE(approver_.questions().empty());
}

TEST(ProxyApprovalLeak, APhantomInTheTargetIsRefusedWithoutAsking) {
  CredentialSpec spec;
  spec.name = "anthropic";
  spec.secret = "0123456789abcdef0123456789abcdef01234567";  // alnum: DNS labels
  spec.hosts = testing::Hosts({"api.test"});
  spec.inject = {policy::CredentialInject::Kind::kHeader, "x-api-key", "{secret}"};
  auto broker = CredentialBroker::Create({spec});
  ASSERT_TRUE(broker.ok()) << broker.status().ToString();
  std::string key = (*broker)->credentials()[0].phantom_key;
  ASSERT_GT(key.size(), 30u);
  ASSERT_LT(key.size(), 80u);
  Approver approver;
  approver.set_mode(Approver::Mode::kAllow);
  ProxyOptions options;
  options.credentials = broker->get();
  options.ask_host = approver.Hook();
  ProxyHarness proxy(MakeRules({"127.0.0.1:*"}), options);
  // A host no rule names, carrying the phantom: the approver must never see it.
  std::string authority = key.substr(0, 20) + "." + key.substr(20) + ".exfil.test:443";
  UniqueFd fd = ConnectTo(proxy.port());
  ASSERT_TRUE(SendAll(fd.get(), Connect(authority)));
  HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 403);
  EXPECT_TRUE(approver.questions().empty());
  EXPECT_EQ(proxy.events("credential.leak_attempt").size(), 1u);
  proxy.StopAndJoin();
}

TEST(ProxyApprovalOff, WithoutAHookAHostWithoutARuleIsDeniedAtOnce) {
  ProxyHarness proxy(MakeRules({"127.0.0.1:*"}), ProxyOptions{},
                     {{"asked.test", {Ip("127.0.0.1")}}});
  UniqueFd fd = ConnectTo(proxy.port());
  ASSERT_TRUE(SendAll(fd.get(), Connect("asked.test:443")));
  HttpResult r = RecvHttpResponse(fd.get(), false, nullptr, 1000);
  EXPECT_EQ(r.status, 403);
  ASSERT_EQ(proxy.events("net.deny").size(), 1u);
  EXPECT_EQ(Str(proxy.events("net.deny")[0].data, "reason"), "no_rule");
}

}  // namespace
}  // namespace ward::net
