// The workspace is mounted writable at its own path and the host's tools read it afterwards, so
// ward refuses directories that make no sense as one (/, the system trees and what lies beneath
// them, /tmp and /var/tmp themselves, /home and the caller's HOME themselves) before anything is
// read or run, each with why and how to proceed. `--workspace-anyway` accepts one deliberately
// and the audit trail records it; `ward serve` clients get it only from the daemon's own flag.
// Positive control: a subdirectory of /tmp works.
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../../clients/cpp/ward_client.h"
#include "audit/sessions.h"
#include "harness.h"
#include "serve_daemon.h"

namespace ward::test {
namespace {

using Json = nlohmann::json;

class WorkspaceChoice : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    state_ = root_->path() + "/state";
  }
  // The fixture's environment, with the audit trail in state_ (outside HOME and the workspace).
  RunOptions WithState() {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = state_;
    return o;
  }
  size_t Sessions() { return audit::ListSessions(state_ + "/ward").size(); }
  std::vector<Json> StartRecords() {
    std::vector<Json> out;
    for (const auto& s : audit::ListSessions(state_ + "/ward")) {
      std::ifstream in(s.dir + "/events.jsonl");
      std::string line;
      while (std::getline(in, line)) {
        Json j = Json::parse(line, nullptr, false);
        if (j.is_object() && j["type"] == "session.start") out.push_back(j["data"]);
      }
    }
    return out;
  }
  // `ward run -C dir -- /bin/true`: refused with 125, the reason and the way out, nothing run
  // and no session written.
  void ExpectRefused(const std::string& dir, const std::string& why) {
    RunResult r = RunWard({"run", "-C", dir, "--", "/bin/true"}, WithState());
    EXPECT_EQ(r.status, 125) << dir << ": " << r.out << r.err;
    EXPECT_EQ(r.err.rfind("ward: " + why, 0), 0u) << dir << ": " << r.err;
    EXPECT_NE(r.err.find("--workspace-anyway"), std::string::npos) << r.err;
    EXPECT_EQ(Sessions(), 0u) << dir;
  }
  // A directory beneath /run that both identities can make (/run/lock is world-writable where
  // it exists): refused as a system directory, and harmless to accept for a test.
  std::string RunLockDir() {
    struct stat st;
    if (stat("/run/lock", &st) != 0 || (st.st_mode & 01777) != 01777) return "";
    char tmpl[] = "/run/lock/ward-workspace-choice.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return "";
    chmod(tmpl, 0755);
    made_.push_back(tmpl);
    return tmpl;
  }
  void TearDown() override {
    for (const std::string& dir : made_) EXPECT_EQ(system(("rm -rf '" + dir + "'").c_str()), 0);
  }

  std::string state_;
  std::vector<std::string> made_;  // removed when the test ends, however it ends
};

TEST_F(WorkspaceChoice, TheWholeFileSystemIsRefused) {
  ExpectRefused("/", "the workspace is / (the whole file system)");
}

TEST_F(WorkspaceChoice, SystemTreesAreRefused) {
  for (const char* dir : {"/usr", "/etc", "/var", "/proc", "/dev", "/sbin", "/boot", "/run"}) {
    struct stat st;
    if (stat(dir, &st) != 0) continue;  // not on this host
    char real[PATH_MAX];
    ASSERT_NE(realpath(dir, real), nullptr);
    ExpectRefused(dir, std::string("the workspace is ") + real);
    RunResult r = RunWard({"run", "-C", dir, "--", "/bin/true"}, WithState());
    EXPECT_NE(r.err.find(", a system directory: a run could change what this host itself runs"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("run ward from a project directory"), std::string::npos) << r.err;
  }
}

TEST_F(WorkspaceChoice, DirectoriesBeneathSystemTreesAreRefused) {
  for (const char* dir : {"/usr/share", "/etc/ssh", "/var/lib", "/var/cache", "/dev/shm"}) {
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    char real[PATH_MAX];
    ASSERT_NE(realpath(dir, real), nullptr);
    ExpectRefused(dir, std::string("the workspace ") + real + " is inside /");
  }
}

TEST_F(WorkspaceChoice, SharedTemporaryDirectoriesThemselvesAreRefused) {
  ExpectRefused("/tmp", "the workspace is /tmp itself, which every user and service");
  RunResult r = RunWard({"run", "-C", "/tmp", "--", "/bin/true"}, WithState());
  EXPECT_NE(r.err.find("mkdir /tmp/work && ward run -C /tmp/work"), std::string::npos) << r.err;
  struct stat st;
  if (stat("/var/tmp", &st) == 0) ExpectRefused("/var/tmp", "the workspace is /var/tmp itself");
}

TEST_F(WorkspaceChoice, HomeItselfIsRefused) {
  struct stat st;
  if (stat("/home", &st) != 0) GTEST_SKIP() << "no /home on this host";
  char real[PATH_MAX];
  ASSERT_NE(realpath("/home", real), nullptr);
  if (std::string(real) != "/home") GTEST_SKIP() << "/home is " << real << " here";
  ExpectRefused("/home", "the workspace is /home itself, which holds every user's HOME");
}

// The reason is the first word said: before, the audit directory (which lies in HOME by
// default) was blamed.
TEST_F(WorkspaceChoice, TheCallersHomeItselfIsRefusedForWhatItIs) {
  RunOptions o = Defaults();  // HOME = home_, no XDG_STATE_HOME: the audit trail is in HOME
  o.env.erase("XDG_STATE_HOME");
  o.cwd = home_;
  RunResult r = RunWard({"run", "-r", StageDir(), "--", ProbeBin(), "write", "marker"}, o);
  EXPECT_EQ(r.status, 125) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("ward: the workspace is your HOME itself (" + home_ + ")", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find("audit directory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mkdir ~/project && ward run -C ~/project"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("refused even with --workspace-anyway"), std::string::npos) << r.err;
  EXPECT_FALSE(PathExists(home_ + "/marker"));
  // Through -C too.
  o.cwd = ws_;
  r = RunWard({"run", "-C", home_, "--", "/bin/true"}, o);
  EXPECT_EQ(r.err.rfind("ward: the workspace is your HOME itself", 0), 0u) << r.err;
}

// As root this would create /usr/<name> if ward ran the command: the refusal of the same
// workspace is asserted first (fatally), with a command that changes nothing.
TEST_F(WorkspaceChoice, UsrIsRefusedBeforeAnythingRuns) {
  RunResult first = RunWard({"run", "-C", "/usr", "--", "/bin/true"}, WithState());
  ASSERT_EQ(first.status, 125) << first.err;
  ASSERT_EQ(first.err.rfind("ward: the workspace is /usr, a system directory", 0), 0u) << first.err;
  const std::string name = "ward-workspace-choice-" + std::to_string(getpid());
  ASSERT_FALSE(PathExists("/usr/" + name));
  RunResult r = RunWard({"run", "-C", "/usr", "--", "/usr/bin/touch", name}, WithState());
  EXPECT_EQ(r.status, 125) << r.err;
  EXPECT_EQ(r.err.rfind("ward: the workspace is /usr, a system directory", 0), 0u) << r.err;
  EXPECT_FALSE(PathExists("/usr/" + name));
  EXPECT_EQ(Sessions(), 0u);
  // ward explain and ward mcp refuse it the same way.
  RunResult ex = RunWard({"explain", "-C", "/usr"}, WithState());
  EXPECT_EQ(ex.status, 125);
  EXPECT_NE(ex.err.find("the workspace is /usr, a system directory"), std::string::npos) << ex.err;
  RunResult mcp = RunWard({"mcp", "-C", "/usr"}, WithState());
  EXPECT_EQ(mcp.status, 125);
  EXPECT_NE(mcp.err.find("the workspace is /usr, a system directory"), std::string::npos)
      << mcp.err;
}

TEST_F(WorkspaceChoice, WorkspaceAnywayIsAcceptedAndAudited) {
  const std::string dir = RunLockDir();
  if (dir.empty()) GTEST_SKIP() << "no world-writable /run/lock to make a workspace in";
  RunOptions o = WithState();
  o.cwd = dir;
  RunResult r = RunWard({"run", "-r", StageDir(), "--", ProbeBin(), "write", "marker"}, o);
  EXPECT_EQ(r.status, 125) << r.err;
  EXPECT_EQ(r.err.rfind("ward: the workspace " + dir + " is inside /run, a system directory", 0),
            0u)
      << r.err;
  EXPECT_FALSE(PathExists(dir + "/marker"));
  r = RunWard({"run", "--workspace-anyway", "-r", StageDir(), "--", ProbeBin(), "write", "marker"},
              o);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(PathExists(dir + "/marker"));
  std::vector<Json> starts = StartRecords();
  ASSERT_EQ(starts.size(), 1u);
  const Json& ws = starts[0]["policy"]["workspace"];
  EXPECT_EQ(ws["path"], dir) << ws.dump();
  EXPECT_EQ(ws.value("anyway", ""), "the workspace " + dir +
                                        " is inside /run, a system directory: a run could change "
                                        "what this host itself runs")
      << ws.dump();
  // ward explain shows it.
  RunResult ex = RunWard({"explain", "--workspace-anyway"}, o);
  EXPECT_EQ(ex.status, 0) << ex.err;
  EXPECT_NE(ex.out.find("accepted with --workspace-anyway: the workspace " + dir + " is inside"),
            std::string::npos)
      << ex.out;
  // Control: an ordinary workspace records no such thing.
  r = Probe({"exit", "0"}, {}, WithState());
  EXPECT_EQ(r.status, 0) << r.err;
  starts = StartRecords();
  ASSERT_EQ(starts.size(), 2u);
  for (const Json& s : starts) {
    if (s["policy"]["workspace"]["path"] == ws_) {
      EXPECT_FALSE(s["policy"]["workspace"].contains("anyway")) << s.dump();
    }
  }
}

// A workspace that holds the caller's HOME stays refused, --workspace-anyway included: every
// credential in it would be visible inside.
TEST_F(WorkspaceChoice, WorkspaceAnywayDoesNotAcceptTheHome) {
  RunOptions o = WithState();
  o.cwd = home_;
  RunResult r = RunWard(
      {"run", "--workspace-anyway", "-r", StageDir(), "--", ProbeBin(), "write", "marker"}, o);
  EXPECT_EQ(r.status, 125) << r.err;
  EXPECT_EQ(r.err.rfind("ward: the workspace is your HOME itself (" + home_ + ")", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("is refused even with --workspace-anyway: every credential in it would "
                       "be visible inside"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(PathExists(home_ + "/marker"));
  EXPECT_EQ(Sessions(), 0u);
}

TEST_F(WorkspaceChoice, ASubdirectoryOfTmpIsAccepted) {
  // The fixture's workspace is a subdirectory of /tmp.
  RunResult r = Probe({"write", ws_ + "/marker"}, {}, WithState());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(PathExists(ws_ + "/marker"));
  EXPECT_EQ(Sessions(), 1u);
}

// `ward serve`: a client cannot pick /usr (nor ask for --workspace-anyway); a daemon started
// with --workspace-anyway accepts a refused workspace, records it, and its execs run there.
TEST_F(WorkspaceChoice, ServeRefusesUnlessTheDaemonItselfAccepts) {
  std::map<std::string, std::string> env = BaseEnv(home_);
  env["XDG_STATE_HOME"] = state_;
  const std::string lock_dir = RunLockDir();
  {
    const std::string dir = root_->path() + "/serve";
    MakeDirs(dir, 0700);
    ServeDaemon daemon(dir, env, ws_);
    ASSERT_TRUE(daemon.Start()) << daemon.log();
    client::Client c(daemon.socket());
    ASSERT_TRUE(c.Connect());
    client::Reply r = c.CreateSandbox("/usr");
    ASSERT_FALSE(r.ok()) << r.result.dump();
    EXPECT_NE(r.error->message.find("the workspace is /usr, a system directory"), std::string::npos)
        << r.error->message;
    EXPECT_NE(r.error->message.find("start `ward serve` with --workspace-anyway"),
              std::string::npos)
        << r.error->message;
    r = c.CreateSandbox("/usr", {{"workspace_anyway", true}});
    ASSERT_FALSE(r.ok()) << r.result.dump();
    r = c.CreateSandbox(home_);
    ASSERT_FALSE(r.ok()) << r.result.dump();
    EXPECT_NE(r.error->message.find("your HOME itself"), std::string::npos) << r.error->message;
    if (!lock_dir.empty()) {
      r = c.CreateSandbox(lock_dir);
      ASSERT_FALSE(r.ok()) << r.result.dump();
      EXPECT_NE(r.error->message.find("is inside /run"), std::string::npos) << r.error->message;
    }
    // Control: the fixture's workspace is accepted by the same daemon.
    r = c.CreateSandbox(ws_);
    EXPECT_TRUE(r.ok()) << r.error->message;
  }
  if (lock_dir.empty()) GTEST_SKIP() << "no world-writable /run/lock to make a workspace in";
  const std::string dir = root_->path() + "/serve-anyway";
  MakeDirs(dir, 0700);
  ServeDaemon daemon(dir, env, ws_, {"--workspace-anyway"});
  ASSERT_TRUE(daemon.Start()) << daemon.log();
  client::Client c(daemon.socket());
  ASSERT_TRUE(c.Connect());
  client::Reply r = c.CreateSandbox("/usr", {{"workspace_anyway", true}});
  EXPECT_FALSE(r.ok());  // not a parameter of sandbox.create
  r = c.CreateSandbox(lock_dir, {{"read", {StageDir()}}});
  ASSERT_TRUE(r.ok()) << r.error->message;
  std::string sb = r.result["sandbox_id"];
  client::Reply ran = c.Run(sb, {ProbeBin(), "write", lock_dir + "/from-serve"});
  ASSERT_TRUE(ran.ok()) << ran.error->message;
  EXPECT_EQ(ran.result["exit_code"], 0) << ran.result.dump();
  EXPECT_TRUE(PathExists(lock_dir + "/from-serve"));
  // The sandbox's session and its exec's run both record why it would have been refused.
  bool sandbox_recorded = false, exec_recorded = false;
  for (const Json& s : StartRecords()) {
    if (s.value("workspace", "") == lock_dir) {
      sandbox_recorded =
          s.value("workspace_anyway", "").find("is inside /run") != std::string::npos;
    }
    if (s.contains("policy") && s["policy"]["workspace"]["path"] == lock_dir) {
      exec_recorded =
          s["policy"]["workspace"].value("anyway", "").find("is inside /run") != std::string::npos;
    }
  }
  EXPECT_TRUE(sandbox_recorded);
  EXPECT_TRUE(exec_recorded);
}

}  // namespace
}  // namespace ward::test
