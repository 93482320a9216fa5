// The audit trail of real runs: outside the sandbox's view, one event per denial, durable
// through a SIGKILL of the supervisor, refusing to start when it cannot be written.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "audit/sessions.h"
#include "audit/verify.h"
#include "harness.h"

namespace ward::test {
namespace {

class AuditTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    state_ = root_->path() + "/state";
  }
  RunOptions WithState() {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = state_;
    return o;
  }
  std::vector<nlohmann::json> Records(const std::string& session_dir) {
    std::vector<nlohmann::json> out;
    std::ifstream in(session_dir + "/events.jsonl");
    std::string line;
    while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  std::string state_;
};

TEST_F(AuditTest, EachRunWritesAVerifiableSession) {
  RunResult r = Probe({"exit", "3"}, {}, WithState());
  EXPECT_EQ(r.status, 3) << r.err;
  auto sessions = audit::ListSessions(state_ + "/ward");
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_TRUE(sessions[0].ended);
  EXPECT_EQ(sessions[0].exit_code, 3);
  audit::VerifyReport v = audit::VerifySession(sessions[0].dir);
  EXPECT_EQ(v.state, audit::VerifyReport::State::kIntact) << v.detail;
  auto recs = Records(sessions[0].dir);
  ASSERT_GE(recs.size(), 3u);
  EXPECT_EQ(recs.front()["type"], "session.start");
  // The command's start, emitted while session.start may still be being built, follows it.
  EXPECT_EQ(recs[1]["type"], "exec");
  EXPECT_EQ(recs.back()["type"], "session.end");
  const auto& start = recs.front()["data"];
  EXPECT_TRUE(start.contains("policy"));
  EXPECT_TRUE(start.contains("axes"));
  EXPECT_TRUE(start.contains("layers"));
  ASSERT_TRUE(start.contains("plan"));
  EXPECT_FALSE(start["plan"]["mounts"].empty());
  // The record's explanation is built without the sections it does not keep; the figures the
  // axes show are still there.
  EXPECT_GT(start["axes"]["escape_resistance"]["syscalls_denied"].get<int>(), 0);
  EXPECT_FALSE(start["axes"]["authority_scope"]["writable_roots"].empty());
  EXPECT_EQ(start["uid"], getuid());
  // The caller's secrets are not in it.
  std::string text = ReadFile(sessions[0].dir + "/events.jsonl");
  EXPECT_EQ(text.find(kCanaryApiKey), std::string::npos);
  // `ward audit verify` agrees.
  RunResult cli = RunWard({"audit", "verify", "--all"}, WithState());
  EXPECT_EQ(cli.status, 0) << cli.out << cli.err;
}

// The session's files are made after the clone; a run refused before it (here a bad --resolve)
// still leaves a verifiable session that says what was refused and why.
TEST_F(AuditTest, ARunRefusedBeforeTheSandboxExistsIsRecordedWithItsReason) {
  RunResult r =
      Probe({"write", ws_ + "/should-not-exist"}, {"--resolve", "no-address-here"}, WithState());
  EXPECT_EQ(r.status, 125) << r.out << r.err;
  EXPECT_NE(r.err.find("--resolve"), std::string::npos) << r.err;
  EXPECT_FALSE(PathExists(ws_ + "/should-not-exist"));
  auto sessions = audit::ListSessions(state_ + "/ward");
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_TRUE(sessions[0].ended);
  audit::VerifyReport v = audit::VerifySession(sessions[0].dir);
  EXPECT_EQ(v.state, audit::VerifyReport::State::kIntact) << v.detail;
  auto recs = Records(sessions[0].dir);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0]["type"], "session.start");
  EXPECT_NE(recs[0]["data"].value("refused", "").find("--resolve"), std::string::npos)
      << recs[0].dump();
  EXPECT_EQ(recs[1]["type"], "session.end");
  EXPECT_EQ(recs[1]["data"]["status"], "refused") << recs[1].dump();
}

TEST_F(AuditTest, TheSandboxCannotSeeOrReachTheAuditDirectory) {
  Probe({"exit", "0"}, {}, WithState());  // make sure it exists
  RunResult r = Probe({"stat", state_ + "/ward"}, {}, WithState());
  EXPECT_EQ(r.out, "err ENOENT " + state_ + "/ward\n");
  r = Probe({"write", state_ + "/ward/sessions/forged"}, {}, WithState());
  EXPECT_EQ(r.status, 1);
  // The default location lies in HOME, which is a private tmpfs inside.
  RunOptions o = Defaults();
  Probe({"exit", "0"}, {}, o);
  ASSERT_TRUE(PathExists(home_ + "/.local/state/ward/sessions"));
  r = Probe({"ls", home_ + "/.local/state/ward"}, {}, o);
  EXPECT_EQ(r.out, "err ENOENT " + home_ + "/.local/state/ward\n");
  // A state directory the sandbox would see is refused, and nothing is left in it: not the
  // directory itself, nor (where it exists already) a session.
  o.env["XDG_STATE_HOME"] = ws_ + "/state";
  r = Probe({"exit", "0"}, {}, o);
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("visible inside the sandbox"), std::string::npos) << r.err;
  EXPECT_FALSE(PathExists(ws_ + "/state"));
  MakeDirs(ws_ + "/state/ward/sessions");
  for (int i = 0; i < 5; ++i) {
    r = Probe({"exit", "0"}, {}, o);
    EXPECT_EQ(r.status, 125);
  }
  EXPECT_TRUE(audit::ListSessions(ws_ + "/state/ward").empty());
  EXPECT_EQ(RunProgram({"/bin/sh", "-c", "ls -A " + ws_ + "/state/ward/sessions"}).out, "");
}

TEST_F(AuditTest, EveryDenialIsExactlyOneEvent) {
  RunResult r = Shell("echo x > .envrc; mkdir .vscode; ln -s a .mcp.json; echo ok > fine.txt", {},
                      WithState());
  EXPECT_EQ(r.status, 0);  // the shell's last command succeeded
  auto sessions = audit::ListSessions(state_ + "/ward");
  ASSERT_EQ(sessions.size(), 1u);
  int denies = 0;
  std::set<std::string> paths;
  for (const auto& rec : Records(sessions[0].dir)) {
    if (rec["type"] == "syscall.deny") {
      ++denies;
      paths.insert(rec["data"]["path"].get<std::string>());
    }
  }
  EXPECT_EQ(denies, 3);
  EXPECT_EQ(paths, (std::set<std::string>{".envrc", ".vscode", ".mcp.json"}));
  EXPECT_EQ(sessions[0].denials, 3);
}

TEST_F(AuditTest, SigkillOfTheSupervisorLeavesAVerifiableLog) {
  RunOptions o = WithState();
  std::vector<std::string> argv = {WardBin(), "run",      "-r",    StageDir(),
                                   "--",      ProbeBin(), "sleep", "60"};
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(o.cwd.c_str()) != 0) _exit(126);
    std::vector<std::string> envs;
    for (auto& [k, v] : o.env) envs.push_back(k + "=" + v);
    std::vector<char*> envp, args;
    for (auto& s : envs) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (auto& s : argv) args.push_back(s.data());
    args.push_back(nullptr);
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  // Wait for the exec record, then kill the supervisor.
  std::string dir;
  for (int i = 0; i < 200; ++i) {
    auto s = audit::ListSessions(state_ + "/ward");
    if (!s.empty() && s[0].records >= 2) {
      dir = s[0].dir;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_FALSE(dir.empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // > the flush bound
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  audit::VerifyReport v = audit::VerifySession(dir);
  EXPECT_EQ(v.state, audit::VerifyReport::State::kUnterminated) << v.detail;
  RunResult cli = RunWard({"audit", "verify", "--all"}, o);
  EXPECT_EQ(cli.status, 0) << cli.out;
  EXPECT_NE(cli.out.find("unterminated"), std::string::npos) << cli.out;
}

// The session's files are made while init builds the root, and before the supervisor sends
// what init waits for last (the network namespace, the seccomp program): a trail that cannot
// be written refuses the run before the command could start. The trace marks show the order.
TEST_F(AuditTest, TheTrailIsOpenBeforeTheCommandCanStart) {
  RunOptions o = WithState();
  o.env["WARD_TRACE_TIMING"] = "1";
  for (int i = 0; i < 10; ++i) {
    RunResult r = Probe({"exit", "0"}, {}, o);
    ASSERT_EQ(r.status, 0) << r.err;
    size_t opened = r.err.find("audit session opened");
    size_t forked = r.err.find("command: forked");
    ASSERT_NE(opened, std::string::npos) << r.err;
    ASSERT_NE(forked, std::string::npos) << r.err;
    EXPECT_LT(opened, forked) << r.err;
  }
}

TEST_F(AuditTest, UnwritableOrFullAuditDirectoryRefusesToStart) {
  MakeDirs(state_ + "/ward/sessions");
  chmod((state_ + "/ward/sessions").c_str(), 0500);
  chmod((state_ + "/ward").c_str(), 0500);
  RunResult r = Probe({"write", ws_ + "/should-not-exist"}, {}, WithState());
  chmod((state_ + "/ward").c_str(), 0700);
  chmod((state_ + "/ward/sessions").c_str(), 0700);
  if (!RunningAsRoot()) {
    EXPECT_EQ(r.status, 125) << r.out << r.err;
    EXPECT_NE(r.err.find("audit"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--no-audit"), std::string::npos) << r.err;
    EXPECT_FALSE(PathExists(ws_ + "/should-not-exist"));  // nothing ran
  }
  // --no-audit is the explicit way out.
  r = Probe({"exit", "0"}, {"--no-audit"}, WithState());
  EXPECT_EQ(r.status, 0) << r.err;
  if (RunningAsRoot()) {
    // A full disk: a tiny tmpfs as the state directory, in a mount namespace of our own.
    pid_t pid = fork();
    if (pid == 0) {
      if (unshare(CLONE_NEWNS) != 0 ||
          mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          mount("tmpfs", state_.c_str(), "tmpfs", 0, "size=4k,nr_inodes=4") != 0) {
        _exit(90);
      }
      // Fill it completely.
      for (int i = 0; i < 8; ++i) {
        int fd = open((state_ + "/fill" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY, 0600);
        if (fd >= 0) {
          std::string block(4096, 'x');
          ssize_t n = write(fd, block.data(), block.size());
          (void)n;
          close(fd);
        }
      }
      RunResult rr = Probe({"write", ws_ + "/full-disk-run"}, {}, WithState());
      bool ok = rr.status == 125 && rr.err.find("audit") != std::string::npos &&
                !PathExists(ws_ + "/full-disk-run") && !PathExists(state_ + "/ward/sessions");
      if (!ok) {
        fprintf(stderr, "full disk: status %d ran %d sessions %d err %s\n", rr.status,
                PathExists(ws_ + "/full-disk-run"), PathExists(state_ + "/ward/sessions"),
                rr.err.c_str());
      }
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
}

}  // namespace
}  // namespace ward::test
