#include "common/unix_socket.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace ward {
namespace {

class UnixSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ward-unix-socket-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/s.sock";
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_, path_;
};

TEST_F(UnixSocketTest, ListensPrivatelyAndTellsThePeer) {
  Result<UnixListener> l = ListenPrivateUnix(path_, 4);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  struct stat st;
  ASSERT_EQ(lstat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(l->ino, st.st_ino);
  Result<UniqueFd> c = ConnectUnix(path_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::optional<struct ucred> peer = PeerCredentials(c->get());
  ASSERT_TRUE(peer.has_value());
  EXPECT_EQ(peer->uid, geteuid());
  EXPECT_EQ(peer->pid, getpid());
}

TEST_F(UnixSocketTest, ALiveServerIsKeptAndAStaleSocketReplaced) {
  Result<UnixListener> first = ListenPrivateUnix(path_, 4);
  ASSERT_TRUE(first.ok());
  Result<UnixListener> second = ListenPrivateUnix(path_, 4);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kFailedPrecondition);
  first->fd.reset();  // the server died; its socket file stays behind
  Result<UnixListener> third = ListenPrivateUnix(path_, 4);
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_TRUE(ConnectUnix(path_).ok());
}

TEST_F(UnixSocketTest, RefusesWhatIsNotASocketAndBadPaths) {
  { std::ofstream(path_) << "x"; }
  Result<UnixListener> l = ListenPrivateUnix(path_, 4);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), Code::kInvalidArgument);
  std::ifstream in(path_);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "x");  // left alone
  EXPECT_EQ(ListenPrivateUnix("relative.sock", 4).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ListenPrivateUnix("/" + std::string(200, 'a'), 4).status().code(),
            Code::kInvalidArgument);
  EXPECT_FALSE(ConnectUnix(dir_ + "/absent.sock").ok());
}

// A path longer than a socket address holds (an engine's state root and a container id) is
// reached through its directory, for listening and connecting, stream and seqpacket alike.
TEST_F(UnixSocketTest, APathOfAnyLengthIsReachedThroughItsDirectory) {
  std::string deep = dir_;
  std::vector<std::string> made;
  while (deep.size() < 150) {
    deep += "/" + std::string(40, 'd');
    ASSERT_EQ(mkdir(deep.c_str(), 0700), 0);
    made.push_back(deep);
  }
  for (int type : {SOCK_STREAM, SOCK_SEQPACKET}) {
    const std::string sock = deep + "/exec.sock";
    Result<UnixListener> l = ListenPrivateUnix(sock, 4, type);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    struct stat st;
    ASSERT_EQ(lstat(sock.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    Result<UniqueFd> c = ConnectUnix(sock, type);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    int got = 0;
    socklen_t len = sizeof got;
    ASSERT_EQ(getsockopt(c->get(), SOL_SOCKET, SO_TYPE, &got, &len), 0);
    EXPECT_EQ(got, type);
    // A second server on the same path is refused while this one lives.
    EXPECT_EQ(ListenPrivateUnix(sock, 4, type).status().code(), Code::kFailedPrecondition);
    unlink(sock.c_str());
  }
  for (auto it = made.rbegin(); it != made.rend(); ++it) rmdir(it->c_str());
}

}  // namespace
}  // namespace ward
