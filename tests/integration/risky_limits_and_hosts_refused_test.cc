// Values a new user writes meaning something else are refused with what they mean and how to
// write what was meant: a size without a unit below 1 MiB (bytes: the command would be killed),
// and host patterns that allow every host, unless --allow-net-anything says so.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness.h"

namespace ward::test {
namespace {

class RiskyValuesTest : public SandboxTest {
 protected:
  RunResult Run(const std::vector<std::string>& opts) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), opts.begin(), opts.end());
    args.insert(args.end(), {"--", "/bin/true"});
    return RunWard(args, Defaults());
  }
  std::string Profile(const std::string& text) {
    std::string path = home_ + "/p.toml";
    WriteFile(path, text);
    return path;
  }
};

TEST_F(RiskyValuesTest, AMemoryFigureWithoutAUnitIsRefusedWithHowToWriteMiB) {
  RunResult r = Run({"--memory", "5"});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err,
            "ward: command line: --memory: 5 without a unit means 5 bytes, too little to be "
            "meant; write 5M for MiB or 5G for GiB (or 5B if you do mean bytes)\n");
  std::string p = Profile("extends = \"default\"\n[limits]\nmemory = 5\n");
  r = Run({"-p", p});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err, "ward: " + p +
                       ":3: limits.memory: 5 without a unit means 5 bytes, too little to be "
                       "meant; write 5M for MiB or 5G for GiB (or 5B if you do mean bytes)\n");
  r = Run({"--tmp-size", "512"});
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("512 without a unit means 512 bytes"), std::string::npos) << r.err;
}

TEST_F(RiskyValuesTest, SizesWithAUnitOrOfAMiBAndMoreRun) {
  EXPECT_EQ(Run({"--memory", "256M"}).status, 0);
  EXPECT_EQ(Run({"--memory", "268435456"}).status, 0);  // bytes, but a sensible number of them
}

TEST_F(RiskyValuesTest, EveryHostPatternsAreRefusedNamingTheFlag) {
  const std::string tail =
      "; list the hosts the command needs, or add --allow-net-anything to the command line if "
      "that is what you mean\n";
  for (auto [pattern, what] :
       std::vector<std::pair<std::string, std::string>>{
           {"*", "every host"},
           {"*.*", "every host"},
           {"*.com", "every host under the top-level domain '.com'"},
           {"0.0.0.0/0", "every address"},
           {"::/0", "every address"},
           {"[::]/0", "every address"}}) {
    RunResult r = Run({"-n", pattern});
    EXPECT_EQ(r.status, 125) << pattern;
    EXPECT_EQ(r.err, "ward: command line: --allow-net: '" + pattern + "' would allow " + what + tail);
  }
  std::string p = Profile("extends = \"default\"\n[network]\nallow = [\"*.org\"]\n");
  RunResult r = Run({"-p", p});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err, "ward: " + p +
                       ":3: network.allow: '*.org' would allow every host under the top-level "
                       "domain '.org'" + tail);
}

TEST_F(RiskyValuesTest, NarrowPatternsAndDenyRulesAreNotTouched) {
  EXPECT_EQ(Run({"-n", "*.example.com", "-n", "10.0.0.0/8", "--deny-net", "*"}).status, 0);
}

TEST_F(RiskyValuesTest, AllowNetAnythingAcceptsThemAndWhyAgrees) {
  EXPECT_EQ(Run({"--allow-net-anything", "-n", "*"}).status, 0);
  RunResult r = RunWard({"why", "--allow-net-anything", "-n", "*", "host.example"}, Defaults());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "host.example:443: allowed\n  why: allowed by '*' (command line (--allow-net))\n");
}

}  // namespace
}  // namespace ward::test
