// Reading a file someone else may have placed (common/untrusted_file.h): nothing at the path
// makes the read hang or run without bound, and only a small regular file of an accepted owner
// is read.
#include "common/untrusted_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

namespace ward {
namespace {

using ::testing::HasSubstr;

constexpr size_t kMax = 64 * 1024;

class UntrustedFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ward-untrusted.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/.ward.toml";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Write(const std::string& text) { std::ofstream(path_, std::ios::binary) << text; }
  UntrustedFileRules Mine() const { return UntrustedFileRules{kMax, {getuid()}}; }
  // Reads on another thread: a read that hangs fails the test instead of blocking it.
  Result<std::string> ReadWithin(const UntrustedFileRules& rules, std::chrono::seconds limit) {
    auto f = std::async(std::launch::async, [&] { return ReadUntrustedFile(path_, rules); });
    if (f.wait_for(limit) != std::future_status::ready) {
      ADD_FAILURE() << "the read of " << path_ << " did not end within " << limit.count() << "s";
      std::abort();  // the thread cannot be stopped; a hung test must not pass
    }
    return f.get();
  }

  std::string dir_, path_;
};

TEST_F(UntrustedFile, ASmallRegularFileOfAnAcceptedOwnerIsRead) {
  Write("[limits]\nmemory = \"1G\"\n");
  Result<std::string> r = ReadUntrustedFile(path_, Mine());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "[limits]\nmemory = \"1G\"\n");
  Write(std::string(kMax, '#'));  // exactly the bound
  r = ReadUntrustedFile(path_, Mine());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->size(), kMax);
}

TEST_F(UntrustedFile, NothingThereIsNotFound) {
  Result<std::string> r = ReadUntrustedFile(path_, Mine());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
}

TEST_F(UntrustedFile, ASymlinkIsNotFollowedEvenToDevZero) {
  ASSERT_EQ(symlink("/dev/zero", path_.c_str()), 0);
  Result<std::string> r = ReadWithin(Mine(), std::chrono::seconds(5));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "a symbolic link (to /dev/zero), not a regular file");
  // Also to a regular file of ours: the link itself is what is refused.
  ASSERT_EQ(unlink(path_.c_str()), 0);
  std::ofstream(dir_ + "/real") << "x";
  ASSERT_EQ(symlink("real", path_.c_str()), 0);
  r = ReadUntrustedFile(path_, Mine());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("a symbolic link (to real)"));
}

TEST_F(UntrustedFile, AFifoWithoutAWriterDoesNotBlock) {
  ASSERT_EQ(mkfifo(path_.c_str(), 0644), 0);
  Result<std::string> r = ReadWithin(Mine(), std::chrono::seconds(5));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "a FIFO, not a regular file");
}

TEST_F(UntrustedFile, AUnixSocketIsRefused) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path_.c_str(), sizeof sa.sun_path - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  Result<std::string> r = ReadWithin(Mine(), std::chrono::seconds(5));
  close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "a unix socket, not a regular file");
}

TEST_F(UntrustedFile, ADirectoryIsRefused) {
  ASSERT_EQ(mkdir(path_.c_str(), 0755), 0);
  Result<std::string> r = ReadUntrustedFile(path_, Mine());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "a directory, not a regular file");
}

TEST_F(UntrustedFile, ALargerFileIsRefusedUnread) {
  Write(std::string(kMax + 1, '#'));
  Result<std::string> r = ReadUntrustedFile(path_, Mine());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kResourceExhausted);
  EXPECT_EQ(r.status().message(), "65537 bytes, more than the 65536 allowed");
}

TEST_F(UntrustedFile, AFileOfAnotherOwnerIsRefused) {
  Write("[limits]\n");
  // The owner rule, without needing another uid: accept only one that is not ours.
  UntrustedFileRules others{kMax, {getuid() + 1}};
  Result<std::string> r = ReadUntrustedFile(path_, others);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kPermissionDenied);
  EXPECT_EQ(r.status().message(), "owned by uid " + std::to_string(getuid()) + ", not by uid " +
                                      std::to_string(getuid() + 1));
  EXPECT_TRUE(ReadUntrustedFile(path_, Mine()).ok());  // control
}

TEST(UntrustedFileAt, ADeviceIsRefusedUnopened) {
  Result<std::string> r = ReadUntrustedFile("/dev/zero", UntrustedFileRules{kMax, {0, getuid()}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "a character device, not a regular file");
}

TEST(DescribeFileType, NamesEveryKind) {
  EXPECT_EQ(DescribeFileType(S_IFREG), "a regular file");
  EXPECT_EQ(DescribeFileType(S_IFLNK), "a symbolic link");
  EXPECT_EQ(DescribeFileType(S_IFIFO), "a FIFO");
  EXPECT_EQ(DescribeFileType(S_IFSOCK), "a unix socket");
  EXPECT_EQ(DescribeFileType(S_IFDIR), "a directory");
  EXPECT_EQ(DescribeFileType(S_IFCHR), "a character device");
  EXPECT_EQ(DescribeFileType(S_IFBLK), "a block device");
}

}  // namespace
}  // namespace ward
