// `ward init`: a commented starter .ward.toml that loads, only narrows, and is never written
// over an existing one without --force.
#include <limits.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "harness.h"

namespace ward::test {
namespace {

class InitTest : public SandboxTest {
 protected:
  std::string RealWs() {
    char buf[PATH_MAX];
    return realpath(ws_.c_str(), buf) ? std::string(buf) : ws_;
  }
  nlohmann::json Explain() {
    RunResult r = RunWard({"explain", "--json", "--", "true"}, Defaults());
    EXPECT_EQ(r.status, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  }
};

TEST_F(InitTest, WritesAStarterThatLoadsAndNarrows) {
  const std::string file = RealWs() + "/.ward.toml";
  RunResult r = RunWard({"init"}, Defaults());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "wrote " + file + " (it only narrows; see its rules with: ward explain -C '" +
                       RealWs() + "')\n");
  std::string text = ReadFile(file);
  EXPECT_NE(text.find("\n[filesystem]\n"), std::string::npos) << text;
  // `ward explain` shows the file applied: among the sources, and its rule with its line.
  nlohmann::json j = Explain();
  bool listed = false;
  for (const auto& s : j["policy"]["sources"]) {
    if (s["name"] == file && s["origin"] == "workspace") listed = true;
  }
  EXPECT_TRUE(listed) << j["policy"]["sources"].dump();
  ASSERT_EQ(j["policy"]["network"]["deny"].size(), 1u) << j["policy"]["network"].dump();
  EXPECT_EQ(j["policy"]["network"]["deny"][0]["pattern"], "169.254.169.254");
  EXPECT_EQ(j["policy"]["network"]["deny"][0]["origin"]["source"], file);
  // A run in that workspace succeeds and can still write the workspace.
  r = Probe({"write", ws_ + "/out.txt"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
}

TEST_F(InitTest, EveryExampleUncommentedStillLoadsAndNarrows) {
  ASSERT_EQ(RunWard({"init"}, Defaults()).status, 0);
  // The examples are the lines "# key = value": uncommented, all of them together.
  std::istringstream in(ReadFile(ws_ + "/.ward.toml"));
  std::string out;
  const std::regex example("^# ([a-z_]+ = .*)$");
  int uncommented = 0;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, example)) {
      line = m[1];
      ++uncommented;
    }
    out += line + "\n";
  }
  EXPECT_GE(uncommented, 7);
  WriteFile(ws_ + "/.ward.toml", out);
  nlohmann::json j = Explain();
  EXPECT_EQ(j["policy"]["workspace"]["access"], "read") << j["policy"]["workspace"].dump();
  bool env_denied = false;
  for (const auto& d : j["policy"]["filesystem"]["deny"]) {
    if (d["path"] == RealWs() + "/.env") env_denied = true;
  }
  EXPECT_TRUE(env_denied) << j["policy"]["filesystem"]["deny"].dump();
  // The narrowing holds in a run: the workspace is read-only.
  RunResult r = Probe({"write", ws_ + "/out.txt"}, {"--allow-degraded=limits"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_FALSE(PathExists(ws_ + "/out.txt"));
}

TEST_F(InitTest, RefusesToOverwriteWithoutForce) {
  const std::string file = RealWs() + "/.ward.toml";
  WriteFile(ws_ + "/.ward.toml", "# mine\n");
  RunResult r = RunWard({"init"}, Defaults());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "ward init: " + file + " exists; edit it, or replace it with ward init --force\n");
  EXPECT_EQ(ReadFile(ws_ + "/.ward.toml"), "# mine\n");
  r = RunWard({"init", "--force"}, Defaults());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(ReadFile(ws_ + "/.ward.toml").find("169.254.169.254"), std::string::npos);
}

TEST_F(InitTest, AWorkspaceWardRefusesGetsNoFile) {
  RunOptions o = Defaults();
  o.cwd = home_;
  RunResult r = RunWard({"init"}, o);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err.rfind("ward init: the workspace is your HOME itself (", 0), 0u) << r.err;
  EXPECT_FALSE(PathExists(home_ + "/.ward.toml"));
}

}  // namespace
}  // namespace ward::test
