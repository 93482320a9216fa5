// A command line that does not parse names the wrong word and the nearest right one, and a
// usage error of `ward run` exits 125 (ward's own failure, not the command's).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness.h"

namespace ward::test {
namespace {

class UsageErrorsTest : public SandboxTest {
 protected:
  RunResult Ward(const std::vector<std::string>& args) { return RunWard(args, Defaults()); }
};

TEST_F(UsageErrorsTest, AMistypedCommandIsNamedWithTheNearestOne) {
  RunResult r = Ward({"runn", "--", "ls"});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err, "ward: unknown command 'runn' (did you mean 'run'?); see ward --help\n");
  EXPECT_EQ(r.out, "");
}

TEST_F(UsageErrorsTest, AnUnknownWordWithNothingNearIsNamedAlone) {
  RunResult r = Ward({"frobnicate"});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err, "ward: unknown command 'frobnicate'; see ward --help\n");
}

TEST_F(UsageErrorsTest, AnOptionBeforeTheCommandSaysACommandComesFirst) {
  RunResult r = Ward({"--bogus"});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err,
            "ward: unknown option --bogus; ward takes a command first: ward COMMAND [OPTIONS] "
            "(see ward --help)\n");
  r = Ward({"--run"});
  EXPECT_EQ(r.err,
            "ward: unknown option --run (did you mean the command 'run'?); ward takes a command "
            "first: ward COMMAND [OPTIONS] (see ward --help)\n");
}

TEST_F(UsageErrorsTest, AnUnknownOptionOfRunIsNamedNotTheDoubleDash) {
  RunResult r = Ward({"run", "--bogus", "--", "ls"});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err, "ward run: unknown option --bogus; see ward run --help\n");
  r = Ward({"run", "--memroy", "2G", "--", "ls"});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err,
            "ward run: unknown option --memroy (did you mean --memory?); see ward run --help\n");
  // Option values are skipped, not taken for options; "--" ends the options.
  r = Ward({"run", "-w", ws_, "--memory=2G", "-X", "--", "ls", "--bogus"});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err, "ward run: unknown option -X; see ward run --help\n");
}

TEST_F(UsageErrorsTest, NestedCommandsNameTheirOwnWords) {
  RunResult r = Ward({"approvals", "lst"});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err,
            "ward approvals: unknown command 'lst' (did you mean 'list'?); see ward approvals "
            "--help\n");
  r = Ward({"audit", "show", "--jsn", "last"});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err,
            "ward audit show: unknown option --jsn (did you mean --json?); see ward audit show "
            "--help\n");
}

TEST_F(UsageErrorsTest, HelpAndVersionStillSucceed) {
  EXPECT_EQ(Ward({"--help"}).status, 0);
  EXPECT_EQ(Ward({"run", "--help"}).status, 0);
  RunResult r = Ward({"--version"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("ward ", 0), 0u) << r.out;
}

}  // namespace
}  // namespace ward::test
