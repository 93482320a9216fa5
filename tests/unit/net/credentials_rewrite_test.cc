// The broker's pure decisions: where phantoms are replaced, where a credential is added, what
// counts as a leak (other hosts, cleartext, URLs, Basic auth, bodies, names), and masking of
// real secrets in responses.
#include <gtest/gtest.h>

#include <string>

#include "../libssl/without_openssl.h"
#include "credentials_test_util.h"
#include "net/broker/credential_broker.h"

namespace ward::net {
namespace {

using policy::CredentialInject;
using testing::Hosts;

constexpr char kAnthropicSecret[] = "sk-ant-api03-REALrealREALrealREALrealREALrealREALreal0123";
constexpr char kGithubSecret[] = "ghp_REALgithubREALgithubREALgithub0123";

Host Name(const std::string& n) { return Host{n, std::nullopt}; }

CredentialSpec Anthropic() {
  CredentialSpec s;
  s.name = "anthropic";
  s.secret = kAnthropicSecret;
  s.hosts = Hosts({"api.anthropic.com"});
  s.inject = {CredentialInject::Kind::kHeader, "x-api-key", "{secret}"};
  s.route = "anthropic";
  return s;
}

CredentialSpec Github() {
  CredentialSpec s;
  s.name = "github";
  s.secret = kGithubSecret;
  s.hosts = Hosts({"api.github.com", "*.githubusercontent.com"});
  s.inject = {CredentialInject::Kind::kHeader, "Authorization", "Bearer {secret}"};
  return s;
}

std::unique_ptr<CredentialBroker> Make(std::vector<CredentialSpec> specs) {
  BrokerOptions o;
  o.upstream.system_trust = false;
  auto b = CredentialBroker::Create(std::move(specs), o);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return b.ok() ? std::move(b).value() : nullptr;
}

class RewriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_ = Make({Anthropic(), Github()});
    ASSERT_NE(broker_, nullptr);
    anthropic_ = broker_->credentials()[0].phantom;
    github_ = broker_->credentials()[1].phantom;
  }
  CredentialBroker::Verdict Apply(const std::string& host, uint16_t port, bool tls, HttpHeaders& h,
                                  std::string& target) {
    return broker_->ApplyToRequest(Name(host), port, tls, h, target);
  }
  std::unique_ptr<CredentialBroker> broker_;
  std::string anthropic_, github_;
};

TEST_F(RewriteTest, PhantomsAreShapedAndDistinct) {
  EXPECT_TRUE(anthropic_.starts_with("sk-ant-api03-"));
  EXPECT_EQ(anthropic_.size(), std::string(kAnthropicSecret).size());
  EXPECT_TRUE(github_.starts_with("ghp_"));
  EXPECT_NE(anthropic_, kAnthropicSecret);
  EXPECT_EQ(broker_->FindRoute("anthropic"), &broker_->credentials()[0]);
  EXPECT_EQ(broker_->FindRoute("github"), nullptr);
  EXPECT_EQ(broker_->FindRoute(""), nullptr);
  EXPECT_EQ(broker_->credentials()[0].route_host.name, "api.anthropic.com");
  EXPECT_EQ(broker_->credentials()[0].route_port, 443);
}

TEST_F(RewriteTest, ReplacesThePhantomWhereTheClientPutIt) {
  HttpHeaders h;
  h.Add("Host", "api.anthropic.com");
  h.Add("x-api-key", anthropic_);
  std::string target = "/v1/messages";
  auto v = Apply("api.anthropic.com", 443, true, h, target);
  EXPECT_EQ(v.leaked, nullptr);
  ASSERT_EQ(v.used.size(), 1u);
  EXPECT_EQ(v.used[0]->name, "anthropic");
  EXPECT_EQ(h.Get("x-api-key"), kAnthropicSecret);
  EXPECT_EQ(h.Count("x-api-key"), 1u);
  EXPECT_EQ(target, "/v1/messages");

  // The client's own format around the phantom is kept ("token X" instead of "Bearer X").
  HttpHeaders g;
  g.Add("Authorization", "token " + github_);
  target = "/user";
  v = Apply("api.github.com", 443, true, g, target);
  EXPECT_EQ(v.leaked, nullptr);
  EXPECT_EQ(g.Get("Authorization"), "token " + std::string(kGithubSecret));
}

TEST_F(RewriteTest, AddsTheHeaderWhenAbsentAndLeavesTheClientsOwnValue) {
  HttpHeaders h;
  std::string target = "/repos";
  auto v = Apply("api.github.com", 443, true, h, target);
  ASSERT_EQ(v.used.size(), 1u);
  EXPECT_EQ(h.Get("Authorization"), "Bearer " + std::string(kGithubSecret));

  // A subdomain under a wildcard credential host.
  HttpHeaders w;
  v = Apply("raw.githubusercontent.com", 443, true, w, target);
  EXPECT_EQ(v.used.size(), 1u);
  EXPECT_TRUE(w.Get("Authorization").has_value());

  HttpHeaders own;
  own.Add("Authorization", "Bearer the-clients-own-token");
  v = Apply("api.github.com", 443, true, own, target);
  EXPECT_TRUE(v.used.empty());
  EXPECT_EQ(own.Get("Authorization"), "Bearer the-clients-own-token");
}

TEST_F(RewriteTest, NothingForOtherHostsOrPortsOrCleartext) {
  HttpHeaders h;
  std::string target = "/";
  EXPECT_TRUE(Apply("example.com", 443, true, h, target).used.empty());
  EXPECT_TRUE(Apply("api.github.com", 8443, true, h, target).used.empty());  // default: 80/443
  EXPECT_TRUE(Apply("api.github.com", 80, false, h, target).used.empty());
  EXPECT_TRUE(Apply("githubusercontent.com", 443, true, h, target).used.empty());
  EXPECT_TRUE(h.empty());
}

TEST_F(RewriteTest, PhantomToAnotherHostIsALeakAndNothingChanges) {
  HttpHeaders h;
  h.Add("x-api-key", anthropic_);
  std::string target = "/upload";
  auto v = Apply("api.github.com", 443, true, h, target);
  ASSERT_NE(v.leaked, nullptr);
  EXPECT_EQ(v.leaked->name, "anthropic");
  EXPECT_EQ(v.where, "header x-api-key");
  EXPECT_TRUE(v.used.empty());
  EXPECT_EQ(h.Get("x-api-key"), anthropic_);
  EXPECT_FALSE(h.Get("Authorization").has_value());  // not even github's own header added
}

TEST_F(RewriteTest, LeaksInUrlsEncodedUrlsBasicAuthAndHeaderNames) {
  struct Case {
    std::string target;
    std::function<void(HttpHeaders&)> headers;
    std::string where;
  };
  std::string encoded;
  for (char c : anthropic_) {
    static const char kHex[] = "0123456789ABCDEF";
    encoded += '%';
    encoded += kHex[static_cast<uint8_t>(c) >> 4];
    encoded += kHex[static_cast<uint8_t>(c) & 15];
  }
  const std::vector<Case> cases = {
      {"/collect?k=" + anthropic_, [](HttpHeaders&) {}, "url"},
      {"/" + anthropic_ + "/x", [](HttpHeaders&) {}, "url"},
      {"/c?k=" + encoded, [](HttpHeaders&) {}, "url"},
      {"/", [&](HttpHeaders& h) { h.Add("Cookie", "a=1; s=" + anthropic_); }, "header Cookie"},
      {"/",
       [&](HttpHeaders& h) { h.Add("Authorization", "Basic " + Base64Encode("u:" + anthropic_)); },
       "basic auth"},
      {"/", [&](HttpHeaders& h) { h.Add("X-" + anthropic_, "1"); }, "header name"},
  };
  for (const Case& c : cases) {
    HttpHeaders h;
    c.headers(h);
    std::string target = c.target;
    auto v = Apply("collector.example", 443, true, h, target);
    ASSERT_NE(v.leaked, nullptr) << c.target;
    EXPECT_EQ(v.where, c.where) << c.target;
    EXPECT_EQ(target, c.target);
  }
  // Proxy-* fields never leave the proxy: not a leak.
  HttpHeaders proxy_only;
  proxy_only.Add("Proxy-Authorization", "Bearer " + anthropic_);
  std::string target = "/";
  EXPECT_EQ(Apply("collector.example", 443, true, proxy_only, target).leaked, nullptr);
}

TEST_F(RewriteTest, OwnHostOverCleartextIsALeakToo) {
  HttpHeaders h;
  h.Add("Authorization", "Bearer " + github_);
  std::string target = "/user";
  auto v = Apply("api.github.com", 80, false, h, target);
  ASSERT_NE(v.leaked, nullptr);
  EXPECT_EQ(v.leaked->name, "github");
  EXPECT_EQ(h.Get("Authorization"), "Bearer " + github_);
}

TEST_F(RewriteTest, BasicAuthAndQueryInjection) {
  CredentialSpec basic;
  basic.name = "registry";
  basic.secret = "registry-password-0123456789abcdef";
  basic.hosts = Hosts({"registry.example"});
  basic.inject = {CredentialInject::Kind::kBasic, "", "deploy"};
  CredentialSpec query;
  query.name = "maps";
  query.secret = "AIzaREALmapsKEYrealMAPSkey0123456789abc";
  query.hosts = Hosts({"maps.example"});
  query.inject = {CredentialInject::Kind::kQuery, "key", "{secret}"};
  auto b = Make({basic, query});
  ASSERT_NE(b, nullptr);
  const std::string basic_phantom = b->credentials()[0].phantom;
  const std::string query_phantom = b->credentials()[1].phantom;

  // Added when absent.
  HttpHeaders h;
  std::string target = "/v2/";
  auto v = b->ApplyToRequest(Name("registry.example"), 443, true, h, target);
  ASSERT_EQ(v.used.size(), 1u);
  EXPECT_EQ(h.Get("Authorization"), "Basic " + Base64Encode("deploy:" + basic.secret));
  // The phantom as the password of the client's own Basic credentials: replaced inside.
  HttpHeaders h2;
  h2.Add("Authorization", "Basic " + Base64Encode("someone:" + basic_phantom));
  v = b->ApplyToRequest(Name("registry.example"), 443, true, h2, target);
  ASSERT_EQ(v.used.size(), 1u);
  EXPECT_EQ(h2.Get("Authorization"), "Basic " + Base64Encode("someone:" + basic.secret));

  HttpHeaders q;
  target = "/geocode?address=x#frag";
  v = b->ApplyToRequest(Name("maps.example"), 443, true, q, target);
  ASSERT_EQ(v.used.size(), 1u);
  EXPECT_EQ(target, "/geocode?address=x&key=" + query.secret + "#frag");
  target = "/geocode";
  b->ApplyToRequest(Name("maps.example"), 443, true, q, target);
  EXPECT_EQ(target, "/geocode?key=" + query.secret);
  target = "/geocode?key=" + query_phantom + "&z=1";
  v = b->ApplyToRequest(Name("maps.example"), 443, true, q, target);
  ASSERT_EQ(v.used.size(), 1u);
  EXPECT_EQ(target, "/geocode?key=" + query.secret + "&z=1");
  target = "/geocode?key=mine";
  v = b->ApplyToRequest(Name("maps.example"), 443, true, q, target);
  EXPECT_TRUE(v.used.empty());
  EXPECT_EQ(target, "/geocode?key=mine");
}

TEST_F(RewriteTest, SecretsNeedingEscapesAreEncodedInUrls) {
  CredentialSpec s;
  s.name = "odd";
  s.secret = "a&b=c d/e?f#g%";
  s.hosts = Hosts({"odd.example"});
  s.inject = {CredentialInject::Kind::kQuery, "token", "{secret}"};
  auto b = Make({s});
  ASSERT_NE(b, nullptr);
  HttpHeaders h;
  std::string target = "/x";
  b->ApplyToRequest(Name("odd.example"), 443, true, h, target);
  EXPECT_EQ(target, "/x?token=a%26b%3Dc%20d%2Fe%3Ff%23g%25");
}

TEST_F(RewriteTest, NamesCarryingAPhantomAreFoundLoosely) {
  const BrokeredCredential& a = broker_->credentials()[0];
  std::string key = a.phantom_key;
  ASSERT_GE(key.size(), 16u);
  // Cut into labels, upper-cased: still found.
  std::string upper;
  for (char c : key) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string dotted = upper.substr(0, 10) + "." + upper.substr(10) + ".evil.example";
  EXPECT_EQ(broker_->FindPhantomInName(dotted), &a);
  EXPECT_EQ(broker_->FindPhantomInName(anthropic_ + ".x"), &a);
  EXPECT_EQ(broker_->FindPhantomInName("api.anthropic.com"), nullptr);
  EXPECT_EQ(broker_->FindPhantomInName(key.substr(0, key.size() - 1)), nullptr);
  EXPECT_EQ(broker_->FindPhantomInName(""), nullptr);
}

TEST_F(RewriteTest, BodyScannerFindsPhantomsAcrossPieces) {
  CredentialBroker::BodyScanner other(*broker_, Name("paste.example"), 443, true);
  std::string body = "{\"text\": \"" + anthropic_ + "\"}";
  // Fed one byte at a time: found exactly when the last byte arrives.
  const BrokeredCredential* found = nullptr;
  size_t at = 0;
  for (size_t i = 0; i < body.size() && !found; ++i) {
    found = other.Feed(body.substr(i, 1));
    at = i;
  }
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->name, "anthropic");
  EXPECT_EQ(at, body.find(anthropic_) + anthropic_.size() - 1);

  // To its own host over TLS a phantom in a body is not a leak (and is not replaced).
  CredentialBroker::BodyScanner own(*broker_, Name("api.anthropic.com"), 443, true);
  EXPECT_EQ(own.Feed(body), nullptr);
  // But github's phantom there is.
  EXPECT_NE(own.Feed("x" + github_), nullptr);
  CredentialBroker::BodyScanner clear(*broker_, Name("api.anthropic.com"), 80, false);
  EXPECT_NE(clear.Feed(body), nullptr);
  CredentialBroker::BodyScanner quiet(*broker_, Name("paste.example"), 443, true);
  EXPECT_EQ(quiet.Feed(std::string(100000, 'a')), nullptr);
  EXPECT_EQ(quiet.Feed(""), nullptr);
}

TEST_F(RewriteTest, MaskerHidesSecretsInStreamsWithoutHoldingOrdinaryText) {
  CredentialBroker::Masker m(*broker_);
  ASSERT_FALSE(broker_->mask_table().empty());
  std::string secret = kAnthropicSecret;
  // Split inside the secret: the tail that could start it is held back, then replaced.
  std::string out = m.Process("echo: " + secret.substr(0, 20));
  EXPECT_EQ(out, "echo: ");
  out += m.Process(secret.substr(20) + " end\n");
  out += m.Flush();
  EXPECT_EQ(out, "echo: " + anthropic_ + " end\n");  // same length: the phantom
  // Ordinary text (an SSE event) is never held.
  EXPECT_EQ(m.Process("data: {\"x\": 1}\n\n"), "data: {\"x\": 1}\n\n");
  // A prefix that turns out not to be a secret comes out intact.
  EXPECT_EQ(m.Process("sk-ant"), "");
  out = m.Process("ipede;");
  EXPECT_EQ(out, "sk-antipede;");
  out = m.Process("trailing s");
  EXPECT_EQ(out + m.Flush(), "trailing s");
  EXPECT_EQ(broker_->MaskSecrets("a " + std::string(kGithubSecret) + " b"), "a " + github_ + " b");
}

TEST_F(RewriteTest, MaskerUsesXsWhenLengthsDiffer) {
  CredentialSpec s;
  s.name = "short";
  s.secret = "hunter2";
  s.hosts = Hosts({"x.example"});
  auto b = Make({s});
  ASSERT_NE(b, nullptr);
  EXPECT_NE(b->credentials()[0].phantom.size(), 7u);
  CredentialBroker::Masker m(*b);
  std::string out = m.Process("pw=hunter2;");
  EXPECT_EQ(out + m.Flush(), "pw=xxxxxxx;");
}

TEST(BrokerCreateTest, RejectsUnusableConfigurations) {
  auto bad = [](CredentialSpec s) {
    BrokerOptions o;
    o.upstream.system_trust = false;
    return CredentialBroker::Create({std::move(s)}, o);
  };
  CredentialSpec net = Github();
  net.hosts = Hosts({"10.0.0.0/8"});
  auto r = bad(net);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not to a whole network"), std::string::npos);
  CredentialSpec wild = Github();
  wild.hosts = Hosts({"*.github.com"});
  wild.route = "gh";
  r = bad(wild);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a wildcard"), std::string::npos);
  CredentialSpec crlf = Github();
  crlf.secret = "abc\r\nX-Injected: 1";
  EXPECT_FALSE(bad(crlf).ok());
  CredentialSpec nohosts = Github();
  nohosts.hosts.clear();
  EXPECT_FALSE(bad(nohosts).ok());
  CredentialSpec badhost = Github();
  badhost.hosts = Hosts({"exa mple.com"});
  EXPECT_FALSE(bad(badhost).ok());
  CredentialSpec weak = Github();
  weak.phantom = "short";
  EXPECT_FALSE(bad(weak).ok());
  BrokerOptions o;
  o.upstream.system_trust = false;
  EXPECT_FALSE(CredentialBroker::Create({Github(), Github()}, o).ok());
  CredentialSpec a = Anthropic(), b = Anthropic();
  b.name = "other";
  EXPECT_FALSE(CredentialBroker::Create({a, b}, o).ok());  // one route twice
  // A route to an address, on its port.
  CredentialSpec addr = Anthropic();
  addr.hosts = Hosts({"127.0.0.1:8443"});
  auto ok = CredentialBroker::Create({addr}, o);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE((*ok)->credentials()[0].route_host.is_address());
  EXPECT_EQ((*ok)->credentials()[0].route_port, 8443);
  EXPECT_TRUE((*ok)->Intercepts(Host{"", *IpAddress::Parse("127.0.0.1")}, 8443));
  EXPECT_FALSE((*ok)->Intercepts(Host{"", *IpAddress::Parse("127.0.0.1")}, 443));
}

TEST(BrokerCreateTest, InterceptionCanBeTurnedOff) {
  BrokerOptions o;
  o.upstream.system_trust = false;
  o.intercept = false;
  auto b = CredentialBroker::Create({Github()}, o);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE((*b)->Intercepts(Name("api.github.com"), 443));
  EXPECT_TRUE((*b)->ca_pem().empty());
  EXPECT_FALSE((*b)->InterceptContext(Name("api.github.com")).ok());
}

TEST(EncodingTest, Base64AndPercent) {
  for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar", "user:p\xffss"}) {
    auto d = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(*d, s);
  }
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Decode("Zm9vYg"), "foob");  // unpadded
  EXPECT_FALSE(Base64Decode("Zm9v!").has_value());
  EXPECT_FALSE(Base64Decode("Z").has_value());
  EXPECT_EQ(PercentDecode("a%41%zz%4"), "aA%zz%4");
  EXPECT_EQ(PercentDecode("a+b"), "a b");
  EXPECT_EQ(PercentEncodeComponent("a b~"), "a%20b~");
}

// Phantoms, the session CA and upstream TLS need OpenSSL: without it the broker is refused,
// naming the library.
TEST(BrokerSetupTest, WithoutOpenSslTheBrokerIsRefusedNamingTheLibrary) {
  test::ExpectRefusedWithoutOpenSsl(
      [] {
        BrokerOptions o;
        o.upstream.system_trust = false;
        return CredentialBroker::Create({Anthropic()}, o).status();
      },
      "the credential broker");
}

}  // namespace
}  // namespace ward::net
