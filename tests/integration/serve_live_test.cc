// Live sandboxes of `ward serve`: execs forked inside one running sandbox. What persists
// between execs (a loopback server, /tmp, HOME), concurrent execs, an exec narrowed inside the
// live sandbox, what a fresh exec still is, the exec server out of the sandbox's reach, a
// sandbox whose exec server dies, expiry, and a daemon killed under it.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <climits>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "../../clients/cpp/ward_client.h"
#include "harness.h"
#include "serve_daemon.h"

namespace ward::test {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

class ServeLiveTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    env_ = BaseEnv(home_);
    env_["XDG_STATE_HOME"] = root_->path() + "/state";
    env_.erase("XDG_RUNTIME_DIR");
    daemon_.emplace(root_->path(), env_, ws_);
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
    c_ = std::make_unique<client::Client>(daemon_->socket());
    ASSERT_TRUE(c_->Connect()) << c_->last_error().message;
  }
  void TearDown() override {
    c_.reset();
    if (daemon_) daemon_->Stop();
  }
  std::string Sandbox(Json extra = Json::object()) {
    extra["read"] = Json::array({StageDir()});
    auto r = c_->CreateSandbox(ws_, extra);
    EXPECT_TRUE(r.ok()) << (r.error ? r.error->message : "");
    return r.ok() ? r.result["sandbox_id"].get<std::string>() : "";
  }
  Json Sh(const std::string& sb, const std::string& line, Json extra = Json::object()) {
    auto r = c_->Run(sb, {"/bin/sh", "-c", line}, extra);
    EXPECT_TRUE(r.ok()) << (r.error ? r.error->message : "");
    return r.ok() ? r.result : Json();
  }
  Json Live(const std::string& sb) {
    auto g = c_->Call("sandbox.get", {{"sandbox_id", sb}});
    EXPECT_TRUE(g.ok());
    return g.ok() ? g.result["live"] : Json();
  }
  // Whether some process of ours on the host has `marker` in its command line.
  static bool AnyProcessWith(const std::string& marker) {
    DIR* d = opendir("/proc");
    if (!d) return false;
    bool found = false;
    while (struct dirent* e = readdir(d)) {
      if (!isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
      std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline");
      std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (cmd.find(marker) != std::string::npos) found = true;
    }
    closedir(d);
    return found;
  }
  static bool Gone(pid_t pid, std::chrono::seconds within) {
    auto deadline = Clock::now() + within;
    while (Clock::now() < deadline) {
      if (kill(pid, 0) != 0 && errno == ESRCH) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  std::map<std::string, std::string> env_;
  std::optional<ServeDaemon> daemon_;
  std::unique_ptr<client::Client> c_;
};

TEST_F(ServeLiveTest, AServerStartedByOneExecAnswersTheNext) {
  std::string sb = Sandbox();
  Json live = Live(sb);
  EXPECT_EQ(live["running"], true) << live.dump();
  Json r = Sh(sb,
              "python3 -c 'import http.server,socketserver,sys\n"
              "class H(http.server.BaseHTTPRequestHandler):\n"
              "  def do_GET(s): s.send_response(200); s.end_headers(); s.wfile.write(b\"from exec one\")\n"
              "  def log_message(s,*a): pass\n"
              "socketserver.TCPServer((\"127.0.0.1\", 8765), H).serve_forever()' "
              ">/dev/null 2>&1 & echo started");
  EXPECT_EQ(r["status"], "exited") << r.dump();
  EXPECT_EQ(r["fresh"], false);
  // Through the proxy, 127.0.0.1 is the host's, refused and recorded; the sandbox's own
  // loopback is reached without it.
  const Json own = {{"env", {{"NO_PROXY", "127.0.0.1"}, {"no_proxy", "127.0.0.1"}}}};
  std::string got;
  for (int i = 0; i < 100 && got != "from exec one"; ++i) {
    r = Sh(sb, "python3 -c 'import urllib.request as u; "
               "print(u.urlopen(\"http://127.0.0.1:8765/\").read().decode(), end=\"\")' 2>/dev/null",
           own);
    got = r["stdout"].get<std::string>();
    if (got != "from exec one") std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(got, "from exec one");
  // Control: a fresh exec has a loopback of its own, where nothing listens.
  Json fresh = own;
  fresh["fresh"] = true;
  r = Sh(sb, "python3 -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:8765/\")'",
         fresh);
  EXPECT_NE(r["exit_code"], 0) << r.dump();
  EXPECT_EQ(r["fresh"], true);
}

TEST_F(ServeLiveTest, TmpHomeAndTheWorkingDirectoryPersistAcrossExecs) {
  std::string sb = Sandbox();
  MakeDirs(ws_ + "/sub", 0755);
  Json r = Sh(sb, "echo one > /tmp/kept && echo two > ~/kept-too && echo ok");
  ASSERT_EQ(r["stdout"], "ok\n") << r.dump();
  r = Sh(sb, "cat /tmp/kept ~/kept-too");
  EXPECT_EQ(r["stdout"], "one\ntwo\n") << r.dump();
  r = Sh(sb, "pwd", {{"cwd", "sub"}});
  EXPECT_EQ(r["stdout"], ws_ + "/sub\n") << r.dump();
  // A fresh exec starts from nothing.
  r = Sh(sb, "cat /tmp/kept", {{"fresh", true}});
  EXPECT_NE(r["exit_code"], 0) << r.dump();
  // sandbox.reset: a new live sandbox, nothing of the old one.
  auto reset = c_->Call("sandbox.reset", {{"sandbox_id", sb}});
  ASSERT_TRUE(reset.ok()) << reset.error->message;
  EXPECT_EQ(reset.result["live"]["starts"], 2);
  r = Sh(sb, "cat /tmp/kept");
  EXPECT_NE(r["exit_code"], 0) << r.dump();
}

// Each exec's result and its exec.end record carry what ward refused while it ran; the next
// exec, which is refused nothing, carries nothing (the control), and a fresh exec has its own.
TEST_F(ServeLiveTest, EachExecCarriesTheDenialsObservedWhileItRan) {
  std::string sb = Sandbox();
  Json r = Sh(sb, "touch /usr/ward-live-denial 2>/dev/null; echo rc=$?");
  ASSERT_EQ(r["stdout"], "rc=1\n") << r.dump();
  const Json want = Json::array({Json{{"kind", "file.write"}, {"target", "/usr/ward-live-denial"}}});
  auto kinds = [](const Json& ds) {
    Json out = Json::array();
    for (const Json& d : ds) out.push_back({{"kind", d["kind"]}, {"target", d["target"]}});
    return out;
  };
  EXPECT_EQ(kinds(r["denials"]), want) << r.dump();
  Json quiet = Sh(sb, "echo ok");
  EXPECT_EQ(quiet["denials"], Json::array()) << quiet.dump();
  Json fresh = Sh(sb, "touch /usr/ward-live-denial 2>/dev/null; echo rc=$?", {{"fresh", true}});
  EXPECT_EQ(kinds(fresh["denials"]), want) << fresh.dump();
  // The trail: the exec's end record has them too.
  auto q = c_->Call("audit.query",
                     {{"exec_id", r["exec_id"]}, {"type", "exec.end"}, {"records", true}});
  ASSERT_TRUE(q.ok()) << q.error->message;
  bool found = false;
  for (const Json& session : q.result["sessions"]) {
    for (const Json& rec : session["records"]) {
      const Json& ds = rec["data"]["denials"];
      if (ds.is_array() && kinds(ds) == want) found = true;
    }
  }
  EXPECT_TRUE(found) << q.result.dump();
}

// What the sandbox makes ward refuse is its own to choose: 300 distinct refused writes in one exec
// give a bounded list (100 distinct, the rest counted as "other"), in the result and the trail.
TEST_F(ServeLiveTest, AnExecsDenialsStayBoundedWhateverTheSandboxDoes) {
  std::string sb = Sandbox();
  Json r = Sh(sb, "i=0; while [ $i -lt 300 ]; do touch /usr/ward-flood-$i 2>/dev/null; "
                  "i=$((i+1)); done; echo done");
  ASSERT_EQ(r["stdout"], "done\n") << r.dump();
  const Json& ds = r["denials"];
  ASSERT_EQ(ds.size(), 101u) << ds.dump();
  EXPECT_EQ(ds[100]["kind"], "other");
  EXPECT_EQ(ds[100]["count"], 200) << ds[100].dump();
  EXPECT_EQ(ds[0]["kind"], "file.write");
}

TEST_F(ServeLiveTest, ConcurrentExecsRunSideBySideAndKillingOneSparesTheOthers) {
  std::string sb = Sandbox();
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    // Each prints when it started and when it ended (ns): side by side, every start comes
    // before every end.
    auto r = c_->Run(sb, {"/bin/sh", "-c", "date +%s%N; sleep 2; date +%s%N; echo done" + std::to_string(i)},
                     {{"yield_ms", 0}});
    ASSERT_TRUE(r.ok()) << r.error->message;
    ids.push_back(r.result["exec_id"]);
  }
  auto victim = c_->Run(sb, {"/bin/sh", "-c", "trap '' TERM; sleep 60"}, {{"yield_ms", 0}});
  ASSERT_TRUE(victim.ok());
  std::string vid = victim.result["exec_id"];
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(c_->Call("exec.signal", {{"exec_id", vid}, {"signal", "KILL"}}).ok());
  long long last_start = 0, first_end = LLONG_MAX;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto w = c_->Call("exec.wait", {{"exec_id", ids[i]}, {"timeout_ms", 60000}});
    ASSERT_TRUE(w.ok()) << w.error->message;
    EXPECT_EQ(w.result["status"], "exited") << w.result.dump();
    std::istringstream out(w.result["stdout"].get<std::string>());
    long long start = 0, end = 0;
    std::string done;
    out >> start >> end >> done;
    EXPECT_EQ(done, "done" + std::to_string(i)) << w.result.dump();
    last_start = std::max(last_start, start);
    first_end = std::min(first_end, end);
  }
  EXPECT_LT(last_start, first_end);  // side by side, not in turn
  auto w = c_->Call("exec.wait", {{"exec_id", vid}, {"timeout_ms", 30000}});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w.result["signal"], SIGKILL) << w.result.dump();
  EXPECT_EQ(Live(sb)["running"], true);
}

TEST_F(ServeLiveTest, AnExecThatIgnoresTermIsKilledAfterItsTimeout) {
  std::string sb = Sandbox();
  // (The timeout leaves the shell time to set its trap on a slow machine.)
  auto r = c_->Run(sb, {"/bin/sh", "-c", "trap '' TERM; echo up; sleep 60"},
                   {{"timeout_ms", 3000}});
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.result["status"], "timed_out") << r.result.dump();
  EXPECT_EQ(r.result["stdout"], "up\n");
  EXPECT_EQ(Live(sb)["running"], true);  // the sandbox goes on
  EXPECT_EQ(Sh(sb, "echo still")["stdout"], "still\n");
}

// An exec's own narrowing gets a sandbox of its own: inside the live sandbox another process
// (here a helper an earlier exec left running) would write for it, and the creation guard
// creates with the sandbox's authority.
TEST_F(ServeLiveTest, ANarrowedExecCannotWriteWhatTheSandboxCan) {
  const std::string extra = root_->path() + "/extra";
  MakeDirs(extra, 0777);
  std::string sb = Sandbox({{"write", Json::array({extra})}});
  // A helper in the live sandbox writes into `extra` whatever lands in /tmp/please.
  Json r = Sh(sb, "(while :; do if [ -e /tmp/please ]; then cp /tmp/please '" + extra +
                      "/'; rm -f /tmp/please; fi; sleep 0.05; done) >/dev/null 2>&1 & echo ok");
  ASSERT_EQ(r["stdout"], "ok\n") << r.dump();
  // Control: an exec of the live sandbox gets it written.
  r = Sh(sb, "echo a > /tmp/please; sleep 0.5; cat '" + extra + "/please'");
  EXPECT_EQ(r["stdout"], "a\n") << r.dump();
  ASSERT_EQ(unlink((extra + "/please").c_str()), 0);
  // Narrowed to no extra write path: a sandbox of its own, where neither the write nor the
  // helper reaches `extra`.
  r = Sh(sb, "echo b > '" + extra + "/b'; echo c > /tmp/please; sleep 0.5",
         {{"policy", {{"write", Json::array()}}}});
  EXPECT_EQ(r["fresh"], true) << r.dump();
  EXPECT_FALSE(PathExists(extra + "/b"));
  EXPECT_FALSE(PathExists(extra + "/please"));
  EXPECT_NE(r["stderr"].get<std::string>(), "") << r.dump();
}

TEST_F(ServeLiveTest, NothingInsideReachesTheExecServer) {
  std::string sb = Sandbox();
  // The exec's parent is the exec server: its descriptors (the socket to the supervisor) and
  // its memory are out of reach, and the exec holds nothing but its stdio.
  Json r = Sh(sb,
              "for f in /proc/$PPID/fd/*; do readlink $f && echo LINK; "
              "cat $f </dev/null >/dev/null 2>&1 && echo OPENED; done 2>/dev/null; "
              "head -c1 /proc/$PPID/mem >/dev/null 2>&1 && echo MEM; "
              "ls /proc/$PPID/fd >/dev/null 2>&1 || echo ok; echo end; ls /proc/self/fd | wc -l");
  // (Listing the numbers is allowed where the exec's uid owns the server's /proc entries.)
  std::string out = r["stdout"].get<std::string>();
  EXPECT_EQ(out.find("LINK"), std::string::npos) << r.dump();
  EXPECT_EQ(out.find("OPENED"), std::string::npos) << r.dump();
  EXPECT_EQ(out.find("MEM"), std::string::npos) << r.dump();
  EXPECT_NE(out.find("end\n4\n"), std::string::npos) << r.dump();  // 0, 1, 2 and ls's own
  // Control: its own descriptors are readable.
  r = Sh(sb, "ls /proc/$$/fd >/dev/null && echo own");
  EXPECT_EQ(r["stdout"], "own\n");
}

TEST_F(ServeLiveTest, AnExecServerThatDiesEndsTheSandboxAndTheNextExecSaysSo) {
  std::string sb = Sandbox();
  auto bg = c_->Run(sb, {"/bin/sh", "-c", "sleep 60"}, {{"yield_ms", 0}});
  ASSERT_TRUE(bg.ok());
  Json r = Sh(sb, "kill -KILL $PPID; sleep 5");
  EXPECT_EQ(r["status"], "interrupted") << r.dump();
  EXPECT_NE(r["reason"]["message"].get<std::string>().find("the sandbox ended"), std::string::npos)
      << r.dump();
  auto w = c_->Call("exec.wait", {{"exec_id", bg.result["exec_id"]}, {"timeout_ms", 10000}});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w.result["status"], "interrupted") << w.result.dump();
  Json live = Live(sb);
  EXPECT_EQ(live["running"], false) << live.dump();
  EXPECT_TRUE(live["ended"].is_string()) << live.dump();
  // The next exec starts a new live sandbox.
  r = Sh(sb, "echo again");
  EXPECT_EQ(r["stdout"], "again\n") << r.dump();
  EXPECT_EQ(Live(sb)["starts"], 2);
}

TEST_F(ServeLiveTest, AnExpiredSandboxLeavesNoProcess) {
  std::string sb = Sandbox({{"ttl_s", 1}});
  const pid_t pid = Live(sb)["pid"].get<pid_t>();
  ASSERT_GT(pid, 0);
  Sh(sb, "sleep 424242 >/dev/null 2>&1 & echo ok");
  ASSERT_TRUE(AnyProcessWith("424242"));  // control
  EXPECT_TRUE(Gone(pid, std::chrono::seconds(10)));
  auto deadline = Clock::now() + std::chrono::seconds(5);
  while (AnyProcessWith("424242") && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(AnyProcessWith("424242"));
  EXPECT_FALSE(c_->Call("sandbox.get", {{"sandbox_id", sb}}).ok());
}

TEST_F(ServeLiveTest, AKilledDaemonLeavesNothingAndTheRestartedOneSaysSo) {
  std::string sb = Sandbox();
  const pid_t pid = Live(sb)["pid"].get<pid_t>();
  Sh(sb, "sleep 434343 >/dev/null 2>&1 & echo ok");
  ASSERT_TRUE(AnyProcessWith("434343"));  // control
  c_.reset();
  daemon_->Kill(SIGKILL);
  EXPECT_TRUE(Gone(pid, std::chrono::seconds(10)));
  auto deadline = Clock::now() + std::chrono::seconds(5);
  while (AnyProcessWith("434343") && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(AnyProcessWith("434343"));
  ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  c_ = std::make_unique<client::Client>(daemon_->socket());
  ASSERT_TRUE(c_->Connect());
  Json live = Live(sb);
  EXPECT_EQ(live["running"], false) << live.dump();
  EXPECT_EQ(live["ended"], "the daemon that ran it stopped") << live.dump();
  EXPECT_EQ(Sh(sb, "echo back")["stdout"], "back\n");
}

}  // namespace
}  // namespace ward::test
