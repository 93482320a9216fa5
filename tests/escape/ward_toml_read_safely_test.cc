// The workspace's .ward.toml is read as untrusted: whatever a sandboxed command (or another user)
// leaves at that name, the next `ward run` or `ward serve` neither hangs nor reads without bound,
// and refuses with what the file is and how to remove it. A sandboxed command cannot create or
// replace the file itself. Each refusal has its positive control: a small regular file still
// narrows the policy.
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "../../clients/cpp/ward_client.h"
#include "harness.h"
#include "serve_daemon.h"

namespace ward::test {
namespace {

using Clock = std::chrono::steady_clock;

// Well below the harness's own timeout: a refusal is immediate, a hang is not.
constexpr int kBoundSeconds = 5;

class WardTomlReadSafely : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    file_ = ws_ + "/.ward.toml";
  }
  // `ward run -- probe exit 0` in the workspace, bounded; the time it took in `seconds`.
  RunResult Run(double* seconds) {
    RunOptions o = Defaults();
    o.timeout_s = 30;
    auto t0 = Clock::now();
    RunResult r = Probe({"exit", "0"}, {}, o);
    *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return r;
  }
  // The next run is refused at once, naming the file, what it is, the rule and the fix.
  void ExpectRefused(const std::string& what) {
    double seconds = 0;
    RunResult r = Run(&seconds);
    EXPECT_FALSE(r.timed_out) << what;
    EXPECT_LT(seconds, kBoundSeconds) << what;
    EXPECT_EQ(r.status, 125) << what << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(file_ + ": " + what + ", not a regular file"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("only when it is a regular file owned by you or root, at most 64 KiB"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("remove it (rm -r -- '" + file_ + "')"), std::string::npos) << r.err;
    // ward explain says the same, as fast.
    auto t0 = Clock::now();
    RunResult ex = RunWard({"explain"}, Defaults());
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), kBoundSeconds) << what;
    EXPECT_EQ(ex.status, 125) << ex.out;
    EXPECT_NE(ex.err.find(file_ + ": " + what), std::string::npos) << ex.err;
  }
  // Positive control: with a small regular file instead, the run starts and the file narrows.
  void ExpectARegularFileNarrows() {
    ASSERT_EQ(system(("rm -rf '" + file_ + "'").c_str()), 0);
    WriteFile(ws_ + "/private", "secret");
    EXPECT_EQ(Probe({"read", ws_ + "/private"}).out, "ok secret\n");
    WriteFile(file_, "[filesystem]\ndeny = [\"" + ws_ + "/private\"]\n");
    RunResult r = Probe({"read", ws_ + "/private"});
    EXPECT_NE(r.status, 0) << r.out << r.err;
    EXPECT_EQ(r.out.find("secret"), std::string::npos) << r.out;
  }

  std::string file_;
};

TEST_F(WardTomlReadSafely, ASymlinkToDevZeroIsRefusedAtOnce) {
  ASSERT_EQ(symlink("/dev/zero", file_.c_str()), 0);
  ExpectRefused("a symbolic link (to /dev/zero)");
  ExpectARegularFileNarrows();
}

TEST_F(WardTomlReadSafely, ASymlinkToARegularFileIsRefusedToo) {
  WriteFile(ws_ + "/real.toml", "[limits]\nmemory = \"1G\"\n");
  ASSERT_EQ(symlink("real.toml", file_.c_str()), 0);
  ExpectRefused("a symbolic link (to real.toml)");
}

TEST_F(WardTomlReadSafely, AFifoIsRefusedWithoutWaitingForAWriter) {
  ASSERT_EQ(mkfifo(file_.c_str(), 0644), 0);
  ExpectRefused("a FIFO");
  ExpectARegularFileNarrows();
}

TEST_F(WardTomlReadSafely, ADirectoryIsRefused) {
  MakeDirs(file_ + "/x");
  ExpectRefused("a directory");
  ExpectARegularFileNarrows();
}

TEST_F(WardTomlReadSafely, AFileLargerThan64KiBIsRefusedUnread) {
  // A valid TOML comment: only its size is wrong.
  WriteFile(file_, std::string(64 * 1024 + 1, '#'));
  double seconds = 0;
  RunResult r = Run(&seconds);
  EXPECT_EQ(r.status, 125) << r.out << r.err;
  EXPECT_NE(r.err.find(file_ + ": 65537 bytes, more than the 65536 allowed"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("shorten it, or remove it"), std::string::npos) << r.err;
  // Positive control: the same comment at exactly the bound is read.
  WriteFile(file_, std::string(64 * 1024, '#'));
  r = Run(&seconds);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
}

TEST_F(WardTomlReadSafely, AFileOfAnotherUserIsRefused) {
  if (!RunningAsRoot()) {
    GTEST_SKIP() << "only root can give the test's workspace a file owned by another uid";
  }
  WriteFile(file_, "[limits]\nmemory = \"1G\"\n");
  ASSERT_EQ(chown(file_.c_str(), 54321, 54321), 0);
  double seconds = 0;
  RunResult r = Run(&seconds);
  EXPECT_EQ(r.status, 125) << r.out << r.err;
  EXPECT_NE(r.err.find(file_ + ": owned by uid 54321, not by uid 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("make it yours"), std::string::npos) << r.err;
  // Positive control: the same file, ours again, is read.
  ASSERT_EQ(chown(file_.c_str(), 0, 0), 0);
  r = Run(&seconds);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
}

// bind(2) of a unix socket at a protected name is not trapped by the creation guard (the lead's
// post-run check removes it); whatever is left there, the next run refuses it cleanly instead
// of failing with a bare 125.
TEST_F(WardTomlReadSafely, AUnixSocketAtTheNameIsRemovedAfterTheRunAndRefusedClearly) {
  // bind(2) is not trapped, so a sandboxed command can bind one there; the check after the run
  // takes it away, and one planted from the host is refused with a clear message.
  RunResult bound = Probe({"unix-bind", file_});
  EXPECT_EQ(bound.out, "ok bind\n") << bound.err;
  struct stat st;
  ASSERT_NE(lstat(file_.c_str(), &st), 0) << "the socket the run bound was left behind";
  RunResult host = RunProgram({ProbeBin(), "unix-bind", file_});
  ASSERT_EQ(host.out, "ok bind\n") << host.err;
  ExpectRefused("a unix socket");
  ExpectARegularFileNarrows();
}

// The creation guard keeps `.ward.toml` (a protected name of the default profile): a sandboxed
// command can neither create it nor replace it, by any of the calls that make a name.
TEST_F(WardTomlReadSafely, ASandboxedCommandCannotCreateTheFile) {
  WriteFile(ws_ + "/src.toml", "[limits]\nmemory = \"1G\"\n");
  const std::string other = ws_ + "/other.toml";
  for (const std::vector<std::string>& verb : std::vector<std::vector<std::string>>{
           {"write", file_, "[limits]"},
           {"rename", ws_ + "/src.toml", file_},
           {"link", ws_ + "/src.toml", file_},
           {"symlink", "/dev/zero", file_},
           {"mknod-fifo", file_},
           {"mkdir", file_},
       }) {
    RunResult r = Probe(verb);
    EXPECT_EQ(r.out.rfind("err EROFS", 0), 0u) << verb[0] << ": " << r.out << r.err;
    struct stat st;
    EXPECT_NE(lstat(file_.c_str(), &st), 0) << verb[0] << " left something at " << file_;
    ASSERT_TRUE(PathExists(ws_ + "/src.toml")) << verb[0];
    // Positive control: the same call on an ordinary name creates it (so the test would see a
    // creation that got through).
    std::vector<std::string> control = verb;
    for (std::string& arg : control) {
      if (arg == file_) arg = other;
    }
    RunResult c = Probe(control);
    EXPECT_EQ(c.out.rfind("ok", 0), 0u) << verb[0] << " (control): " << c.out << c.err;
    EXPECT_EQ(lstat(other.c_str(), &st), 0) << verb[0] << " (control)";
    if (verb[0] == "rename") {
      ASSERT_EQ(rename(other.c_str(), (ws_ + "/src.toml").c_str()), 0);
    } else {
      ASSERT_EQ(system(("rm -rf '" + other + "'").c_str()), 0);
    }
  }
  // mknod of a device: refused too (no capability for it inside, and the name is guarded).
  RunResult dev = Probe({"mknod-char", file_});
  EXPECT_EQ(dev.out.rfind("err ", 0), 0u) << dev.out;
  struct stat st;
  EXPECT_NE(lstat(file_.c_str(), &st), 0);
}

TEST_F(WardTomlReadSafely, ASandboxedCommandCannotReplaceTheFile) {
  const std::string original = "[limits]\nmemory = \"1G\"\n";
  WriteFile(file_, original);
  WriteFile(ws_ + "/src.toml", "[filesystem]\n");
  for (const std::vector<std::string>& verb : std::vector<std::vector<std::string>>{
           {"write", file_, "[filesystem]"},
           {"append", file_},
           {"truncate", file_},
           {"rename", ws_ + "/src.toml", file_},
           {"unlink", file_},
           {"rename", file_, ws_ + "/moved.toml"},
       }) {
    RunResult r = Probe(verb);
    EXPECT_EQ(r.out.rfind("err ", 0), 0u) << verb[0] << ": " << r.out << r.err;
    EXPECT_EQ(ReadFile(file_), original) << verb[0];
  }
  EXPECT_FALSE(PathExists(ws_ + "/moved.toml"));
  EXPECT_TRUE(PathExists(ws_ + "/src.toml"));
  // Positive control: the file is still there and read.
  RunResult ex = RunWard({"explain", "--json"}, Defaults());
  ASSERT_EQ(ex.status, 0) << ex.err;
  EXPECT_NE(ex.out.find(file_), std::string::npos);
}

// `ward serve`: a workspace whose .ward.toml is a FIFO or a link to /dev/zero makes that
// sandbox.create fail, at once and with the reason; the daemon goes on serving everyone else.
TEST_F(WardTomlReadSafely, ServeRefusesTheRequestAndKeepsServingOthers) {
  const std::string bad_fifo = root_->path() + "/bad-fifo";
  const std::string bad_zero = root_->path() + "/bad-zero";
  MakeDirs(bad_fifo);
  MakeDirs(bad_zero);
  ASSERT_EQ(mkfifo((bad_fifo + "/.ward.toml").c_str(), 0644), 0);
  ASSERT_EQ(symlink("/dev/zero", (bad_zero + "/.ward.toml").c_str()), 0);
  std::map<std::string, std::string> env = BaseEnv(home_);
  env["XDG_STATE_HOME"] = root_->path() + "/state";
  const std::string dir = root_->path() + "/serve";
  MakeDirs(dir, 0700);
  ServeDaemon daemon(dir, env, ws_);
  ASSERT_TRUE(daemon.Start()) << daemon.log();
  client::Client bad(daemon.socket());
  ASSERT_TRUE(bad.Connect());
  for (const auto& [ws, what] : {std::pair<std::string, std::string>{bad_fifo, "a FIFO"},
                                 {bad_zero, "a symbolic link (to /dev/zero)"}}) {
    auto t0 = Clock::now();
    client::Reply r = bad.Call("sandbox.create", {{"workspace", ws}}, kBoundSeconds * 1000);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), kBoundSeconds) << ws;
    ASSERT_FALSE(r.ok()) << r.result.dump();
    EXPECT_NE(r.error->message.find(ws + "/.ward.toml: " + what + ", not a regular file"),
              std::string::npos)
        << r.error->message;
  }
  // Another client, another workspace: served, and its exec runs.
  client::Client good(daemon.socket());
  ASSERT_TRUE(good.Connect());
  client::Reply created = good.Call("sandbox.create", {{"workspace", ws_}, {"read", {StageDir()}}},
                                    kBoundSeconds * 6 * 1000);
  ASSERT_TRUE(created.ok()) << created.error->message;
  std::string sb = created.result["sandbox_id"];
  client::Reply ran = good.Run(sb, {ProbeBin(), "exit", "0"});
  ASSERT_TRUE(ran.ok()) << ran.error->message;
  EXPECT_EQ(ran.result["exit_code"], 0) << ran.result.dump();
}

}  // namespace
}  // namespace ward::test
