// A committed .ward.toml names paths relative to the workspace: deny = ["secrets"] hides the
// workspace's secrets/ wherever the checkout is; a relative path may not leave the workspace,
// and the file still only narrows (read/write stay refused).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "harness.h"

namespace ward::test {
namespace {

class WorkspaceFileRelativePathsTest : public SandboxTest {
 protected:
  std::string RealWs() const {
    char buf[4096];
    return realpath(ws_.c_str(), buf) ? std::string(buf) : ws_;
  }
};

TEST_F(WorkspaceFileRelativePathsTest, ARelativeDenyHidesThatPathOfTheWorkspace) {
  MakeDirs(ws_ + "/secrets");
  WriteFile(ws_ + "/secrets/key", "hunter2\n");
  WriteFile(ws_ + "/visible", "ok\n");
  WriteFile(ws_ + "/.ward.toml", "[filesystem]\ndeny = [\"secrets\"]\n");
  RunResult r = Shell("cat visible; cat secrets/key || echo refused");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "ok\nrefused\n");
  EXPECT_EQ(r.out.find("hunter2"), std::string::npos);

  r = RunWard({"why", "secrets/key"}, Defaults());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("denied by " + RealWs() + "/secrets (" + RealWs() +
                       "/.ward.toml:2 (filesystem.deny))"),
            std::string::npos)
      << r.out;
}

TEST_F(WorkspaceFileRelativePathsTest, ARelativePathThatLeavesTheWorkspaceIsRefused) {
  WriteFile(ws_ + "/.ward.toml", "[filesystem]\ndeny = [\"sub/../../elsewhere\"]\n");
  RunResult r = RunWard({"run", "--", "/bin/true"}, Defaults());
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err, "ward: " + RealWs() +
                       "/.ward.toml:2: filesystem.deny: 'sub/../../elsewhere': a relative path "
                       "in .ward.toml names a path inside the workspace, and this one leaves it "
                       "(or is the workspace itself); write a path below the workspace, or an "
                       "absolute one\n");
}

TEST_F(WorkspaceFileRelativePathsTest, ReadStaysRefusedInTheWorkspaceFile) {
  WriteFile(ws_ + "/.ward.toml", "[filesystem]\nread = [\"vendor\"]\n");
  RunResult r = RunWard({"run", "--", "/bin/true"}, Defaults());
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find(RealWs() + "/.ward.toml:2: filesystem.read: not allowed here: a "
                                  "workspace file (.ward.toml) may only narrow"),
            std::string::npos)
      << r.err;
}

TEST_F(WorkspaceFileRelativePathsTest, AUserProfileKeepsAbsolutePaths) {
  WriteFile(home_ + "/p.toml", "extends = \"default\"\n[filesystem]\ndeny = [\"secrets\"]\n");
  RunResult r = RunWard({"run", "-p", home_ + "/p.toml", "--", "/bin/true"}, Defaults());
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err, "ward: " + home_ +
                       "/p.toml:3: filesystem.deny: relative path 'secrets': paths in profiles "
                       "must be absolute or start with ~/ (relative paths are for a workspace's "
                       ".ward.toml, where they name paths in the workspace)\n");
}

}  // namespace
}  // namespace ward::test
