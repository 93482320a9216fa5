// A profile file that defines nothing (empty, or only comments) is refused, saying so and
// naming the line it probably lacks.
#include <gtest/gtest.h>

#include <string>

#include "harness.h"

namespace ward::test {
namespace {

class EmptyProfileTest : public SandboxTest {};

TEST_F(EmptyProfileTest, EmptyAndCommentOnlyFilesNameTheMissingExtends) {
  for (const char* text : {"", "# my profile\n\n# [network]\n"}) {
    const std::string p = home_ + "/mine.toml";
    WriteFile(p, text);
    RunResult r = RunWard({"run", "-p", p, "--", "/bin/true"}, Defaults());
    EXPECT_EQ(r.status, 125);
    EXPECT_EQ(r.err, "ward: " + p +
                         ": the profile defines nothing (the file is empty or holds only "
                         "comments); it probably lacks extends = \"default\" (a profile builds on "
                         "the default one and adds to it)\n");
  }
}

TEST_F(EmptyProfileTest, AProfileWithOnlyExtendsRuns) {
  const std::string p = home_ + "/mine.toml";
  WriteFile(p, "extends = \"default\"\n");
  RunResult r = RunWard({"run", "-p", p, "--", "/bin/true"}, Defaults());
  EXPECT_EQ(r.status, 0) << r.err;
}

}  // namespace
}  // namespace ward::test
