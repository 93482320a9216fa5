#include "enforce/landlock_coverage.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

namespace ward::enforce {
namespace {

// "right:decision" for each gap, oldest first.
std::vector<std::string> Describe(const std::vector<LandlockGap>& gaps) {
  std::vector<std::string> out;
  for (const LandlockGap& g : gaps) {
    out.push_back(std::string(g.feature->right) + ":" + LandlockGapDecisionName(g.decision));
  }
  return out;
}

TEST(LandlockCoverageTest, EveryAbiFrom1To7HasItsGapsAndEachRunsOnTheDefaultPlan) {
  const std::map<int, std::vector<std::string>> want = {
      {1,
       {"refer:stricter", "truncate:covered", "tcp:covered", "ioctl_dev:covered", "scope:covered",
        "log:audit only"}},
      {2,
       {"truncate:covered", "tcp:covered", "ioctl_dev:covered", "scope:covered", "log:audit only"}},
      {3, {"tcp:covered", "ioctl_dev:covered", "scope:covered", "log:audit only"}},
      {4, {"ioctl_dev:covered", "scope:covered", "log:audit only"}},
      {5, {"scope:covered", "log:audit only"}},
      {6, {"log:audit only"}},
      {7, {}},
  };
  for (const auto& [abi, rights] : want) {
    LandlockContext ctx;
    ctx.abi = abi;
    const std::vector<LandlockGap> gaps = LandlockGaps(ctx);
    EXPECT_EQ(Describe(gaps), rights) << "ABI " << abi;
    EXPECT_EQ(FirstRefusedGap(gaps), nullptr) << "ABI " << abi;
    for (const LandlockGap& g : gaps) {
      EXPECT_GT(g.feature->abi, abi);
      EXPECT_FALSE(g.why.empty()) << g.feature->right;
      // Whatever runs names what stands in for the right.
      EXPECT_FALSE(g.covered_by.empty()) << g.feature->right;
    }
  }
  // A newer kernel than the table lacks nothing; no Landlock at all is the planner's refusal.
  LandlockContext ctx;
  ctx.abi = 9;
  EXPECT_TRUE(LandlockGaps(ctx).empty());
  ctx.abi = 0;
  EXPECT_TRUE(LandlockGaps(ctx).empty());
}

TEST(LandlockCoverageTest, CoveringLayersAreNamed) {
  LandlockContext ctx;
  ctx.abi = 1;
  std::map<std::string, std::string> by;
  for (const LandlockGap& g : LandlockGaps(ctx)) by[g.feature->right] = g.covered_by;
  EXPECT_EQ(by["truncate"], "read-only mounts");
  EXPECT_EQ(by["tcp"], "the network namespace");
  EXPECT_EQ(by["ioctl_dev"], "the minimal /dev and seccomp");
  EXPECT_EQ(by["scope"], "the pid and network namespaces");
}

TEST(LandlockCoverageTest, AHostFileHeldByDescriptorRefusesWithoutTruncate) {
  LandlockContext ctx;
  ctx.abi = 2;
  ctx.host_files_by_descriptor = {"stdin"};
  std::vector<LandlockGap> gaps = LandlockGaps(ctx);
  const LandlockGap* refused = FirstRefusedGap(gaps);
  ASSERT_NE(refused, nullptr);
  EXPECT_STREQ(refused->feature->right, "truncate");
  EXPECT_TRUE(refused->covered_by.empty());
  const std::string msg = LandlockGapRefusal(*refused, 2, "6.1.0");
  for (const char* part :
       {"Landlock ABI 2 (Linux 6.1.0) lacks the truncate right of ABI 3 "
        "(Linux 6.2)",
        "stdin", "/proc/self/fd/N", "--allow-degraded=landlock", "through a pipe"}) {
    EXPECT_NE(msg.find(part), std::string::npos) << part << " in " << msg;
  }
  // ABI 3 has the right: the same descriptors are Landlock's to refuse.
  ctx.abi = 3;
  gaps = LandlockGaps(ctx);
  EXPECT_EQ(FirstRefusedGap(gaps), nullptr);
}

TEST(LandlockCoverageTest, AWritableMountWithoutALandlockWriteRuleRefusesWithoutTruncate) {
  MountSpec mount;
  LandlockSpec landlock;
  landlock.paths = {{"/", false, false, false}, {"/tmp", true, false, false}};
  MountOp tmp;
  tmp.kind = MountOp::Kind::kTmpfs;
  tmp.target = "/tmp";
  MountOp ro;
  ro.kind = MountOp::Kind::kBind;
  ro.target = "/usr";
  MountOp dev;
  dev.kind = MountOp::Kind::kDev;
  dev.target = "/dev";
  MountOp proc;
  proc.kind = MountOp::Kind::kProc;
  proc.target = "/proc";
  mount.ops = {dev, proc, tmp, ro};
  // Positive control: every writable mount is a Landlock writable root.
  EXPECT_EQ(WritableMountOutsideLandlockWrites(mount, landlock), "");
  MountOp rw = ro;
  rw.target = "/srv";
  rw.writable = true;
  mount.ops.push_back(rw);
  EXPECT_EQ(WritableMountOutsideLandlockWrites(mount, landlock), "/srv");

  LandlockContext ctx;
  ctx.abi = 1;
  ctx.writable_mount_without_landlock_write = "/srv";
  const std::vector<LandlockGap> gaps = LandlockGaps(ctx);
  const LandlockGap* refused = FirstRefusedGap(gaps);
  ASSERT_NE(refused, nullptr);
  EXPECT_STREQ(refused->feature->right, "truncate");
  EXPECT_NE(refused->why.find("/srv"), std::string::npos) << refused->why;
}

TEST(LandlockCoverageTest, WithoutItsOwnNamespacesARunNeedsTcpRulesAndScoping) {
  LandlockContext ctx;
  ctx.abi = 3;
  ctx.network_namespace = false;
  std::vector<LandlockGap> gaps = LandlockGaps(ctx);
  ASSERT_NE(FirstRefusedGap(gaps), nullptr);
  EXPECT_STREQ(FirstRefusedGap(gaps)->feature->right, "tcp");
  EXPECT_EQ(Describe(gaps), (std::vector<std::string>{"tcp:refused", "ioctl_dev:covered",
                                                      "scope:refused", "log:audit only"}));
  ctx.abi = 5;
  ctx.network_namespace = true;
  ctx.pid_namespace = false;
  gaps = LandlockGaps(ctx);
  ASSERT_NE(FirstRefusedGap(gaps), nullptr);
  EXPECT_STREQ(FirstRefusedGap(gaps)->feature->right, "scope");
  ctx.abi = 6;  // the kernel scopes them itself
  gaps = LandlockGaps(ctx);
  EXPECT_EQ(FirstRefusedGap(gaps), nullptr);
}

TEST(LandlockCoverageTest, ShortTextNamesTheAbiAndTheCover) {
  LandlockContext ctx;
  ctx.abi = 1;
  std::vector<std::string> got;
  for (const LandlockGap& g : LandlockGaps(ctx)) got.push_back(LandlockGapShort(g));
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0],
            "refer (ABI 2: stricter without it, cross-directory links and renames fail "
            "with EXDEV)");
  EXPECT_EQ(got[1], "truncate (ABI 3: covered by read-only mounts)");
  EXPECT_EQ(got[2], "tcp (ABI 4: covered by the network namespace)");
  EXPECT_EQ(got[5], "log (ABI 7: audit only)");
}

TEST(LandlockCoverageTest, TruncatableHostObjects) {
  // A directory: every file below it.
  EXPECT_TRUE(TruncatableHostObject(S_IFDIR | 0755, O_RDONLY, false));
  // A regular file the command may read, or only append to: truncation would destroy it.
  EXPECT_TRUE(TruncatableHostObject(S_IFREG | 0644, O_RDONLY, true));
  EXPECT_TRUE(TruncatableHostObject(S_IFREG | 0644, O_WRONLY | O_APPEND, true));
  // One it may overwrite anyway, or could not write at all, or no file at all.
  EXPECT_FALSE(TruncatableHostObject(S_IFREG | 0644, O_WRONLY, true));
  EXPECT_FALSE(TruncatableHostObject(S_IFREG | 0644, O_RDWR, true));
  EXPECT_FALSE(TruncatableHostObject(S_IFREG | 0444, O_RDONLY, false));
  EXPECT_FALSE(TruncatableHostObject(S_IFCHR | 0666, O_RDONLY, true));
  EXPECT_FALSE(TruncatableHostObject(S_IFIFO | 0600, O_RDONLY, true));
}

// Runs `TruncatableStdio` with fd 0 replaced by `fd` (restored after).
std::vector<std::string> WithStdin(int fd, bool tty0 = false) {
  int saved = dup(0);
  EXPECT_GE(saved, 0);
  EXPECT_EQ(dup2(fd, 0), 0);
  const bool tty[3] = {tty0, true, true};  // stdout and stderr are not looked at
  std::vector<std::string> out = TruncatableStdio(tty);
  dup2(saved, 0);
  close(saved);
  return out;
}

TEST(LandlockCoverageTest, TruncatableStdioLooksAtTheDescriptorsThemselves) {
  char tmpl[] = "/tmp/ward-coverage-test-XXXXXX";
  int w = mkstemp(tmpl);
  ASSERT_GE(w, 0);
  close(w);
  int file = open(tmpl, O_RDONLY | O_CLOEXEC);
  ASSERT_GE(file, 0);
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(null, 0);
  int pipes[2];
  ASSERT_EQ(pipe2(pipes, O_CLOEXEC), 0);
  // A file of ours opened for reading: writable by us, so truncatable by /proc/self/fd/0.
  EXPECT_EQ(WithStdin(file), std::vector<std::string>{"stdin"});
  EXPECT_TRUE(WithStdin(file, /*tty0=*/true).empty());  // a terminal's fd is replaced
  EXPECT_TRUE(WithStdin(null).empty());
  EXPECT_TRUE(WithStdin(pipes[0]).empty());
  close(file);
  close(null);
  close(pipes[0]);
  close(pipes[1]);
  unlink(tmpl);
}

}  // namespace
}  // namespace ward::enforce
