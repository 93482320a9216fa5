// What a run in review mode leaves in its upper layer is applied to the host's workspace by
// `ward apply` on the host, as the user: nothing in it may make apply write outside the
// workspace or follow a symlink on the host (planted by an earlier run, or swapped in while
// the session waited), and no name in it can reach beyond the directory it is in. Each denial
// has a positive control.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "harness.h"

namespace ward::test {
namespace {

class OverlayApplyEscape : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    state_ = root_->path() + "/state";
    outside_ = root_->path() + "/outside";
    MakeDirs(outside_);
  }
  RunOptions Opts() const {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = state_;
    return o;
  }
  // The host's preparation is a clock tick older than the run (see overlay_workspace_test.cc).
  static void SettleClock() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }
  std::string Reviewed(const std::string& script) {
    RunResult r = Shell(script, {"--workspace=overlay"}, Opts());
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    const std::string key = "wait in session ";
    size_t at = r.err.find(key);
    EXPECT_NE(at, std::string::npos) << r.err;
    if (at == std::string::npos) return "";
    at += key.size();
    return r.err.substr(at, r.err.find(':', at) - at);
  }
  RunResult Ward(const std::vector<std::string>& args) const { return RunWard(args, Opts()); }
  static bool IsLink(const std::string& p) {
    struct stat st;
    return lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
  }
  static bool IsDir(const std::string& p) {
    struct stat st;
    return lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  std::string state_;
  std::string outside_;
};

// The run wrote d/x into a real directory; while the session waited, something on the host
// (a direct-mode run of the same workspace) swapped d for a symlink out of the workspace.
TEST_F(OverlayApplyEscape, ASymlinkSwappedInOnTheHostIsNeverFollowed) {
  MakeDirs(ws_ + "/d");
  SettleClock();
  std::string id = Reviewed("echo pwn > d/x");
  ASSERT_EQ(rename((ws_ + "/d").c_str(), (ws_ + "/d.real").c_str()), 0);
  ASSERT_EQ(symlink(outside_.c_str(), (ws_ + "/d").c_str()), 0);
  RunResult a = Ward({"apply", id});
  EXPECT_EQ(a.status, 1);
  EXPECT_NE(a.err.find("d: changed on the host since the run began"), std::string::npos) << a.err;
  EXPECT_FALSE(PathExists(outside_ + "/x"));
  // Forced: the run's directory replaces the link, in the workspace; still nothing outside.
  RunResult f = Ward({"apply", "--force", id});
  ASSERT_EQ(f.status, 0) << f.err;
  EXPECT_FALSE(PathExists(outside_ + "/x"));
  EXPECT_TRUE(IsDir(ws_ + "/d"));
  EXPECT_EQ(ReadFile(ws_ + "/d/x"), "pwn\n");
}

TEST_F(OverlayApplyEscape, PositiveControlTheSameApplyWritesInTheWorkspace) {
  MakeDirs(ws_ + "/d");
  SettleClock();
  std::string id = Reviewed("echo ok > d/x");
  RunResult a = Ward({"apply", id});
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(ReadFile(ws_ + "/d/x"), "ok\n");
}

// A symlink planted by an earlier run (d -> outside): the review-mode run removes it and makes
// a directory of that name with a file in it. Applying that replaces the link; it never writes
// through it.
TEST_F(OverlayApplyEscape, APlantedSymlinkIsReplacedNotFollowed) {
  ASSERT_EQ(symlink(outside_.c_str(), (ws_ + "/d").c_str()), 0);
  SettleClock();
  std::string id = Reviewed("rm d && mkdir d && echo pwn > d/x");
  RunResult diff = Ward({"diff", "--stat", id});
  EXPECT_EQ(diff.out, "M\td\nA\td/x\n") << diff.err;
  RunResult a = Ward({"apply", id});
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_FALSE(PathExists(outside_ + "/x"));
  EXPECT_FALSE(IsLink(ws_ + "/d"));
  EXPECT_EQ(ReadFile(ws_ + "/d/x"), "pwn\n");
}

// Inside the sandbox the same link leads nowhere: the run cannot even write through it.
TEST_F(OverlayApplyEscape, TheRunCannotWriteThroughAPlantedSymlink) {
  ASSERT_EQ(symlink(outside_.c_str(), (ws_ + "/d").c_str()), 0);
  RunResult r = Shell("echo pwn > d/x", {"--workspace=overlay"}, Opts());
  EXPECT_NE(r.status, 0);
  EXPECT_FALSE(PathExists(outside_ + "/x"));
  RunResult ok = Shell("echo fine > e", {"--workspace=overlay"}, Opts());  // control
  EXPECT_EQ(ok.status, 0) << ok.err;
}

// Names are one directory entry each: a deletion of an entry named like a way out ("..x",
// "a\nb", a leading dash) deletes exactly that entry, and nothing beside the workspace.
TEST_F(OverlayApplyEscape, OddNamesNeverReachBeyondTheirDirectory) {
  WriteFile(root_->path() + "/x", "beside the workspace\n");
  WriteFile(ws_ + "/..x", "odd\n");
  WriteFile(ws_ + "/a\nb", "odd\n");
  WriteFile(ws_ + "/-rf", "odd\n");
  WriteFile(ws_ + "/keep", "keep\n");
  SettleClock();
  std::string id = Reviewed("rm -- ..x \"$(printf 'a\\nb')\" -rf; rm ../x 2>/dev/null; true");
  RunResult d = Ward({"diff", "--stat", id});
  EXPECT_EQ(d.out, "D\t-rf\nD\t..x\nD\t\"a\\nb\"\n") << d.err;
  ASSERT_EQ(Ward({"apply", id}).status, 0);
  EXPECT_FALSE(PathExists(ws_ + "/..x"));
  EXPECT_FALSE(PathExists(ws_ + "/a\nb"));
  EXPECT_FALSE(PathExists(ws_ + "/-rf"));
  EXPECT_EQ(ReadFile(ws_ + "/keep"), "keep\n");
  EXPECT_EQ(ReadFile(root_->path() + "/x"), "beside the workspace\n");
}

// A ".git" file sends git to another git directory (its config and hooks): host-executed.
TEST_F(OverlayApplyEscape, AGitFileThatRedirectsGitIsNotApplied) {
  std::string id = Reviewed("mkdir sub && echo 'gitdir: " + outside_ + "' > sub/.git && echo ok > sub/f");
  RunResult a = Ward({"apply", id});
  EXPECT_EQ(a.status, 1);
  EXPECT_NE(a.err.find("sub/.git: host-executed content"), std::string::npos) << a.err;
  EXPECT_FALSE(PathExists(ws_ + "/sub"));
  RunResult control = Ward({"apply", id, ws_ + "/sub/f"});
  ASSERT_EQ(control.status, 0) << control.err;
  EXPECT_EQ(ReadFile(ws_ + "/sub/f"), "ok\n");
}

// A fifo in the upper layer neither hangs diff or apply nor is applied.
TEST_F(OverlayApplyEscape, AFifoIsLeftOutAndHangsNothing) {
  std::string id = Reviewed("mkfifo pipe && echo data > plain");
  RunOptions o = Opts();
  o.timeout_s = 20;
  RunResult d = RunWard({"diff", id}, o);
  EXPECT_FALSE(d.timed_out);
  EXPECT_NE(d.out.find("(a special file: ward apply leaves it out)"), std::string::npos) << d.out;
  RunResult a = RunWard({"apply", id}, o);
  EXPECT_FALSE(a.timed_out);
  EXPECT_EQ(a.status, 0) << a.err;
  EXPECT_NE(a.err.find("left out: pipe"), std::string::npos) << a.err;
  EXPECT_FALSE(PathExists(ws_ + "/pipe"));
  EXPECT_EQ(ReadFile(ws_ + "/plain"), "data\n");
}

}  // namespace
}  // namespace ward::test
