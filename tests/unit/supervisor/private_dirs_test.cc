// The one check that keeps ward's own directories out of a sandbox's view (private_dirs.h): a
// workspace or rule that is the directory, one of its parents, something inside it, or reaches
// it through a symlink, is refused with a message naming it and the fix. Each refusal has its
// control (the same policy without the directory in view passes).
#include "supervisor/private_dirs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "approvals_test_util.h"
#include "policy/loader.h"
#include "supervisor/runtime_dir.h"

namespace ward::supervisor {
namespace {

using testing::TempDir;

class PrivateDirsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char buf[PATH_MAX];
    ASSERT_NE(::realpath(root_.path().c_str(), buf), nullptr);
    root_path_ = buf;
    runtime_ = root_path_ + "/runtime";
    state_ = root_path_ + "/state";
    ws_ = root_path_ + "/ws";
    for (const std::string& d : {runtime_, state_, ws_}) ASSERT_EQ(::mkdir(d.c_str(), 0700), 0);
    Save("XDG_RUNTIME_DIR", runtime_);
    Save("XDG_STATE_HOME", state_);
  }
  void TearDown() override {
    for (auto& [name, old] : saved_) {
      if (old) {
        ::setenv(name.c_str(), old->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  void Save(const std::string& name, const std::string& value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  policy::Policy Load(const std::string& workspace, policy::RunFlags flags = {},
                      const std::string& home = "/nonexistent-home") {
    policy::Context ctx{home, workspace, workspace, ""};
    Result<policy::Policy> p = policy::LoadPolicy(
        flags, ctx,
        [](const std::string& f) -> Result<std::string> { return NotFound(f + ": no file"); });
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? *p : policy::Policy();
  }
  Status Check(const policy::Policy& p) { return CheckOutOfView(p, WardPrivateDirs()); }

  TempDir root_;
  std::string root_path_, runtime_, state_, ws_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(PrivateDirsTest, WardsDirectoriesAreListed) {
  std::vector<PrivateDir> dirs = WardPrivateDirs();
  std::vector<std::string> paths;
  for (const PrivateDir& d : dirs) paths.push_back(d.path);
  EXPECT_NE(std::find(paths.begin(), paths.end(), runtime_ + "/ward"), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), RunUserWardDir()), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), state_ + "/ward"), paths.end());
}

TEST_F(PrivateDirsTest, AWorkspaceOutsideThemPasses) {
  Status st = Check(Load(ws_));
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST_F(PrivateDirsTest, AWorkspaceThatHoldsTheRuntimeDirectoryIsRefused) {
  Status st = Check(Load(runtime_));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kFailedPrecondition);
  EXPECT_NE(st.message().find(runtime_ + "/ward"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("approval sockets"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("set XDG_RUNTIME_DIR"), std::string::npos) << st.message();
}

TEST_F(PrivateDirsTest, ARuleThatShowsTheStateDirectoryIsRefused) {
  policy::RunFlags f;
  f.read = {state_};
  Status st = Check(Load(ws_, f));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(state_ + "/ward"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("set XDG_STATE_HOME"), std::string::npos) << st.message();
}

// DecidePath asks about the directory itself; a bind of something inside it shows that part.
TEST_F(PrivateDirsTest, ARuleInsideTheRuntimeDirectoryIsRefused) {
  ASSERT_EQ(::mkdir((runtime_ + "/ward").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((runtime_ + "/ward/serve").c_str(), 0700), 0);
  policy::RunFlags f;
  f.write = {runtime_ + "/ward/serve"};
  Status st = Check(Load(ws_, f));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("inside it"), std::string::npos) << st.message();
}

// XDG_RUNTIME_DIR given through a symlink into the workspace: the literal path is not in the
// view, the directory it names is.
TEST_F(PrivateDirsTest, ADirectoryReachedThroughASymlinkIsFound) {
  std::string link = root_path_ + "/link";
  ASSERT_EQ(::symlink(ws_.c_str(), link.c_str()), 0);
  ::setenv("XDG_RUNTIME_DIR", link.c_str(), 1);
  Status st = Check(Load(ws_));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(link + "/ward"), std::string::npos) << st.message();
  ::setenv("XDG_RUNTIME_DIR", runtime_.c_str(), 1);  // control
  EXPECT_TRUE(Check(Load(ws_)).ok());
}

// ward's directories default to places in HOME: a workspace that is the whole HOME is the cause
// the message names.
TEST_F(PrivateDirsTest, AWorkspaceThatHoldsHomeIsNamedAsTheCause) {
  std::string home = root_path_ + "/home";
  ASSERT_EQ(::mkdir(home.c_str(), 0700), 0);
  ::unsetenv("XDG_STATE_HOME");
  ::unsetenv("XDG_RUNTIME_DIR");
  Save("HOME", home);
  Status st = Check(Load(home, {}, home));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("contains your HOME (" + home + ")"), std::string::npos)
      << st.message();
  // Control: a workspace beside HOME, whose private tmpfs hides ward's directories in it.
  st = Check(Load(ws_, {}, home));
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST_F(PrivateDirsTest, ExtraDirectoriesOfTheCallerAreChecked) {
  std::vector<PrivateDir> dirs = {{"the daemon's socket", ws_ + "/d/ward.sock", "move it"}};
  Status st = CheckOutOfView(Load(ws_), dirs);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("the daemon's socket"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("move it"), std::string::npos) << st.message();
  dirs[0].path = root_path_ + "/elsewhere/ward.sock";
  EXPECT_TRUE(CheckOutOfView(Load(ws_), dirs).ok());
  dirs[0].path = "relative";  // never a path ward would use: skipped
  EXPECT_TRUE(CheckOutOfView(Load(ws_), dirs).ok());
  // A directory the user chose that holds other things: a workspace inside it shows only that
  // part; the directory itself in view is still refused.
  std::vector<PrivateDir> chosen = {{"the daemon's socket", root_path_, "move it", false}};
  EXPECT_TRUE(CheckOutOfView(Load(ws_), chosen).ok());
  chosen[0].contents_too = true;
  EXPECT_FALSE(CheckOutOfView(Load(ws_), chosen).ok());
  chosen[0] = {"the daemon's socket", ws_ + "/d", "move it", false};
  EXPECT_FALSE(CheckOutOfView(Load(ws_), chosen).ok());
}

}  // namespace
}  // namespace ward::supervisor
