// Threat class H, TOCTOU / races (TR01, TR02, TR07).
#include <unistd.h>

#include "harness.h"

namespace ward::test {
namespace {

class Toctou : public SandboxTest {};

// TR01: a second thread rewrites the path between the supervisor's check and the kernel's use.
// The creation guard performs the call itself on the path it checked, so the protected name
// never comes into existence, however the race falls.
TEST_F(Toctou, TR01_PathFlipDuringTheCreationGuard) {
  RunResult r = Probe({"race-create", ws_ + "/fine.txt", ws_ + "/.envrc", "3000"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(r.out.rfind("err ENOENT bad=0 good=", 0), 0u) << r.out;
  EXPECT_FALSE(PathExists(ws_ + "/.envrc"));
  // Control: the flipping does reach the guard (some creations of the allowed name succeed).
  EXPECT_EQ(r.out.find("good=0\n"), std::string::npos) << r.out;
}

// TR02: a symlink planted where a protected mount goes cannot redirect the mount.
TEST_F(Toctou, TR02_PlantedSymlinkAtAMountTarget) {
  MakeDirs(ws_ + "/.git");
  ASSERT_EQ(symlink((home_ + "/.ssh").c_str(), (ws_ + "/.git/hooks").c_str()), 0);
  RunResult r = Probe({"ls", ws_ + "/.git/hooks/"});
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("id_ed25519"), std::string::npos);
  EXPECT_EQ(Probe({"read", ws_ + "/.git/hooks/id_ed25519"}).out.find(kCanarySecret),
            std::string::npos);
}

// TR07: fds of the supervisor never reach the command.
TEST_F(Toctou, TR07_OnlyStandardDescriptors) {
  for (int i = 0; i < 3; ++i) {
    RunResult r = Probe({"fds"});
    int count = 0;
    for (char c : r.out) count += c == '=';
    EXPECT_EQ(count, 3) << r.out;
  }
}

}  // namespace
}  // namespace ward::test
