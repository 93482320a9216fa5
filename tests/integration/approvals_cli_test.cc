// The approver's CLI (`ward approvals list`, `ward approve`, `ward deny`, `ward grants
// list|revoke`) run as the real binary against an approval broker and socket server started in
// this process (the same code `ward run` serves), under a private XDG_RUNTIME_DIR.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/events.h"
#include "harness.h"
#include "supervisor/approvals/approval_broker.h"
#include "supervisor/approvals/socket.h"
#include "supervisor/runtime_dir.h"

namespace ward::test {
namespace {

using supervisor::ApprovalBroker;
using supervisor::ApprovalDecision;
using supervisor::ApprovalRequest;
using supervisor::ApprovalServer;
using supervisor::FileAccess;
using supervisor::RequestKind;

class ApprovalsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime_.emplace("ward-apcli");
    dir_ = runtime_->path() + "/ward";
    ASSERT_TRUE(supervisor::PreparePrivateDir(dir_).ok());
    supervisor::BrokerOptions options;
    options.policy.enabled = true;
    options.policy.timeout_ms = 120000;  // answers come from the CLI, never from the clock
    auto broker = ApprovalBroker::Create(io_, options, &events_);
    ASSERT_TRUE(broker.ok()) << broker.status().ToString();
    broker_ = *broker;
    guard_.emplace(io_.get_executor());
    loop_ = std::thread([this] { io_.run(); });
    StartServer("sess-one");
  }

  void TearDown() override {
    if (!loop_.joinable()) return;  // SetUp failed before the loop ran
    OnLoop([this] {
      for (auto& s : servers_) s->Stop();
      if (broker_) broker_->Shutdown();
    });
    OnLoop([this] { servers_.clear(); });
    guard_.reset();
    io_.stop();
    loop_.join();
  }

  void OnLoop(const std::function<void()>& f) {
    std::promise<void> done;
    asio::post(io_, [&] {
      f();
      done.set_value();
    });
    done.get_future().wait();
  }

  void StartServer(const std::string& session) {
    OnLoop([&] {
      supervisor::ApprovalServerOptions o;
      o.path = supervisor::ApprovalSocketPath(dir_, session);
      o.session = session;
      auto s = ApprovalServer::Start(io_, broker_, o);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      servers_.push_back(std::move(s).value());
    });
  }

  // Asks the broker (as the notifier or the proxy would); returns the request id.
  uint64_t Ask(RequestKind kind, const std::string& subject, uint16_t port = 0) {
    ApprovalRequest r;
    r.kind = kind;
    r.subject = subject;
    r.access = FileAccess::kRead;
    r.port = port;
    r.pid = 4242;
    r.exe = "/usr/bin/cat";
    uint64_t id = 0;
    OnLoop([&] {
      id = broker_->Ask(r, [this](const ApprovalDecision& d) {
        std::lock_guard<std::mutex> lock(mu_);
        decisions_.push_back(d);
      });
    });
    return id;
  }

  std::vector<ApprovalDecision> Decisions() {
    std::lock_guard<std::mutex> lock(mu_);
    return decisions_;
  }
  bool WaitDecisions(size_t n) {
    for (int i = 0; i < 500; ++i) {
      if (Decisions().size() >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  RunResult Ward(const std::vector<std::string>& args) {
    RunOptions o;
    o.env["XDG_RUNTIME_DIR"] = runtime_->path();
    o.timeout_s = 30;
    return RunWard(args, o);
  }

  static nlohmann::json Json(const RunResult& r) {
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }

  std::optional<TempDir> runtime_;
  std::string dir_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
  std::thread loop_;
  MemoryEventSink events_;
  std::shared_ptr<ApprovalBroker> broker_;
  std::vector<std::unique_ptr<ApprovalServer>> servers_;
  std::mutex mu_;
  std::vector<ApprovalDecision> decisions_;
};

TEST_F(ApprovalsCliTest, ListShowsPendingRequestsAsATableAndAsJson) {
  uint64_t file = Ask(RequestKind::kFile, "/data/report.csv");
  uint64_t host = Ask(RequestKind::kHost, "Example.ORG", 443);
  RunResult r = Ward({"approvals", "list"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("ID"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/data/report.csv"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("example.org"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("port 443"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4242"), std::string::npos) << r.out;

  r = Ward({"approvals", "list", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = Json(r);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["id"], file);
  EXPECT_EQ(j[0]["kind"], "file");
  EXPECT_EQ(j[0]["access"], "read");
  EXPECT_EQ(j[1]["id"], host);
  EXPECT_EQ(j[1]["subject"], "example.org");
  EXPECT_EQ(j[1]["port"], 443);
  EXPECT_TRUE(Decisions().empty()) << "listing answers nothing";
}

TEST_F(ApprovalsCliTest, ApproveGrantsAndRevokeStopsTheGrant) {
  uint64_t id = Ask(RequestKind::kFile, "/data/report.csv");
  RunResult r = Ward({"approve", std::to_string(id), "--scope", "session"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("approved request " + std::to_string(id)), std::string::npos) << r.out;
  ASSERT_TRUE(WaitDecisions(1));
  ApprovalDecision d = Decisions()[0];
  EXPECT_TRUE(d.allow);
  EXPECT_EQ(d.channel, "socket");
  ASSERT_TRUE(d.grant.has_value());
  uint64_t grant = d.grant->id;

  r = Ward({"grants", "list", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = Json(r);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["id"], grant);
  EXPECT_EQ(j[0]["state"], "live");
  EXPECT_EQ(j[0]["scope"], "session");
  EXPECT_EQ(j[0]["subject"], "/data/report.csv");
  EXPECT_EQ(j[0]["request"], id);
  r = Ward({"grants", "list"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("live"), std::string::npos) << r.out;

  // The grant covers the next ask (no question)...
  EXPECT_TRUE(broker_->Match(RequestKind::kFile, "/data/report.csv", FileAccess::kRead, 0));
  r = Ward({"grants", "revoke", std::to_string(grant)});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("revoked grant " + std::to_string(grant)), std::string::npos) << r.out;
  // ...and no longer after revocation.
  EXPECT_FALSE(broker_->Match(RequestKind::kFile, "/data/report.csv", FileAccess::kRead, 0));
  r = Ward({"grants", "list", "--json"});
  EXPECT_EQ(Json(r)[0]["state"], "revoked");

  r = Ward({"grants", "revoke", std::to_string(grant)});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("not live"), std::string::npos) << r.err;
  r = Ward({"grants", "revoke", "999"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no grant 999"), std::string::npos) << r.err;
}

TEST_F(ApprovalsCliTest, DenyAnswersNoAndSecondAnswersAreErrors) {
  uint64_t denied = Ask(RequestKind::kHost, "example.org", 443);
  RunResult r = Ward({"deny", std::to_string(denied), "--reason", "not today"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(WaitDecisions(1));
  EXPECT_FALSE(Decisions()[0].allow);

  r = Ward({"approve", std::to_string(denied)});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no pending request " + std::to_string(denied)), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("already answered"), std::string::npos) << r.err;

  uint64_t approved = Ask(RequestKind::kFile, "/data/a.txt");
  ASSERT_EQ(Ward({"approve", std::to_string(approved)}).status, 0);
  r = Ward({"deny", std::to_string(approved)});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("was already approved (grant"), std::string::npos) << r.err;
  ASSERT_TRUE(WaitDecisions(2));
  EXPECT_TRUE(Decisions()[1].allow) << "the late deny changed nothing";

  r = Ward({"deny", "12345"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no pending request 12345"), std::string::npos) << r.err;
}

TEST_F(ApprovalsCliTest, PrefixWidensToTheParentAndBadWideningIsRefused) {
  uint64_t id = Ask(RequestKind::kFile, "/data/sub/report.csv");
  RunResult r = Ward({"approve", std::to_string(id), "--under", "/elsewhere"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("does not contain"), std::string::npos) << r.err;
  EXPECT_TRUE(Decisions().empty()) << "a refused answer leaves the request pending";

  r = Ward({"approve", std::to_string(id), "--prefix", "--scope", "10m"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(WaitDecisions(1));
  ApprovalDecision d = Decisions()[0];
  ASSERT_TRUE(d.grant.has_value());
  EXPECT_EQ(d.grant->spec.match, supervisor::SubjectMatch::kPathPrefix);
  EXPECT_EQ(d.grant->spec.subject, "/data/sub");
  nlohmann::json grants = Json(Ward({"grants", "list", "--json"}));
  EXPECT_EQ(grants[0]["scope"], "10m");
  EXPECT_FALSE(grants[0]["expires"].is_null());
}

TEST_F(ApprovalsCliTest, UsageErrorsNeverReachTheSession) {
  uint64_t id = Ask(RequestKind::kFile, "/data/report.csv");
  RunResult r = Ward({"approve", std::to_string(id), "--scope", "forever"});
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("--scope"), std::string::npos) << r.err;
  r = Ward({"approve", std::to_string(id), "--prefix", "--under", "/data"});
  EXPECT_EQ(r.status, 125);
  r = Ward({"approve", "not-a-number"});
  EXPECT_EQ(r.status, 125);
  r = Ward({"approve"});
  EXPECT_EQ(r.status, 125);
  EXPECT_TRUE(Decisions().empty());
  EXPECT_EQ(broker_->Pending().size(), 1u);
}

TEST_F(ApprovalsCliTest, SessionChoiceWithSeveralLiveSessionsAndStaleSockets) {
  // A socket left by a session that died: bound, never served.
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    std::string p = supervisor::ApprovalSocketPath(dir_, "sess-dead");
    std::strncpy(addr.sun_path, p.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ::close(fd);
  }
  Ask(RequestKind::kFile, "/data/report.csv");
  RunResult r = Ward({"approvals", "list"});
  ASSERT_EQ(r.status, 0) << "the stale socket is skipped: " << r.err;

  StartServer("sess-two");
  // Listing covers every session (approvals_list_and_watch_every_session_test.cc); answering
  // needs the one session whose request it is.
  r = Ward({"approve", "1"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err,
            "ward approve: 2 sessions are running; pick one with --session:\n  sess-one\n  "
            "sess-two\n");

  r = Ward({"approvals", "list", "--session", "sess-two"});
  EXPECT_EQ(r.status, 0) << r.err;
  r = Ward({"approvals", "list", "--session", "sess-t"});  // a unique prefix
  EXPECT_EQ(r.status, 0) << r.err;
  r = Ward({"approvals", "list", "--session", "sess"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("ambiguous"), std::string::npos) << r.err;
  r = Ward({"approvals", "list", "--session", "sess-dead"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no running session sess-dead"), std::string::npos) << r.err;
}

TEST_F(ApprovalsCliTest, NoRunningSessionIsAClearError) {
  OnLoop([this] {
    for (auto& s : servers_) s->Stop();
  });
  RunResult r = Ward({"approvals", "list"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no running session accepts approvals"), std::string::npos) << r.err;
  r = Ward({"grants", "list"});
  EXPECT_EQ(r.status, 1);
  // Nor when the runtime directory was never created.
  RunOptions o;
  TempDir empty("ward-apcli-empty");
  o.env["XDG_RUNTIME_DIR"] = empty.path();
  r = RunWard({"approve", "1"}, o);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no running session"), std::string::npos) << r.err;
}

TEST_F(ApprovalsCliTest, SubjectsFromTheSandboxCannotDriveTheTerminal) {
  // The sandbox chooses the path it opens: escape sequences in it must not reach the terminal.
  Ask(RequestKind::kFile, "/data/\x1b]0;pwned\x07\x1b[2J.txt");
  RunResult r = Ward({"approvals", "list"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x07'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\\x1b"), std::string::npos) << r.out;
  // JSON output carries the exact subject (escaped by JSON itself).
  nlohmann::json j = Json(Ward({"approvals", "list", "--json"}));
  EXPECT_EQ(j[0]["subject"], "/data/\x1b]0;pwned\x07\x1b[2J.txt");
}

}  // namespace
}  // namespace ward::test
