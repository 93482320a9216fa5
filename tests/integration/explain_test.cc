// `ward explain`, `ward why` and `ward check`: what they say must be what a run does.
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness.h"

namespace ward::test {
namespace {

class ExplainTest : public SandboxTest {
 protected:
  nlohmann::json ExplainJson(const std::vector<std::string>& opts) {
    std::vector<std::string> args = {"explain", "--json"};
    args.insert(args.end(), opts.begin(), opts.end());
    args.insert(args.end(), {"--", "true"});
    RunResult r = RunWard(args, Defaults());
    EXPECT_EQ(r.status, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(j.is_object()) << r.out;
    return j;
  }

  RunResult Why(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"why"};
    all.insert(all.end(), args.begin(), args.end());
    return RunWard(all, Defaults());
  }

  static std::string Real(const std::string& path) {
    char buf[PATH_MAX];
    return realpath(path.c_str(), buf) ? std::string(buf) : path;
  }

  static bool Contains(const nlohmann::json& array, const std::string& s) {
    return std::find(array.begin(), array.end(), s) != array.end();
  }
};

TEST_F(ExplainTest, JsonNamesTheEightAxesWithThisRunsFigures) {
  nlohmann::json j = ExplainJson({});
  ASSERT_TRUE(j.contains("axes"));
  for (const char* axis :
       {"enforcement_layer", "granularity", "escape_resistance", "authority_scope",
        "egress_and_mediation", "trust_direction", "persistence", "boundary_mutability"}) {
    EXPECT_TRUE(j["axes"].contains(axis)) << axis;
  }
  const nlohmann::json& esc = j["axes"]["escape_resistance"];
  // The counts are those of the filter itself: the names listed match the numbers.
  EXPECT_GT(esc["syscalls_denied"].get<int>(), 0);
  EXPECT_GT(esc["syscalls_allowed"].get<int>(), 0);
  EXPECT_EQ(esc["syscalls_denied"].get<size_t>(), j["seccomp"]["denied"].size());
  EXPECT_EQ(esc["syscalls_trapped"].get<size_t>(), j["seccomp"]["trapped"].size());
  EXPECT_TRUE(Contains(j["seccomp"]["denied"], "ptrace"));
  EXPECT_EQ(esc["mounts"].get<size_t>(), j["plan"]["mounts"].size() + j["plan"]["masks"].size());
  // The workspace is the one writable root; HOME and /tmp are private scratch.
  const nlohmann::json& scope = j["axes"]["authority_scope"];
  EXPECT_EQ(j["plan"]["workspace"], Real(ws_));
  EXPECT_TRUE(Contains(scope["writable_roots"], Real(ws_))) << scope.dump();
  EXPECT_EQ(scope["writable_roots"].size(), 1u) << scope.dump();
  EXPECT_TRUE(Contains(scope["private_scratch"], "/tmp"));
  // The caller's API key is not passed (its name is not among the variables passed either).
  EXPECT_FALSE(Contains(scope["env_passed"], "ANTHROPIC_API_KEY")) << scope.dump();
  EXPECT_TRUE(Contains(scope["env_passed"], "PATH")) << scope.dump();
  EXPECT_EQ(j.dump().find(kCanaryApiKey), std::string::npos);
  // No network: no host allowed, no broker.
  EXPECT_TRUE(j["axes"]["egress_and_mediation"]["hosts_allowed"].empty());
  // The layers all on (the same verdict as `ward check`, which the suite's machines pass).
  for (const auto& l : j["layers"]) EXPECT_TRUE(l["applied"].get<bool>()) << l.dump();
  // Each Landlock right this kernel lacks is covered by another layer, which is named, and the
  // landlock line says so (docs/kernels.md); the newest ABI lacks none.
  const int abi = j["axes"]["enforcement_layer"]["landlock_abi"].get<int>();
  ASSERT_TRUE(j["landlock_gaps"].is_array()) << j.dump();
  if (abi >= 7) {
    EXPECT_TRUE(j["landlock_gaps"].empty()) << j["landlock_gaps"].dump();
  }
  std::string line;
  for (const auto& l : j["layers"]) {
    if (l["layer"] == "landlock") line = l["detail"].get<std::string>();
  }
  for (const auto& g : j["landlock_gaps"]) {
    EXPECT_GT(g["abi"].get<int>(), abi) << g.dump();
    EXPECT_NE(g["decision"], "refused") << g.dump();
    EXPECT_FALSE(g["covered_by"].get<std::string>().empty()) << g.dump();
    EXPECT_NE(line.find(g["right"].get<std::string>() + " (ABI "), std::string::npos) << line;
  }
}

TEST_F(ExplainTest, FlagsChangeWhatIsExplained) {
  TempDir extra("ward-explain-extra");
  nlohmann::json j = ExplainJson({"-w", extra.path(), "-n", "example.org"});
  const nlohmann::json& scope = j["axes"]["authority_scope"];
  EXPECT_TRUE(Contains(scope["writable_roots"], Real(extra.path()))) << scope.dump();
  EXPECT_EQ(scope["writable_roots"].size(), 2u);
  EXPECT_TRUE(Contains(j["axes"]["egress_and_mediation"]["hosts_allowed"], "example.org"))
      << j["axes"]["egress_and_mediation"].dump();
  EXPECT_NE(j["axes"]["egress_and_mediation"]["broker"].get<std::string>().find("proxy"),
            std::string::npos);
}

TEST_F(ExplainTest, TextNamesTheLayersTheViewAndTheAxes) {
  RunResult r = RunWard({"explain", "--", "true"}, Defaults());
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s :
       {"ward explain", "Layers", "[on]  landlock", "[on]  seccomp", "Filesystem view",
        "The eight axes", "1. enforcement layer", "8. boundary mutability"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
  EXPECT_NE(r.out.find(Real(ws_)), std::string::npos);
}

TEST_F(ExplainTest, ABadProfileIsAClearErrorNotAnExplanation) {
  WriteFile(ws_ + "/bad.toml", "[filesystem]\nread = \"/usr\"\n");
  RunResult r = RunWard({"explain", "-p", ws_ + "/bad.toml", "--", "true"}, Defaults());
  EXPECT_EQ(r.status, 125) << r.out;
  EXPECT_NE(r.err.find("bad.toml:2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("filesystem.read"), std::string::npos) << r.err;
}

TEST_F(ExplainTest, WhyNamesTheRuleThatHidesASecret) {
  RunResult r = Why({home_ + "/.ssh/id_ed25519"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("hidden"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("builtin:default:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("filesystem.deny"), std::string::npos) << r.out;

  r = Why({"/etc/shadow"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("hidden"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("masked"), std::string::npos) << r.out;
}

TEST_F(ExplainTest, WhyNamesTheRuleThatShowsAPath) {
  RunResult r = Why({ws_ + "/src/main.c"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("write"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("workspace"), std::string::npos) << r.out;

  r = Why({"/usr/bin/env"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("read"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("filesystem.read"), std::string::npos) << r.out;

  // Several targets: the status is 1 when any of them is hidden.
  r = Why({"/usr/bin/env", home_ + "/.aws/credentials"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
}

TEST_F(ExplainTest, WhyCitesTheProfileFileAndLine) {
  const std::string profile = ws_ + "/narrow.toml";
  WriteFile(profile,
            "extends = \"default\"\n"
            "\n"
            "[filesystem]\n"
            "deny = [\"" +
                ws_ + "/private\"]\n");
  RunResult r = Why({"-p", profile, ws_ + "/private/notes.txt"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("hidden"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(profile + ":4"), std::string::npos) << r.out;
  // The same path without that profile: writable, in the workspace.
  r = Why({ws_ + "/private/notes.txt"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
}

TEST_F(ExplainTest, WhySaysWhetherAHostIsReachable) {
  RunResult r = Why({"example.org"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("denied"), std::string::npos) << r.out;

  r = Why({"-n", "example.org", "example.org"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("allowed"), std::string::npos) << r.out;
  // Allowed by name on its default port, not on any other.
  r = Why({"-n", "example.org", "example.org:22"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
}

TEST_F(ExplainTest, CheckAgreesWithARealRun) {
  RunResult check = RunWard({"check"}, Defaults());
  ASSERT_TRUE(check.status == 0 || check.status == 1) << check.out << check.err;
  RunResult json = RunWard({"check", "--json"}, Defaults());
  EXPECT_EQ(json.status, check.status);
  nlohmann::json j = nlohmann::json::parse(json.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << json.out;
  EXPECT_EQ(j["default_profile_fully_enforced"].get<bool>(), check.status == 0);
  EXPECT_GE(j["landlock_abi"].get<int>(), 0);
  // The Landlock rights the kernel lacks, each with what covers it, in JSON and in the text.
  ASSERT_TRUE(j["landlock_gaps"].is_array()) << json.out;
  if (j["landlock_abi"].get<int>() >= 7) {
    EXPECT_TRUE(j["landlock_gaps"].empty()) << json.out;
  }
  for (const auto& g : j["landlock_gaps"]) {
    EXPECT_GT(g["abi"].get<int>(), j["landlock_abi"].get<int>()) << g.dump();
    EXPECT_TRUE(g.contains("covered_by")) << g.dump();
    EXPECT_NE(check.out.find("  lacks " + g["right"].get<std::string>() + " "), std::string::npos)
        << check.out;
  }
  // OpenSSL (loaded only for credentials and webhooks) is reported, loadable on these machines.
  EXPECT_TRUE(j["openssl"]["loads"].get<bool>()) << json.out;
  EXPECT_NE(check.out.find("OpenSSL                     libssl.so."), std::string::npos)
      << check.out;
  // Exit 0 means the default profile runs with every layer; 1 means it is refused.
  RunResult run = RunWard({"run", "--", "true"}, Defaults());
  EXPECT_EQ(run.status, check.status == 0 ? 0 : 125) << run.err;
}

}  // namespace
}  // namespace ward::test
