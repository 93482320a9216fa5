// Where ward's sockets live (runtime_dir.h): each fallback in turn, never /tmp, and the refusal
// of a directory that is a symlink, someone else's, or writable by others.
#include "supervisor/runtime_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "approvals_test_util.h"

namespace ward::supervisor {
namespace {

using testing::TempDir;

mode_t ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// An environment variable set for the scope of one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class RuntimeDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_user_ = root_.path() + "/run-user";
    ASSERT_EQ(::mkdir(run_user_.c_str(), 0755), 0);
    mine_ = run_user_ + "/" + std::to_string(::geteuid());
  }
  RuntimeDirInputs Inputs(std::string xdg = "") const {
    RuntimeDirInputs in;
    in.xdg_runtime_dir = std::move(xdg);
    in.run_user = run_user_;
    in.uid = ::geteuid();
    in.state_dir = "/state/ward";
    return in;
  }
  TempDir root_;
  std::string run_user_, mine_;
};

TEST_F(RuntimeDirTest, XdgRuntimeDirComesFirst) {
  ASSERT_EQ(::mkdir(mine_.c_str(), 0700), 0);  // would be next
  RuntimeDir d = ChooseRuntimeDir(Inputs("/run/user/1234/"));
  EXPECT_EQ(d.path, "/run/user/1234/ward");
  EXPECT_EQ(d.source, RuntimeDirSource::kXdgRuntimeDir);
}

TEST_F(RuntimeDirTest, ARelativeXdgRuntimeDirIsIgnored) {
  RuntimeDir d = ChooseRuntimeDir(Inputs("relative/dir"));
  EXPECT_EQ(d.source, RuntimeDirSource::kStateDir);
  EXPECT_EQ(d.path, "/state/ward/run");
}

TEST_F(RuntimeDirTest, RunUserWhenItIsOurs) {
  ASSERT_EQ(::mkdir(mine_.c_str(), 0700), 0);
  RuntimeDir d = ChooseRuntimeDir(Inputs());
  EXPECT_EQ(d.source, RuntimeDirSource::kRunUser);
  EXPECT_EQ(d.path, mine_ + "/ward");
}

TEST_F(RuntimeDirTest, RunUserWritableByOthersIsPassedOver) {
  ASSERT_EQ(::mkdir(mine_.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(mine_.c_str(), 0777), 0);
  EXPECT_EQ(ChooseRuntimeDir(Inputs()).source, RuntimeDirSource::kStateDir);
  ASSERT_EQ(::chmod(mine_.c_str(), 0770), 0);  // group-writable: others too
  EXPECT_EQ(ChooseRuntimeDir(Inputs()).source, RuntimeDirSource::kStateDir);
  ASSERT_EQ(::chmod(mine_.c_str(), 0755), 0);  // readable is fine (systemd makes it 0700)
  EXPECT_EQ(ChooseRuntimeDir(Inputs()).source, RuntimeDirSource::kRunUser);
}

TEST_F(RuntimeDirTest, RunUserThatIsASymlinkIsPassedOver) {
  std::string target = root_.path() + "/elsewhere";
  ASSERT_EQ(::mkdir(target.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(target.c_str(), mine_.c_str()), 0);
  EXPECT_EQ(ChooseRuntimeDir(Inputs()).source, RuntimeDirSource::kStateDir);
}

TEST_F(RuntimeDirTest, RunUserOfAnotherUidIsPassedOver) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a directory of another uid";
  ASSERT_EQ(::mkdir(mine_.c_str(), 0700), 0);
  ASSERT_EQ(::chown(mine_.c_str(), 65534, 65534), 0);
  EXPECT_EQ(ChooseRuntimeDir(Inputs()).source, RuntimeDirSource::kStateDir);
}

TEST_F(RuntimeDirTest, NoneWhenNothingIsKnownAndNeverTmp) {
  RuntimeDirInputs in = Inputs();
  in.state_dir = "";
  RuntimeDir d = ChooseRuntimeDir(in);
  EXPECT_EQ(d.source, RuntimeDirSource::kNone);
  EXPECT_EQ(d.path, "");
  in.state_dir = "relative";
  EXPECT_EQ(ChooseRuntimeDir(in).source, RuntimeDirSource::kNone);
}

// The process's own choice, from its environment: the state directory's fallback is made 0700
// with its missing parents, and a client then finds the same directory.
TEST_F(RuntimeDirTest, MakeUsesTheEnvironmentAndMakesTheStateFallback) {
  struct stat st;
  if (::lstat(RunUserWardDir().substr(0, RunUserWardDir().rfind('/')).c_str(), &st) == 0) {
    GTEST_SKIP() << "this host has /run/user/<uid>: the state fallback is not taken";
  }
  std::string state = root_.path() + "/state";
  ScopedEnv xdg("XDG_RUNTIME_DIR", nullptr);
  ScopedEnv xdg_state("XDG_STATE_HOME", state.c_str());
  EXPECT_EQ(WardRuntimeDir(), state + "/ward/run");
  EXPECT_NE(::lstat(state.c_str(), &st), 0);  // choosing makes nothing
  Result<std::string> made = MakeWardRuntimeDir();
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(*made, state + "/ward/run");
  EXPECT_EQ(ModeOf(*made), 0700u);
  EXPECT_EQ(ModeOf(state + "/ward"), 0700u);
  EXPECT_TRUE(CheckPrivateDir(*made).ok());
  // With XDG_RUNTIME_DIR set, that wins; its own parent must exist.
  std::string xrd = root_.path() + "/xdg";
  ASSERT_EQ(::mkdir(xrd.c_str(), 0700), 0);
  ScopedEnv with("XDG_RUNTIME_DIR", xrd.c_str());
  made = MakeWardRuntimeDir();
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(*made, xrd + "/ward");
  ScopedEnv missing("XDG_RUNTIME_DIR", (root_.path() + "/no/such").c_str());
  EXPECT_FALSE(MakeWardRuntimeDir().ok());
  // Nothing to go by at all: a clear error, not /tmp.
  ScopedEnv none("XDG_RUNTIME_DIR", nullptr);
  ScopedEnv no_state("XDG_STATE_HOME", nullptr);
  ScopedEnv no_home("HOME", "relative");
  if (WardRuntimeDir().empty()) {  // HOME from the password database may still give one
    Result<std::string> r = MakeWardRuntimeDir();
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("XDG_RUNTIME_DIR"), std::string::npos);
  }
  EXPECT_NE(WardRuntimeDir().rfind("/tmp/", 0), 0u);
}

TEST_F(RuntimeDirTest, PrepareCreatesTightensAndRefuses) {
  std::string d = root_.path() + "/ward";
  ASSERT_TRUE(PreparePrivateDir(d).ok());
  EXPECT_EQ(ModeOf(d), 0700u);
  // Readable by others: tightened.
  ASSERT_EQ(::chmod(d.c_str(), 0755), 0);
  EXPECT_TRUE(CheckPrivateDir(d).ok());
  ASSERT_TRUE(PreparePrivateDir(d).ok());
  EXPECT_EQ(ModeOf(d), 0700u);
  // Writable by others: refused by the server and by clients (something may be planted in it).
  ASSERT_EQ(::chmod(d.c_str(), 0777), 0);
  Status st = PreparePrivateDir(d);
  EXPECT_EQ(st.code(), Code::kPermissionDenied);
  EXPECT_NE(st.message().find("writable by others"), std::string::npos) << st.message();
  EXPECT_FALSE(CheckPrivateDir(d).ok());
  ASSERT_EQ(::chmod(d.c_str(), 0730), 0);
  EXPECT_FALSE(PreparePrivateDir(d).ok());
  ASSERT_EQ(::chmod(d.c_str(), 0700), 0);
  EXPECT_TRUE(CheckPrivateDir(d).ok());
  // A symlink planted at the path is refused, not followed.
  std::string link = root_.path() + "/link";
  ASSERT_EQ(::symlink(d.c_str(), link.c_str()), 0);
  EXPECT_EQ(PreparePrivateDir(link).code(), Code::kPermissionDenied);
  EXPECT_FALSE(CheckPrivateDir(link).ok());
  std::string file = root_.path() + "/file";
  ::close(::open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  EXPECT_FALSE(PreparePrivateDir(file).ok());
  EXPECT_FALSE(PreparePrivateDir(root_.path() + "/no/such/parent").ok());
  EXPECT_FALSE(CheckPrivateDir(root_.path() + "/missing").ok());
}

TEST_F(RuntimeDirTest, ADirectoryOfAnotherUidIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a directory of another uid";
  std::string d = root_.path() + "/theirs";
  ASSERT_EQ(::mkdir(d.c_str(), 0700), 0);
  ASSERT_EQ(::chown(d.c_str(), 65534, 65534), 0);
  Status st = PreparePrivateDir(d);
  EXPECT_EQ(st.code(), Code::kPermissionDenied);
  EXPECT_NE(st.message().find("not to us"), std::string::npos) << st.message();
  EXPECT_FALSE(CheckPrivateDir(d).ok());
}

}  // namespace
}  // namespace ward::supervisor
