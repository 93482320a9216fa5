// File approvals, the pure parts: which trapped opens continue, are refused or are asked for
// (from a LaunchPlan's mounts and the policy's deny rules), which flags a grant opens with,
// and the host open that refuses every symlink on the way.
#include "supervisor/approvals/files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace ward::supervisor {
namespace {

enforce::MountOp Op(enforce::MountOp::Kind kind, std::string target, bool writable = false,
                    std::string source = "") {
  enforce::MountOp op;
  op.kind = kind;
  op.target = std::move(target);
  op.writable = writable;
  op.source = std::move(source);
  return op;
}

class DecideTest : public ::testing::Test {
 protected:
  void SetUp() override {
    using K = enforce::MountOp::Kind;
    enforce::LaunchPlan plan;
    plan.mount.ops = {Op(K::kTmpfs, "/tmp", true),
                      Op(K::kTmpfs, "/home/u", true),
                      Op(K::kDev, "/dev"),
                      Op(K::kProc, "/proc"),
                      Op(K::kBind, "/usr"),
                      Op(K::kBind, "/etc"),
                      Op(K::kBind, "/code/proj", true),
                      Op(K::kBind, "/code/proj/vendor"),
                      Op(K::kSymlink, "/var/tmp", false, "/tmp"),
                      Op(K::kSymlink, "/lib", false, "usr/lib"),
                      Op(K::kFile, "/etc/resolv.conf")};
    policy::Policy pol;
    pol.deny = {{"/etc/shadow", {}}, {"/etc/ssh/ssh_host_*_key", {}}, {"/srv/secret", {}}};
    view_ = FileView::From(plan, pol);
  }
  FileVerdict V(const std::string& path, bool write = false) {
    return DecideFileAccess(view_, path, write).verdict;
  }
  FileView view_;
};

TEST_F(DecideTest, AllowedAccessContinues) {
  EXPECT_EQ(V("/usr/bin/ls"), FileVerdict::kContinue);
  EXPECT_EQ(V("/code/proj/src/a.c", true), FileVerdict::kContinue);
  EXPECT_EQ(V("/code/proj"), FileVerdict::kContinue);
  EXPECT_EQ(V("/"), FileVerdict::kContinue);                                // ward's root
  EXPECT_EQ(V("/code"), FileVerdict::kContinue);                            // a directory of it
  EXPECT_EQ(V("/lib/x86_64-linux-gnu/libc.so.6"), FileVerdict::kContinue);  // via ward's link
}

TEST_F(DecideTest, WardsOwnTreesAreNeverAsked) {
  for (const char* p : {"/proc/self/fd/3", "/dev/null", "/tmp/x", "/home/u/.ssh/id_rsa",
                        "/var/tmp/y", "/proc/1/root/etc/passwd"}) {
    EXPECT_EQ(V(p, true), FileVerdict::kContinue) << p;
  }
}

TEST_F(DecideTest, DenyRulesAreRefusedWithoutAsking) {
  EXPECT_EQ(V("/etc/shadow"), FileVerdict::kDeny);
  EXPECT_EQ(V("/etc/ssh/ssh_host_ed25519_key"), FileVerdict::kDeny);
  EXPECT_EQ(V("/srv/secret/a/b"), FileVerdict::kDeny);
  EXPECT_EQ(V("/etc/./x/../shadow"), FileVerdict::kDeny);  // normalised first
  EXPECT_EQ(V("/etc/ssh/ssh_host_ed25519_key.pub"), FileVerdict::kContinue);
}

TEST_F(DecideTest, OutsideTheViewOrBeyondItsAccessIsAsked) {
  EXPECT_EQ(V("/srv/data.csv"), FileVerdict::kAsk);
  EXPECT_EQ(V("/code/other/file"), FileVerdict::kAsk);
  EXPECT_EQ(V("/usr/bin/ls", true), FileVerdict::kAsk);          // read-only bind
  EXPECT_EQ(V("/code/proj/vendor/x", true), FileVerdict::kAsk);  // nested read-only bind
  EXPECT_EQ(V("/etc/resolv.conf", true), FileVerdict::kAsk);
  EXPECT_EQ(V("/codespace"), FileVerdict::kAsk);  // component-wise, not a string prefix
  // ".." cannot climb out of a view path into an askable one and back.
  FileDecision d = DecideFileAccess(view_, "/code/proj/../../srv/x", false);
  EXPECT_EQ(d.verdict, FileVerdict::kAsk);
  EXPECT_EQ(d.path, "/srv/x");
}

TEST(OpenFlagsTest, AccessForFlags) {
  EXPECT_EQ(AccessForOpenFlags(O_RDONLY), FileAccess::kRead);
  EXPECT_EQ(AccessForOpenFlags(O_WRONLY), FileAccess::kWrite);
  EXPECT_EQ(AccessForOpenFlags(O_RDWR), FileAccess::kReadWrite);
  EXPECT_EQ(AccessForOpenFlags(O_RDONLY | O_TRUNC), FileAccess::kWrite);
  EXPECT_EQ(AccessForOpenFlags(O_RDONLY | O_CREAT), FileAccess::kCreate);
}

TEST(OpenFlagsTest, GrantedFlagsAreNeverWiderThanTheGrant) {
  Result<int> r = GrantedOpenFlags(O_RDONLY | O_CLOEXEC | O_NONBLOCK, FileAccess::kRead);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r & O_ACCMODE, O_RDONLY);
  EXPECT_TRUE(*r & O_NOFOLLOW);
  EXPECT_TRUE(*r & O_NONBLOCK);
  EXPECT_FALSE(GrantedOpenFlags(O_RDWR, FileAccess::kRead).ok());
  EXPECT_FALSE(GrantedOpenFlags(O_WRONLY, FileAccess::kRead).ok());
  EXPECT_FALSE(GrantedOpenFlags(O_RDONLY | O_TRUNC, FileAccess::kRead).ok());
  EXPECT_FALSE(GrantedOpenFlags(O_WRONLY | O_CREAT, FileAccess::kReadWrite).ok());
  EXPECT_FALSE(GrantedOpenFlags(O_PATH, FileAccess::kCreate).ok());
  EXPECT_FALSE(GrantedOpenFlags(O_TMPFILE | O_RDWR, FileAccess::kCreate).ok());
  EXPECT_FALSE(GrantedOpenFlags(O_ACCMODE, FileAccess::kCreate).ok());
  // Unknown or odd flags are dropped, not passed on.
  r = GrantedOpenFlags(O_RDONLY | O_NOATIME | O_ASYNC, FileAccess::kRead);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r & O_NOATIME);
  EXPECT_FALSE(*r & O_ASYNC);
  r = GrantedOpenFlags(O_WRONLY | O_CREAT | O_EXCL | O_TRUNC, FileAccess::kCreate);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r & (O_CREAT | O_EXCL | O_TRUNC), O_CREAT | O_EXCL | O_TRUNC);
}

class HostOpenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ward-fa-unit.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/file") << "content";
    std::ofstream(dir_ + "/secret") << "secret";
    ASSERT_EQ(mkdir((dir_ + "/real").c_str(), 0700), 0);
    std::ofstream(dir_ + "/real/inner") << "inner";
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(system(cmd.c_str()), 0);
  }
  std::string dir_;
};

TEST_F(HostOpenTest, OpensARegularFile) {
  Result<UniqueFd> fd = OpenHostPath(dir_ + "/file", O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  char buf[16] = {};
  EXPECT_EQ(read(fd->get(), buf, sizeof buf), 7);
}

TEST_F(HostOpenTest, RefusesSymlinksAnywhereOnThePath) {
  ASSERT_EQ(symlink((dir_ + "/secret").c_str(), (dir_ + "/link").c_str()), 0);
  ASSERT_EQ(symlink((dir_ + "/real").c_str(), (dir_ + "/dirlink").c_str()), 0);
  Result<UniqueFd> a = OpenHostPath(dir_ + "/link", O_RDONLY | O_NOFOLLOW, 0);
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a.status().err(), ELOOP);
  Result<UniqueFd> b = OpenHostPath(dir_ + "/dirlink/inner", O_RDONLY | O_NOFOLLOW, 0);
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(b.status().err(), ELOOP);
  EXPECT_TRUE(OpenHostPath(dir_ + "/real/inner", O_RDONLY | O_NOFOLLOW, 0).ok());  // control
}

TEST_F(HostOpenTest, RefusesRelativeAndUnnormalisedPaths) {
  EXPECT_FALSE(OpenHostPath("relative", O_RDONLY, 0).ok());
  EXPECT_FALSE(OpenHostPath(dir_ + "/real/../secret", O_RDONLY, 0).ok());
  EXPECT_FALSE(OpenHostPath("", O_RDONLY, 0).ok());
  EXPECT_FALSE(OpenHostPath("/", O_RDONLY, 0).ok());
}

TEST_F(HostOpenTest, CreatesOnlyWithCreate) {
  EXPECT_FALSE(OpenHostPath(dir_ + "/new", O_WRONLY | O_NOFOLLOW, 0).ok());
  Result<UniqueFd> fd = OpenHostPath(dir_ + "/new", O_WRONLY | O_CREAT | O_NOFOLLOW, 0600);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  struct stat st;
  ASSERT_EQ(fstat(fd->get(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

}  // namespace
}  // namespace ward::supervisor
