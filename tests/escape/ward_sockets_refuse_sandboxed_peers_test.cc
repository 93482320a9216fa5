// ward's own sockets stay out of every sandbox's reach, threat class I (ward's channels): they
// never live under /tmp, a run whose view would include ward's runtime or state directory is
// refused before it starts, and a sandboxed process that reaches a socket anyway (a second run
// whose workspace is the first run's runtime directory, chosen so that its own view check does
// not know it) is refused by the socket itself and recorded in the owner's audit trail. Each
// refusal has its positive control: the same request from the host (this process, our
// namespaces) is answered.
#include <glob.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "serve_daemon.h"
#include "supervisor/approvals/socket.h"

namespace ward::test {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kContent = "PEER-CHECK-CONTENT-41c7";

// Every record of every audit session under `state_dir`/ward/sessions.
std::vector<json> AuditRecords(const std::string& state_dir) {
  std::vector<json> out;
  glob_t g = {};
  std::string pattern = state_dir + "/ward/sessions/*/events.jsonl";
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      std::ifstream in(g.gl_pathv[i]);
      std::string line;
      while (std::getline(in, line)) {
        json e = json::parse(line, nullptr, false);
        if (e.is_object()) out.push_back(std::move(e));
      }
    }
  }
  globfree(&g);
  return out;
}

std::vector<json> PeerRefusals(const std::string& state_dir) {
  std::vector<json> out;
  for (const json& e : AuditRecords(state_dir)) {
    if (e.value("type", "") == "channel.peer_refused") out.push_back(e["data"]);
  }
  return out;
}

class WardSocketsTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    // The host side of these tests (this process) must be readable by ward's peer check, like
    // any process of the user's.
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    runtime_a_ = root_->path() + "/run-a";
    runtime_b_ = root_->path() + "/run-b";
    state_ = root_->path() + "/state";
    MakeDirs(runtime_a_, 0700);
    MakeDirs(runtime_b_, 0700);
  }
  void TearDown() override {
    if (!outside_.empty()) RunProgram({"/bin/rm", "-rf", outside_});
  }
  // A file outside every sandbox's view and outside ward's own trees (the private /tmp and
  // HOME are never asked about): an open of it is a question for the approver.
  std::string OutsideFile() {
    char tmpl[] = "/run/lock/ward-peer.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return "";
    outside_ = tmpl;
    std::string f = outside_ + "/data.txt";
    WriteFile(f, kContent, 0600);
    return f;
  }
  RunOptions Env(const std::string& runtime, const std::string& state) const {
    RunOptions o = Defaults();
    if (runtime.empty()) {
      o.env.erase("XDG_RUNTIME_DIR");
    } else {
      o.env["XDG_RUNTIME_DIR"] = runtime;
    }
    if (state.empty()) {
      o.env.erase("XDG_STATE_HOME");
    } else {
      o.env["XDG_STATE_HOME"] = state;
    }
    o.timeout_s = 120;
    return o;
  }
  // The one live approval socket in `dir` with a pending request: {socket, request id}.
  std::optional<std::pair<std::string, uint64_t>> WaitForPending(const std::string& dir) {
    for (int i = 0; i < 1500; ++i) {
      auto sessions = supervisor::FindApprovalSessions(dir);
      if (sessions.ok() && sessions->size() == 1) {
        auto list = supervisor::CallApprovalSocket((*sessions)[0].path, {{"op", "list"}}, 2s);
        if (list.ok() && (*list)["requests"].is_array() && !(*list)["requests"].empty()) {
          return std::make_pair((*sessions)[0].path, (*list)["requests"][0]["id"].get<uint64_t>());
        }
      }
      std::this_thread::sleep_for(20ms);
    }
    return std::nullopt;
  }
  size_t Pending(const std::string& socket) {
    auto list = supervisor::CallApprovalSocket(socket, {{"op", "list"}}, 2s);
    return list.ok() && (*list)["requests"].is_array() ? (*list)["requests"].size() : 99;
  }

  std::string runtime_a_, runtime_b_, state_, outside_;
};

// Without XDG_RUNTIME_DIR the socket goes to /run/user/<uid>/ward when that is ours, else under
// ward's state directory in HOME; never /tmp/ward-<uid>, where any sandbox whose view held
// /tmp could reach it. HOME is put outside /tmp so "not under /tmp" means something.
TEST_F(WardSocketsTest, WithoutXdgRuntimeDirTheApprovalSocketIsNotUnderTmp) {
  if (std::string why = WhyAskIsRefusedHere(); !why.empty()) GTEST_SKIP() << why;
  char tmpl[] = "/run/lock/ward-home.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr) << strerror(errno);
  std::string home = tmpl;
  RunOptions o = Env("", "");
  o.env["HOME"] = home;
  RunResult r = Probe({"exit", "0"}, {"--ask"}, o);
  RunProgram({"/bin/rm", "-rf", home});
  ASSERT_EQ(r.status, 0) << r.err;
  size_t at = r.err.find(", socket ");
  ASSERT_NE(at, std::string::npos) << r.err;  // the control: the run did report its socket
  std::string socket = r.err.substr(at + 9, r.err.find('\n', at) - at - 9);
  std::string run_user = "/run/user/" + std::to_string(geteuid());
  struct stat st;
  bool run_user_ours = lstat(run_user.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
                       st.st_uid == geteuid() && (st.st_mode & 022) == 0;
  std::string expected = run_user_ours ? run_user + "/ward/" : home + "/.local/state/ward/run/";
  EXPECT_EQ(socket.rfind(expected, 0), 0u) << socket;
  EXPECT_NE(socket.rfind("/tmp/", 0), 0u) << socket;
}

// A second run whose workspace (or a -r/-w rule) is ward's runtime directory, or its state
// directory, is refused before it starts, naming the directory and the fix.
TEST_F(WardSocketsTest, ARunThatWouldSeeWardsRuntimeOrStateDirectoryIsRefused) {
  if (std::string why = WhyAskIsRefusedHere(); !why.empty()) GTEST_SKIP() << why;
  RunOptions o = Env(runtime_a_, state_);
  RunResult control = Probe({"exit", "0"}, {"--ask"}, o);  // the first run: its socket is there
  ASSERT_EQ(control.status, 0) << control.err;
  const std::string runtime = runtime_a_ + "/ward";
  const std::string state = state_ + "/ward";
  struct Case {
    std::string cwd;
    std::vector<std::string> flags;
    std::string named;
    std::string fix;
  };
  for (const Case& c : std::vector<Case>{
           {runtime_a_, {}, runtime, "XDG_RUNTIME_DIR"},
           {ws_, {"-r", runtime}, runtime, "XDG_RUNTIME_DIR"},
           {ws_, {"-w", runtime_a_}, runtime, "XDG_RUNTIME_DIR"},
           {state_, {"--no-audit"}, state, "XDG_STATE_HOME"},
           {ws_, {"-r", state}, state, "XDG_STATE_HOME"},
       }) {
    RunOptions oc = o;
    oc.cwd = c.cwd;
    std::vector<std::string> flags = c.flags;
    RunResult r = Probe({"write", c.cwd + "/ran"}, flags, oc);
    EXPECT_EQ(r.status, 125) << c.cwd << " " << r.out << r.err;
    EXPECT_NE(r.err.find(c.named + " would be visible inside the sandbox"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(c.fix), std::string::npos) << r.err;
    EXPECT_FALSE(PathExists(c.cwd + "/ran"));  // nothing ran
  }
}

// ward's configuration directory (the user's profiles and settings) decides the next run: a run
// that could write it is refused, naming the directory; reading it stays allowed (the control:
// the same directory with -r is read inside).
TEST_F(WardSocketsTest, ARunThatCouldWriteWardsConfigurationIsRefused) {
  const std::string config_home = root_->path() + "/config";
  const std::string profiles = config_home + "/ward/profiles";
  MakeDirs(profiles, 0755);
  WriteFile(profiles + "/mine.toml", "extends = \"default\"\n", 0644);
  RunOptions o = Env(runtime_a_, state_);
  o.env["XDG_CONFIG_HOME"] = config_home;
  RunResult control = Probe({"read", profiles + "/mine.toml"}, {"-r", config_home}, o);
  ASSERT_EQ(control.status, 0) << control.err;
  EXPECT_NE(control.out.find("extends"), std::string::npos) << control.out;
  for (const std::string& w : {config_home, config_home + "/ward", profiles}) {
    RunResult r = Probe({"write", profiles + "/mine.toml"}, {"-w", w}, o);
    EXPECT_EQ(r.status, 125) << w << " " << r.out << r.err;
    EXPECT_NE(r.err.find(config_home + "/ward would be writable inside the sandbox"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(ReadFile(profiles + "/mine.toml"), "extends = \"default\"\n");
  }
  // The control: for a run whose configuration lives elsewhere, the same directory is only a
  // directory, and the same write lands.
  RunOptions elsewhere = o;
  elsewhere.env["XDG_CONFIG_HOME"] = root_->path() + "/other-config";
  RunResult wrote = Probe({"write", profiles + "/mine.toml", "changed"}, {"-w", config_home}, elsewhere);
  EXPECT_EQ(wrote.status, 0) << wrote.err;
  EXPECT_EQ(ReadFile(profiles + "/mine.toml"), "changed");
}

// Run 1 (XDG_RUNTIME_DIR=A, --ask) waits on a question. Run 2 (XDG_RUNTIME_DIR=B, so its own view
// check does not know A; workspace A) reaches run 1's socket and answers "approve": refused,
// the question stays pending, and the refusal is in run 1's audit trail. The host's approve is
// answered and run 1 reads the file.
TEST_F(WardSocketsTest, ASandboxedProcessCannotAnswerAnotherRunsApprovals) {
  if (std::string why = WhyAskIsRefusedHere(); !why.empty()) GTEST_SKIP() << why;
  std::string file = OutsideFile();
  if (file.empty()) GTEST_SKIP() << "no /run/lock: no host path outside the view to ask about";
  RunResult run1;
  std::thread first([&] { run1 = Probe({"read", file}, {"--ask"}, Env(runtime_a_, state_)); });
  auto pending = WaitForPending(runtime_a_ + "/ward");
  if (!pending) {
    first.join();
    FAIL() << "run 1 never asked: " << run1.out << run1.err;
  }
  const auto& [socket, id] = *pending;
  json approve = {{"op", "approve"}, {"id", id}, {"scope", "session"}};
  RunOptions o2 = Env(runtime_b_, "");
  o2.cwd = runtime_a_;
  RunResult run2 = Probe({"unix-request", socket, approve.dump()}, {}, o2);
  // It reached the socket (the control for reachability: a reply came back) and was refused.
  EXPECT_EQ(run2.status, 0) << run2.out << run2.err;
  EXPECT_NE(run2.out.find("permission_denied"), std::string::npos) << run2.out << run2.err;
  EXPECT_NE(run2.out.find("namespaces other than ours"), std::string::npos) << run2.out;
  EXPECT_EQ(run2.out.find("\"ok\":true"), std::string::npos) << run2.out;
  EXPECT_EQ(Pending(socket), 1u);
  // Positive control: the same approve from the host is answered.
  auto host = supervisor::CallApprovalSocket(socket, approve, 5s);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_EQ((*host)["ok"], true) << host->dump();
  EXPECT_EQ((*host)["decision"], "allow") << host->dump();
  first.join();
  EXPECT_EQ(run1.status, 0) << run1.out << run1.err;
  EXPECT_NE(run1.out.find(kContent), std::string::npos) << run1.out << run1.err;
  std::vector<json> refused = PeerRefusals(state_);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0]["socket"], socket);
  EXPECT_EQ(refused[0]["uid"], geteuid());  // our uid: only the namespaces tell it apart
  EXPECT_GT(refused[0]["pid"].get<int>(), 0);
  EXPECT_EQ(refused[0]["differs"], json::array({"pid", "user", "mnt"})) << refused[0].dump();
}

// Same for `ward serve`: a sandbox whose view holds the daemon's socket (put where its own view
// check does not know it) cannot drive the daemon, and the refusal is in the daemon's session.
TEST_F(WardSocketsTest, ASandboxedProcessCannotDriveWardServe) {
  TempDir srv("ward-srv");
  std::map<std::string, std::string> env = BaseEnv(home_);
  env["XDG_STATE_HOME"] = state_;
  env.erase("XDG_RUNTIME_DIR");
  ServeDaemon daemon(srv.path(), env, ws_);
  ASSERT_TRUE(daemon.Start()) << daemon.log();
  // A request the daemon grants its own user: a sandbox on a workspace of ours.
  json create = {{"jsonrpc", "2.0"},
                 {"id", 1},
                 {"method", "sandbox.create"},
                 {"params", {{"workspace", ws_}}}};
  RunOptions o = Env(runtime_b_, "");
  o.cwd = srv.path();
  RunResult r = Probe({"unix-request", daemon.socket(), create.dump()}, {}, o);
  EXPECT_EQ(r.status, 0) << r.out << r.err;  // reached the socket, got one answer
  EXPECT_NE(r.out.find("\"error\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("namespaces other than ours"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("sandbox_id"), std::string::npos) << r.out;
  // Positive control: a client on the host is served.
  client::Client c(daemon.socket());
  ASSERT_TRUE(c.Connect()) << c.last_error().message;
  auto v = c.Call("sandbox.list");
  ASSERT_TRUE(v.ok()) << v.error->message;
  EXPECT_TRUE(v.result["sandboxes"].empty()) << v.result.dump();  // nothing was created
  daemon.Stop();
  std::vector<json> refused = PeerRefusals(state_);
  ASSERT_EQ(refused.size(), 1u) << daemon.log();
  EXPECT_EQ(refused[0]["socket"], daemon.socket());
  EXPECT_EQ(refused[0]["differs"], json::array({"pid", "user", "mnt"})) << refused[0].dump();
  EXPECT_NE(daemon.log().find("refused a client"), std::string::npos) << daemon.log();
}

}  // namespace
}  // namespace ward::test
