// Sandbox parameters, `ward run` command lines, and the rule that an exec may only narrow.
#include "api/spec.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "api_test_util.h"

namespace ward::api {
namespace {

using testing::LoadTestPolicy;
using testing::TempDir;

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(SandboxSpec, ParsesEveryKeyAndAnchorsRelativePaths) {
  nlohmann::json p = {{"workspace", "/w//proj/"},
                      {"profile", "claude-code"},
                      {"write", {"out", "/abs"}},
                      {"read", {"~/.gitconfig"}},
                      {"deny", {"secret.txt"}},
                      {"allow_net", {"example.com"}},
                      {"deny_net", {"bad.example.com"}},
                      {"credentials", {"anthropic"}},
                      {"env", {{"A", "1"}, {"PASSED", nullptr}}},
                      {"limits", {{"memory", "1G"}, {"pids", 100}, {"cpu", 1.5}}},
                      {"ttl_s", 60},
                      {"idle_s", 10},
                      {"labels", {{"task", "t-1"}}}};
  auto s = ParseSandboxSpec(p);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->workspace, "/w/proj");
  EXPECT_EQ(s->flags.profile, "claude-code");
  EXPECT_EQ(s->flags.write, (std::vector<std::string>{"/w/proj/out", "/abs"}));
  EXPECT_EQ(s->flags.read, (std::vector<std::string>{"~/.gitconfig"}));
  EXPECT_EQ(s->flags.deny, (std::vector<std::string>{"/w/proj/secret.txt"}));
  EXPECT_TRUE(Contains(s->flags.env, "A=1"));
  EXPECT_TRUE(Contains(s->flags.env, "PASSED"));
  EXPECT_EQ(s->flags.memory, "1G");
  EXPECT_EQ(s->flags.pids, "100");
  EXPECT_EQ(s->ttl_s, 60);
  EXPECT_EQ(s->labels.at("task"), "t-1");
  // The stored form reloads to the same spec.
  auto again = ParseSandboxSpec(SandboxSpecToJson(*s));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->flags.write, s->flags.write);
  EXPECT_EQ(again->flags.env, s->flags.env);
  EXPECT_EQ(again->flags.memory, s->flags.memory);
  EXPECT_EQ(again->labels, s->labels);
}

TEST(SandboxSpec, RejectsBadInput) {
  const nlohmann::json bad[] = {
      nlohmann::json::object(),                               // no workspace
      {{"workspace", "relative"}},                            // not absolute
      {{"workspace", "/w"}, {"write", "notalist"}},           // wrong type
      {{"workspace", "/w"}, {"env", {{"1BAD", "x"}}}},        // bad env name
      {{"workspace", "/w"}, {"labels", {{"Bad Key", "x"}}}},  // bad label key
      {{"workspace", "/w"}, {"labels", {{"sandbox", "x"}}}},  // reserved label
      {{"workspace", "/w"}, {"limits", {{"memory", true}}}},  // wrong type
      {{"workspace", "/w"}, {"limits", {{"swap", "1G"}}}},    // unknown limit
      {{"workspace", "/w"}, {"surprise", 1}},                 // unknown key
      {{"workspace", "/w"}, {"ttl_s", -1}},                   // out of range
      {{"workspace", "/w"}, {"profile", ""}},                 // empty profile
      {{"workspace", std::string("/w\0x", 4)}},               // NUL
  };
  for (const auto& p : bad) {
    auto s = ParseSandboxSpec(p);
    EXPECT_FALSE(s.ok()) << p.dump();
    if (!s.ok()) {
      EXPECT_EQ(s.error().kind, ErrorKind::kInvalidRequest) << p.dump();
    }
  }
}

TEST(RunArgs, EveryValueIsAttachedSoNoneIsReadAsAnOption) {
  policy::RunFlags f;
  f.profile = "default";
  f.write = {"-rf"};
  f.env = {"A=--x"};
  f.allow_degraded = {"landlock", "seccomp"};
  f.memory = "1G";
  auto a = RunFlagsToArgs(f, "/w");
  EXPECT_TRUE(Contains(a, "--profile=default"));
  EXPECT_TRUE(Contains(a, "--workdir=/w"));
  EXPECT_TRUE(Contains(a, "--write=-rf"));
  EXPECT_TRUE(Contains(a, "--env=A=--x"));
  EXPECT_TRUE(Contains(a, "--allow-degraded=landlock,seccomp"));
  EXPECT_TRUE(Contains(a, "--memory=1G"));
  for (const auto& x : a) EXPECT_EQ(x.rfind("--", 0), 0u) << x;
}

TEST(RunArgs, InvocationCarriesLabelsStatusFdAndCwd) {
  policy::RunFlags f;
  ExecCommand c{{"make", "test"}, "/w/sub"};
  auto inv = BuildRunInvocation(f, "/w", {"sandbox=sb-1", "exec=ex-2"}, 3, c);
  auto& a = inv.args;
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a[0], "run");
  EXPECT_TRUE(Contains(a, "--label=sandbox=sb-1"));
  EXPECT_TRUE(Contains(a, "--label=exec=ex-2"));
  EXPECT_TRUE(Contains(a, "--json-status=3"));
  auto dd = std::find(a.begin(), a.end(), "--");
  ASSERT_NE(dd, a.end());
  std::vector<std::string> tail(dd + 1, a.end());
  ASSERT_GE(tail.size(), 7u);
  EXPECT_EQ(tail[0], "/bin/sh");
  EXPECT_EQ(tail[4], "/w/sub");
  EXPECT_EQ(tail[5], "make");
  EXPECT_EQ(tail[6], "test");
  c.cwd = "";
  inv = BuildRunInvocation(f, "/w", {}, 3, c);
  EXPECT_EQ(inv.args.back(), "test");
  EXPECT_EQ(*(inv.args.end() - 3), "--");
  for (const auto& x : inv.args) EXPECT_NE(x.rfind("--session-id", 0), 0u) << x;
  // The approval session, before "--" so a command cannot supply it.
  inv = BuildRunInvocation(f, "/w", {}, 3, c, "20261130T162233Z-3f9a1c2e");
  auto sid = std::find(inv.args.begin(), inv.args.end(), "--session-id=20261130T162233Z-3f9a1c2e");
  ASSERT_NE(sid, inv.args.end());
  EXPECT_LT(sid, std::find(inv.args.begin(), inv.args.end(), "--"));
}

TEST(Cwd, StaysInsideTheWorkspace) {
  EXPECT_EQ(*ResolveCwd("/w", ""), "");
  EXPECT_EQ(*ResolveCwd("/w", "."), "");
  EXPECT_EQ(*ResolveCwd("/w", "a/b"), "/w/a/b");
  EXPECT_EQ(*ResolveCwd("/w", "a/../b"), "/w/b");
  EXPECT_EQ(*ResolveCwd("/w", "/w/x"), "/w/x");
  for (const char* bad : {"..", "../w2", "a/../../x", "/etc", "/w/../etc", "/w2"}) {
    auto r = ResolveCwd("/w", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::kPolicyDenied) << bad;
  }
}

class NarrowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::Write(ws_ / "dummy", "x");
    spec_.workspace = ws_.path();
    spec_.flags.write = {out_.path()};
    spec_.flags.allow_net = {"example.com", "*.github.com"};
    spec_.flags.memory = "1G";
    auto p = LoadTestPolicy(ws_.path(), spec_.flags);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    policy_ = std::move(p).value();
  }
  Expected<policy::RunFlags> Narrow(const nlohmann::json& j) {
    return NarrowFlags(spec_, policy_, j);
  }
  TempDir ws_, out_;
  SandboxSpec spec_;
  policy::Policy policy_;
};

TEST_F(NarrowTest, DenyAndDenyNetAlwaysNarrow) {
  auto f = Narrow({{"deny", {"secret", "/etc/hosts"}}, {"deny_net", {"example.com"}}});
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_TRUE(Contains(f->deny, ws_ / "secret"));
  EXPECT_TRUE(Contains(f->deny, "/etc/hosts"));
  EXPECT_TRUE(Contains(f->deny_net, "example.com"));
  EXPECT_EQ(f->write, spec_.flags.write);  // untouched
}

TEST_F(NarrowTest, WriteMayOnlyKeepWhatIsAlreadyWritable) {
  auto f = Narrow({{"write", nlohmann::json::array()}});
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->write.empty());  // dropping writes is narrowing
  f = Narrow({{"write", {out_ / "sub"}}});
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->write, (std::vector<std::string>{out_ / "sub"}));
  for (const std::string& wider : {std::string("/etc"), std::string("/usr/lib"), ws_ / ".git/hooks",
                                   ws_ / ".envrc", std::string("/tmp/x")}) {
    auto r = Narrow({{"write", {wider}}});
    ASSERT_FALSE(r.ok()) << wider;
    EXPECT_EQ(r.error().kind, ErrorKind::kPolicyDenied) << wider;
  }
}

TEST_F(NarrowTest, ReadMustAlreadyBeVisible) {
  EXPECT_TRUE(Narrow({{"read", {"/usr"}}}).ok());
  auto r = Narrow({{"read", {"/root"}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kPolicyDenied);
}

TEST_F(NarrowTest, AllowNetIsASubsetAndTheRestIsDenied) {
  auto f = Narrow({{"allow_net", {"example.com"}}});
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_TRUE(f->allow_net.empty());
  EXPECT_TRUE(Contains(f->deny_net, "*.github.com"));
  EXPECT_FALSE(Contains(f->deny_net, "example.com"));
  auto r = Narrow({{"allow_net", {"evil.example"}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kPolicyDenied);
}

TEST_F(NarrowTest, LimitsMayOnlyShrink) {
  auto f = Narrow({{"limits", {{"memory", "512M"}, {"pids", 10}}}});
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->memory, "512M");
  EXPECT_EQ(f->pids, "10");  // the sandbox had none: any value narrows
  auto r = Narrow({{"limits", {{"memory", "2G"}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kPolicyDenied);
  r = Narrow({{"limits", {{"memory", "lots"}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidRequest);
}

TEST_F(NarrowTest, UnknownKeysAndProfileChangesAreRefused) {
  auto r = Narrow({{"allow_everything", true}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidRequest);
  r = Narrow({{"profile", "claude-code"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kPolicyDenied);
  EXPECT_TRUE(Narrow({{"profile", "default"}}).ok());
  r = Narrow({{"write", {"~someone/x"}}});
  ASSERT_FALSE(r.ok());
}

TEST(EnvName, Validation) {
  EXPECT_TRUE(ValidEnvName("PATH"));
  EXPECT_TRUE(ValidEnvName("_x1"));
  EXPECT_FALSE(ValidEnvName(""));
  EXPECT_FALSE(ValidEnvName("1A"));
  EXPECT_FALSE(ValidEnvName("A=B"));
  EXPECT_FALSE(ValidEnvName("A-B"));
}

}  // namespace
}  // namespace ward::api
