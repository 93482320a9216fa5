// What `ward run` gets from PrepareCredentials: the variables to set inside, the merged CA
// bundle, the secrets to redact, and clear errors (naming the credential) before any sandbox.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "credentials_test_util.h"
#include "net/broker/setup.h"

namespace ward::net {
namespace {

using policy::Credential;
using policy::CredentialInject;
using policy::CredentialSource;
using testing::TempDir;

Credential Make(const std::string& name, CredentialSource from, std::vector<std::string> hosts) {
  Credential c;
  c.name = name;
  c.from = std::move(from);
  c.hosts = std::move(hosts);
  c.inject = {CredentialInject::Kind::kHeader, "Authorization", "Bearer {secret}"};
  c.enabled = true;
  c.origin = policy::Origin{"builtin:claude-code", 30, "credentials." + name};
  return c;
}

CredentialSetupOptions Options(std::map<std::string, std::string> env, TempDir& dir) {
  CredentialSetupOptions o;
  o.proxy_port = 3128;
  o.sources.getenv = [env](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  o.system_bundle_path = dir.Write("system-bundle.pem", "# the host's roots\n");
  return o;
}

std::map<std::string, std::string> EnvMap(const CredentialSetup& s) {
  return {s.env.begin(), s.env.end()};
}

TEST(CredentialSetupTest, NothingEnabledMeansNothingToDo) {
  TempDir dir;
  policy::Policy p;
  Credential off = Make("anthropic", {CredentialSource::Kind::kEnv, "MISSING"}, {"a.example"});
  off.enabled = false;
  p.credentials["anthropic"] = off;
  auto s = PrepareCredentials(p, Options({}, dir));
  ASSERT_TRUE(s.ok()) << s.status().ToString();  // a disabled credential is not even fetched
  EXPECT_EQ(s->broker, nullptr);
  EXPECT_TRUE(s->env.empty());
  EXPECT_TRUE(s->ca_bundle.empty());
  EXPECT_TRUE(s->ca_bundle_path.empty());
}

TEST(CredentialSetupTest, PhantomsRoutesAndTheCaBundle) {
  TempDir dir;
  policy::Policy p;
  Credential a =
      Make("anthropic", {CredentialSource::Kind::kEnv, "ANTHROPIC_API_KEY"}, {"api.anthropic.com"});
  a.inject = {CredentialInject::Kind::kHeader, "x-api-key", "{secret}"};
  a.env = "ANTHROPIC_API_KEY";
  a.route = "anthropic";
  a.route_env = {{"ANTHROPIC_BASE_URL", "{route_url}"}, {"OTHER_URL", "{route_url}/v1"}};
  p.credentials["anthropic"] = a;
  Credential g = Make(
      "github",
      {CredentialSource::Kind::kFile, dir.Write("gh", "ghp_filetoken0123456789abcdefABCDEF\n")},
      {"api.github.com"});
  g.env = "GH_TOKEN";
  p.credentials["github"] = g;
  const std::string secret = "sk-ant-api03-theRealKeyValue0123456789abcdefghijABCDEFGHIJ";
  auto s = PrepareCredentials(p, Options({{"ANTHROPIC_API_KEY", secret}}, dir));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_NE(s->broker, nullptr);
  auto env = EnvMap(*s);
  ASSERT_TRUE(env.count("ANTHROPIC_API_KEY"));
  EXPECT_NE(env["ANTHROPIC_API_KEY"], secret);
  EXPECT_TRUE(env["ANTHROPIC_API_KEY"].starts_with("sk-ant-api03-"));
  EXPECT_EQ(env["ANTHROPIC_API_KEY"], s->broker->credentials()[0].phantom);
  EXPECT_TRUE(env["GH_TOKEN"].starts_with("ghp_"));
  EXPECT_EQ(env["ANTHROPIC_BASE_URL"], "http://127.0.0.1:3128/anthropic");
  EXPECT_EQ(env["OTHER_URL"], "http://127.0.0.1:3128/anthropic/v1");
  for (std::string_view var : kCaBundleVariables) {
    EXPECT_EQ(env[std::string(var)], s->ca_bundle_path) << var;
  }
  EXPECT_EQ(s->ca_bundle_path, dir.path() + "/system-bundle.pem");
  EXPECT_TRUE(s->ca_bundle.starts_with("# the host's roots\n"));
  EXPECT_NE(s->ca_bundle.find(s->broker->ca_pem()), std::string::npos);
  EXPECT_EQ(s->ca_bundle.find("PRIVATE"), std::string::npos);
  ASSERT_EQ(s->secrets.size(), 2u);
  EXPECT_EQ(s->secrets[0], secret);
  EXPECT_EQ(s->secrets[1], "ghp_filetoken0123456789abcdefABCDEF");
  // Nothing the sandbox gets holds a secret.
  for (const auto& [k, v] : s->env) {
    for (const std::string& sec : s->secrets) EXPECT_EQ(v.find(sec), std::string::npos) << k;
  }
  for (const std::string& sec : s->secrets) EXPECT_EQ(s->ca_bundle.find(sec), std::string::npos);
}

TEST(CredentialSetupTest, MissingSourcesStopTheRunNamingTheCredential) {
  TempDir dir;
  policy::Policy p;
  p.credentials["anthropic"] =
      Make("anthropic", {CredentialSource::Kind::kEnv, "ANTHROPIC_API_KEY"}, {"a.example"});
  auto s = PrepareCredentials(p, Options({}, dir));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kNotFound);
  EXPECT_NE(s.status().message().find("credential anthropic (builtin:claude-code:30"),
            std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("$ANTHROPIC_API_KEY is not set"), std::string::npos);

  policy::Policy q;
  q.credentials["gh"] =
      Make("gh", {CredentialSource::Kind::kCommand, "echo 'gh: not logged in' >&2; exit 1"},
           {"api.github.com"});
  s = PrepareCredentials(q, Options({}, dir));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("credential gh"), std::string::npos);
  EXPECT_NE(s.status().message().find("exited with status 1: 'gh: not logged in'"),
            std::string::npos)
      << s.status().message();

  policy::Policy r;
  r.credentials["f"] =
      Make("f", {CredentialSource::Kind::kFile, dir.path() + "/absent"}, {"api.example"});
  EXPECT_FALSE(PrepareCredentials(r, Options({}, dir)).ok());
}

TEST(CredentialSetupTest, RoutesNeedTheProxyPortAndBadCaFilesAreErrors) {
  TempDir dir;
  policy::Policy p;
  Credential a = Make("a", {CredentialSource::Kind::kEnv, "A"}, {"a.example"});
  a.route = "a";
  p.credentials["a"] = a;
  auto o = Options({{"A", "a-secret-value-0123456789"}}, dir);
  o.proxy_port = 0;
  EXPECT_FALSE(PrepareCredentials(p, o).ok());
  o.proxy_port = 8080;
  o.upstream_ca_files = {dir.path() + "/no-such-ca.pem"};
  auto s = PrepareCredentials(p, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("no-such-ca.pem"), std::string::npos);
}

TEST(CredentialSetupTest, BundleHelpers) {
  TempDir dir;
  auto b = MergedCaBundle("-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n",
                          dir.Write("sys", "roots without newline"));
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->starts_with("roots without newline\n# ward:"));
  EXPECT_TRUE(MergedCaBundle("pem", "").ok());
  EXPECT_FALSE(MergedCaBundle("pem", dir.path() + "/missing").ok());
  EXPECT_FALSE(MergedCaBundle("pem", dir.path()).ok());
  EXPECT_EQ(RouteUrl("127.0.0.1", 3128, "openai"), "http://127.0.0.1:3128/openai");
  EXPECT_EQ(RouteUrl("::1", 3128, "openai"), "http://[::1]:3128/openai");
  std::string found = FindSystemCaBundle();
  if (!found.empty()) {
    EXPECT_EQ(found[0], '/');
  }
}

}  // namespace
}  // namespace ward::net
