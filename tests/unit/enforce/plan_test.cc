#include "enforce/plan.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "enforce/probe.h"
#include "policy/loader.h"

namespace ward::enforce {
namespace {

class PlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ward-plan-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    char real[PATH_MAX];
    ASSERT_NE(realpath(tmpl, real), nullptr);
    dir_ = real;
    for (const char* d : {"/home", "/ws", "/a", "/a/b", "/a-b", "/a.b", "/ab"}) {
      ASSERT_EQ(mkdir((dir_ + d).c_str(), 0755), 0) << d;
    }
  }
  void TearDown() override {
    for (const char* d : {"/ab", "/a.b", "/a-b", "/a/b", "/a", "/ws", "/home", ""}) {
      rmdir((dir_ + d).c_str());
    }
  }

  // The targets of the plan's binds below the test directory, in the plan's order.
  std::vector<std::string> BindsBelowDir(const std::vector<std::string>& read,
                                         const std::vector<std::string>& write) {
    policy::RunFlags flags;
    flags.read = read;
    flags.write = write;
    policy::Context ctx{dir_ + "/home", dir_ + "/ws", dir_ + "/ws", ""};
    Result<policy::Policy> pol = policy::LoadPolicy(
        flags, ctx, [](const std::string& p) -> Result<std::string> { return NotFound(p); });
    EXPECT_TRUE(pol.ok()) << pol.status().ToString();
    if (!pol.ok()) return {};
    PlanInput input;
    input.argv = {"true"};
    input.prepare_seccomp = false;
    PlanNotes notes;
    Result<LaunchPlan> plan = PlanLaunch(*pol, ProbeKernel(false), input, &notes);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (!plan.ok()) return {};
    std::vector<std::string> out;
    for (const MountOp& op : plan->mount.ops) {
      if (op.kind == MountOp::Kind::kBind && PathIsWithin(op.target, dir_) &&
          op.target.rfind(dir_ + "/ws", 0) != 0 && op.target.rfind(dir_ + "/home", 0) != 0) {
        out.push_back(op.target.substr(dir_.size()));
      }
    }
    return out;
  }

  std::string dir_;
};

TEST_F(PlanTest, MountsSortComponentByComponentSoADirectoryComesRightBeforeWhatIsBelowIt) {
  // Byte order would put "/a-b" and "/a.b" ('-' and '.' sort before '/') between "/a" and
  // "/a/b". (/a/b is writable, so that it is a bind of its own inside the read-only /a.)
  const std::vector<std::string> want = {"/a", "/a/b", "/a-b", "/a.b", "/ab"};
  EXPECT_EQ(
      BindsBelowDir({dir_ + "/ab", dir_ + "/a.b", dir_ + "/a-b", dir_ + "/a"}, {dir_ + "/a/b"}),
      want);
  EXPECT_EQ(
      BindsBelowDir({dir_ + "/a", dir_ + "/a-b", dir_ + "/ab", dir_ + "/a.b"}, {dir_ + "/a/b"}),
      want);
}

TEST(PlanPathsTest, NormalizePathIsLexical) {
  EXPECT_EQ(NormalizePath("/a//b/./c/../d"), "/a/b/d");
  EXPECT_EQ(NormalizePath("/"), "/");
  EXPECT_EQ(NormalizePath(""), "/");
  EXPECT_EQ(NormalizePath("/.."), "/");
  EXPECT_EQ(NormalizePath("/a/.."), "/");
  EXPECT_EQ(NormalizePath("/a/b/../../../c"), "/c");
  EXPECT_EQ(NormalizePath("/a/b/"), "/a/b");
  EXPECT_EQ(NormalizePath("//a///b//"), "/a/b");
  EXPECT_EQ(NormalizePath("/a/./b/."), "/a/b");
  EXPECT_EQ(NormalizePath("/a/..b/.c/..."), "/a/..b/.c/...");
  EXPECT_EQ(NormalizePath("/usr/lib/../bin"), "/usr/bin");
}

TEST(PlanPathsTest, PathIsWithinMeansAtOrBelow) {
  EXPECT_TRUE(PathIsWithin("/a/b", "/a"));
  EXPECT_TRUE(PathIsWithin("/a", "/a"));
  EXPECT_TRUE(PathIsWithin("/a", "/"));
  EXPECT_FALSE(PathIsWithin("/ab", "/a"));
  EXPECT_FALSE(PathIsWithin("/a", "/a/b"));
}

}  // namespace
}  // namespace ward::enforce
