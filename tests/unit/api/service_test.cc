// The daemon's methods without a socket: sandboxes, execs (through a fake `ward run`), files,
// errors with kinds, expiry, and what a restarted daemon finds.
#include "api/service.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "api_test_util.h"
#include "audit/session_log.h"
#include "common/unix_socket.h"
#include "supervisor/approvals/approval_broker.h"
#include "supervisor/approvals/socket.h"
#include "supervisor/runtime_dir.h"

namespace ward::api {
namespace {

using testing::RunUntil;
using testing::TempDir;

class FakePeer : public Peer {
 public:
  void Send(const nlohmann::json& m) override { messages.push_back(m); }
  bool alive() const override { return true; }
  std::optional<nlohmann::json> Response(int id) const {
    for (const auto& m : messages) {
      if (m.contains("id") && m["id"] == id) return m;
    }
    return std::nullopt;
  }
  std::vector<nlohmann::json> Notifications(const std::string& method) const {
    std::vector<nlohmann::json> out;
    for (const auto& m : messages) {
      if (m.contains("method") && m["method"] == method) out.push_back(m);
    }
    return out;
  }
  std::vector<nlohmann::json> messages;
};

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(); }
  void Start() {
    ServiceConfig c;
    c.version = "test";
    c.state_dir = state_.path() + "/serve";
    c.audit_dir = audit_.path();
    c.exec.ward_binary = testing::WriteFakeRunner(bin_.path());
    c.live = false;  // the fake runner runs commands, not live sandboxes
    c.exec.kill_grace = std::chrono::milliseconds(200);
    c.max_sandboxes = 3;
    c.private_paths = {sock_.path()};
    c.load_policy = [](const policy::RunFlags& f, const std::string& ws) {
      return testing::LoadTestPolicy(ws, f);
    };
    svc_ = std::make_unique<Service>(io_, c);
    Status st = svc_->Init();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  // Sends a request and runs the loop until its response arrives.
  nlohmann::json Call(const std::string& method, nlohmann::json params = nlohmann::json::object(),
                      int wait_ms = 10000) {
    int id = ++next_id_;
    Message m;
    m.kind = Message::Kind::kRequest;
    m.id = id;
    m.method = method;
    m.params = std::move(params);
    svc_->Handle(m, peer_);
    RunUntil(
        io_, [&] { return peer_->Response(id).has_value(); }, std::chrono::milliseconds(wait_ms));
    auto r = peer_->Response(id);
    EXPECT_TRUE(r.has_value()) << method << " got no response";
    return r.value_or(nlohmann::json::object());
  }
  std::string Kind(const nlohmann::json& r) {
    if (!r.contains("error")) return "";
    return r["error"]["data"]["kind"];
  }
  std::string Create(nlohmann::json extra = nlohmann::json::object()) {
    extra["workspace"] = ws_.path();
    auto r = Call("sandbox.create", extra);
    EXPECT_TRUE(r.contains("result")) << r.dump();
    return r.contains("result") ? r["result"]["sandbox_id"].get<std::string>() : "";
  }

  asio::io_context io_;
  TempDir bin_, state_, audit_, ws_, sock_;
  std::unique_ptr<Service> svc_;
  std::shared_ptr<FakePeer> peer_ = std::make_shared<FakePeer>();
  int next_id_ = 0;
};

TEST_F(ServiceTest, VersionAndUnknownMethods) {
  auto r = Call("ward.version");
  EXPECT_EQ(r["result"]["protocol"], kServeProtocolVersion);
  EXPECT_EQ(r["result"]["version"], "test");
  r = Call("no.such.method");
  EXPECT_EQ(r["error"]["code"], kMethodNotFoundCode);
  EXPECT_EQ(Kind(r), "unsupported");
  r = Call("approvals.nonsense");
  EXPECT_EQ(Kind(r), "unsupported");
  // Without any sandbox with approvals there is nothing to list.
  r = Call("approvals.list");
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(r["result"]["requests"], nlohmann::json::array());
  auto v = Call("ward.version");
  for (const char* m : {"approvals.list", "approvals.approve", "approvals.deny", "approvals.grants",
                        "approvals.revoke"}) {
    EXPECT_NE(std::find(v["result"]["methods"].begin(), v["result"]["methods"].end(), m),
              v["result"]["methods"].end())
        << m;
  }
}

TEST_F(ServiceTest, SandboxLifecycle) {
  std::string id = Create({{"labels", {{"task", "demo"}}}});
  ASSERT_TRUE(ValidId(id, "sb"));
  auto g = Call("sandbox.get", {{"sandbox_id", id}});
  EXPECT_EQ(g["result"]["workspace"], ws_.path());
  EXPECT_EQ(g["result"]["labels"]["task"], "demo");
  auto l = Call("sandbox.list");
  EXPECT_EQ(l["result"]["sandboxes"].size(), 1u);
  auto d = Call("sandbox.destroy", {{"sandbox_id", id}});
  EXPECT_EQ(d["result"]["destroyed"], true);
  EXPECT_EQ(Kind(Call("sandbox.get", {{"sandbox_id", id}})), "not_found");
  EXPECT_EQ(Kind(Call("sandbox.destroy", {{"sandbox_id", id}})), "not_found");
}

TEST_F(ServiceTest, BadSandboxRequests) {
  EXPECT_EQ(Kind(Call("sandbox.create", nlohmann::json::object())), "invalid_request");
  EXPECT_EQ(Kind(Call("sandbox.create", {{"workspace", "/nonexistent/ws"}})), "not_found");
  EXPECT_EQ(Kind(Call("sandbox.create", {{"workspace", ws_.path()}, {"profile", "no-such"}})),
            "invalid_request");
  EXPECT_EQ(Kind(Call("sandbox.create", {{"workspace", ws_.path()},
                                         {"write", {"rel/../x"}},
                                         {"limits", {{"memory", "lots"}}}})),
            "invalid_request");
  EXPECT_EQ(Kind(Call("sandbox.get", {{"sandbox_id", 5}})), "invalid_request");
  EXPECT_EQ(Kind(Call("sandbox.list", {{"x", 1}})), "invalid_request");
  // A workspace that would expose the audit trail, the daemon's records or its socket is
  // refused.
  auto r = Call("sandbox.create", {{"workspace", audit_.path()}});
  EXPECT_EQ(Kind(r), "policy_denied") << r.dump();
  r = Call("sandbox.create", {{"workspace", state_.path()}});
  EXPECT_EQ(Kind(r), "policy_denied") << r.dump();
  r = Call("sandbox.create", {{"workspace", ws_.path()}, {"read", {state_.path() + "/serve"}}});
  EXPECT_EQ(Kind(r), "policy_denied") << r.dump();
  r = Call("sandbox.create", {{"workspace", sock_.path()}});
  EXPECT_EQ(Kind(r), "policy_denied") << r.dump();
  Create();
  Create();
  Create();
  EXPECT_EQ(Kind(Call("sandbox.create", {{"workspace", ws_.path()}})), "resource_exhausted");
}

TEST_F(ServiceTest, ExecRunReturnsOutputAndNotifies) {
  std::string sb = Create();
  auto r = Call("exec.run", {{"sandbox_id", sb}, {"shell", "echo hi; echo oops >&2; exit 4"}});
  ASSERT_TRUE(r.contains("result")) << r.dump();
  auto& res = r["result"];
  EXPECT_EQ(res["status"], "exited");
  EXPECT_EQ(res["exit_code"], 4);
  EXPECT_EQ(res["stdout"], "hi\n");
  EXPECT_EQ(res["stderr"], "oops\n");
  auto notes = peer_->Notifications("exec.output");
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes[0]["params"]["exec_id"], res["exec_id"]);
  auto list = Call("exec.list", {{"sandbox_id", sb}});
  EXPECT_EQ(list["result"]["execs"].size(), 1u);
  // Replay after the fact.
  auto rd = Call("exec.read", {{"exec_id", res["exec_id"]}, {"stream", "stdout"}, {"offset", 1}});
  EXPECT_EQ(rd["result"]["data"], "i\n");
  EXPECT_EQ(rd["result"]["complete"], true);
  rd = Call("exec.read", {{"exec_id", res["exec_id"]}, {"encoding", "base64"}});
  EXPECT_EQ(rd["result"]["data"], "aGkK");
}

TEST_F(ServiceTest, YieldThenWaitAndSignal) {
  std::string sb = Create();
  auto r = Call("exec.run", {{"sandbox_id", sb},
                             {"argv", {"/bin/sh", "-c", "echo started; sleep 30"}},
                             {"yield_ms", 300}});
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(r["result"]["status"], "running");
  std::string ex = r["result"]["exec_id"];
  auto w = Call("exec.wait", {{"exec_id", ex}, {"timeout_ms", 100}});
  EXPECT_EQ(Kind(w), "timeout");
  auto s = Call("exec.signal", {{"exec_id", ex}, {"signal", "KILL"}});
  ASSERT_TRUE(s.contains("result")) << s.dump();
  w = Call("exec.wait", {{"exec_id", ex}});
  EXPECT_EQ(w["result"]["status"], "exited");
  EXPECT_EQ(w["result"]["signal"], 9);
  EXPECT_EQ(w["result"]["stdout"], "started\n");
  // The yielded caller was told of the end too.
  EXPECT_FALSE(peer_->Notifications("exec.exit").empty());
  EXPECT_EQ(Kind(Call("exec.signal", {{"exec_id", ex}, {"signal", "STOP"}})), "invalid_request");
}

TEST_F(ServiceTest, TimeoutStdinAndEnv) {
  std::string sb = Create();
  auto r =
      Call("exec.run", {{"sandbox_id", sb}, {"argv", {"/bin/sleep", "30"}}, {"timeout_ms", 200}});
  EXPECT_EQ(r["result"]["status"], "timed_out");
  r = Call("exec.run", {{"sandbox_id", sb},
                        {"argv", {"/bin/cat"}},
                        {"stdin", "aGVsbG8="},
                        {"stdin_encoding", "base64"}});
  EXPECT_EQ(r["result"]["stdout"], "hello");
  r = Call("exec.run",
           {{"sandbox_id", sb}, {"argv", {"/bin/cat"}}, {"stdin_open", true}, {"yield_ms", 100}});
  std::string ex = r["result"]["exec_id"];
  EXPECT_TRUE(Call("exec.write_stdin", {{"exec_id", ex}, {"data", "abc"}, {"eof", true}})
                  .contains("result"));
  auto w = Call("exec.wait", {{"exec_id", ex}});
  EXPECT_EQ(w["result"]["stdout"], "abc");
  EXPECT_EQ(
      Kind(Call("exec.run", {{"sandbox_id", sb}, {"argv", {"true"}}, {"env", {{"1X", "y"}}}})),
      "invalid_request");
}

TEST_F(ServiceTest, ExecRequestsAreValidated) {
  std::string sb = Create();
  struct Case {
    nlohmann::json params;
    std::string kind;
  } cases[] = {
      {{{"sandbox_id", sb}}, "invalid_request"},                                     // no command
      {{{"sandbox_id", sb}, {"argv", {"a"}}, {"shell", "b"}}, "invalid_request"},    // both
      {{{"sandbox_id", sb}, {"argv", nlohmann::json::array()}}, "invalid_request"},  // empty
      {{{"sandbox_id", sb}, {"argv", {"true"}}, {"cwd", "../.."}}, "policy_denied"},
      {{{"sandbox_id", sb}, {"argv", {"true"}}, {"timeout_ms", -5}}, "invalid_request"},
      {{{"sandbox_id", sb}, {"argv", {"true"}}, {"policy", {{"write", {"/etc"}}}}},
       "policy_denied"},
      {{{"sandbox_id", sb}, {"argv", {"true"}}, {"policy", {{"widen", true}}}}, "invalid_request"},
      {{{"sandbox_id", sb}, {"argv", {"true"}}, {"stdin", "!!"}, {"stdin_encoding", "base64"}},
       "invalid_request"},
      {{{"sandbox_id", "sb-0000000000000000"}, {"argv", {"true"}}}, "not_found"},
      {{{"sandbox_id", sb}, {"argv", {"true"}}, {"bogus", 1}}, "invalid_request"},
  };
  for (const auto& c : cases)
    EXPECT_EQ(Kind(Call("exec.run", c.params)), c.kind) << c.params.dump();
  EXPECT_EQ(Kind(Call("exec.read", {{"exec_id", "ex-0000000000000000"}})), "not_found");
  EXPECT_EQ(Kind(Call("exec.wait", {{"exec_id", "ex-../../x"}})), "not_found");
}

TEST_F(ServiceTest, DeniedRunIsDenied) {
  std::string sb = Create();
  auto r = Call("exec.run", {{"sandbox_id", sb}, {"argv", {"__refuse__"}}});
  EXPECT_EQ(r["result"]["status"], "denied");
  EXPECT_EQ(r["result"]["exit_code"], 125);
}

// An exec whose `ward run` stopped it because its audit trail could not be written is
// reported as such (fail closed), with the reason.
TEST_F(ServiceTest, AnExecStoppedForItsAuditTrailIsDeniedWithTheReason) {
  std::string sb = Create();
  auto r = Call("exec.run", {{"sandbox_id", sb}, {"argv", {"__audit_fail__"}}});
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(r["result"]["status"], "denied");
  EXPECT_EQ(r["result"]["exit_code"], 125);
  EXPECT_EQ(r["result"]["reason"]["kind"], "audit_failed");
  EXPECT_EQ(r["result"]["reason"]["stage"], "audit");
  EXPECT_NE(r["result"]["reason"]["message"].get<std::string>().find("audit trail"),
            std::string::npos);
}

// The daemon's own session of a sandbox fails (its disk fills up for good, its reserve is used
// up): the sandbox runs and changes nothing more, and says why. The audit directory is a small
// tmpfs in a user + mount namespace of a child process.
TEST_F(ServiceTest, ASandboxWhoseAuditSessionFailsRunsNothingMore) {
  // The child starts its own daemon: one inherited through fork would wait on threads that are
  // not there.
  svc_.reset();
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  uid_t uid = getuid();
  gid_t gid = getgid();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto report = [&](const std::string& s, int code) {
      (void)!write(fds[1], s.data(), s.size());
      _exit(code);
    };
    auto write_proc = [](const char* path, const std::string& text) {
      int fd = open(path, O_WRONLY | O_CLOEXEC);
      bool ok = fd >= 0 && write(fd, text.data(), text.size()) == (ssize_t)text.size();
      if (fd >= 0) close(fd);
      return ok;
    };
    prctl(PR_SET_DUMPABLE, 1);
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) report("unshare", 77);
    write_proc("/proc/self/setgroups", "deny");
    if (!write_proc("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
        !write_proc("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1") ||
        mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("t", audit_.path().c_str(), "tmpfs", 0, "size=8m,mode=0700") != 0) {
      report("no tmpfs of our own", 77);
    }
    Start();
    std::string sb = Create();
    std::string failures;
    int fd = open((audit_.path() + "/filler").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    std::string chunk(65536, 'f');
    while (fd >= 0 && write(fd, chunk.data(), chunk.size()) > 0) {
    }
    if (fd >= 0) close(fd);
    // Denied writes of long paths: each is a large fs.deny record, until the reserve is gone.
    const std::string far = "../" + std::string(3000, 'a');
    nlohmann::json r;
    int done = 0;
    for (; done < 2000; ++done) {
      r = Call("fs.write", {{"sandbox_id", sb}, {"path", far}, {"data", "x"}});
      if (Kind(r) != "policy_denied") break;
    }
    if (Kind(r) != "interrupted") failures += "the log never failed: " + r.dump() + "; ";
    std::string msg = r.contains("error") ? r["error"]["message"].get<std::string>() : "";
    if (msg.find("audit session cannot be written") == std::string::npos ||
        msg.find(strerror(ENOSPC)) == std::string::npos) {
      failures += "message: " + msg + "; ";
    }
    auto e = Call("exec.run", {{"sandbox_id", sb}, {"argv", {"true"}}});
    if (Kind(e) != "interrupted") failures += "exec.run: " + e.dump() + "; ";
    auto f = Call("fs.read", {{"sandbox_id", sb}, {"path", "f"}});
    if (Kind(f) != "interrupted") failures += "fs.read: " + f.dump() + "; ";
    // Control: another sandbox's session starts on a disk with room again.
    unlink((audit_.path() + "/filler").c_str());
    std::string other = Create();
    auto ok = Call("exec.run", {{"sandbox_id", other}, {"argv", {"true"}}});
    if (!ok.contains("result") || ok["result"]["status"] != "exited") {
      failures += "control: " + ok.dump() + "; ";
    }
    report(failures + (done < 50 ? "failed after only " + std::to_string(done) + " denials" : ""),
           0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  Start();
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << out;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(out, "");
}

TEST_F(ServiceTest, FilesThroughTheDaemon) {
  std::string sb = Create();
  auto w = Call("fs.write", {{"sandbox_id", sb}, {"path", "dir/a.txt"}, {"data", "x"}});
  EXPECT_EQ(Kind(w), "not_found");  // no parent
  EXPECT_TRUE(Call("fs.mkdir", {{"sandbox_id", sb}, {"path", "dir"}}).contains("result"));
  w = Call("fs.write",
           {{"sandbox_id", sb}, {"path", "dir/a.txt"}, {"data", "AAEC"}, {"encoding", "base64"}});
  ASSERT_TRUE(w.contains("result")) << w.dump();
  EXPECT_EQ(w["result"]["size"], 3);
  auto r = Call("fs.read", {{"sandbox_id", sb}, {"path", "dir/a.txt"}, {"encoding", "base64"}});
  EXPECT_EQ(r["result"]["data"], "AAEC");
  auto l = Call("fs.list", {{"sandbox_id", sb}, {"depth", 2}});
  EXPECT_EQ(l["result"]["entries"].size(), 2u);
  EXPECT_TRUE(Call("fs.stat", {{"sandbox_id", sb}, {"path", "dir"}}).contains("result"));
  EXPECT_TRUE(
      Call("fs.rename", {{"sandbox_id", sb}, {"from", "dir"}, {"to", "d2"}}).contains("result"));
  EXPECT_TRUE(Call("fs.remove", {{"sandbox_id", sb}, {"path", "d2"}, {"recursive", true}})
                  .contains("result"));
  EXPECT_EQ(Kind(Call("fs.write", {{"sandbox_id", sb}, {"path", ".envrc"}, {"data", "x"}})),
            "policy_denied");
  EXPECT_EQ(Kind(Call("fs.read", {{"sandbox_id", sb}, {"path", "../../etc/passwd"}})),
            "policy_denied");
  EXPECT_EQ(Kind(Call("fs.chmod", {{"sandbox_id", sb}, {"path", "x"}})), "unsupported");
  EXPECT_EQ(Kind(Call("fs.read", {{"sandbox_id", sb}})), "invalid_request");
}

TEST_F(ServiceTest, AuditQueryFindsTheSandboxSession) {
  std::string sb = Create();
  Call("fs.write", {{"sandbox_id", sb}, {"path", ".envrc"}, {"data", "x"}});  // a denial
  Call("fs.write", {{"sandbox_id", sb}, {"path", "ok"}, {"data", "x"}});
  auto q = Call("audit.query", {{"sandbox_id", sb}, {"records", true}, {"type", "fs."}});
  ASSERT_TRUE(q.contains("result")) << q.dump();
  auto& sessions = q["result"]["sessions"];
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0]["labels"]["sandbox"], sb);
  EXPECT_EQ(sessions[0]["denials"], 1);
  ASSERT_EQ(sessions[0]["records"].size(), 2u);
  EXPECT_EQ(sessions[0]["records"][0]["type"], "fs.deny");
  EXPECT_EQ(Kind(Call("audit.query", {{"sandbox_id", "../x"}})), "invalid_request");
  auto none = Call("audit.query", {{"labels", {{"task", "nothing"}}}});
  EXPECT_TRUE(none["result"]["sessions"].empty());
}

TEST_F(ServiceTest, TtlExpiresASandboxAndInterruptsItsExecs) {
  std::string sb = Create({{"ttl_s", 1}});
  auto r = Call("exec.run", {{"sandbox_id", sb}, {"argv", {"/bin/sleep", "30"}}, {"yield_ms", 10}});
  std::string ex = r["result"]["exec_id"];
  RunUntil(
      io_, [] { return false; }, std::chrono::milliseconds(1100));
  svc_->Tick();
  EXPECT_EQ(Kind(Call("sandbox.get", {{"sandbox_id", sb}})), "not_found");
  RunUntil(io_, [&] { return !peer_->Notifications("exec.exit").empty(); });
  auto exits = peer_->Notifications("exec.exit");
  ASSERT_FALSE(exits.empty());
  EXPECT_EQ(exits.back()["params"]["status"], "interrupted");
}

TEST_F(ServiceTest, IdleExpiryWaitsForRunningExecs) {
  std::string sb = Create({{"idle_s", 1}});
  RunUntil(
      io_, [] { return false; }, std::chrono::milliseconds(1100));
  svc_->Tick();
  EXPECT_EQ(Kind(Call("sandbox.get", {{"sandbox_id", sb}})), "not_found");
}

TEST_F(ServiceTest, ARestartedDaemonKeepsSandboxesAndReplays) {
  std::string sb = Create();
  auto r = Call("exec.run", {{"sandbox_id", sb}, {"argv", {"/bin/echo", "before restart"}}});
  std::string done = r["result"]["exec_id"];
  r = Call("exec.run", {{"sandbox_id", sb}, {"argv", {"/bin/sleep", "30"}}, {"yield_ms", 10}});
  std::string running = r["result"]["exec_id"];
  svc_.reset();  // the daemon stops: running execs are killed and recorded as interrupted
  Start();
  EXPECT_TRUE(Call("sandbox.get", {{"sandbox_id", sb}}).contains("result"));
  auto w = Call("exec.wait", {{"exec_id", running}});
  EXPECT_EQ(w["result"]["status"], "interrupted");
  EXPECT_EQ(w["result"]["exit_code"], nullptr);
  auto rd = Call("exec.read", {{"exec_id", done}});
  EXPECT_EQ(rd["result"]["data"], "before restart\n");
}

TEST_F(ServiceTest, SandboxDestroyInterruptsRunningExecs) {
  std::string sb = Create();
  auto r = Call("exec.run", {{"sandbox_id", sb}, {"argv", {"/bin/sleep", "30"}}, {"yield_ms", 10}});
  auto d = Call("sandbox.destroy", {{"sandbox_id", sb}});
  ASSERT_EQ(d["result"]["interrupted"].size(), 1u);
  EXPECT_EQ(d["result"]["interrupted"][0], r["result"]["exec_id"]);
}

// approvals.*: a sandbox with `ask` gets a session per exec (passed as `ward run
// --session-id`); the test plays that run's supervisor with a real broker and approval socket
// for the session, and the daemon relays to it.
class ServiceApprovalsTest : public ServiceTest {
 protected:
  void SetUp() override {
    const char* old = getenv("XDG_RUNTIME_DIR");
    if (old) old_runtime_ = old;
    setenv("XDG_RUNTIME_DIR", runtime_.path().c_str(), 1);
    ServiceTest::SetUp();
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (broker_) broker_->Shutdown();
    if (old_runtime_) {
      setenv("XDG_RUNTIME_DIR", old_runtime_->c_str(), 1);
    } else {
      unsetenv("XDG_RUNTIME_DIR");
    }
  }
  // The run's side for `session`: a broker and its socket.
  void ServeSession(const std::string& session) {
    auto b = supervisor::ApprovalBroker::Create(io_, supervisor::BrokerOptions(), nullptr);
    ASSERT_TRUE(b.ok());
    broker_ = *b;
    ASSERT_TRUE(supervisor::PreparePrivateDir(supervisor::WardRuntimeDir()).ok());
    supervisor::ApprovalServerOptions so;
    so.path = supervisor::ApprovalSocketPath(supervisor::WardRuntimeDir(), session);
    so.session = session;
    auto s = supervisor::ApprovalServer::Start(io_, broker_, so);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
  }
  uint64_t Ask(const std::string& path, std::optional<supervisor::ApprovalDecision>* out) {
    supervisor::ApprovalRequest r;
    r.kind = supervisor::RequestKind::kFile;
    r.subject = path;
    r.pid = 7;
    uint64_t id = broker_->Ask(r, [out](const supervisor::ApprovalDecision& d) { *out = d; });
    RunUntil(io_, [&] {
      auto p = broker_->Pending();
      return std::any_of(p.begin(), p.end(), [&](const auto& q) { return q.id == id; });
    });
    return id;
  }

  TempDir runtime_;
  std::optional<std::string> old_runtime_;
  std::shared_ptr<supervisor::ApprovalBroker> broker_;
  std::unique_ptr<supervisor::ApprovalServer> server_;
};

TEST_F(ServiceApprovalsTest, RelaysListApproveDenyGrantsRevoke) {
  std::string sb = Create({{"ask", true}});
  std::string other = Create({{"ask", true}});
  EXPECT_EQ(Call("sandbox.get", {{"sandbox_id", sb}})["result"]["approvals"], true);
  auto r = Call("exec.run", {{"sandbox_id", sb}, {"argv", {"sleep", "30"}}, {"yield_ms", 0}});
  ASSERT_TRUE(r.contains("result")) << r.dump();
  std::string ex = r["result"]["exec_id"];
  ASSERT_TRUE(r["result"]["approval_session"].is_string()) << r.dump();
  std::string session = r["result"]["approval_session"];
  EXPECT_TRUE(audit::IsNewSessionIdFormat(session)) << session;
  // No socket yet (the run has not started asking): nothing pending, nothing listed.
  EXPECT_EQ(r["result"]["approvals_pending"], 0) << r.dump();
  EXPECT_EQ(Call("approvals.list", {{"sandbox_id", sb}})["result"]["requests"].size(), 0u);

  ServeSession(session);
  std::optional<supervisor::ApprovalDecision> d1, d2;
  uint64_t q1 = Ask("/data/in.csv", &d1);
  for (const nlohmann::json& filter :
       {nlohmann::json::object(), nlohmann::json{{"sandbox_id", sb}},
        nlohmann::json{{"exec_id", ex}}, nlohmann::json{{"exec_id", ex}, {"sandbox_id", sb}}}) {
    auto l = Call("approvals.list", filter);
    ASSERT_TRUE(l.contains("result")) << filter.dump() << " " << l.dump();
    ASSERT_EQ(l["result"]["requests"].size(), 1u) << l.dump();
    const auto& q = l["result"]["requests"][0];
    EXPECT_EQ(q["id"], q1);
    EXPECT_EQ(q["exec_id"], ex);
    EXPECT_EQ(q["sandbox_id"], sb);
    EXPECT_EQ(q["subject"], "/data/in.csv");
    EXPECT_EQ(l["result"]["errors"].size(), 0u);
  }
  EXPECT_EQ(Call("approvals.list", {{"sandbox_id", other}})["result"]["requests"].size(), 0u);
  EXPECT_EQ(Kind(Call("approvals.list", {{"sandbox_id", other}, {"exec_id", ex}})),
            "invalid_request");
  // A wait that runs out while the command waits for an answer says so.
  auto w = Call("exec.wait", {{"exec_id", ex}, {"timeout_ms", 50}});
  EXPECT_EQ(Kind(w), "approval_required") << w.dump();
  EXPECT_EQ(w["error"]["data"]["approvals_pending"], 1);
  EXPECT_EQ(w["error"]["data"]["exec_id"], ex);

  // Parameters are checked before anything reaches the run.
  EXPECT_EQ(Kind(Call("approvals.approve", {{"exec_id", ex}, {"id", q1}, {"scope", "forever"}})),
            "invalid_request");
  EXPECT_EQ(Kind(Call("approvals.approve",
                      {{"exec_id", ex}, {"id", q1}, {"prefix", true}, {"under", "/data"}})),
            "invalid_request");
  EXPECT_EQ(Kind(Call("approvals.approve", {{"exec_id", ex}})), "invalid_request");
  EXPECT_EQ(Kind(Call("approvals.approve", {{"exec_id", ex}, {"id", -1}})), "invalid_request");
  EXPECT_EQ(Kind(Call("approvals.deny", {{"exec_id", ex}, {"id", q1}, {"scope", "once"}})),
            "invalid_request");
  EXPECT_EQ(Kind(Call("approvals.approve", {{"exec_id", ex}, {"id", q1}, {"typo", 1}})),
            "invalid_request");
  EXPECT_FALSE(d1.has_value());

  auto a = Call("approvals.approve",
                {{"exec_id", ex}, {"id", q1}, {"scope", "session"}, {"reason", "ok"}});
  ASSERT_TRUE(a.contains("result")) << a.dump();
  EXPECT_EQ(a["result"]["decision"], "allow");
  EXPECT_EQ(a["result"]["exec_id"], ex);
  ASSERT_TRUE(a["result"]["grant"].is_object());
  uint64_t grant = a["result"]["grant"]["id"];
  ASSERT_TRUE(RunUntil(io_, [&] { return d1.has_value(); }));
  EXPECT_TRUE(d1->allow);
  // Answered: unknown to the run now.
  auto again = Call("approvals.deny", {{"exec_id", ex}, {"id", q1}});
  EXPECT_EQ(Kind(again), "not_found") << again.dump();

  uint64_t q2 = Ask("/data/out.csv", &d2);
  auto d = Call("approvals.deny", {{"exec_id", ex}, {"id", q2}, {"reason", "no"}});
  ASSERT_TRUE(d.contains("result")) << d.dump();
  EXPECT_EQ(d["result"]["decision"], "deny");
  ASSERT_TRUE(RunUntil(io_, [&] { return d2.has_value(); }));
  EXPECT_FALSE(d2->allow);

  auto g = Call("approvals.grants", {{"sandbox_id", sb}});
  ASSERT_TRUE(g.contains("result")) << g.dump();
  ASSERT_EQ(g["result"]["grants"].size(), 1u);
  EXPECT_EQ(g["result"]["grants"][0]["id"], grant);
  EXPECT_EQ(g["result"]["grants"][0]["exec_id"], ex);
  EXPECT_EQ(g["result"]["grants"][0]["state"], "live");
  auto rv = Call("approvals.revoke", {{"exec_id", ex}, {"grant", grant}});
  ASSERT_TRUE(rv.contains("result")) << rv.dump();
  EXPECT_EQ(rv["result"]["revoked"], true);
  EXPECT_EQ(Kind(Call("approvals.revoke", {{"exec_id", ex}, {"grant", grant}})), "invalid_request");
  EXPECT_EQ(Kind(Call("approvals.revoke", {{"exec_id", ex}, {"grant", 99}})), "not_found");
  EXPECT_EQ(Call("approvals.grants", {{"exec_id", ex}})["result"]["grants"][0]["state"], "revoked");

  // What the daemon relayed is in the sandbox's audit session.
  auto q = Call("audit.query", {{"sandbox_id", sb}, {"type", "approvals."}, {"records", true}});
  ASSERT_TRUE(q.contains("result")) << q.dump();
  std::string all = q.dump();
  EXPECT_NE(all.find("approvals.approve"), std::string::npos) << all;
  EXPECT_NE(all.find("approvals.deny"), std::string::npos) << all;
  EXPECT_NE(all.find("approvals.revoke"), std::string::npos) << all;

  // Once the exec has ended there is nothing to answer.
  Call("exec.signal", {{"exec_id", ex}, {"signal", "KILL"}});
  EXPECT_EQ(Call("exec.wait", {{"exec_id", ex}})["result"]["status"], "exited");
  EXPECT_EQ(Kind(Call("approvals.approve", {{"exec_id", ex}, {"id", 1}})), "not_found");
  auto l = Call("approvals.list", {{"exec_id", ex}});
  EXPECT_EQ(l["result"]["requests"].size(), 0u) << l.dump();
}

TEST_F(ServiceApprovalsTest, ErrorsForUnknownExecsAndSandboxesWithoutApprovals) {
  std::string plain = Create();
  EXPECT_EQ(Call("sandbox.get", {{"sandbox_id", plain}})["result"]["approvals"], false);
  auto r = Call("exec.run", {{"sandbox_id", plain}, {"argv", {"sleep", "30"}}, {"yield_ms", 0}});
  std::string ex = r["result"]["exec_id"];
  EXPECT_TRUE(r["result"]["approval_session"].is_null());
  EXPECT_FALSE(r["result"].contains("approvals_pending"));
  EXPECT_EQ(Kind(Call("exec.wait", {{"exec_id", ex}, {"timeout_ms", 50}})), "timeout");
  for (const char* m : {"approvals.approve", "approvals.deny"}) {
    EXPECT_EQ(Kind(Call(m, {{"exec_id", ex}, {"id", 1}})), "invalid_request") << m;
    EXPECT_EQ(Kind(Call(m, {{"exec_id", "ex-0000000000000000"}, {"id", 1}})), "not_found") << m;
  }
  EXPECT_EQ(Kind(Call("approvals.revoke", {{"exec_id", ex}, {"grant", 1}})), "invalid_request");
  EXPECT_EQ(Kind(Call("approvals.list", {{"exec_id", ex}})), "invalid_request");
  EXPECT_EQ(Kind(Call("approvals.grants", {{"sandbox_id", plain}})), "invalid_request");
  EXPECT_EQ(Kind(Call("approvals.list", {{"sandbox_id", "sb-0000000000000000"}})), "not_found");
  EXPECT_EQ(Kind(Call("approvals.list", {{"exec_id", 5}})), "invalid_request");
  EXPECT_EQ(Kind(Call("approvals.revoke", {{"grant", 1}})), "invalid_request");
  Call("exec.signal", {{"exec_id", ex}, {"signal", "KILL"}});
  Call("exec.wait", {{"exec_id", ex}});
}

// Every run's approval socket lives in ward's runtime directory: a sandbox that would see it is
// refused, with approvals or without (another run's socket is there either way).
TEST_F(ServiceApprovalsTest, ASandboxThatWouldSeeTheApprovalSocketsIsRefused) {
  TempDir other;
  nlohmann::json spec = {{"workspace", ws_.path()}, {"read", {other.path()}}};
  EXPECT_TRUE(Call("sandbox.create", spec).contains("result"));  // positive control
  spec["read"] = {runtime_.path()};
  for (bool ask : {false, true}) {
    spec["ask"] = ask;
    auto r = Call("sandbox.create", spec);
    EXPECT_EQ(Kind(r), "policy_denied") << r.dump();
    EXPECT_NE(r.dump().find("runtime directory"), std::string::npos) << r.dump();
    EXPECT_NE(r.dump().find(runtime_.path() + "/ward"), std::string::npos) << r.dump();
  }
}

TEST_F(ServiceApprovalsTest, AStuckRunCostsAnErrorNotAHungDaemon) {
  std::string sb = Create({{"ask", true}});
  auto r = Call("exec.run", {{"sandbox_id", sb}, {"argv", {"sleep", "30"}}, {"yield_ms", 0}});
  std::string ex = r["result"]["exec_id"];
  std::string session = r["result"]["approval_session"];
  // A socket that accepts connections but never answers: a supervisor that is stopped.
  std::string dir = supervisor::WardRuntimeDir();
  ASSERT_TRUE(supervisor::PreparePrivateDir(dir).ok());
  auto l = ListenPrivateUnix(supervisor::ApprovalSocketPath(dir, session), 8);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  auto t0 = std::chrono::steady_clock::now();
  auto a = Call("approvals.approve", {{"exec_id", ex}, {"id", 1}});
  EXPECT_EQ(Kind(a), "timeout") << a.dump();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // A listing reports the exec it could not reach instead of failing as a whole.
  auto list = Call("approvals.list");
  ASSERT_TRUE(list.contains("result")) << list.dump();
  ASSERT_EQ(list["result"]["errors"].size(), 1u) << list.dump();
  EXPECT_EQ(list["result"]["errors"][0]["exec_id"], ex);
  EXPECT_EQ(list["result"]["errors"][0]["kind"], "timeout");
  // exec.wait still answers, with the count unknown.
  auto w = Call("exec.wait", {{"exec_id", ex}, {"timeout_ms", 50}});
  EXPECT_EQ(Kind(w), "timeout") << w.dump();
  Call("exec.signal", {{"exec_id", ex}, {"signal", "KILL"}});
  Call("exec.wait", {{"exec_id", ex}});
}

}  // namespace
}  // namespace ward::api
