// The egress proxy end to end over real loopback sockets: CONNECT with TLS, absolute-URI
// forwarding, SOCKS5, the policy decisions and their events, and curl as a real client.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

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
using testing::RunCommand;
using testing::SendAll;
using testing::TlsServer;
using testing::WaitClosed;

std::string HeadEnd(int fd) {
  return RecvUntil(fd, [](const std::string& b) { return b.find("\r\n\r\n") != b.npos; });
}

std::string Connect(const std::string& authority) {
  return "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
}

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int v : b) s += static_cast<char>(v);
  return s;
}

std::string SocksDomain(const std::string& host, uint16_t port, int cmd = 1) {
  std::string r = Bytes({5, cmd, 0, 3, static_cast<int>(host.size())}) + host;
  r += static_cast<char>(port >> 8);
  r += static_cast<char>(port & 0xff);
  return r;
}

std::string SocksV4(int a, int b, int c, int d, uint16_t port) {
  return Bytes({5, 1, 0, 1, a, b, c, d, port >> 8, port & 0xff});
}

// Greeting, then the request; the reply code, or -1 when the exchange broke.
int Socks(int fd, const std::string& request) {
  if (!SendAll(fd, Bytes({5, 1, 0}))) return -1;
  if (RecvExactly(fd, 2) != Bytes({5, 0})) return -1;
  if (!SendAll(fd, request)) return -1;
  std::string rep = RecvExactly(fd, 10);
  if (rep.size() < 10 || rep[0] != 5) return -1;
  return static_cast<uint8_t>(rep[1]);
}

class ProxyE2eTest : public ::testing::Test {
 protected:
  void SetUp() override { Start({}); }

  void Start(ProxyOptions options) {
    proxy_.reset();
    proxy_ = std::make_unique<ProxyHarness>(
        MakeRules(
            {"origin.test:*", "tls.test:*", "private.test:*", "missing.test:*", "127.0.0.1:*"},
            {"blocked.test"}),
        options,
        std::map<std::string, std::vector<IpAddress>>{{"origin.test", {Ip("127.0.0.1")}},
                                                      {"tls.test", {Ip("127.0.0.1")}},
                                                      {"private.test", {Ip("127.0.0.3")}}});
  }

  std::string OriginAuthority() const { return "origin.test:" + std::to_string(origin_.port()); }
  std::string TlsAuthority() const { return "tls.test:" + std::to_string(tls_.port()); }

  // curl through the proxy with a clean environment.
  testing::CommandResult Curl(std::vector<std::string> args) {
    std::vector<std::string> argv = {"curl", "-sS", "--max-time", "20"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv);
  }
  std::string ProxyUrl() const { return "http://127.0.0.1:" + std::to_string(proxy_->port()); }

  OriginServer origin_;
  TlsServer tls_;
  std::unique_ptr<ProxyHarness> proxy_;
};

// ------------------------------------------------------------------ CONNECT

TEST_F(ProxyE2eTest, ConnectTunnelCarriesTls) {
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(SendAll(fd.get(), Connect(TlsAuthority())));
    EXPECT_EQ(HeadEnd(fd.get()), "HTTP/1.1 200 Connection established\r\n\r\n");
    EXPECT_EQ(testing::TlsGet(fd.get(), "tls.test", "tls.test"), "hello over tls");
  }
  EXPECT_EQ(tls_.snis(), std::vector<std::string>{"tls.test"});
  ASSERT_TRUE(proxy_->WaitForEvents("net.allow", 1));
  auto allow = proxy_->events("net.allow");
  ASSERT_EQ(allow.size(), 1u);
  EXPECT_EQ(Str(allow[0].data, "host"), "tls.test");
  EXPECT_EQ(allow[0].data["port"], tls_.port());
  EXPECT_EQ(Str(allow[0].data, "addr"), "127.0.0.1");
  EXPECT_EQ(Str(allow[0].data, "rule"), "tls.test:*");
  EXPECT_EQ(Str(allow[0].data, "via"), "connect");
  EXPECT_GT(allow[0].data["bytes_up"].get<uint64_t>(), 100u);
  EXPECT_GT(allow[0].data["bytes_down"].get<uint64_t>(), 100u);
  EXPECT_TRUE(allow[0].data.contains("duration_ms"));
  EXPECT_TRUE(proxy_->events("net.deny").empty());
}

TEST_F(ProxyE2eTest, ConnectToHostWithoutRuleIsDeniedWithOneEvent) {
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect("evil.test:443")));
  HttpResult r = RecvHttpResponse(fd.get());
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 403);
  // The reason and the flag, in the status line (what clients show) and the body.
  EXPECT_EQ(r.head.substr(0, r.head.find("\r\n")),
            "HTTP/1.1 403 ward: evil.test not allowed (ward run -n evil.test)");
  EXPECT_EQ(r.body, "ward: evil.test not allowed (ward run -n evil.test)\nsee: ward why evil.test\n");
  EXPECT_TRUE(WaitClosed(fd.get()));
  auto deny = proxy_->events("net.deny");
  ASSERT_EQ(deny.size(), 1u);
  EXPECT_EQ(Str(deny[0].data, "host"), "evil.test");
  EXPECT_EQ(deny[0].data["port"], 443);
  EXPECT_EQ(Str(deny[0].data, "reason"), "no_rule");
  EXPECT_EQ(Str(deny[0].data, "rule"), "");
  EXPECT_EQ(Str(deny[0].data, "why"), "evil.test not allowed (ward run -n evil.test)");
  EXPECT_EQ(Str(deny[0].data, "allow_with"), "-n evil.test");
  // Denied on the name: it was never resolved.
  EXPECT_TRUE(proxy_->resolver().asked().empty());
  EXPECT_EQ(proxy_->stats().denied, 1u);
}

TEST_F(ProxyE2eTest, DenyRuleIsNamedInAnswerAndEvent) {
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect("Blocked.TEST.:443")));
  HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 403);
  // On purpose: no flag is offered.
  EXPECT_EQ(r.body,
            "ward: blocked.test refused by network.deny rule 'blocked.test' (test.toml:6 "
            "(network.deny))\nsee: ward why blocked.test\n");
  auto deny = proxy_->events("net.deny");
  ASSERT_EQ(deny.size(), 1u);
  EXPECT_EQ(Str(deny[0].data, "host"), "blocked.test");
  EXPECT_EQ(Str(deny[0].data, "reason"), "deny_rule");
  EXPECT_EQ(Str(deny[0].data, "rule"), "blocked.test");
  EXPECT_EQ(Str(deny[0].data, "origin"), "test.toml:6 (network.deny)");
  EXPECT_EQ(Str(deny[0].data, "allow_with"), "");
}

TEST_F(ProxyE2eTest, SniMismatchIsClosedBeforeAnyByteGoesUpstream) {
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect(TlsAuthority())));
  EXPECT_EQ(HeadEnd(fd.get()), "HTTP/1.1 200 Connection established\r\n\r\n");
  EXPECT_EQ(testing::TlsGet(fd.get(), "evil.test", "evil.test"), std::nullopt);
  ASSERT_TRUE(proxy_->WaitForEvents("net.deny", 1));
  auto deny = proxy_->events("net.deny");
  ASSERT_EQ(deny.size(), 1u);
  EXPECT_EQ(Str(deny[0].data, "reason"), "sni_mismatch");
  EXPECT_EQ(Str(deny[0].data, "sni"), "evil.test");
  EXPECT_EQ(Str(deny[0].data, "host"), "tls.test");
  EXPECT_EQ(tls_.handshakes(), 0u);
  fd.reset();
  // The connection made for it carries no net.allow: one event per refused attempt.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(proxy_->events("net.allow").empty());
}

TEST_F(ProxyE2eTest, TlsPortsNeedAClientHelloNamingTheHostBeforeConnecting) {
  ProxyOptions options;
  options.tls_ports = {tls_.port()};
  Start(options);
  {  // No SNI.
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(SendAll(fd.get(), Connect(TlsAuthority())));
    EXPECT_EQ(HeadEnd(fd.get()), "HTTP/1.1 200 Connection established\r\n\r\n");
    EXPECT_EQ(testing::TlsGet(fd.get(), "", "tls.test"), std::nullopt);
  }
  {  // Not TLS at all.
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(SendAll(fd.get(), Connect(TlsAuthority())));
    EXPECT_EQ(HeadEnd(fd.get()), "HTTP/1.1 200 Connection established\r\n\r\n");
    ASSERT_TRUE(SendAll(fd.get(), "GET / HTTP/1.1\r\nHost: tls.test\r\n\r\n"));
    EXPECT_TRUE(WaitClosed(fd.get()));
  }
  ASSERT_TRUE(proxy_->WaitForEvents("net.deny", 2));
  auto deny = proxy_->events("net.deny");
  ASSERT_EQ(deny.size(), 2u);
  EXPECT_EQ(Str(deny[0].data, "reason"), "no_sni");
  EXPECT_EQ(Str(deny[1].data, "reason"), "not_tls");
  // Peeked before connecting: the server never saw either attempt.
  EXPECT_EQ(tls_.accepted(), 0u);
  {  // The right name passes and is replayed upstream.
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(SendAll(fd.get(), Connect(TlsAuthority())));
    EXPECT_EQ(HeadEnd(fd.get()), "HTTP/1.1 200 Connection established\r\n\r\n");
    EXPECT_EQ(testing::TlsGet(fd.get(), "TLS.test", "tls.test"), "hello over tls");
  }
  EXPECT_EQ(tls_.accepted(), 1u);
}

TEST_F(ProxyE2eTest, TlsPeekTimesOut) {
  ProxyOptions options;
  options.tls_ports = {tls_.port()};
  options.tls_peek_timeout = std::chrono::milliseconds(200);
  Start(options);
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect(TlsAuthority())));
  EXPECT_EQ(HeadEnd(fd.get()), "HTTP/1.1 200 Connection established\r\n\r\n");
  ASSERT_TRUE(SendAll(fd.get(), Bytes({0x16, 3, 1})));  // a ClientHello that never completes
  EXPECT_TRUE(WaitClosed(fd.get(), 3000));
  EXPECT_EQ(tls_.accepted(), 0u);
  EXPECT_TRUE(proxy_->events("net.deny").empty());
}

TEST_F(ProxyE2eTest, NonPublicAddressOfAnAllowedNameNeedsAnAddressRule) {
  const std::string target = "private.test:" + std::to_string(origin_.port());
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(SendAll(fd.get(), Connect(target)));
    HttpResult r = RecvHttpResponse(fd.get());
    EXPECT_EQ(r.status, 403);
    EXPECT_NE(r.body.find("127.0.0.3 is loopback"), std::string::npos) << r.body;
  }
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(
        SendAll(fd.get(), "GET http://" + target + "/ HTTP/1.1\r\nHost: " + target + "\r\n\r\n"));
    EXPECT_EQ(RecvHttpResponse(fd.get()).status, 403);
  }
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    EXPECT_EQ(Socks(fd.get(), SocksDomain("private.test", origin_.port())), 2);
  }
  auto deny = proxy_->events("net.deny");
  ASSERT_EQ(deny.size(), 3u);
  for (const Event& e : deny) {
    EXPECT_EQ(Str(e.data, "reason"), "address");
    EXPECT_EQ(Str(e.data, "addr"), "127.0.0.3");
    EXPECT_EQ(Str(e.data, "host"), "private.test");
  }
  EXPECT_EQ(origin_.connections(), 0u);
}

TEST_F(ProxyE2eTest, IpLiteralsNeedAnAddressRuleEvenDisguised) {
  for (std::string host : {"127.0.0.2", "0x7f.0.0.2", "2130706434", "[::1]"}) {
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(SendAll(fd.get(), Connect(host + ":" + std::to_string(origin_.port()))));
    HttpResult r = RecvHttpResponse(fd.get());
    EXPECT_EQ(r.status, 403) << host;
  }
  auto deny = proxy_->events("net.deny");
  ASSERT_EQ(deny.size(), 4u);
  EXPECT_EQ(Str(deny[1].data, "host"), "127.0.0.2");
  EXPECT_EQ(Str(deny[3].data, "host"), "::1");
  EXPECT_TRUE(proxy_->resolver().asked().empty());
  EXPECT_EQ(origin_.connections(), 0u);
  // The allowed address itself works, spelled any way.
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect("2130706433:" + std::to_string(origin_.port()))));
  EXPECT_EQ(HeadEnd(fd.get()), "HTTP/1.1 200 Connection established\r\n\r\n");
  ASSERT_TRUE(SendAll(fd.get(), "GET /x HTTP/1.1\r\nHost: a\r\n\r\n"));
  EXPECT_EQ(RecvHttpResponse(fd.get()).body, "ok /x");
}

TEST_F(ProxyE2eTest, UpstreamFailuresAnswer502And504) {
  testing::Listener closed = testing::ListenTcp();
  uint16_t dead_port = closed.port;
  closed.fd.reset();
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(SendAll(fd.get(), Connect("origin.test:" + std::to_string(dead_port))));
    HttpResult r = RecvHttpResponse(fd.get());
    EXPECT_EQ(r.status, 502);
    EXPECT_NE(r.body.find("refused"), std::string::npos) << r.body;
  }
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    EXPECT_EQ(Socks(fd.get(), SocksDomain("origin.test", dead_port)), 5);
  }
  {  // Allowed, but the name does not exist.
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(SendAll(fd.get(), Connect("missing.test:80")));
    EXPECT_EQ(RecvHttpResponse(fd.get()).status, 502);
  }
  auto errors = proxy_->events("net.error");
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(Str(errors[0].data, "reason"), "connect");
  EXPECT_EQ(Str(errors[2].data, "reason"), "resolve");
  EXPECT_TRUE(proxy_->events("net.deny").empty());
}

TEST_F(ProxyE2eTest, ResolutionThatNeverAnswersTimesOut) {
  ProxyOptions options;
  options.connect_timeout = std::chrono::milliseconds(200);
  Start(options);
  proxy_->resolver().SetSilent("missing.test");
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), Connect("missing.test:443")));
  HttpResult r = RecvHttpResponse(fd.get(), false, nullptr, 3000);
  EXPECT_EQ(r.status, 504);
}

// ------------------------------------------------------------------ forwarding

TEST_F(ProxyE2eTest, ForwardsRequestsWithBodiesOnOneKeepAliveConnection) {
  const std::string base = "http://" + OriginAuthority();
  const std::string host = "Host: " + OriginAuthority() + "\r\n";
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), "GET " + base + "/hello?q=1 HTTP/1.1\r\n" + host +
                                    "Proxy-Connection: keep-alive\r\nProxy-Authorization: "
                                    "Basic c2VjcmV0\r\nProxy-Foo: bar\r\nX-Keep: yes\r\n\r\n"));
  HttpResult r1 = RecvHttpResponse(fd.get());
  EXPECT_EQ(r1.status, 200);
  EXPECT_EQ(r1.body, "ok /hello?q=1");

  ASSERT_TRUE(SendAll(
      fd.get(), "POST " + base + "/echo HTTP/1.1\r\n" + host + "Content-Length: 3\r\n\r\nabc"));
  HttpResult r2 = RecvHttpResponse(fd.get());
  EXPECT_EQ(r2.body, "abc");

  ASSERT_TRUE(SendAll(fd.get(), "POST " + base + "/echo HTTP/1.1\r\n" + host +
                                    "Transfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n4\r\ndefg"
                                    "\r\n0\r\nX-Trailer: t\r\n\r\n"));
  HttpResult r3 = RecvHttpResponse(fd.get());
  EXPECT_EQ(r3.body, "abcdefg");

  ASSERT_TRUE(SendAll(fd.get(), "GET " + base + "/chunked HTTP/1.1\r\n" + host + "\r\n"));
  HttpResult r4 = RecvHttpResponse(fd.get());
  EXPECT_EQ(r4.body, "hello world");
  EXPECT_EQ(r4.Header("Transfer-Encoding"), "chunked");

  ASSERT_TRUE(SendAll(fd.get(), "GET " + base + "/interim HTTP/1.1\r\n" + host + "\r\n"));
  HttpResult r5 = RecvHttpResponse(fd.get());
  EXPECT_EQ(r5.interim, std::vector<int>{103});
  EXPECT_EQ(r5.body, "ok");

  // One upstream connection served them all.
  EXPECT_FALSE(r1.Header("X-Conn").empty());
  for (const HttpResult* r : {&r2, &r3, &r4, &r5})
    EXPECT_EQ(r->Header("X-Conn"), r1.Header("X-Conn"));

  // A response delimited by close ends the client connection too.
  ASSERT_TRUE(SendAll(fd.get(), "GET " + base + "/close HTTP/1.1\r\n" + host + "\r\n"));
  HttpResult r6 = RecvHttpResponse(fd.get());
  EXPECT_EQ(r6.body, "until close");
  EXPECT_EQ(r6.Header("Connection"), "close");
  EXPECT_TRUE(WaitClosed(fd.get()));

  auto reqs = origin_.requests();
  ASSERT_EQ(reqs.size(), 6u);
  EXPECT_EQ(reqs[0].target, "/hello?q=1");  // origin-form upstream
  EXPECT_EQ(reqs[0].head.find("Proxy-"), std::string::npos) << reqs[0].head;
  EXPECT_NE(reqs[0].head.find("X-Keep: yes"), std::string::npos);
  EXPECT_NE(reqs[1].head.find("Content-Length: 3"), std::string::npos);
  // Re-framed by the proxy: chunked again, without the client's extensions or trailers.
  EXPECT_NE(reqs[2].head.find("Transfer-Encoding: chunked"), std::string::npos);
  EXPECT_EQ(reqs[2].head.find("X-Trailer"), std::string::npos);
  EXPECT_EQ(reqs[2].body, "abcdefg");

  ASSERT_TRUE(proxy_->WaitForEvents("net.allow", 1));
  auto allow = proxy_->events("net.allow");
  ASSERT_EQ(allow.size(), 1u);
  EXPECT_EQ(Str(allow[0].data, "via"), "http");
  EXPECT_EQ(allow[0].data["requests"], 6);
  EXPECT_EQ(proxy_->stats().allowed, 6u);
}

TEST_F(ProxyE2eTest, PipelinedRequestsAreAnsweredInOrder) {
  const std::string base = "http://" + OriginAuthority();
  const std::string host = "Host: " + OriginAuthority() + "\r\n";
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), "GET " + base + "/a HTTP/1.1\r\n" + host + "\r\nPOST " + base +
                                    "/echo HTTP/1.1\r\n" + host +
                                    "Content-Length: 2\r\n\r\nxyGET " + base + "/c HTTP/1.1\r\n" +
                                    host + "Connection: close\r\n\r\n"));
  std::string rest;
  HttpResult a = RecvHttpResponse(fd.get(), false, &rest);
  ASSERT_TRUE(a.complete);
  EXPECT_EQ(a.body, "ok /a");
  // What RecvHttpResponse read past the first response is the start of the next one.
  std::string all = rest + RecvUntil(
                               fd.get(), [](const std::string&) { return false; }, 3000);
  EXPECT_NE(all.find("\r\n\r\nxy"), std::string::npos) << all;
  EXPECT_NE(all.find("ok /c"), std::string::npos) << all;
  EXPECT_LT(all.find("xy"), all.find("ok /c"));
}

TEST_F(ProxyE2eTest, UpstreamIsReusedOnlyForTheSameHostAndPort) {
  const std::string by_name = "origin.test:" + std::to_string(origin_.port());
  const std::string by_addr = "127.0.0.1:" + std::to_string(origin_.port());
  UniqueFd fd = ConnectTo(proxy_->port());
  std::vector<std::string> conns;
  for (const std::string& a : {by_name, by_name, by_addr, by_name}) {
    ASSERT_TRUE(SendAll(fd.get(), "GET http://" + a + "/r HTTP/1.1\r\nHost: " + a + "\r\n\r\n"));
    HttpResult r = RecvHttpResponse(fd.get());
    ASSERT_EQ(r.status, 200);
    conns.push_back(r.Header("X-Conn"));
  }
  EXPECT_EQ(conns[0], conns[1]);
  EXPECT_NE(conns[1], conns[2]);
  EXPECT_NE(conns[2], conns[3]);
  EXPECT_EQ(origin_.connections(), 3u);
}

TEST_F(ProxyE2eTest, HostHeaderMustMatchTheTarget) {
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(),
                      "GET http://" + OriginAuthority() + "/ HTTP/1.1\r\nHost: evil.test\r\n\r\n"));
  HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("does not match"), std::string::npos) << r.body;
  auto deny = proxy_->events("net.deny");
  ASSERT_EQ(deny.size(), 1u);
  EXPECT_EQ(Str(deny[0].data, "reason"), "host_mismatch");
  EXPECT_EQ(Str(deny[0].data, "host_header"), "'evil.test'");
  EXPECT_TRUE(origin_.requests().empty());
}

TEST_F(ProxyE2eTest, HttpsAndOriginFormTargetsAreRefused) {
  for (const std::string& target :
       {std::string("https://") + OriginAuthority() + "/", std::string("/relative")}) {
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(SendAll(fd.get(),
                        "GET " + target + " HTTP/1.1\r\nHost: " + OriginAuthority() + "\r\n\r\n"));
    HttpResult r = RecvHttpResponse(fd.get());
    EXPECT_EQ(r.status, 400) << target;
  }
  EXPECT_TRUE(origin_.requests().empty());
  EXPECT_EQ(origin_.connections(), 0u);
}

TEST_F(ProxyE2eTest, ForwardedRequestToDeniedHostIs403) {
  UniqueFd fd = ConnectTo(proxy_->port());
  ASSERT_TRUE(SendAll(fd.get(), "GET http://evil.test/x HTTP/1.1\r\nHost: evil.test\r\n\r\n"));
  HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("ward: evil.test not allowed (ward run -n evil.test)\nsee: ward why evil.test\n"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(proxy_->events("net.deny").size(), 1u);
}

// ------------------------------------------------------------------ SOCKS5

TEST_F(ProxyE2eTest, Socks5ConnectByDomainAndByAddress) {
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_EQ(Socks(fd.get(), SocksDomain("ORIGIN.test", origin_.port())), 0);
    ASSERT_TRUE(SendAll(fd.get(), "GET /s5 HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_EQ(RecvHttpResponse(fd.get()).body, "ok /s5");
  }
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_EQ(Socks(fd.get(), SocksV4(127, 0, 0, 1, origin_.port())), 0);
    ASSERT_TRUE(SendAll(fd.get(), "GET /s5ip HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_EQ(RecvHttpResponse(fd.get()).body, "ok /s5ip");
  }
  {  // IPv6 address type: ::ffff:127.0.0.1 is the allowed 127.0.0.1.
    UniqueFd fd = ConnectTo(proxy_->port());
    std::string req =
        Bytes({5, 1, 0, 4}) + std::string(10, '\0') + Bytes({0xff, 0xff, 127, 0, 0, 1});
    req += static_cast<char>(origin_.port() >> 8);
    req += static_cast<char>(origin_.port() & 0xff);
    ASSERT_EQ(Socks(fd.get(), req), 0);
    ASSERT_TRUE(SendAll(fd.get(), "GET /s5v6 HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_EQ(RecvHttpResponse(fd.get()).body, "ok /s5v6");
  }
  // One event per tunnel as it ends; tunnels may end in any order.
  ASSERT_TRUE(proxy_->WaitForEvents("net.allow", 3));
  auto allow = proxy_->events("net.allow");
  std::multiset<std::string> hosts;
  for (const auto& e : allow) {
    EXPECT_EQ(Str(e.data, "via"), "socks5");
    EXPECT_EQ(Str(e.data, "addr"), "127.0.0.1");
    hosts.insert(Str(e.data, "host"));
  }
  EXPECT_EQ(hosts.count("origin.test"), 1u);
  EXPECT_GE(hosts.count("127.0.0.1"), 1u);
}

TEST_F(ProxyE2eTest, Socks5DenialsAndUnsupportedCommands) {
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    EXPECT_EQ(Socks(fd.get(), SocksDomain("evil.test", 443)), 2);
  }
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    EXPECT_EQ(Socks(fd.get(), SocksV4(10, 0, 0, 1, 443)), 2);
  }
  {  // IPv6 literal without a rule.
    UniqueFd fd = ConnectTo(proxy_->port());
    std::string req = Bytes({5, 1, 0, 4});
    req += std::string(15, '\0') + "\x01";
    req += Bytes({0, 80});
    EXPECT_EQ(Socks(fd.get(), req), 2);
  }
  for (int cmd : {2, 3}) {  // BIND, UDP ASSOCIATE
    UniqueFd fd = ConnectTo(proxy_->port());
    EXPECT_EQ(Socks(fd.get(), SocksDomain("origin.test", origin_.port(), cmd)), 7);
  }
  {  // Only "no authentication" is offered by us.
    UniqueFd fd = ConnectTo(proxy_->port());
    ASSERT_TRUE(SendAll(fd.get(), Bytes({5, 1, 2})));
    EXPECT_EQ(RecvExactly(fd.get(), 2), Bytes({5, 0xff}));
    EXPECT_TRUE(WaitClosed(fd.get()));
  }
  auto deny = proxy_->events("net.deny");
  ASSERT_EQ(deny.size(), 3u);
  EXPECT_EQ(Str(deny[0].data, "via"), "socks5");
  EXPECT_EQ(Str(deny[2].data, "host"), "::1");
  EXPECT_EQ(origin_.connections(), 0u);
}

// ------------------------------------------------------------------ curl as the client

TEST_F(ProxyE2eTest, CurlThroughConnectPlainHttpAndSocks5) {
  if (!testing::HaveCurl()) GTEST_SKIP() << "curl is not installed";
  auto https = Curl({"-x", ProxyUrl(), "-k", "https://" + TlsAuthority() + "/"});
  EXPECT_EQ(https.exit_code, 0) << https.err;
  EXPECT_EQ(https.out, "hello over tls");

  auto plain = Curl({"-x", ProxyUrl(), "http://" + OriginAuthority() + "/curl"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, "ok /curl");

  auto post =
      Curl({"-x", ProxyUrl(), "--data-binary", "posted", "http://" + OriginAuthority() + "/echo"});
  EXPECT_EQ(post.exit_code, 0) << post.err;
  EXPECT_EQ(post.out, "posted");

  auto tunnel = Curl({"-x", ProxyUrl(), "-p", "http://" + OriginAuthority() + "/tunnelled"});
  EXPECT_EQ(tunnel.exit_code, 0) << tunnel.err;
  EXPECT_EQ(tunnel.out, "ok /tunnelled");

  auto s5h = Curl({"--socks5-hostname", "127.0.0.1:" + std::to_string(proxy_->port()),
                   "http://" + OriginAuthority() + "/s5h"});
  EXPECT_EQ(s5h.exit_code, 0) << s5h.err;
  EXPECT_EQ(s5h.out, "ok /s5h");

  auto s5 = Curl({"--socks5", "127.0.0.1:" + std::to_string(proxy_->port()),
                  "http://127.0.0.1:" + std::to_string(origin_.port()) + "/s5"});
  EXPECT_EQ(s5.exit_code, 0) << s5.err;
  EXPECT_EQ(s5.out, "ok /s5");

  EXPECT_TRUE(proxy_->events("net.deny").empty());
}

TEST_F(ProxyE2eTest, CurlLargeUploadWithExpectContinue) {
  if (!testing::HaveCurl()) GTEST_SKIP() << "curl is not installed";
  std::string path = ::testing::TempDir() + "/ward_proxy_upload.bin";
  {
    std::string data(3 << 20, '\0');
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('A' + i % 23);
    FILE* f = fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    fwrite(data.data(), 1, data.size(), f);
    fclose(f);
  }
  auto r = Curl({"-x", ProxyUrl(), "-H", "Expect: 100-continue", "--data-binary", "@" + path, "-o",
                 "/dev/null", "-w", "%{http_code} %{size_download}",
                 "http://" + OriginAuthority() + "/echo"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "200 " + std::to_string(3 << 20));
  auto reqs = origin_.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].body.size(), size_t{3} << 20);
  EXPECT_EQ(reqs[0].head.find("Expect"), std::string::npos);
  std::remove(path.c_str());
}

TEST_F(ProxyE2eTest, CurlIsDeniedCleanly) {
  if (!testing::HaveCurl()) GTEST_SKIP() << "curl is not installed";
  auto https = Curl({"-x", ProxyUrl(), "-k", "https://evil.test/"});
  EXPECT_NE(https.exit_code, 0);
  EXPECT_NE(https.err.find("403"), std::string::npos) << https.err;

  auto plain = Curl({"-x", ProxyUrl(), "http://evil.test/"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;  // an HTTP answer, not a transport error
  EXPECT_NE(plain.out.find("ward why evil.test\n"), std::string::npos) << plain.out;

  auto s5 = Curl(
      {"--socks5-hostname", "127.0.0.1:" + std::to_string(proxy_->port()), "http://evil.test/"});
  EXPECT_NE(s5.exit_code, 0);
  EXPECT_EQ(proxy_->events("net.deny").size(), 3u);
}

}  // namespace
}  // namespace ward::net
