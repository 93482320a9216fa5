// A -w or -r path that does not exist is refused with the fix (mkdir -p, or --create for -w);
// --create makes a missing -w directory under HOME or the workspace, and nowhere else.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>


#include <string>
#include <vector>

#include "harness.h"

namespace ward::test {
namespace {

class MissingBindPathsTest : public SandboxTest {};

TEST_F(MissingBindPathsTest, AMissingWritableDirSaysMkdirOrCreate) {
  const std::string cache = home_ + "/.cache/pip";
  RunResult r = RunWard({"run", "-w", cache, "--", "/bin/true"}, Defaults());
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err, "ward: -w " + cache + ": no such file or directory; create it (mkdir -p '" +
                       cache + "') or add --create to have ward make it\n");
  EXPECT_FALSE(PathExists(cache));
}

TEST_F(MissingBindPathsTest, AMissingReadOnlyPathSaysMkdir) {
  const std::string vendor = ws_ + "/vendor";
  RunResult r = RunWard({"run", "-r", "vendor", "--", "/bin/true"}, Defaults());
  EXPECT_EQ(r.status, 125);
  char real[4096];
  ASSERT_NE(realpath(ws_.c_str(), real), nullptr);
  const std::string shown = std::string(real) + "/vendor";
  EXPECT_EQ(r.err, "ward: -r " + shown + ": no such file or directory; create it (mkdir -p '" +
                       shown + "')\n");
}

// The README's example on a fresh machine: ~/.cache/pip does not exist yet.
TEST_F(MissingBindPathsTest, CreateMakesTheDirectoryAndTheRunWritesIt) {
  const std::string cache = home_ + "/.cache/pip";
  RunResult r = RunWard({"run", "--create", "-w", cache, "-r", StageDir(), "--", "/bin/sh", "-c",
                         "echo ok > " + cache + "/probe"},
                        Defaults());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "ward: made " + cache + " (--create)\n");
  EXPECT_EQ(ReadFile(cache + "/probe"), "ok\n");
  // Made once: a second run says nothing.
  r = RunWard({"run", "--create", "-w", cache, "--", "/bin/true"}, Defaults());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST_F(MissingBindPathsTest, CreateMakesNothingOutsideHomeAndWorkspace) {
  TempDir elsewhere("ward-elsewhere");
  const std::string outside = elsewhere.path() + "/made";
  RunResult r = RunWard({"run", "--create", "-w", outside, "--", "/bin/true"}, Defaults());
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err, "ward: -w " + outside +
                       ": no such directory, and --create makes directories only under your HOME "
                       "or the workspace; create it yourself (mkdir -p '" +
                       outside + "') if you mean it\n");
  EXPECT_FALSE(PathExists(outside));
  // Without --create the fix offered is mkdir alone.
  r = RunWard({"run", "-w", outside, "--", "/bin/true"}, Defaults());
  EXPECT_EQ(r.err, "ward: -w " + outside + ": no such file or directory; create it (mkdir -p '" +
                       outside + "')\n");
}

TEST_F(MissingBindPathsTest, CreateDoesNotFollowASymlinkOutOfTheWorkspace) {
  TempDir elsewhere("ward-elsewhere");
  ASSERT_EQ(symlink(elsewhere.path().c_str(), (ws_ + "/link").c_str()), 0);
  RunResult r = RunWard({"run", "--create", "-w", ws_ + "/link/made", "--", "/bin/true"},
                        Defaults());
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("--create makes directories only under your HOME or the workspace"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(PathExists(elsewhere.path() + "/made"));
}

}  // namespace
}  // namespace ward::test
