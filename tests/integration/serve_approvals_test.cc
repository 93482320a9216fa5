// approvals.* of `ward serve` end to end: a sandbox created with "ask", real `ward run --ask`
// execs (the daemon picks each one's session with --session-id), the probe reading a host file
// outside the sandbox's view, and the test answering through the daemon: approve (the read
// succeeds), deny (EACCES), grants, revoke (asked again), and the errors for unknown execs,
// unknown requests and sandboxes without approvals. The Python client's approve.py example
// runs too.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "../../clients/cpp/ward_client.h"
#include "audit/session_log.h"
#include "harness.h"
#include "serve_daemon.h"

namespace ward::test {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kContent = "approved-content-31";

class ServeApprovalsTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (std::string why = WhyAskIsRefusedHere(); !why.empty()) GTEST_SKIP() << why;
    // The asked-for file lives under /run/lock: outside the sandbox's view and outside ward's
    // own trees (which are never asked about), like tests/integration/approvals_test.cc.
    char tmpl[] = "/run/lock/ward-sa.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      GTEST_SKIP() << "cannot create a directory under /run/lock (" << strerror(errno)
                   << "): no host path outside the sandbox's view to ask about";
    }
    outside_ = tmpl;
    data_ = outside_ + "/data.txt";
    WriteFile(data_, kContent, 0600);
    // The runs' approval sockets go to a runtime directory of the test's own.
    std::string runtime = root_->path() + "/run";
    MakeDirs(runtime, 0700);
    auto env = BaseEnv(home_);
    env["XDG_STATE_HOME"] = root_->path() + "/state";
    env["XDG_RUNTIME_DIR"] = runtime;
    daemon_.emplace(root_->path(), env, ws_);
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
    c_ = std::make_unique<client::Client>(daemon_->socket());
    ASSERT_TRUE(c_->Connect()) << c_->last_error().message;
  }
  void TearDown() override {
    c_.reset();
    if (daemon_) daemon_->Stop();
    if (!outside_.empty()) RunProgram({"/bin/rm", "-rf", outside_});
  }

  std::string Sandbox(bool ask) {
    Json spec = {{"read", Json::array({StageDir()})}};
    if (ask) spec["ask"] = true;
    auto r = c_->CreateSandbox(ws_, spec);
    EXPECT_TRUE(r.ok()) << (r.error ? r.error->message : "");
    if (!r.ok()) return "";
    EXPECT_EQ(r.result["approvals"], ask) << r.result.dump();
    return r.result["sandbox_id"];
  }
  // exec.run that returns at once (the command waits for its answers).
  Json Start(const std::string& sb, const std::vector<std::string>& argv, Json extra = {}) {
    if (!extra.is_object()) extra = Json::object();
    extra["yield_ms"] = 0;
    // Each exec in a sandbox of its own, with its own approval session: what is relayed per
    // exec. (A live sandbox's execs share the sandbox's session.)
    extra["fresh"] = true;
    auto r = c_->Run(sb, argv, extra);
    EXPECT_TRUE(r.ok()) << (r.error ? r.error->message : "");
    return r.result;
  }
  // The first pending request matching `filter` whose id is not `skip`; null after 30 s.
  Json WaitForRequest(const Json& filter, uint64_t skip = 0) {
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < deadline) {
      auto l = c_->ListApprovals(filter);
      if (!l.ok()) {
        ADD_FAILURE() << "approvals.list: " << l.error->kind << ": " << l.error->message;
        return nullptr;
      }
      for (const Json& q : l.result["requests"]) {
        if (q["id"].get<uint64_t>() != skip) return q;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "no approval request for " << filter.dump() << "\n" << daemon_->log();
    return nullptr;
  }
  // Waits until the exec's stdout holds `n` lines.
  std::string WaitForLines(const std::string& exec_id, size_t n) {
    auto deadline = Clock::now() + std::chrono::seconds(30);
    std::string out;
    while (Clock::now() < deadline) {
      auto rd = c_->Call("exec.read", {{"exec_id", exec_id}});
      if (rd.ok()) out = rd.result["data"];
      if (static_cast<size_t>(std::count(out.begin(), out.end(), '\n')) >= n) return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "stdout of " << exec_id << " never had " << n << " lines: " << out;
    return out;
  }
  static std::string Kind(const client::Reply& r) { return r.error ? r.error->kind : "ok"; }

  std::string outside_, data_;
  std::optional<ServeDaemon> daemon_;
  std::unique_ptr<client::Client> c_;
};

TEST_F(ServeApprovalsTest, ApprovedReadSucceedsDeniedReadIsEacces) {
  std::string sb = Sandbox(true);
  ASSERT_FALSE(sb.empty());
  Json e1 = Start(sb, {ProbeBin(), "read", data_});
  ASSERT_EQ(e1["status"], "running") << e1.dump();
  std::string ex1 = e1["exec_id"];
  ASSERT_TRUE(e1["approval_session"].is_string()) << e1.dump();

  Json q = WaitForRequest({{"sandbox_id", sb}});
  ASSERT_TRUE(q.is_object());
  EXPECT_EQ(q["exec_id"], ex1);
  EXPECT_EQ(q["sandbox_id"], sb);
  EXPECT_EQ(q["kind"], "file");
  EXPECT_EQ(q["subject"], data_);
  EXPECT_EQ(q["access"], "read");
  // A wait that runs out while the command waits for an answer says why.
  auto w = c_->Call("exec.wait", {{"exec_id", ex1}, {"timeout_ms", 200}});
  EXPECT_EQ(Kind(w), "approval_required") << (w.error ? w.error->message : w.result.dump());
  if (w.error) {
    EXPECT_GE(w.error->data.value("approvals_pending", 0), 1);
  }

  auto a = c_->Approve(ex1, q["id"], {{"scope", "once"}, {"reason", "test"}});
  ASSERT_TRUE(a.ok()) << a.error->message;
  EXPECT_EQ(a.result["decision"], "allow");
  EXPECT_TRUE(a.result["grant"].is_object()) << a.result.dump();
  w = c_->Call("exec.wait", {{"exec_id", ex1}, {"timeout_ms", 30000}});
  ASSERT_TRUE(w.ok()) << w.error->message;
  EXPECT_EQ(w.result["status"], "exited") << w.result.dump();
  EXPECT_EQ(w.result["exit_code"], 0) << w.result.dump();
  EXPECT_NE(w.result["stdout"].get<std::string>().find(std::string("ok ") + kContent),
            std::string::npos)
      << w.result.dump();
  // The exec's own audit session is the session the daemon chose.
  auto qa = c_->Call("audit.query", {{"exec_id", ex1}});
  ASSERT_TRUE(qa.ok());
  ASSERT_EQ(qa.result["sessions"].size(), 1u) << qa.result.dump();
  EXPECT_EQ(qa.result["sessions"][0]["id"], e1["approval_session"]);

  // A second exec, denied.
  Json e2 = Start(sb, {ProbeBin(), "read", data_});
  std::string ex2 = e2["exec_id"];
  EXPECT_NE(e2["approval_session"], e1["approval_session"]);
  q = WaitForRequest({{"exec_id", ex2}});
  ASSERT_TRUE(q.is_object());
  EXPECT_EQ(q["exec_id"], ex2);
  auto d = c_->Deny(ex2, q["id"], "not this one");
  ASSERT_TRUE(d.ok()) << d.error->message;
  EXPECT_EQ(d.result["decision"], "deny");
  w = c_->Call("exec.wait", {{"exec_id", ex2}, {"timeout_ms", 30000}});
  ASSERT_TRUE(w.ok()) << w.error->message;
  EXPECT_EQ(w.result["exit_code"], 1) << w.result.dump();
  EXPECT_NE(w.result["stdout"].get<std::string>().find("err EACCES"), std::string::npos)
      << w.result.dump();
  EXPECT_EQ(w.result["stdout"].get<std::string>().find(kContent), std::string::npos);
  // Both answers are in the sandbox's own audit session.
  auto qs =
      c_->Call("audit.query", {{"sandbox_id", sb}, {"type", "approvals."}, {"records", true}});
  ASSERT_TRUE(qs.ok());
  std::string all = qs.result.dump();
  EXPECT_NE(all.find("approvals.approve"), std::string::npos) << all;
  EXPECT_NE(all.find("approvals.deny"), std::string::npos) << all;
}

// One exec that reads three times, paced through its stdin: a session grant covers the second
// read without asking; after approvals.revoke the third read is asked again, and denied.
TEST_F(ServeApprovalsTest, GrantsAndRevoke) {
  std::string sb = Sandbox(true);
  ASSERT_FALSE(sb.empty());
  std::string p = ProbeBin();
  std::string script = "'" + p + "' read '" + data_ + "'; read x; '" + p + "' read '" + data_ +
                       "'; read x; '" + p + "' read '" + data_ + "'";
  Json e = Start(sb, {"/bin/sh", "-c", script}, {{"stdin_open", true}});
  std::string ex = e["exec_id"];

  Json q1 = WaitForRequest({{"exec_id", ex}});
  ASSERT_TRUE(q1.is_object());
  auto a = c_->Approve(ex, q1["id"], {{"scope", "session"}});
  ASSERT_TRUE(a.ok()) << a.error->message;
  uint64_t grant = a.result["grant"]["id"];
  WaitForLines(ex, 1);

  auto g = c_->ListGrants({{"sandbox_id", sb}});
  ASSERT_TRUE(g.ok()) << g.error->message;
  ASSERT_EQ(g.result["grants"].size(), 1u) << g.result.dump();
  EXPECT_EQ(g.result["grants"][0]["id"], grant);
  EXPECT_EQ(g.result["grants"][0]["exec_id"], ex);
  EXPECT_EQ(g.result["grants"][0]["subject"], data_);
  EXPECT_EQ(g.result["grants"][0]["scope"], "session");
  EXPECT_EQ(g.result["grants"][0]["state"], "live");

  // The second read: covered by the grant, not asked.
  ASSERT_TRUE(c_->Call("exec.write_stdin", {{"exec_id", ex}, {"data", "\n"}}).ok());
  std::string out = WaitForLines(ex, 2);
  auto l = c_->ListApprovals({{"exec_id", ex}});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l.result["requests"].size(), 0u) << l.result.dump();

  auto rv = c_->RevokeGrant(ex, grant);
  ASSERT_TRUE(rv.ok()) << rv.error->message;
  EXPECT_EQ(rv.result["revoked"], true);
  g = c_->ListGrants({{"exec_id", ex}});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g.result["grants"][0]["state"], "revoked") << g.result.dump();
  EXPECT_EQ(Kind(c_->RevokeGrant(ex, grant)), "invalid_request");  // not live any more

  // The third read is asked again.
  ASSERT_TRUE(c_->Call("exec.write_stdin", {{"exec_id", ex}, {"data", "\n"}, {"eof", true}}).ok());
  Json q2 = WaitForRequest({{"exec_id", ex}}, q1["id"]);
  ASSERT_TRUE(q2.is_object());
  ASSERT_TRUE(c_->Deny(ex, q2["id"]).ok());
  auto w = c_->Call("exec.wait", {{"exec_id", ex}, {"timeout_ms", 30000}});
  ASSERT_TRUE(w.ok()) << w.error->message;
  std::string expected = std::string("ok ") + kContent + "\nok " + kContent + "\nerr EACCES";
  EXPECT_EQ(w.result["stdout"].get<std::string>().substr(0, expected.size()), expected)
      << w.result.dump();
  EXPECT_EQ(w.result["exit_code"], 1);
  // The run is over: nothing left to answer or revoke.
  EXPECT_EQ(Kind(c_->Approve(ex, q2["id"])), "not_found");
  EXPECT_EQ(Kind(c_->RevokeGrant(ex, grant)), "not_found");
}

TEST_F(ServeApprovalsTest, UnknownExecsRequestsAndSandboxesWithoutAsk) {
  std::string plain = Sandbox(false);
  std::string ask = Sandbox(true);
  ASSERT_FALSE(plain.empty());
  ASSERT_FALSE(ask.empty());
  EXPECT_EQ(Kind(c_->Approve("ex-0000000000000000", 1)), "not_found");
  EXPECT_EQ(Kind(c_->ListApprovals({{"sandbox_id", "sb-0000000000000000"}})), "not_found");
  // Without "ask" there is no approval socket to talk to.
  Json pe = Start(plain, {"/bin/sleep", "30"});
  std::string pex = pe["exec_id"];
  EXPECT_TRUE(pe["approval_session"].is_null()) << pe.dump();
  EXPECT_EQ(Kind(c_->Approve(pex, 1)), "invalid_request");
  EXPECT_EQ(Kind(c_->Deny(pex, 1)), "invalid_request");
  EXPECT_EQ(Kind(c_->ListApprovals({{"sandbox_id", plain}})), "invalid_request");
  EXPECT_EQ(Kind(c_->ListGrants({{"exec_id", pex}})), "invalid_request");
  // With "ask": an id the run never issued is not_found once its socket is up.
  Json ae = Start(ask, {"/bin/sleep", "30"});
  std::string aex = ae["exec_id"];
  client::Reply r;
  auto deadline = Clock::now() + std::chrono::seconds(30);
  do {
    r = c_->Approve(aex, 999);
    if (r.error && r.error->message.find("pending") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (Clock::now() < deadline);
  EXPECT_EQ(Kind(r), "not_found");
  ASSERT_TRUE(r.error.has_value());
  EXPECT_NE(r.error->message.find("no pending request 999"), std::string::npos) << r.error->message;
  EXPECT_EQ(Kind(c_->RevokeGrant(aex, 5)), "not_found");
  EXPECT_EQ(Kind(c_->Call("approvals.approve", {{"exec_id", aex}, {"id", "one"}})),
            "invalid_request");
  EXPECT_EQ(Kind(c_->Approve(aex, 1, {{"scope", "forever"}})), "invalid_request");
  auto g = c_->ListGrants({{"sandbox_id", ask}});
  ASSERT_TRUE(g.ok()) << g.error->message;
  EXPECT_EQ(g.result["grants"].size(), 0u);
  EXPECT_EQ(g.result["errors"].size(), 0u) << g.result.dump();
  // The daemon answered every one of these and is still serving.
  EXPECT_TRUE(c_->Call("ward.version").ok());
  for (const std::string& id : {pex, aex}) {
    c_->Call("exec.signal", {{"exec_id", id}, {"signal", "KILL"}});
    c_->Call("exec.wait", {{"exec_id", id}, {"timeout_ms", 15000}});
  }
  EXPECT_EQ(Kind(c_->Approve(aex, 999)), "not_found");  // ended
}

TEST_F(ServeApprovalsTest, PythonApproveExample) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  std::string example = std::string(WARD_SOURCE_DIR) + "/clients/python/examples/approve.py";
  RunOptions o = Defaults();
  RunResult yes = RunProgram({"/usr/bin/python3", example, "--socket", daemon_->socket(), "--yes",
                              "--read", StageDir(), ws_, ProbeBin(), "read", data_},
                             o);
  EXPECT_EQ(yes.status, 0) << yes.out << yes.err;
  EXPECT_NE(yes.out.find(std::string("ok ") + kContent), std::string::npos) << yes.out << yes.err;
  EXPECT_NE(yes.err.find("[ward] request"), std::string::npos) << yes.err;
  RunResult no = RunProgram({"/usr/bin/python3", example, "--socket", daemon_->socket(), "--no",
                             "--read", StageDir(), ws_, ProbeBin(), "read", data_},
                            o);
  EXPECT_EQ(no.status, 1) << no.out << no.err;
  EXPECT_NE(no.out.find("err EACCES"), std::string::npos) << no.out << no.err;
}

// The option the daemon uses: `ward run --session-id` takes only NewSessionId's format, names
// the audit session with it, and leaves runs without it as they were.
TEST_F(ServeApprovalsTest, RunTakesOnlyWellFormedSessionIds) {
  RunOptions o = Defaults();
  o.env["XDG_STATE_HOME"] = root_->path() + "/run-state";
  for (const std::string bad : {"../../x", "20261130T162233Z-3F9A1C2E", "my-session"}) {
    RunResult r = RunWard({"run", "--session-id=" + bad, "--", "/bin/true"}, o);
    EXPECT_EQ(r.status, 125) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--session-id"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(PathExists(root_->path() + "/run-state/x"));  // "../../x" below sessions/
  std::string id = audit::NewSessionId();
  RunResult r = RunWard({"run", "--session-id", id, "--", "/bin/true"}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(PathExists(root_->path() + "/run-state/ward/sessions/" + id + "/events.jsonl"));
  // The same session twice is refused (its audit session exists), not merged.
  r = RunWard({"run", "--session-id", id, "--", "/bin/true"}, o);
  EXPECT_EQ(r.status, 125) << r.err;
}

}  // namespace
}  // namespace ward::test
