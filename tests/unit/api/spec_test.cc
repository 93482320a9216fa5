// Sandbox parameters, `ward run` command lines, and the rule that an exec may only narrow.
#include "api/sandbox_spec.h"

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
      {{"workspace", "/w"}, {"workspace_anyway", true}},      // the daemon's word only
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

// A daemon started with --workspace-anyway passes it on to each exec's `ward run`; otherwise
// nothing says it.
TEST(RunArgs, WorkspaceAnywayIsPassedOnOnlyWhenSet) {
  policy::RunFlags f;
  EXPECT_FALSE(Contains(RunFlagsToArgs(f, "/w"), "--workspace-anyway"));
  f.workspace_anyway = true;
  EXPECT_TRUE(Contains(RunFlagsToArgs(f, "/w"), "--workspace-anyway"));
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

TEST(RunArgs, AReviewModeSandboxsExecsWriteItsReviewSession) {
  policy::RunFlags f;
  ExecCommand c;
  c.argv = {"make"};
  RunInvocation inv = BuildRunInvocation(f, "/w", {}, 3, c, "", {"overlay", "20261130T162233Z-00000001"});
  auto dash = std::find(inv.args.begin(), inv.args.end(), "--");
  auto mode = std::find(inv.args.begin(), inv.args.end(), "--workspace=overlay");
  auto session =
      std::find(inv.args.begin(), inv.args.end(), "--review-session=20261130T162233Z-00000001");
  ASSERT_NE(mode, inv.args.end());
  ASSERT_NE(session, inv.args.end());
  EXPECT_LT(mode, dash);
  EXPECT_LT(session, dash);
  inv = BuildRunInvocation(f, "/w", {}, 3, c);
  for (const auto& x : inv.args) EXPECT_NE(x.rfind("--workspace", 0), 0u) << x;
}

TEST(SandboxSpec, WorkspaceModeRoundTripsAndIsChecked) {
  auto s = ParseSandboxSpec({{"workspace", "/w"}, {"workspace_mode", "overlay"}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->workspace_mode, "overlay");
  nlohmann::json j = SandboxSpecToJson(*s);
  EXPECT_EQ(j["workspace_mode"], "overlay");
  auto again = ParseSandboxSpec(j);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->workspace_mode, "overlay");
  auto direct = ParseSandboxSpec({{"workspace", "/w"}});
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(direct->workspace_mode, "direct");
  EXPECT_FALSE(SandboxSpecToJson(*direct).contains("workspace_mode"));
  auto bad = ParseSandboxSpec({{"workspace", "/w"}, {"workspace_mode", "tmpfs"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("workspace_mode"), std::string::npos);
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
  static void MakeDir(const std::string& path) { ASSERT_EQ(mkdir(path.c_str(), 0755), 0) << path; }
  static void Link(const std::string& target, const std::string& at) {
    ASSERT_EQ(symlink(target.c_str(), at.c_str()), 0) << at;
  }
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
  // The sandbox's own entry outside the workspace may be kept as it is.
  f = Narrow({{"write", {out_.path()}}});
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->write, (std::vector<std::string>{out_.path()}));
  // Paths in the workspace.
  MakeDir(ws_ / "build");
  f = Narrow({{"write", {"build", ws_ / "build"}}});
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->write, (std::vector<std::string>{ws_ / "build", ws_ / "build"}));
  // Below the sandbox's own writable directory outside the workspace: anything there could be a
  // symlink its commands planted, and it is not resolved in the workspace.
  MakeDir(out_ / "sub");
  for (const std::string& wider : {std::string("/etc"), std::string("/usr/lib"), ws_ / ".git/hooks",
                                   ws_ / ".envrc", std::string("/tmp/x"), out_ / "sub"}) {
    auto r = Narrow({{"write", {wider}}});
    ASSERT_FALSE(r.ok()) << wider;
    EXPECT_EQ(r.error().kind, ErrorKind::kPolicyDenied) << wider;
  }
}

TEST_F(NarrowTest, ReadMustAlreadyBeVisible) {
  MakeDir(ws_ / "src");
  auto f = Narrow({{"read", {"src", out_.path()}}});  // the sandbox's write entry, read-only
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->read, (std::vector<std::string>{ws_ / "src", out_.path()}));
  for (const char* outside : {"/root", "/usr"}) {
    auto r = Narrow({{"read", {outside}}});
    ASSERT_FALSE(r.ok()) << outside;
    EXPECT_EQ(r.error().kind, ErrorKind::kPolicyDenied) << outside;
  }
}

// What one exec can leave in the workspace for the next: a symlink to a host directory where a
// later exec's policy names a path. Every such path is refused, naming the link.
TEST_F(NarrowTest, PathsAreResolvedInTheWorkspaceFollowingNoSymlink) {
  TempDir host;  // a host directory outside the workspace
  MakeDir(host / "sub");
  MakeDir(ws_ / "real");
  MakeDir(ws_ / "d");
  Link(host.path(), ws_ / "sec");  // absolute
  Link(host.path(), ws_ / "a");    // in the middle of "a/sub"
  Link("../../", ws_ / "d/up");    // relative, climbing out
  Link("real", ws_ / "inside");    // even one that stays inside
  struct Case {
    std::string given, names;
  };
  for (const Case& c : {Case{"sec", ws_ / "sec"}, Case{ws_ / "sec", ws_ / "sec"},
                        Case{"a/sub", ws_ / "a"}, Case{"d/up", ws_ / "d/up"},
                        Case{"d/up/tmp", ws_ / "d/up"}, Case{"inside", ws_ / "inside"}}) {
    for (const char* field : {"write", "read"}) {
      auto r = Narrow({{field, {c.given}}});
      ASSERT_FALSE(r.ok()) << field << " " << c.given;
      EXPECT_EQ(r.error().kind, ErrorKind::kPolicyDenied) << c.given;
      EXPECT_NE(r.error().message.find("policy." + std::string(field) + ": \"" + c.given + "\""),
                std::string::npos)
          << r.error().message;
      EXPECT_NE(r.error().message.find(c.names + " is a symbolic link inside the workspace"),
                std::string::npos)
          << r.error().message;
    }
  }
  // ".." is refused, also where it would stay inside.
  for (const std::string& given : {std::string("../x"), std::string("real/../../x"),
                                   std::string("real/../real"), ws_ / "real/../real"}) {
    auto r = Narrow({{"write", {given}}});
    ASSERT_FALSE(r.ok()) << given;
    EXPECT_EQ(r.error().kind, ErrorKind::kPolicyDenied) << given;
  }
  auto r = Narrow({{"write", {"missing"}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kNotFound);
  // Positive control: the real directory, by the same kinds of names.
  for (const std::string& given : {std::string("real"), std::string("./real"), ws_ / "real"}) {
    auto f = Narrow({{"write", {given}}, {"read", {given}}});
    ASSERT_TRUE(f.ok()) << given << ": " << f.error().message;
    EXPECT_EQ(f->write, (std::vector<std::string>{ws_ / "real"}));
    EXPECT_EQ(f->read, (std::vector<std::string>{ws_ / "real"}));
  }
}

TEST_F(NarrowTest, TheSandboxsOwnPathsInTheWorkspaceAreCheckedToo) {
  TempDir host;
  MakeDir(ws_ / "real");
  policy::RunFlags flags = spec_.flags;
  flags.write.push_back(ws_ / "real");
  EXPECT_TRUE(CheckWorkspacePaths(flags, ws_.path(), "/nonexistent-home").ok());
  flags.read.push_back(ws_ / "not-yet");  // left to `ward run`
  EXPECT_TRUE(CheckWorkspacePaths(flags, ws_.path(), "/nonexistent-home").ok());
  Link(host.path(), ws_ / "sec");
  flags.read.push_back(ws_ / "sec");
  auto r = CheckWorkspacePaths(flags, ws_.path(), "/nonexistent-home");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kPolicyDenied);
  EXPECT_NE(r.error().message.find(ws_ / "sec"), std::string::npos) << r.error().message;
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
