// `ward explain --help` and `ward why --help` show their own options first and, apart, only
// the run options that change their answer; `ward why HOST` for a denied host says which flag
// would allow it (nothing for a host a deny rule names).
#include <gtest/gtest.h>

#include <string>

#include "harness.h"

namespace ward::test {
namespace {

class ExplainWhyHelpTest : public SandboxTest {};

TEST_F(ExplainWhyHelpTest, WhyHelpShowsOnlyWhatChangesItsAnswer) {
  if (std::string why = WhyAskIsRefusedHere(); !why.empty()) GTEST_SKIP() << why;
  RunResult r = RunWard({"why", "--help"}, Defaults());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Run options (the answer is for a run given these):"), std::string::npos)
      << r.out;
  for (const char* shown : {"--json", "-w,--write", "-n,--allow-net", "--deny-net", "--profile"}) {
    EXPECT_NE(r.out.find(shown), std::string::npos) << shown << "\n" << r.out;
  }
  for (const char* hidden : {"--memory", "--approver", "--credential", "--timeout", "--ask"}) {
    EXPECT_EQ(r.out.find(hidden), std::string::npos) << hidden << "\n" << r.out;
  }
  // Hidden is not refused: a run's own command line can be pasted.
  r = RunWard({"why", "--memory", "2G", "/usr/bin/env"}, Defaults());
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(ExplainWhyHelpTest, ExplainHelpGroupsTheRunOptions) {
  RunResult r = RunWard({"explain", "--help"}, Defaults());
  ASSERT_EQ(r.status, 0) << r.err;
  const size_t own = r.out.find("Options:");
  const size_t group = r.out.find("Run options (what `ward run` would be given):");
  ASSERT_NE(own, std::string::npos) << r.out;
  ASSERT_NE(group, std::string::npos) << r.out;
  EXPECT_LT(r.out.find("--json"), group);
  EXPECT_GT(r.out.find("--memory"), group);
  EXPECT_EQ(r.out.find("--approver-secret-file"), std::string::npos) << r.out;
}

TEST_F(ExplainWhyHelpTest, WhyADeniedHostSaysTheFlagThatAllowsIt) {
  RunResult r = RunWard({"why", "registry.example.org"}, Defaults());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out,
            "registry.example.org:443: denied\n"
            "  why: no rule allows registry.example.org:443\n"
            "  allow with: -n registry.example.org\n");
  r = RunWard({"why", "git.example.org:22"}, Defaults());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out,
            "git.example.org:22: denied\n"
            "  why: no rule allows git.example.org:22\n"
            "  allow with: -n git.example.org:22\n");
  r = RunWard({"why", "--json", "registry.example.org"}, Defaults());
  EXPECT_NE(r.out.find("\"allow_with\": \"-n registry.example.org\""), std::string::npos)
      << r.out;
}

TEST_F(ExplainWhyHelpTest, ADenyListedHostGetsNoAllowHint) {
  RunResult r =
      RunWard({"why", "-n", "*.example.org", "--deny-net", "bad.example.org", "bad.example.org"},
              Defaults());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out,
            "bad.example.org:443: denied\n"
            "  why: denied by 'bad.example.org' (command line (--deny-net))\n");
}

}  // namespace
}  // namespace ward::test
