// The credential broker end to end on loopback: a test HTTPS upstream (its own CA, given as
// --upstream-ca) behind names resolved to 127.0.0.1, real clients (curl, Python's urllib,
// Node's http/https) through a reverse-proxy route and through TLS interception, leaks refused
// and recorded, upstream certificates really verified. After every test: no event contains a
// real secret.
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <cctype>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "credentials_test_util.h"
#include "net/broker/credential_broker.h"
#include "net/broker/setup.h"
#include "net/dns_stub.h"
#include "net/tls_upstream.h"
#include "proxy_test_util.h"

namespace ward::net {
namespace {

using policy::CredentialInject;
using testing::ConnectTo;
using testing::Str;
using testing::EventsText;
using testing::HaveProgram;
using testing::Hosts;
using testing::HttpResult;
using testing::HttpsUpstream;
using testing::Ip;
using testing::MakeRules;
using testing::OriginServer;
using testing::ProxyHarness;
using testing::RecvHttpResponse;
using testing::RecvUntil;
using testing::RunWithEnv;
using testing::SendAll;
using testing::TempDir;
using testing::TestPki;
using testing::UpstreamRequest;

constexpr char kSecret[] = "sk-ant-api03-REALsecretREALsecretREALsecretREALsecret-0123456789";
constexpr char kGithubSecret[] = "ghp_REALgithubSECRETrealGITHUBsecret0123";

// TLS from the test (a client inside the sandbox) over a socket that reached the proxy.
class TlsClient {
 public:
  TlsClient(int fd, const std::string& host, const std::string& ca_file) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    SSL_CTX_load_verify_file(ctx_, ca_file.c_str());
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd);
    SSL_set_tlsext_host_name(ssl_, host.c_str());
    SSL_set1_host(ssl_, host.c_str());
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ok_ = SSL_connect(ssl_) == 1;
    ERR_clear_error();
  }
  ~TlsClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
  }
  bool ok() const { return ok_; }
  bool Send(const std::string& s) {
    size_t n = 0;
    return SSL_write_ex(ssl_, s.data(), s.size(), &n) == 1 && n == s.size();
  }
  // One response with a Content-Length or chunked body.
  HttpResult Response() {
    HttpResult r;
    HttpResponseParser parser(false);
    HttpParse p;
    std::string rest;
    char buf[16384];
    while (p.need_more()) {
      size_t n = 0;
      if (SSL_read_ex(ssl_, buf, sizeof buf, &n) != 1) return r;
      p = parser.Feed(std::string_view(buf, n));
      if (p.done()) rest.assign(buf + p.consumed, n - p.consumed);
      if (p.error()) return r;
    }
    r.status = parser.head().status;
    for (const HttpHeader& h : parser.head().headers.entries()) {
      r.head += h.name + ": " + h.value + "\r\n";
    }
    const BodyFraming& f = parser.head().body;
    if (f.kind == BodyKind::kContentLength) {
      while (rest.size() < f.length) {
        size_t n = 0;
        if (SSL_read_ex(ssl_, buf, sizeof buf, &n) != 1) return r;
        rest.append(buf, n);
      }
      r.body = rest.substr(0, f.length);
    } else if (f.kind == BodyKind::kChunked) {
      ChunkedDecoder dec;
      HttpParse c = dec.Feed(rest, &r.body);
      while (c.need_more()) {
        size_t n = 0;
        if (SSL_read_ex(ssl_, buf, sizeof buf, &n) != 1) return r;
        c = dec.Feed(std::string_view(buf, n), &r.body);
      }
    }
    r.complete = true;
    return r;
  }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  bool ok_ = false;
};

struct Config {
  bool upstream_ca = true;
  std::shared_ptr<SSL_CTX> api_cert;  // replaces the api upstream's certificate
};

class CredentialsE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_ = std::make_unique<HttpsUpstream>(pki_.ServerFor("api.test"));
    other_ = std::make_unique<HttpsUpstream>(pki_.ServerFor("other.test"));
    Start();
  }

  void TearDown() override {
    if (!proxy_) return;
    std::string text = EventsText(proxy_->events());
    EXPECT_EQ(text.find(kSecret), std::string::npos) << text;
    EXPECT_EQ(text.find(kGithubSecret), std::string::npos) << text;
    proxy_->StopAndJoin();
  }

  void Start(Config config = Config()) {
    if (proxy_) proxy_->StopAndJoin();
    proxy_.reset();
    if (config.api_cert) api_ = std::make_unique<HttpsUpstream>(config.api_cert);
    CredentialSpec a;
    a.name = "anthropic";
    a.secret = kSecret;
    a.hosts = Hosts({"api.test:" + std::to_string(api_->port())});
    a.inject = {CredentialInject::Kind::kHeader, "x-api-key", "{secret}"};
    a.route = "anthropic";
    CredentialSpec g;
    g.name = "github";
    g.secret = kGithubSecret;
    g.hosts = Hosts({"other.test:" + std::to_string(other_->port())});
    g.inject = {CredentialInject::Kind::kHeader, "Authorization", "Bearer {secret}"};
    BrokerOptions o;
    if (config.upstream_ca) o.upstream.extra_ca_files = {pki_.ca_file()};
    auto b = CredentialBroker::Create({a, g}, o);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    broker_ = std::move(b).value();
    phantom_ = broker_->credentials()[0].phantom;
    github_phantom_ = broker_->credentials()[1].phantom;
    ProxyOptions po;
    po.credentials = broker_.get();
    proxy_ = std::make_unique<ProxyHarness>(
        MakeRules({"api.test:*", "other.test:*", "plain.test:*", "127.0.0.1:*"}), po,
        std::map<std::string, std::vector<IpAddress>>{{"api.test", {Ip("127.0.0.1")}},
                                                      {"other.test", {Ip("127.0.0.1")}},
                                                      {"plain.test", {Ip("127.0.0.1")}}});
    auto bundle = MergedCaBundle(broker_->ca_pem(), FindSystemCaBundle());
    ASSERT_TRUE(bundle.ok());
    bundle_ = dir_.Write("bundle.pem", *bundle);
    session_ca_ = dir_.Write("session-ca.pem", broker_->ca_pem());
  }

  std::string ProxyUrl() const { return "http://127.0.0.1:" + std::to_string(proxy_->port()); }
  std::string RouteUrl(const std::string& path) const { return ProxyUrl() + "/anthropic" + path; }
  std::string ApiUrl(const std::string& path) const {
    return "https://api.test:" + std::to_string(api_->port()) + path;
  }
  std::string ApiAuthority() const { return "api.test:" + std::to_string(api_->port()); }
  std::string OtherAuthority() const { return "other.test:" + std::to_string(other_->port()); }
  // The environment the lead sets inside the sandbox for interception.
  std::map<std::string, std::string> InterceptEnv() const {
    return {{"HTTPS_PROXY", ProxyUrl()},
            {"https_proxy", ProxyUrl()},
            {"SSL_CERT_FILE", bundle_},
            {"REQUESTS_CA_BUNDLE", bundle_},
            {"NODE_EXTRA_CA_CERTS", bundle_},
            {"CURL_CA_BUNDLE", bundle_},
            {"KEY", phantom_}};
  }

  // The last request the api upstream received.
  UpstreamRequest LastApiRequest() {
    EXPECT_TRUE(api_->WaitRequests(1));
    auto reqs = api_->requests();
    return reqs.empty() ? UpstreamRequest{} : reqs.back();
  }

  std::vector<Event> Events(std::string_view type) { return proxy_->events(type); }
  // net.allow is written when the proxy sees the connection close, which can come after the
  // client has already exited.
  std::vector<Event> WaitEvents(std::string_view type) {
    for (int i = 0; i < 200; ++i) {
      auto events = Events(type);
      if (!events.empty()) return events;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return {};
  }

  // CONNECT through the proxy; the socket, after "200".
  UniqueFd Tunnel(const std::string& authority) {
    UniqueFd fd = ConnectTo(proxy_->port());
    SendAll(fd.get(), "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
    std::string head =
        RecvUntil(fd.get(), [](const std::string& b) { return b.find("\r\n\r\n") != b.npos; });
    EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
    return fd;
  }

  TestPki pki_;
  TempDir dir_;
  std::unique_ptr<HttpsUpstream> api_, other_;
  std::unique_ptr<CredentialBroker> broker_;
  std::unique_ptr<ProxyHarness> proxy_;
  std::string phantom_, github_phantom_, bundle_, session_ca_;
};

// ------------------------------------------------------------------ routes

TEST_F(CredentialsE2eTest, RouteWithCurl) {
  if (!HaveProgram("curl")) GTEST_SKIP() << "no curl";
  auto r = RunWithEnv({"curl", "-sS", "--max-time", "10", "-H", "x-api-key: " + phantom_, "-H",
                       "Content-Type: application/json", "-d", "{\"model\":\"m\"}",
                       RouteUrl("/v1/messages?beta=true")},
                      {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok POST /v1/messages?beta=true");
  UpstreamRequest req = LastApiRequest();
  EXPECT_EQ(req.headers.Get("x-api-key"), kSecret);
  EXPECT_EQ(req.headers.Get("Host"), ApiAuthority());
  EXPECT_EQ(req.body, "{\"model\":\"m\"}");
  EXPECT_EQ(req.head.find(phantom_), std::string::npos);
  auto uses = Events("credential.use");
  ASSERT_EQ(uses.size(), 1u);
  EXPECT_EQ(Str(uses[0].data, "credential"), "anthropic");
  EXPECT_EQ(Str(uses[0].data, "host"), "api.test");
  EXPECT_EQ(Str(uses[0].data, "via"), "route");
}

TEST_F(CredentialsE2eTest, RouteWithPythonUrllib) {
  if (!HaveProgram("python3")) GTEST_SKIP() << "no python3";
  const char* script =
      "import os, urllib.request\n"
      "req = urllib.request.Request(os.environ['URL'], headers={'x-api-key': os.environ['KEY']})\n"
      "r = urllib.request.urlopen(req, timeout=10)\n"
      "print(r.status, r.read().decode(), end='')\n";
  // With a proxy setting that exempts the loopback, as the lead sets it.
  auto r = RunWithEnv({"python3", "-c", script}, {{"URL", RouteUrl("/v1/py")},
                                                  {"KEY", phantom_},
                                                  {"HTTP_PROXY", ProxyUrl()},
                                                  {"NO_PROXY", "127.0.0.1,localhost"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "200 ok GET /v1/py");
  EXPECT_EQ(LastApiRequest().headers.Get("x-api-key"), kSecret);
}

TEST_F(CredentialsE2eTest, RouteWithNodeHttp) {
  if (!HaveProgram("node")) GTEST_SKIP() << "no node";
  const char* script =
      "const http = require('http');"
      "http.get(process.env.URL, {headers: {'x-api-key': process.env.KEY}}, (r) => {"
      "  let d = ''; r.on('data', (c) => d += c);"
      "  r.on('end', () => process.stdout.write(r.statusCode + ' ' + d));"
      "}).on('error', (e) => { console.error(e.message); process.exit(3); });";
  auto r = RunWithEnv({"node", "-e", script}, {{"URL", RouteUrl("/v1/node")}, {"KEY", phantom_}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "200 ok GET /v1/node");
  EXPECT_EQ(LastApiRequest().headers.Get("x-api-key"), kSecret);
}

TEST_F(CredentialsE2eTest, RouteAddsTheCredentialWhenTheClientSendsNone) {
  UniqueFd fd = ConnectTo(proxy_->port());
  SendAll(fd.get(), "GET /anthropic HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  HttpResult r = RecvHttpResponse(fd.get());
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok GET /");
  EXPECT_EQ(LastApiRequest().headers.Get("x-api-key"), kSecret);
}

TEST_F(CredentialsE2eTest, RouteThroughTheProxySettingAndUnknownRoutes) {
  // A client that sends the route URL to its proxy in absolute form: still the route.
  UniqueFd fd = ConnectTo(proxy_->port());
  SendAll(fd.get(), "GET " + RouteUrl("/abs") + " HTTP/1.1\r\nHost: 127.0.0.1:" +
                        std::to_string(proxy_->port()) + "\r\nx-api-key: " + phantom_ + "\r\n\r\n");
  HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok GET /abs");
  EXPECT_EQ(LastApiRequest().headers.Get("x-api-key"), kSecret);

  for (std::string target : {"/anthropicx/v1", "/github/v1", "/", "/%61nthropic/v1"}) {
    UniqueFd u = ConnectTo(proxy_->port());
    SendAll(u.get(), "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    HttpResult e = RecvHttpResponse(u.get());
    EXPECT_EQ(e.status, 400) << target;
  }
  EXPECT_EQ(api_->requests().size(), 1u);
}

TEST_F(CredentialsE2eTest, RouteStreamsEventsWithoutBuffering) {
  UniqueFd fd = ConnectTo(proxy_->port());
  SendAll(fd.get(),
          "GET /anthropic/sse HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: " + phantom_ + "\r\n\r\n");
  // The first event arrives while the upstream still holds the stream open.
  std::string got = RecvUntil(
      fd.get(), [](const std::string& b) { return b.find("data: first") != b.npos; }, 5000);
  ASSERT_NE(got.find("data: first"), std::string::npos) << got;
  EXPECT_EQ(got.find("data: second"), std::string::npos);
  EXPECT_NE(got.find("text/event-stream"), std::string::npos);
  api_->ReleaseStream();
  got += RecvUntil(fd.get(), [](const std::string& b) { return b.find("0\r\n\r\n") != b.npos; });
  EXPECT_NE(got.find("data: second"), std::string::npos) << got;
}

TEST_F(CredentialsE2eTest, ResponsesNeverCarryTheRealSecret) {
  UniqueFd fd = ConnectTo(proxy_->port());
  SendAll(fd.get(),
          "GET /anthropic/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: " + phantom_ + "\r\n\r\n");
  HttpResult r = RecvHttpResponse(fd.get());
  ASSERT_EQ(r.status, 200);
  // The upstream echoed what it received (the real secret); the client sees the phantom.
  EXPECT_EQ(r.body.find(kSecret), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("x-api-key: " + phantom_), std::string::npos) << r.body;
  EXPECT_EQ(LastApiRequest().headers.Get("x-api-key"), kSecret);
}

TEST_F(CredentialsE2eTest, RouteKeepsOneUpstreamConnectionAlive) {
  UniqueFd fd = ConnectTo(proxy_->port());
  for (int i = 0; i < 3; ++i) {
    SendAll(fd.get(), "GET /anthropic/n" + std::to_string(i) +
                          " HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: " + phantom_ + "\r\n\r\n");
    HttpResult r = RecvHttpResponse(fd.get());
    EXPECT_EQ(r.body, "ok GET /n" + std::to_string(i));
  }
  EXPECT_EQ(api_->handshakes(), 1u);
  EXPECT_EQ(Events("credential.use").size(), 3u);
}

// ------------------------------------------------------------------ interception

TEST_F(CredentialsE2eTest, InterceptWithCurl) {
  if (!HaveProgram("curl")) GTEST_SKIP() << "no curl";
  auto r = RunWithEnv(
      {"curl", "-sS", "--max-time", "10", "-H", "x-api-key: " + phantom_, ApiUrl("/v1/models")},
      InterceptEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok GET /v1/models");
  UpstreamRequest req = LastApiRequest();
  EXPECT_EQ(req.headers.Get("x-api-key"), kSecret);
  EXPECT_EQ(req.headers.Get("Host"), ApiAuthority());
  EXPECT_EQ(proxy_->stats().intercepted, 1u);
  auto uses = Events("credential.use");
  ASSERT_EQ(uses.size(), 1u);
  EXPECT_EQ(Str(uses[0].data, "via"), "intercept");
  auto allows = WaitEvents("net.allow");
  ASSERT_FALSE(allows.empty());
  EXPECT_EQ(Str(allows.back().data, "via"), "intercept");
}

TEST_F(CredentialsE2eTest, InterceptWithPythonUrllib) {
  if (!HaveProgram("python3")) GTEST_SKIP() << "no python3";
  const char* script =
      "import os, urllib.request\n"
      "req = urllib.request.Request(os.environ['URL'], data=b'{\"q\": 1}',\n"
      "                             headers={'x-api-key': os.environ['KEY']})\n"
      "r = urllib.request.urlopen(req, timeout=10)\n"
      "print(r.status, r.read().decode(), end='')\n";
  auto env = InterceptEnv();
  env["URL"] = ApiUrl("/v1/py");
  auto r = RunWithEnv({"python3", "-c", script}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "200 ok POST /v1/py");
  UpstreamRequest req = LastApiRequest();
  EXPECT_EQ(req.headers.Get("x-api-key"), kSecret);
  EXPECT_EQ(req.body, "{\"q\": 1}");
}

TEST_F(CredentialsE2eTest, InterceptWithNodeHttps) {
  if (!HaveProgram("node")) GTEST_SKIP() << "no node";
  // Node's https has no proxy support of its own: CONNECT with http, then https over it.
  const char* script =
      "const http = require('http'), https = require('https'), tls = require('tls');"
      "const host = process.env.HOST, port = +process.env.PORT;"
      "http.request({host: '127.0.0.1', port: +process.env.PROXY_PORT, method: 'CONNECT',"
      "              path: host + ':' + port}).on('connect', (res, socket) => {"
      "  if (res.statusCode !== 200) { console.error('CONNECT', res.statusCode); process.exit(2); }"
      "  https.request({host, port, path: '/v1/node', headers: {'x-api-key': process.env.KEY},"
      "                 createConnection: () => tls.connect({socket, servername: host})}, (r) => {"
      "    let d = ''; r.on('data', (c) => d += c);"
      "    r.on('end', () => { process.stdout.write(r.statusCode + ' ' + d); process.exit(0); });"
      "  }).on('error', (e) => { console.error(e.message); process.exit(3); }).end();"
      "}).on('error', (e) => { console.error(e.message); process.exit(4); }).end();";
  auto env = InterceptEnv();
  env["HOST"] = "api.test";
  env["PORT"] = std::to_string(api_->port());
  env["PROXY_PORT"] = std::to_string(proxy_->port());
  auto r = RunWithEnv({"node", "-e", script}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "200 ok GET /v1/node");
  EXPECT_EQ(LastApiRequest().headers.Get("x-api-key"), kSecret);
}

TEST_F(CredentialsE2eTest, InterceptedTunnelServesManyRequests) {
  UniqueFd fd = Tunnel(ApiAuthority());
  TlsClient tls(fd.get(), "api.test", session_ca_);
  ASSERT_TRUE(tls.ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(tls.Send("GET /k" + std::to_string(i) + " HTTP/1.1\r\nHost: " + ApiAuthority() +
                         "\r\n\r\n"));
    HttpResult r = tls.Response();
    ASSERT_TRUE(r.complete);
    EXPECT_EQ(r.body, "ok GET /k" + std::to_string(i));
  }
  // The credential was added (absent from the client's requests) each time, on one upstream
  // connection.
  auto reqs = api_->requests();
  ASSERT_EQ(reqs.size(), 3u);
  for (const auto& q : reqs) EXPECT_EQ(q.headers.Get("x-api-key"), kSecret);
  EXPECT_EQ(api_->handshakes(), 1u);
  // A Host header naming another host inside the tunnel is refused.
  ASSERT_TRUE(tls.Send("GET / HTTP/1.1\r\nHost: other.test\r\n\r\n"));
  HttpResult bad = tls.Response();
  EXPECT_EQ(bad.status, 403);
}

TEST_F(CredentialsE2eTest, ClientsThatDoNotTrustTheSessionCaGetNothing) {
  if (!HaveProgram("curl")) GTEST_SKIP() << "no curl";
  auto env = InterceptEnv();
  env.erase("SSL_CERT_FILE");
  env.erase("CURL_CA_BUNDLE");
  auto r = RunWithEnv(
      {"curl", "-sS", "--max-time", "10", "-H", "x-api-key: " + phantom_, ApiUrl("/v1/models")},
      env);
  EXPECT_EQ(r.exit_code, 60) << r.err;  // peer certificate cannot be authenticated
  EXPECT_TRUE(proxy_->WaitForEvents("net.error", 1));
  auto errors = Events("net.error");
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(Str(errors[0].data, "reason"), "intercept_handshake");
  EXPECT_TRUE(api_->requests().empty());
}

TEST_F(CredentialsE2eTest, InterceptRequiresTlsWithTheRightServerName) {
  {
    UniqueFd fd = Tunnel(ApiAuthority());
    SendAll(fd.get(), "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n");  // not TLS
    EXPECT_TRUE(testing::WaitClosed(fd.get()));
  }
  {
    UniqueFd fd = Tunnel(ApiAuthority());
    TlsClient tls(fd.get(), "other.test", session_ca_);  // SNI names another host
    EXPECT_FALSE(tls.ok());
  }
  EXPECT_TRUE(api_->requests().empty());
  EXPECT_EQ(proxy_->stats().intercepted, 0u);
}

TEST_F(CredentialsE2eTest, HostileClientsInsideAnInterceptedTunnel) {
  {
    // Malformed HTTP after a good handshake: 400 inside the tunnel.
    UniqueFd fd = Tunnel(ApiAuthority());
    TlsClient tls(fd.get(), "api.test", session_ca_);
    ASSERT_TRUE(tls.ok());
    ASSERT_TRUE(tls.Send("GET / HTTP/1.1\r\nHost: " + ApiAuthority() + "\r\nBad Header\r\n\r\n"));
    EXPECT_EQ(tls.Response().status, 400);
  }
  {
    // Oversized head: 431.
    UniqueFd fd = Tunnel(ApiAuthority());
    TlsClient tls(fd.get(), "api.test", session_ca_);
    ASSERT_TRUE(tls.ok());
    tls.Send("GET / HTTP/1.1\r\nHost: " + ApiAuthority() +
             "\r\nX-Big: " + std::string(100000, 'a') + "\r\n\r\n");
    EXPECT_EQ(tls.Response().status, 431);
  }
  {
    // Absolute-form and CONNECT inside the tunnel.
    UniqueFd fd = Tunnel(ApiAuthority());
    TlsClient tls(fd.get(), "api.test", session_ca_);
    ASSERT_TRUE(tls.ok());
    tls.Send("GET https://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n");
    EXPECT_EQ(tls.Response().status, 400);
    UniqueFd fd2 = Tunnel(ApiAuthority());
    TlsClient tls2(fd2.get(), "api.test", session_ca_);
    ASSERT_TRUE(tls2.ok());
    tls2.Send("CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n");
    EXPECT_EQ(tls2.Response().status, 400);
  }
  {
    // Half a ClientHello, then gone; and a ClientHello followed by junk records.
    UniqueFd fd = Tunnel(ApiAuthority());
    SendAll(fd.get(), std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11));
  }
  {
    UniqueFd fd = Tunnel(ApiAuthority());
    TlsClient tls(fd.get(), "api.test", session_ca_);
    ASSERT_TRUE(tls.ok());
    SendAll(fd.get(), std::string("\x17\x03\x03\x00\x20") + std::string(32, 'x'));
    EXPECT_TRUE(testing::WaitClosed(fd.get()));
  }
  EXPECT_TRUE(api_->requests().empty());
  EXPECT_TRUE(proxy_->WaitFor([](const EgressProxy::Stats& s) { return s.active == 0; }));
}

TEST_F(CredentialsE2eTest, StopEndsInterceptedConnections) {
  UniqueFd fd = Tunnel(ApiAuthority());
  TlsClient tls(fd.get(), "api.test", session_ca_);
  ASSERT_TRUE(tls.ok());
  ASSERT_TRUE(tls.Send("GET /sse HTTP/1.1\r\nHost: " + ApiAuthority() + "\r\n\r\n"));
  ASSERT_TRUE(api_->WaitRequests(1));
  EXPECT_EQ(proxy_->stats().active, 1u);
  proxy_->StopAndJoin();
  EXPECT_TRUE(testing::WaitClosed(fd.get()));
  api_->ReleaseStream();
  std::string text = EventsText(proxy_->events());
  EXPECT_EQ(text.find(kSecret), std::string::npos);
  proxy_.reset();
}

TEST_F(CredentialsE2eTest, SocksToACredentialHostIsInterceptedToo) {
  UniqueFd fd = ConnectTo(proxy_->port());
  std::string host = "api.test";
  std::string req = {5, 1, 0};
  SendAll(fd.get(), req);
  ASSERT_EQ(testing::RecvExactly(fd.get(), 2), std::string("\x05\x00", 2));
  std::string connect = {5, 1, 0, 3, static_cast<char>(host.size())};
  connect += host;
  connect += static_cast<char>(api_->port() >> 8);
  connect += static_cast<char>(api_->port() & 0xff);
  SendAll(fd.get(), connect);
  std::string rep = testing::RecvExactly(fd.get(), 10);
  ASSERT_EQ(rep.size(), 10u);
  ASSERT_EQ(rep[1], 0);
  TlsClient tls(fd.get(), "api.test", session_ca_);
  ASSERT_TRUE(tls.ok());
  ASSERT_TRUE(tls.Send("GET /socks HTTP/1.1\r\nHost: " + ApiAuthority() +
                       "\r\nx-api-key: " + phantom_ + "\r\n\r\n"));
  HttpResult r = tls.Response();
  EXPECT_EQ(r.body, "ok GET /socks");
  EXPECT_EQ(LastApiRequest().headers.Get("x-api-key"), kSecret);
}

TEST_F(CredentialsE2eTest, TunnelsToOtherHostsStayOpaque) {
  // plain.test is no credential's host: the proxy relays TLS it cannot read (the upstream's own
  // certificate reaches the client).
  UniqueFd fd = Tunnel("plain.test:" + std::to_string(api_->port()));
  TlsClient tls(fd.get(), "plain.test", pki_.ca_file());
  EXPECT_FALSE(tls.ok());  // api's certificate names api.test, not plain.test: not ours
  EXPECT_EQ(proxy_->stats().intercepted, 0u);
}

// ------------------------------------------------------------------ leaks

TEST_F(CredentialsE2eTest, PhantomToAnotherInterceptedHostIsRefused) {
  if (!HaveProgram("curl")) GTEST_SKIP() << "no curl";
  auto r = RunWithEnv({"curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}",
                       "-H", "x-api-key: " + phantom_, "https://" + OtherAuthority() + "/exfil"},
                      InterceptEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "403");
  EXPECT_TRUE(other_->requests().empty());
  auto leaks = Events("credential.leak_attempt");
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_EQ(Str(leaks[0].data, "credential"), "anthropic");
  EXPECT_EQ(Str(leaks[0].data, "host"), "other.test");
  EXPECT_EQ(Str(leaks[0].data, "where"), "header x-api-key");
  EXPECT_EQ(Str(leaks[0].data, "via"), "intercept");
  EXPECT_TRUE(Events("credential.use").empty());
  EXPECT_EQ(proxy_->stats().leak_attempts, 1u);
}

TEST_F(CredentialsE2eTest, PhantomOverPlainHttpIsRefused) {
  OriginServer origin;
  const std::string base = "http://plain.test:" + std::to_string(origin.port());
  struct Case {
    std::string request, where;
  };
  const std::vector<Case> cases = {
      {"GET " + base + "/x HTTP/1.1\r\nHost: plain.test:" + std::to_string(origin.port()) +
           "\r\nAuthorization: Bearer " + phantom_ + "\r\n\r\n",
       "header Authorization"},
      {"GET " + base + "/x?key=" + phantom_ +
           " HTTP/1.1\r\nHost: plain.test:" + std::to_string(origin.port()) + "\r\n\r\n",
       "url"},
      {"POST " + base + "/x HTTP/1.1\r\nHost: plain.test:" + std::to_string(origin.port()) +
           "\r\nContent-Length: " + std::to_string(phantom_.size() + 8) + "\r\n\r\n{\"k\": \"" +
           phantom_ + "\"",
       "body"},
  };
  for (const Case& c : cases) {
    UniqueFd fd = ConnectTo(proxy_->port());
    SendAll(fd.get(), c.request);
    HttpResult r = RecvHttpResponse(fd.get());
    EXPECT_EQ(r.status, 403) << c.where;
    EXPECT_NE(r.body.find("phantom value of credential anthropic"), std::string::npos);
  }
  auto leaks = Events("credential.leak_attempt");
  ASSERT_EQ(leaks.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(Str(leaks[i].data, "where"), cases[i].where);
    EXPECT_EQ(Str(leaks[i].data, "via"), "http");
  }
  // Headers and URLs are checked before anything leaves; a body leaks at most what came
  // before the phantom, and the origin never sees it.
  for (const auto& req : origin.requests()) {
    EXPECT_EQ(req.head.find(phantom_), std::string::npos);
    EXPECT_EQ(req.body.find(phantom_), std::string::npos);
  }
}

TEST_F(CredentialsE2eTest, CleartextToTheCredentialsOwnHostIsRefused) {
  UniqueFd fd = ConnectTo(proxy_->port());
  SendAll(fd.get(), "GET http://" + ApiAuthority() + "/v1 HTTP/1.1\r\nHost: " + ApiAuthority() +
                        "\r\nx-api-key: " + phantom_ + "\r\n\r\n");
  HttpResult r = RecvHttpResponse(fd.get());
  EXPECT_EQ(r.status, 403);
  auto leaks = Events("credential.leak_attempt");
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_EQ(Str(leaks[0].data, "host"), "api.test");
  EXPECT_TRUE(api_->requests().empty());
}

TEST_F(CredentialsE2eTest, PhantomInAConnectOrSocksTargetIsRefused) {
  // The phantom's random part cut into DNS labels (at most 63 bytes each).
  std::string key = broker_->credentials()[0].phantom_key;
  ASSERT_GT(key.size(), 30u);
  // A valid host name whatever the random characters are: cut where both neighbours are
  // letters or digits, and pad so no label starts or ends with '-' or '_'.
  auto labels = [&key](size_t near) {
    auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
    size_t cut = near;
    while (cut + 1 < key.size() && !(alnum(key[cut - 1]) && alnum(key[cut]))) ++cut;
    return "a" + key.substr(0, cut) + "." + key.substr(cut) + "z";
  };
  std::string label = labels(30);
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    std::string authority = label + ".plain.test:443";
    SendAll(fd.get(), "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
    HttpResult r = RecvHttpResponse(fd.get());
    EXPECT_EQ(r.status, 403);
  }
  {
    UniqueFd fd = ConnectTo(proxy_->port());
    SendAll(fd.get(), std::string("\x05\x01\x00", 3));
    ASSERT_EQ(testing::RecvExactly(fd.get(), 2), std::string("\x05\x00", 2));
    std::string host = labels(20) + ".plain.test";
    std::string connect = {5, 1, 0, 3, static_cast<char>(host.size())};
    connect += host + std::string("\x01\xbb", 2);
    SendAll(fd.get(), connect);
    std::string rep = testing::RecvExactly(fd.get(), 10);
    ASSERT_GE(rep.size(), 2u);
    EXPECT_EQ(rep[1], 2);  // not allowed by the ruleset
  }
  auto leaks = Events("credential.leak_attempt");
  ASSERT_EQ(leaks.size(), 2u);
  EXPECT_EQ(Str(leaks[0].data, "where"), "connect target");
  EXPECT_EQ(Str(leaks[1].data, "where"), "socks5 target");
  // Refused before resolution: the name never left the supervisor.
  for (const std::string& name : proxy_->resolver().asked()) {
    EXPECT_EQ(name.find(key.substr(0, 10)), std::string::npos) << name;
  }
}

std::string DnsQuery(uint16_t id, const std::string& name) {
  std::string m = {
      static_cast<char>(id >> 8), static_cast<char>(id & 0xff), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  size_t start = 0;
  while (start < name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    m += static_cast<char>(dot - start);
    m += name.substr(start, dot - start);
    start = dot + 1;
  }
  m += std::string("\0\0\x01\0\x01", 5);
  return m;
}

TEST_F(CredentialsE2eTest, PhantomInADnsNameIsRefusedAndRecordedOnce) {
  testing::LoopThread loop;
  testing::FakeResolver resolver(loop.ctx());
  resolver.Set("wild.test", {Ip("192.0.2.1")});
  MemoryEventSink sink;
  DnsStubOptions o;
  o.name_check = broker_->DnsNameCheck(&sink);
  // *.test is allowed: without the check, the name would be resolved (and so sent out).
  auto stub = std::make_unique<DnsStub>(loop.ctx(), MakeRules({"*.test"}), &resolver, &sink, o);
  testing::Listener udp = testing::BindUdp();
  uint16_t port = udp.port;
  ASSERT_TRUE(stub->ServeUdp(std::move(udp.fd)).ok());
  loop.Start();
  UniqueFd client(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(port);
  struct timeval tv = {5, 0};
  setsockopt(client.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  auto ask = [&](uint16_t id, const std::string& name) {
    std::string q = DnsQuery(id, name);
    sendto(client.get(), q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    char buf[512];
    ssize_t n = recv(client.get(), buf, sizeof buf, 0);
    return n >= 4 ? (buf[3] & 0x0f) : -1;  // the rcode
  };
  std::string key = broker_->credentials()[0].phantom_key;
  std::string name = key.substr(0, 30) + "." + key.substr(30) + ".wild.test";
  EXPECT_EQ(ask(1, name), 3);  // NXDOMAIN
  EXPECT_EQ(ask(2, name), 3);
  EXPECT_EQ(ask(3, "wild.test"), 0);
  loop.RunSync([&] { stub->Stop(); });
  stub.reset();
  loop.Join();
  auto events = sink.events();
  int leaks = 0;
  for (const Event& e : events) {
    if (e.type == "credential.leak_attempt") {
      ++leaks;
      EXPECT_EQ(Str(e.data, "where"), "dns");
      EXPECT_EQ(Str(e.data, "credential"), "anthropic");
    }
  }
  EXPECT_EQ(leaks, 1);
  for (const std::string& asked : resolver.asked()) EXPECT_EQ(asked, "wild.test");
}

// ------------------------------------------------------------------ upstream verification

TEST_F(CredentialsE2eTest, UpstreamCertificatesAreVerified) {
  struct Case {
    const char* what;
    bool upstream_ca;
    std::shared_ptr<SSL_CTX> cert;
    std::string expect;  // in the 502 body
  };
  std::vector<Case> cases;
  cases.push_back(Case{"self-signed", true, TestPki::SelfSigned("api.test"), "self-signed"});
  cases.push_back(Case{"no upstream CA", false, pki_.ServerFor("api.test"), "local issuer"});
  cases.push_back(Case{"wrong name", true, pki_.ServerFor("wrong.test"), "hostname mismatch"});
  for (const Case& c : cases) {
    Config config;
    config.upstream_ca = c.upstream_ca;
    config.api_cert = c.cert;
    Start(config);
    UniqueFd fd = ConnectTo(proxy_->port());
    SendAll(fd.get(),
            "GET /anthropic/v1 HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: " + phantom_ + "\r\n\r\n");
    HttpResult r = RecvHttpResponse(fd.get());
    EXPECT_EQ(r.status, 502) << c.what;
    EXPECT_NE(r.body.find(c.expect), std::string::npos) << c.what << ": " << r.body;
    EXPECT_TRUE(api_->requests().empty()) << c.what;
    auto errors = Events("net.error");
    ASSERT_FALSE(errors.empty()) << c.what;
    EXPECT_EQ(Str(errors.back().data, "reason"), "tls_upstream");
    EXPECT_TRUE(Events("net.allow").empty()) << c.what;
  }
  // The positive control: the same upstream CA given, the right name.
  Config good;
  good.api_cert = pki_.ServerFor("api.test");
  Start(good);
  UniqueFd fd = ConnectTo(proxy_->port());
  SendAll(fd.get(), "GET /anthropic/v1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(RecvHttpResponse(fd.get()).status, 200);
}

TEST_F(CredentialsE2eTest, InterceptedRequestsFailClosedOnABadUpstreamCertificate) {
  Config self_signed;
  self_signed.api_cert = TestPki::SelfSigned("api.test");
  Start(self_signed);
  UniqueFd fd = Tunnel(ApiAuthority());
  TlsClient tls(fd.get(), "api.test", session_ca_);
  ASSERT_TRUE(tls.ok());
  ASSERT_TRUE(tls.Send("GET / HTTP/1.1\r\nHost: " + ApiAuthority() + "\r\n\r\n"));
  HttpResult r = tls.Response();
  EXPECT_EQ(r.status, 502);
  EXPECT_NE(r.body.find("self-signed"), std::string::npos) << r.body;
  EXPECT_TRUE(api_->requests().empty());
}

}  // namespace
}  // namespace ward::net
