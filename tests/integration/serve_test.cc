// `ward serve` end to end: a real daemon, real sandboxes, the C++ client. Concurrent execs in
// several sandboxes, reconnect and replay, kill, timeouts, malformed and oversized requests,
// another uid refused, file operations that try to leave the workspace, a daemon that dies.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "../../clients/cpp/ward_client.h"
#include "harness.h"
#include "serve_daemon.h"

namespace ward::test {
namespace {

using Json = nlohmann::json;

class ServeTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    ws2_ = root_->path() + "/ws2";
    MakeDirs(ws2_, 0755);
    env_ = BaseEnv(home_);
    env_["XDG_STATE_HOME"] = root_->path() + "/state";
    env_.erase("XDG_RUNTIME_DIR");
    daemon_.emplace(root_->path(), env_, ws_);
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  }
  void TearDown() override {
    if (daemon_) daemon_->Stop();
  }
  std::unique_ptr<client::Client> Connect() {
    auto c = std::make_unique<client::Client>(daemon_->socket());
    EXPECT_TRUE(c->Connect()) << c->last_error().message;
    return c;
  }
  std::string Sandbox(client::Client& c, const std::string& ws, Json extra = Json::object()) {
    extra["read"] = Json::array({StageDir()});
    auto r = c.CreateSandbox(ws, extra);
    EXPECT_TRUE(r.ok()) << (r.error ? r.error->message : "");
    return r.ok() ? r.result["sandbox_id"].get<std::string>() : "";
  }
  static std::string Kind(const client::Reply& r) { return r.error ? r.error->kind : ""; }

  std::string ws2_;
  std::map<std::string, std::string> env_;
  std::optional<ServeDaemon> daemon_;
};

TEST_F(ServeTest, VersionAndALabelledSandboxSession) {
  auto c = Connect();
  auto v = c->Call("ward.version");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v.result["protocol"], 1);
  std::string sb = Sandbox(*c, ws_);
  auto r = c->Run(sb, {"/bin/sh", "-c", "echo in-sandbox; id -u"});
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.result["status"], "exited") << r.result.dump();
  EXPECT_EQ(r.result["exit_code"], 0);
  EXPECT_EQ(r.result["stdout"].get<std::string>().substr(0, 11), "in-sandbox\n");
  auto q = c->Call("audit.query", {{"sandbox_id", sb}});
  ASSERT_TRUE(q.ok());
  EXPECT_GE(q.result["sessions"].size(), 1u) << q.result.dump();
  if (v.result["labels"] == true) {
    auto qe = c->Call("audit.query", {{"exec_id", r.result["exec_id"]}});
    ASSERT_TRUE(qe.ok());
    ASSERT_EQ(qe.result["sessions"].size(), 1u) << qe.result.dump();
    EXPECT_EQ(qe.result["sessions"][0]["labels"]["sandbox"], sb);
  }
}

// An exec is a `ward run`: the check after it runs too, and the exec's result says what went to
// the quarantine, so a client can show it before anyone runs git in the workspace.
TEST_F(ServeTest, AnExecSaysWhatTheCheckAfterItQuarantined) {
  auto c = Connect();
  std::string sb = Sandbox(*c, ws_);
  auto r = c->Run(sb, {"/bin/sh", "-c", "mkdir -p d && echo x > d/.envrc && echo y > d/notes"});
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.result["exit_code"], 0) << r.result.dump();
  ASSERT_EQ(r.result["quarantined"].size(), 1u) << r.result.dump();
  EXPECT_EQ(r.result["quarantined"][0]["path"], ws_ + "/d/.envrc");
  EXPECT_FALSE(PathExists(ws_ + "/d/.envrc"));
  EXPECT_EQ(ReadFile(ws_ + "/d/notes"), "y\n");  // control
  auto plain = c->Run(sb, {"/bin/sh", "-c", "echo z > d/other"});
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain.result["quarantined"].empty()) << plain.result.dump();
}

TEST_F(ServeTest, ConcurrentExecsInSeveralSandboxesStayApart) {
  auto c1 = Connect();
  auto c2 = Connect();
  std::string a = Sandbox(*c1, ws_);
  std::string b = Sandbox(*c2, ws2_);
  WriteFile(ws_ + "/only-in-a", "A\n");
  WriteFile(ws2_ + "/only-in-b", "B\n");
  // Start three execs per sandbox, all running at once (each yields at once).
  std::vector<std::pair<client::Client*, std::string>> started;
  for (int i = 0; i < 3; ++i) {
    for (auto [c, sb] : {std::pair{c1.get(), a}, std::pair{c2.get(), b}}) {
      auto r = c->Run(sb,
                      {"/bin/sh", "-c",
                       "sleep 0.5; cat only-in-a only-in-b 2>/dev/null; echo " + std::to_string(i) +
                           " > out-" + std::to_string(i)},
                      {{"yield_ms", 0}});
      ASSERT_TRUE(r.ok()) << r.error->message;
      EXPECT_EQ(r.result["status"], "running");
      started.emplace_back(c, r.result["exec_id"]);
    }
  }
  auto list = c1->Call("exec.list");
  ASSERT_TRUE(list.ok());
  int running = 0;
  for (const auto& e : list.result["execs"]) running += e["status"] == "running";
  EXPECT_GE(running, 2);
  for (auto& [c, id] : started) {
    auto w = c->Call("exec.wait", {{"exec_id", id}});
    ASSERT_TRUE(w.ok()) << w.error->message;
    EXPECT_EQ(w.result["status"], "exited") << w.result.dump();
    std::string out = w.result["stdout"];
    bool in_a = w.result["sandbox_id"] == a;
    // Each sandbox sees its own workspace only.
    EXPECT_EQ(out, in_a ? "A\n" : "B\n") << w.result.dump();
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ReadFile(ws_ + "/out-" + std::to_string(i)), std::to_string(i) + "\n");
    EXPECT_EQ(ReadFile(ws2_ + "/out-" + std::to_string(i)), std::to_string(i) + "\n");
  }
}

TEST_F(ServeTest, ReconnectAndReplayOutput) {
  std::string sb, id;
  {
    auto c = Connect();
    sb = Sandbox(*c, ws_);
    auto r = c->Run(sb, {"/bin/sh", "-c", "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.1; done"},
                    {{"yield_ms", 150}});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.result["status"], "running");
    id = r.result["exec_id"];
  }  // the client goes away while the command runs
  auto c = Connect();
  auto w = c->Call("exec.wait", {{"exec_id", id}, {"timeout_ms", 20000}});
  ASSERT_TRUE(w.ok()) << w.error->message;
  EXPECT_EQ(w.result["status"], "exited");
  std::string all;
  uint64_t offset = 0;
  for (int i = 0; i < 100; ++i) {
    auto rd = c->Call("exec.read", {{"exec_id", id}, {"offset", offset}, {"length", 7}});
    ASSERT_TRUE(rd.ok());
    all += rd.result["data"].get<std::string>();
    offset = rd.result["next_offset"];
    if (rd.result["complete"] == true) break;
  }
  EXPECT_EQ(all, "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n");
  EXPECT_EQ(w.result["stdout"], all);
}

TEST_F(ServeTest, OutputNotificationsWhileRunning) {
  auto c = Connect();
  std::string sb = Sandbox(*c, ws_);
  std::string streamed;
  c->OnNotification([&](const std::string& method, const Json& p) {
    if (method == "exec.output" && p["stream"] == "stdout")
      streamed += p["data"].get<std::string>();
  });
  auto r = c->Run(sb, {"/bin/sh", "-c", "echo a; sleep 0.2; echo b"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(streamed, "a\nb\n");
}

TEST_F(ServeTest, KillAndSignalARunningExec) {
  auto c = Connect();
  std::string sb = Sandbox(*c, ws_);
  auto r = c->Run(sb, {"/bin/sleep", "60"}, {{"yield_ms", 300}});
  ASSERT_TRUE(r.ok());
  std::string id = r.result["exec_id"];
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(c->Call("exec.signal", {{"exec_id", id}, {"signal", "KILL"}}).ok());
  auto w = c->Call("exec.wait", {{"exec_id", id}, {"timeout_ms", 15000}});
  ASSERT_TRUE(w.ok()) << w.error->message;
  EXPECT_EQ(w.result["status"], "exited");
  EXPECT_EQ(w.result["signal"], 9);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

  r = c->Run(sb, {"/bin/sleep", "60"}, {{"yield_ms", 300}});
  id = r.result["exec_id"];
  ASSERT_TRUE(c->Call("exec.signal", {{"exec_id", id}, {"signal", "TERM"}}).ok());
  w = c->Call("exec.wait", {{"exec_id", id}, {"timeout_ms", 15000}});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w.result["status"], "exited");
  EXPECT_EQ(w.result["signal"], 15) << w.result.dump();
}

// A signal sent at once, while `ward run` is still starting, waits until its supervisor
// forwards signals and then reaches the command; it used to kill `ward run` itself, leaving
// the exec "interrupted" with no status (which the ASan build, slower to start, ran into).
TEST_F(ServeTest, ASignalSentWhileTheRunStartsReachesTheCommand) {
  auto c = Connect();
  std::string sb = Sandbox(*c, ws_);
  for (int i = 0; i < 3; ++i) {
    auto r = c->Run(sb, {"/bin/sleep", "60"}, {{"yield_ms", 0}});
    ASSERT_TRUE(r.ok());
    std::string id = r.result["exec_id"];
    ASSERT_TRUE(c->Call("exec.signal", {{"exec_id", id}, {"signal", "TERM"}}).ok());
    auto w = c->Call("exec.wait", {{"exec_id", id}, {"timeout_ms", 15000}});
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w.result["status"], "exited") << w.result.dump();
    EXPECT_EQ(w.result["signal"], 15) << w.result.dump();
  }
}

TEST_F(ServeTest, TimeoutsEndTheCommand) {
  auto c = Connect();
  std::string sb = Sandbox(*c, ws_);
  auto start = std::chrono::steady_clock::now();
  // The timeout counts from the request, the sandbox's start included: long enough for the
  // command to have written under AddressSanitizer too (half a second was not, on a slow host).
  auto r = c->Run(sb, {"/bin/sh", "-c", "echo before; sleep 60"}, {{"timeout_ms", 3000}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.result["status"], "timed_out");
  EXPECT_EQ(r.result["stdout"], "before\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  // A command that ignores TERM is killed after the grace period.
  r = c->Run(sb, {"/bin/sh", "-c", "trap '' TERM; sleep 60"}, {{"timeout_ms", 300}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.result["status"], "timed_out");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  // A wait that runs out is an error of kind timeout; the exec goes on.
  r = c->Run(sb, {"/bin/sleep", "2"}, {{"yield_ms", 0}});
  auto w = c->Call("exec.wait", {{"exec_id", r.result["exec_id"]}, {"timeout_ms", 100}});
  EXPECT_EQ(Kind(w), "timeout");
  w = c->Call("exec.wait", {{"exec_id", r.result["exec_id"]}});
  EXPECT_EQ(w.result["status"], "exited");
  EXPECT_EQ(w.result["exit_code"], 0);
}

TEST_F(ServeTest, MalformedAndOversizedRequestsGetErrorsAndTheDaemonStaysUp) {
  auto c = Connect();
  auto expect_error = [&](const std::string& raw, int code) {
    ASSERT_TRUE(c->SendRaw(raw));
    auto m = c->ReadMessage(10000);
    ASSERT_TRUE(m.has_value()) << "no answer to " << raw.substr(0, 40);
    ASSERT_TRUE(m->contains("error")) << m->dump();
    EXPECT_EQ((*m)["error"]["code"], code) << raw.substr(0, 40);
    EXPECT_TRUE((*m)["error"]["data"]["kind"].is_string());
  };
  expect_error("this is not json\n", -32700);
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sandbox.create\",\"params\":[1]}\n",
               -32602);
  expect_error("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ward.version\"}]\n", -32600);
  expect_error(std::string(100000, '[') + "\n", -32700);
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\xff\xfe\"}\n", -32700);
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"no.such\"}\n", -32601);
  expect_error(
      "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"exec.run\",\"params\":{\"sandbox_id\":"
      "\"sb-0000000000000000\",\"argv\":[\"x\"]}}\n",
      -32001);
  // 5 MiB in one line: over the cap, discarded, answered once.
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"fs.write\",\"params\":{\"data\":\"" +
                   std::string(5 << 20, 'a') + "\"}}\n",
               -32600);
  // The same connection still works, and so does a new one.
  auto v = c->Call("ward.version");
  EXPECT_TRUE(v.ok());
  auto c2 = Connect();
  EXPECT_TRUE(c2->Call("ward.version").ok());
  // Half a message, then the client vanishes: nothing breaks.
  {
    auto c3 = Connect();
    c3->SendRaw("{\"jsonrpc\":\"2.0\",\"id\":9,\"meth");
  }
  EXPECT_TRUE(c2->Call("ward.version").ok());
  int st;
  EXPECT_EQ(waitpid(daemon_->pid(), &st, WNOHANG), 0) << daemon_->log();
}

TEST_F(ServeTest, ARequestFromAnotherUidIsRefused) {
  if (!RunningAsRoot()) {
    GTEST_SKIP() << "needs root to connect as another uid (the root variant covers it)";
  }
  struct passwd* pw = getpwnam(WARD_TEST_USER);
  ASSERT_NE(pw, nullptr) << "test user missing";
  // Open the file-system path so that only the peer-credential check stands in the way.
  ASSERT_EQ(chmod(daemon_->socket().c_str(), 0666), 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    std::string verdict = "setuid-failed";
    if (setgroups(0, nullptr) == 0 && setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) == 0 &&
        setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) == 0) {
      client::Client c(daemon_->socket());
      if (!c.Connect()) {
        verdict = "connect-failed: " + c.last_error().message;
      } else {
        auto r = c.Call("sandbox.list", Json::object(), 10000);
        verdict = r.ok() ? "accepted" : r.error->kind;
        // The connection is closed after the refusal.
        if (!r.ok() && !c.ReadMessage(2000) && c.last_error().kind == "interrupted") {
          verdict += "+closed";
        }
      }
    }
    ssize_t n = write(fds[1], verdict.data(), verdict.size());
    (void)n;
    _exit(0);
  }
  close(fds[1]);
  char buf[256];
  ssize_t n = read(fds[0], buf, sizeof buf);
  close(fds[0]);
  int st;
  waitpid(child, &st, 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, n), "policy_denied+closed");
  EXPECT_NE(daemon_->log().find("refused a client of uid " + std::to_string(pw->pw_uid)),
            std::string::npos)
      << daemon_->log();
  // Positive control: our own uid is served.
  auto c = Connect();
  EXPECT_TRUE(c->Call("sandbox.list").ok());
}

TEST_F(ServeTest, FileOpsCannotLeaveTheWorkspace) {
  auto c = Connect();
  std::string sb = Sandbox(*c, ws_);
  std::string outside = root_->path() + "/outside";
  MakeDirs(outside, 0755);
  WriteFile(outside + "/secret", "OUTSIDE\n");
  // Positive control: a plain file of the workspace.
  auto w = c->Call("fs.write", {{"sandbox_id", sb}, {"path", "ok.txt"}, {"data", "fine"}});
  ASSERT_TRUE(w.ok()) << w.error->message;
  EXPECT_EQ(ReadFile(ws_ + "/ok.txt"), "fine");
  // The sandbox itself plants symlinks that point outside.
  auto r = c->Run(sb, {"/bin/sh", "-c",
                       "ln -s " + outside + "/secret link && ln -s " + outside +
                           " dirlink && "
                           "ln -s /etc/passwd passwd-link"});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.result["exit_code"], 0) << r.result.dump();
  for (const std::string& p :
       {std::string("../outside/secret"), std::string("../../etc/passwd"), outside + "/secret",
        std::string("link"), std::string("dirlink/secret"), std::string("passwd-link")}) {
    auto rd = c->Call("fs.read", {{"sandbox_id", sb}, {"path", p}});
    EXPECT_EQ(Kind(rd), "policy_denied") << p << (rd.ok() ? rd.result.dump() : "");
    auto wr = c->Call("fs.write",
                      {{"sandbox_id", sb}, {"path", p}, {"data", "PWNED"}, {"atomic", false}});
    EXPECT_EQ(Kind(wr), "policy_denied") << p;
  }
  EXPECT_EQ(Kind(c->Call("fs.mkdir", {{"sandbox_id", sb}, {"path", "dirlink/new"}})),
            "policy_denied");
  EXPECT_EQ(
      Kind(c->Call("fs.rename", {{"sandbox_id", sb}, {"from", "ok.txt"}, {"to", "dirlink/moved"}})),
      "policy_denied");
  EXPECT_EQ(Kind(c->Call("fs.write",
                         {{"sandbox_id", sb}, {"path", ".git/hooks/pre-commit"}, {"data", "x"}})),
            "policy_denied");
  EXPECT_EQ(ReadFile(outside + "/secret"), "OUTSIDE\n");
  EXPECT_FALSE(PathExists(outside + "/new"));
  EXPECT_FALSE(PathExists(outside + "/moved"));
  // Removing the link removes the link, not its target.
  EXPECT_TRUE(c->Call("fs.remove", {{"sandbox_id", sb}, {"path", "link"}}).ok());
  EXPECT_EQ(ReadFile(outside + "/secret"), "OUTSIDE\n");
}

TEST_F(ServeTest, ExecPolicyMayOnlyNarrowAndSecretsStayOutside) {
  auto c = Connect();
  std::string sb = Sandbox(*c, ws_);
  WriteFile(ws_ + "/notes.txt", "visible\n");
  auto r = c->Run(sb, {"/bin/cat", "notes.txt"});
  EXPECT_EQ(r.result["stdout"], "visible\n");  // positive control
  r = c->Run(sb, {"/bin/cat", "notes.txt"}, {{"policy", {{"deny", {"notes.txt"}}}}});
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r.result["exit_code"], 0);
  EXPECT_EQ(r.result["stdout"], "");
  auto wide = c->Run(sb, {"/bin/true"}, {{"policy", {{"write", {home_}}}}});
  EXPECT_EQ(Kind(wide), "policy_denied");
  wide = c->Run(sb, {"/bin/true"}, {{"policy", {{"allow_net", {"example.com"}}}}});
  EXPECT_EQ(Kind(wide), "policy_denied");
  // The canary secrets in HOME are not there.
  r = c->Run(sb, {"/bin/sh", "-c", "cat ~/.ssh/id_ed25519 ~/.aws/credentials; env"});
  ASSERT_TRUE(r.ok());
  std::string all = r.result["stdout"].get<std::string>() + r.result["stderr"].get<std::string>();
  EXPECT_EQ(all.find(kCanarySecret), std::string::npos) << all;
  EXPECT_EQ(all.find(kCanaryApiKey), std::string::npos) << all;
}

TEST_F(ServeTest, TheDaemonIsOutOfTheSandboxesReach) {
  auto c = Connect();
  std::string sb = Sandbox(*c, ws_);
  // Positive control: the socket exists on the host.
  ASSERT_TRUE(PathExists(daemon_->socket()));
  auto r = c->Run(sb, {"/bin/sh", "-c",
                       "test -e '" + daemon_->socket() +
                           "' && echo VISIBLE || echo hidden; "
                           "ls '" +
                           root_->path() + "/serve' 2>&1 | head -1"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.result["stdout"].get<std::string>().substr(0, 7), "hidden\n") << r.result.dump();
  // A sandbox that would see the socket or the daemon's records is refused.
  auto wide = c->CreateSandbox(root_->path());
  EXPECT_EQ(Kind(wide), "policy_denied");
  wide = c->CreateSandbox(ws_, {{"read", {root_->path() + "/serve"}}});
  EXPECT_EQ(Kind(wide), "policy_denied");
}

TEST_F(ServeTest, ADaemonThatDiesLeavesInterruptedNotExitZero) {
  std::string sb, id;
  {
    auto c = Connect();
    sb = Sandbox(*c, ws_);
    auto r = c->Run(sb, {"/bin/sh", "-c", "echo started; sleep 60"}, {{"yield_ms", 500}});
    ASSERT_TRUE(r.ok());
    id = r.result["exec_id"];
    // The daemon dies only once the command has written (a slow start, under AddressSanitizer
    // say, can take longer than the yield).
    std::string out;
    for (int i = 0; i < 300 && out != "started\n"; ++i) {
      auto rd = c->Call("exec.read", {{"exec_id", id}});
      ASSERT_TRUE(rd.ok());
      out = rd.result["data"].get<std::string>();
      if (out != "started\n") std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_EQ(out, "started\n") << "the command wrote nothing in 30 s";
  }
  daemon_->Kill(SIGKILL);
  // The sandbox dies with its supervisor (PDEATHSIG); nothing keeps running.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  auto c = Connect();
  EXPECT_TRUE(c->Call("sandbox.get", {{"sandbox_id", sb}}).ok());
  auto w = c->Call("exec.wait", {{"exec_id", id}, {"timeout_ms", 5000}});
  ASSERT_TRUE(w.ok()) << w.error->message;
  EXPECT_EQ(w.result["status"], "interrupted");
  EXPECT_TRUE(w.result["exit_code"].is_null());
  EXPECT_EQ(w.result["stdout"], "started\n");  // what was kept is still there
}

TEST_F(ServeTest, PythonClientExample) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  std::string example = std::string(WARD_SOURCE_DIR) + "/clients/python/examples/run_command.py";
  RunOptions o = Defaults();
  RunResult r = RunProgram({"/usr/bin/python3", example, "--socket", daemon_->socket(), ws_,
                            "/bin/sh", "-c", "echo from-python; exit 3"},
                           o);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("from-python"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find("[exited exit_code=3]"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ward::test
