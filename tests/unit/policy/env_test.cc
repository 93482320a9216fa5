// BuildEnvironment: an allow list, never inheritance.
#include <gtest/gtest.h>

#include <map>

#include "policy/env.h"
#include "policy/loader.h"
#include "policy_test_util.h"

namespace ward::policy {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

const char* kCanary = "sk-ant-api03-CANARY-0123456789";

Env Caller() {
  return {{"PATH", "/opt/bin:/usr/bin"},
          {"HOME", "/somewhere/else"},
          {"USER", "u"},
          {"LANG", "C.UTF-8"},
          {"LC_ALL", "C"},
          {"LC_TIME", "en_GB.UTF-8"},
          {"LCX", "not a locale"},
          {"ANTHROPIC_API_KEY", kCanary},
          {"AWS_SECRET_ACCESS_KEY", "canary-aws"},
          {"SSH_AUTH_SOCK", "/run/user/1000/ssh"},
          {"LD_PRELOAD", "/tmp/evil.so"},
          {"TERM", "xterm-256color"}};
}

std::map<std::string, std::string> AsMap(const Env& env) { return {env.begin(), env.end()}; }

Policy WithEnv(std::vector<EnvRule> rules) {
  Policy p;
  p.home = "/home/u";
  p.env = std::move(rules);
  return p;
}

EnvRule Pass(const char* n) { return EnvRule{n, std::nullopt, {}}; }
EnvRule Set(const char* n, const char* v) { return EnvRule{n, std::string(v), {}}; }

TEST(BuildEnvironment, OnlyNamedVariablesPass) {
  Env out = BuildEnvironment(WithEnv({Pass("PATH"), Pass("USER"), Pass("TERM")}), Caller());
  std::map<std::string, std::string> m = AsMap(out);
  EXPECT_EQ(m, (std::map<std::string, std::string>{{"HOME", "/home/u"},
                                                   {"PATH", "/opt/bin:/usr/bin"},
                                                   {"TERM", "xterm-256color"},
                                                   {"USER", "u"}}));
}

TEST(BuildEnvironment, CanaryApiKeyNeverPassesUnlessNamed) {
  Policy p = WithEnv({Pass("PATH"), Pass("LC_*"), Pass("LANG")});
  for (const auto& [name, value] : BuildEnvironment(p, Caller())) {
    EXPECT_EQ(value.find("CANARY"), std::string::npos) << name;
    EXPECT_NE(value, "canary-aws") << name;
    EXPECT_NE(name, "LD_PRELOAD");
    EXPECT_NE(name, "SSH_AUTH_SOCK");
  }
  // Named explicitly, it passes (the user asked for it).
  p.env.push_back(Pass("ANTHROPIC_API_KEY"));
  EXPECT_EQ(AsMap(BuildEnvironment(p, Caller()))["ANTHROPIC_API_KEY"], kCanary);
}

TEST(BuildEnvironment, PrefixPatterns) {
  std::map<std::string, std::string> m = AsMap(BuildEnvironment(WithEnv({Pass("LC_*")}), Caller()));
  EXPECT_EQ(m.count("LC_ALL"), 1u);
  EXPECT_EQ(m.count("LC_TIME"), 1u);
  EXPECT_EQ(m.count("LCX"), 0u);
  EXPECT_EQ(m.count("LANG"), 0u);
}

TEST(BuildEnvironment, HomeIsAlwaysThePolicysHome) {
  std::map<std::string, std::string> m =
      AsMap(BuildEnvironment(WithEnv({Pass("HOME"), Set("X", "1")}), Caller()));
  EXPECT_EQ(m["HOME"], "/home/u");
  // Even with no rules at all.
  EXPECT_EQ(AsMap(BuildEnvironment(WithEnv({}), {}))["HOME"], "/home/u");
}

TEST(BuildEnvironment, PathFallsBack) {
  std::map<std::string, std::string> none = AsMap(BuildEnvironment(WithEnv({Pass("PATH")}), {}));
  EXPECT_EQ(none["PATH"], kFallbackPath);
  std::map<std::string, std::string> unnamed = AsMap(BuildEnvironment(WithEnv({}), Caller()));
  EXPECT_EQ(unnamed["PATH"], kFallbackPath);
  EXPECT_EQ(unnamed.size(), 2u);  // HOME and PATH only
  std::map<std::string, std::string> set =
      AsMap(BuildEnvironment(WithEnv({Set("PATH", "/x")}), Caller()));
  EXPECT_EQ(set["PATH"], "/x");
}

TEST(BuildEnvironment, LaterRulesWin) {
  std::map<std::string, std::string> a =
      AsMap(BuildEnvironment(WithEnv({Pass("USER"), Set("USER", "sandbox")}), Caller()));
  EXPECT_EQ(a["USER"], "sandbox");
  std::map<std::string, std::string> b =
      AsMap(BuildEnvironment(WithEnv({Set("USER", "sandbox"), Pass("USER")}), Caller()));
  EXPECT_EQ(b["USER"], "u");
  // A pass rule for a variable the caller lacks keeps an earlier set value.
  std::map<std::string, std::string> c =
      AsMap(BuildEnvironment(WithEnv({Set("TZ", "UTC"), Pass("TZ")}), Caller()));
  EXPECT_EQ(c["TZ"], "UTC");
}

TEST(BuildEnvironment, SortedAndWithoutDuplicates) {
  Env out =
      BuildEnvironment(WithEnv({Pass("TERM"), Pass("USER"), Pass("LC_*"), Pass("USER")}), Caller());
  for (size_t i = 1; i < out.size(); ++i) EXPECT_LT(out[i - 1].first, out[i].first);
}

TEST(BuildEnvironment, MalformedCallerEntriesAreIgnored) {
  Env caller = {
      {"", "x"},   {"A=B", "x"}, {std::string("N\0UL", 4), "x"}, {"GOOD", std::string("v\0x", 3)},
      {"OK", "1"}, {"OK", "2"}};
  std::map<std::string, std::string> m =
      AsMap(BuildEnvironment(WithEnv({Pass("A*"), Pass("N*"), Pass("GOOD"), Pass("OK")}), caller));
  EXPECT_EQ(m.count(""), 0u);
  EXPECT_EQ(m.count("A=B"), 0u);
  EXPECT_EQ(m.count("GOOD"), 0u);
  EXPECT_EQ(m["OK"], "1");  // the first occurrence, as getenv(3) would see it
  for (const auto& [k, v] : m) EXPECT_EQ(k.find('\0'), std::string::npos);
}

TEST(BuildEnvironment, EnabledCredentialVariablesNeverComeFromTheCaller) {
  Policy p = WithEnv({Pass("ANTHROPIC_*"), Pass("PATH")});
  Credential c;
  c.name = "anthropic";
  c.from = {CredentialSource::Kind::kEnv, "ANTHROPIC_API_KEY"};
  c.env = "ANTHROPIC_API_KEY";
  c.route_env = {{"ANTHROPIC_BASE_URL", "{route_url}"}};
  c.enabled = true;
  p.credentials["anthropic"] = c;
  Env caller = Caller();
  caller.push_back({"ANTHROPIC_BASE_URL", "https://evil.example"});
  caller.push_back({"ANTHROPIC_MODEL", "claude"});
  std::map<std::string, std::string> m = AsMap(BuildEnvironment(p, caller));
  EXPECT_EQ(m.count("ANTHROPIC_API_KEY"), 0u);   // the broker sets the phantom
  EXPECT_EQ(m.count("ANTHROPIC_BASE_URL"), 0u);  // and the route URL
  EXPECT_EQ(m["ANTHROPIC_MODEL"], "claude");
  // Disabled, the prefix pattern passes the caller's values like any other.
  p.credentials["anthropic"].enabled = false;
  EXPECT_EQ(AsMap(BuildEnvironment(p, caller))["ANTHROPIC_API_KEY"], kCanary);
}

TEST(BuildEnvironment, DefaultProfile) {
  testing::MemFs fs;
  Result<Policy> r = testing::Load(fs);
  ASSERT_TRUE(r.ok()) << r.status().message();
  Env caller = Caller();
  caller.push_back({"COLORTERM", "truecolor"});
  caller.push_back({"GITHUB_TOKEN", "ghp_CANARY"});
  caller.push_back({"SHELL", "/bin/bash"});
  std::map<std::string, std::string> m = AsMap(BuildEnvironment(*r, caller));
  EXPECT_EQ(m["HOME"], "/home/u");
  EXPECT_EQ(m["PATH"], "/opt/bin:/usr/bin");
  EXPECT_EQ(m["LC_TIME"], "en_GB.UTF-8");
  EXPECT_EQ(m["COLORTERM"], "truecolor");
  EXPECT_EQ(m["SHELL"], "/bin/bash");
  for (const auto& [k, v] : m) {
    EXPECT_EQ(v.find("CANARY"), std::string::npos) << k;
    EXPECT_EQ(v.find("canary"), std::string::npos) << k;
  }
  EXPECT_EQ(m.count("LD_PRELOAD"), 0u);
  EXPECT_EQ(m.count("SSH_AUTH_SOCK"), 0u);
}

TEST(BuildEnvironment, CommandLineEnv) {
  testing::MemFs fs;
  RunFlags f;
  f.env = {"GITHUB_TOKEN", "NODE_ENV=test", "LANG=C"};
  Result<Policy> r = testing::Load(fs, f);
  ASSERT_TRUE(r.ok()) << r.status().message();
  Env caller = Caller();
  caller.push_back({"GITHUB_TOKEN", "ghp_named"});
  std::map<std::string, std::string> m = AsMap(BuildEnvironment(*r, caller));
  EXPECT_EQ(m["GITHUB_TOKEN"], "ghp_named");
  EXPECT_EQ(m["NODE_ENV"], "test");
  EXPECT_EQ(m["LANG"], "C");  // the command line comes after the profile's pass rule
}

}  // namespace
}  // namespace ward::policy
