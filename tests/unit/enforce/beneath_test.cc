#include "enforce/beneath.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace ward::enforce {
namespace {

// A workspace ws/ with a real directory real/ and a host directory host/ beside it (outside).
class BeneathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ward-beneath-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    char real[PATH_MAX];
    ASSERT_NE(realpath(tmpl, real), nullptr);
    dir_ = real;
    ws_ = dir_ + "/ws";
    host_ = dir_ + "/host";
    for (const std::string& d : {ws_, host_, ws_ + "/real", ws_ + "/real/sub", host_ + "/sub"}) {
      ASSERT_EQ(mkdir(d.c_str(), 0755), 0) << d;
    }
    ws_fd_ = open(ws_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(ws_fd_, 0);
  }
  void TearDown() override {
    close(ws_fd_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void Link(const std::string& target, const std::string& at) {
    ASSERT_EQ(symlink(target.c_str(), at.c_str()), 0) << at;
  }
  static ino_t Inode(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_ino : 0;
  }
  static ino_t Inode(const std::string& path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  }

  std::string dir_, ws_, host_;
  int ws_fd_ = -1;
};

TEST(RelativeBeneath, IsLexicalAndComponentWise) {
  EXPECT_EQ(RelativeBeneath("/w", "/w"), "");
  EXPECT_EQ(RelativeBeneath("/w", "/w/a/b"), "a/b");
  EXPECT_EQ(RelativeBeneath("/", "/a"), "a");
  EXPECT_EQ(RelativeBeneath("/w", "/w2"), std::nullopt);
  EXPECT_EQ(RelativeBeneath("/w", "/"), std::nullopt);
  EXPECT_EQ(RelativeBeneath("/w/a", "/w"), std::nullopt);
}

TEST_F(BeneathTest, OpensRealDirectoriesAndFiles) {
  ASSERT_EQ(close(open((ws_ + "/real/file").c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  for (const std::string rel : {"", "real", "real/sub", "real/file"}) {
    Result<UniqueFd> fd = OpenBeneath(ws_fd_, ws_, rel);
    ASSERT_TRUE(fd.ok()) << rel << ": " << fd.status().ToString();
    EXPECT_EQ(Inode(fd->get()), Inode(rel.empty() ? ws_ : ws_ + "/" + rel)) << rel;
  }
}

TEST_F(BeneathTest, RefusesASymlinkAnywhereOnTheWayNamingIt) {
  Link(host_, ws_ + "/abs");                // absolute, out of the workspace
  Link("../host", ws_ + "/rel");            // relative, climbing out
  Link("../..", ws_ + "/real/up");          // relative, up to the workspace's parent
  Link(ws_ + "/real", ws_ + "/inside");     // even one that stays inside
  Link("/proc/self/root", ws_ + "/magic");  // a magic link's way in
  struct Case {
    std::string rel, names;
  };
  for (const Case& c : {Case{"abs", "/abs"}, Case{"abs/sub", "/abs"}, Case{"rel", "/rel"},
                        Case{"real/up", "/real/up"}, Case{"real/up/host", "/real/up"},
                        Case{"inside/sub", "/inside"}, Case{"magic/etc", "/magic"}}) {
    Result<UniqueFd> fd = OpenBeneath(ws_fd_, ws_, c.rel);
    ASSERT_FALSE(fd.ok()) << c.rel;
    EXPECT_EQ(fd.status().code(), Code::kPermissionDenied) << c.rel;
    EXPECT_EQ(fd.status().message().rfind(ws_ + c.names +
                                              " is a symbolic link inside the "
                                              "workspace",
                                          0),
              0u)
        << fd.status().message();
  }
}

TEST_F(BeneathTest, RefusesDotDotAndReportsWhatIsMissing) {
  for (const std::string rel : {"..", "real/../..", "real/..", "./real"}) {
    Result<UniqueFd> fd = OpenBeneath(ws_fd_, ws_, rel);
    ASSERT_FALSE(fd.ok()) << rel;
    EXPECT_EQ(fd.status().code(), Code::kPermissionDenied) << rel;
  }
  Result<UniqueFd> missing = OpenBeneath(ws_fd_, ws_, "real/nothing/here");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().err(), ENOENT);
  EXPECT_EQ(missing.status().message(), ws_ + "/real/nothing");
}

TEST_F(BeneathTest, RealPathFollowsSymlinksOutsideTheWorkspaceOnly) {
  // Outside: followed as realpath(3) does, including into the workspace.
  Link(ws_, dir_ + "/to-ws");
  Link("ws/real", dir_ + "/to-real");
  Link(host_, dir_ + "/to-host");
  EXPECT_EQ(*RealPathNotFollowingBelow(dir_ + "/to-ws/real/sub", ws_), ws_ + "/real/sub");
  EXPECT_EQ(*RealPathNotFollowingBelow(dir_ + "/to-real/sub", ws_), ws_ + "/real/sub");
  EXPECT_EQ(*RealPathNotFollowingBelow(dir_ + "/to-host/sub", ws_), host_ + "/sub");
  EXPECT_EQ(*RealPathNotFollowingBelow(ws_ + "/real", ws_), ws_ + "/real");
  EXPECT_EQ(*RealPathNotFollowingBelow(ws_, ws_), ws_);
  EXPECT_EQ(*RealPathNotFollowingBelow("/", ws_), "/");
  // The same answer as realpath(3) wherever no symlink in the workspace is involved.
  for (const std::string& p : {dir_ + "/to-ws", dir_ + "/to-host/sub", std::string("/usr/bin"),
                               std::string("/proc/self")}) {
    char buf[PATH_MAX];
    ASSERT_NE(realpath(p.c_str(), buf), nullptr) << p;
    EXPECT_EQ(*RealPathNotFollowingBelow(p, ws_), buf) << p;
  }
  // Inside: never followed, wherever it points and however the workspace was reached.
  Link(host_, ws_ + "/sec");
  Link("../../host", ws_ + "/real/up");
  Link("sub", ws_ + "/real/same");
  for (const std::string& p : {ws_ + "/sec", ws_ + "/sec/sub", dir_ + "/to-ws/sec",
                               ws_ + "/real/up", ws_ + "/real/same", dir_ + "/to-real/same"}) {
    Result<std::string> r = RealPathNotFollowingBelow(p, ws_);
    ASSERT_FALSE(r.ok()) << p << " -> " << *r;
    EXPECT_EQ(r.status().code(), Code::kPermissionDenied) << p;
    EXPECT_NE(r.status().message().find("is a symbolic link inside the workspace"),
              std::string::npos);
  }
}

TEST_F(BeneathTest, RealPathReportsMissingPathsAndLoops) {
  Result<std::string> r = RealPathNotFollowingBelow(host_ + "/none/x", ws_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().err(), ENOENT);
  Link(dir_ + "/loop-b", dir_ + "/loop-a");
  Link(dir_ + "/loop-a", dir_ + "/loop-b");
  r = RealPathNotFollowingBelow(dir_ + "/loop-a", ws_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().err(), ELOOP);
}

}  // namespace
}  // namespace ward::enforce
