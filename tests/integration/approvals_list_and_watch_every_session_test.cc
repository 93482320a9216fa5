// `ward approvals list` with several running sessions lists every one's requests in one table
// (no escaped line breaks), and `ward approvals watch` prints requests as they come, from every
// session, and answers each with what is typed (a, d, s); `--json` streams them and asks nothing.
#include <gtest/gtest.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/events.h"
#include "harness.h"
#include "pty_session.h"
#include "supervisor/approvals/approval_broker.h"
#include "supervisor/approvals/socket.h"
#include "supervisor/runtime_dir.h"

namespace ward::test {
namespace {

using supervisor::ApprovalBroker;
using supervisor::ApprovalDecision;
using supervisor::ApprovalRequest;
using supervisor::ApprovalServer;
using supervisor::RequestKind;

// Two sessions, each with its own broker and socket, as two `ward run --ask` would have.
class ApprovalsEverySessionTest : public ::testing::Test {
 protected:
  struct Session {
    std::shared_ptr<ApprovalBroker> broker;
    std::unique_ptr<ApprovalServer> server;
  };

  void SetUp() override {
    runtime_.emplace("ward-apall");
    dir_ = runtime_->path() + "/ward";
    ASSERT_TRUE(supervisor::PreparePrivateDir(dir_).ok());
    guard_.emplace(io_.get_executor());
    loop_ = std::thread([this] { io_.run(); });
    Start("sess-a");
    Start("sess-b");
  }

  void TearDown() override {
    if (!loop_.joinable()) return;
    OnLoop([this] {
      for (auto& [name, s] : sessions_) {
        if (s.server) s.server->Stop();
        if (s.broker) s.broker->Shutdown();
      }
    });
    OnLoop([this] { sessions_.clear(); });
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

  void Start(const std::string& name) {
    OnLoop([&] {
      supervisor::BrokerOptions options;
      options.policy.enabled = true;
      options.policy.timeout_ms = 120000;
      auto broker = ApprovalBroker::Create(io_, options, &events_);
      ASSERT_TRUE(broker.ok()) << broker.status().ToString();
      supervisor::ApprovalServerOptions o;
      o.path = supervisor::ApprovalSocketPath(dir_, name);
      o.session = name;
      auto s = ApprovalServer::Start(io_, *broker, o);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      sessions_[name] = Session{*broker, std::move(s).value()};
    });
  }

  uint64_t Ask(const std::string& session, const std::string& subject) {
    ApprovalRequest r;
    r.kind = RequestKind::kFile;
    r.subject = subject;
    r.access = supervisor::FileAccess::kRead;
    r.pid = 4242;
    r.exe = "/usr/bin/cat";
    uint64_t id = 0;
    OnLoop([&] {
      id = sessions_[session].broker->Ask(r, [this, session](const ApprovalDecision& d) {
        std::lock_guard<std::mutex> lock(mu_);
        decisions_[session].push_back(d);
      });
    });
    return id;
  }

  std::vector<ApprovalDecision> Decisions(const std::string& session) {
    std::lock_guard<std::mutex> lock(mu_);
    return decisions_[session];
  }

  RunResult Ward(const std::vector<std::string>& args, const std::string& input = "",
                 int timeout_s = 30) {
    RunOptions o;
    o.env["XDG_RUNTIME_DIR"] = runtime_->path();
    o.timeout_s = timeout_s;
    o.stdin_data = input;
    return RunWard(args, o);
  }

  // The table's rows without the ASKED column (a time).
  static std::vector<std::string> Rows(const std::string& out) {
    std::vector<std::string> rows;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::vector<std::string> w;
      for (std::string x; words >> x;) w.push_back(x);
      if (w.size() >= 4) w.erase(w.begin() + 4);  // SESSION ID KIND ACCESS [ASKED] ...
      std::string joined;
      for (const std::string& x : w) joined += (joined.empty() ? "" : " ") + x;
      rows.push_back(joined);
    }
    return rows;
  }

  std::optional<TempDir> runtime_;
  std::string dir_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
  std::thread loop_;
  MemoryEventSink events_;
  std::map<std::string, Session> sessions_;
  std::mutex mu_;
  std::map<std::string, std::vector<ApprovalDecision>> decisions_;
};

TEST_F(ApprovalsEverySessionTest, ListShowsEverySessionInOneTable) {
  uint64_t a = Ask("sess-a", "/data/a.csv");
  uint64_t b = Ask("sess-b", "/data/b.csv");
  RunResult r = Ward({"approvals", "list"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.find("\\x0a"), std::string::npos) << r.out;
  std::vector<std::string> rows = Rows(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_EQ(rows[0], "SESSION ID KIND ACCESS PID SUBJECT (EXE)");
  EXPECT_EQ(rows[1], "sess-a " + std::to_string(a) + " file read 4242 /data/a.csv (/usr/bin/cat)");
  EXPECT_EQ(rows[2], "sess-b " + std::to_string(b) + " file read 4242 /data/b.csv (/usr/bin/cat)");

  r = Ward({"approvals", "list", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["session"], "sess-a");
  EXPECT_EQ(j[1]["session"], "sess-b");
  EXPECT_EQ(j[1]["subject"], "/data/b.csv");
}

TEST_F(ApprovalsEverySessionTest, WatchAnswersEachRequestOfEverySession) {
  uint64_t a = Ask("sess-a", "/data/a.csv");
  uint64_t b = Ask("sess-b", "/data/b.csv");
  uint64_t c = Ask("sess-b", "/data/c.csv");
  RunResult r = Ward({"approvals", "watch"}, "a\nd\ns\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err,
            "ward approvals watch: requests of every running session as they come; answer a "
            "(approve once), d (deny) or s (skip); Ctrl-D ends\n");
  const std::string ask = "  approve once [a], deny [d], skip [s]? ";
  EXPECT_EQ(r.out, "session sess-a request " + std::to_string(a) +
                       ": file read /data/a.csv  (/usr/bin/cat, pid 4242)\n" + ask +
                       "approved request " + std::to_string(a) + " (session sess-a)\n" +
                       "session sess-b request " + std::to_string(b) +
                       ": file read /data/b.csv  (/usr/bin/cat, pid 4242)\n" + ask +
                       "denied request " + std::to_string(b) + " (session sess-b)\n" +
                       "session sess-b request " + std::to_string(c) +
                       ": file read /data/c.csv  (/usr/bin/cat, pid 4242)\n" + ask +
                       "skipped request " + std::to_string(c) + " (session sess-b)\n");
  for (int i = 0; i < 200 && (Decisions("sess-a").empty() || Decisions("sess-b").empty()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(Decisions("sess-a").size(), 1u);
  EXPECT_TRUE(Decisions("sess-a")[0].allow);
  ASSERT_EQ(Decisions("sess-b").size(), 1u);
  EXPECT_FALSE(Decisions("sess-b")[0].allow);
  // The skipped one is still pending, for another answer.
  r = Ward({"approvals", "list", "--json"});
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["id"], c);
}

// On a terminal, as a user answers: the question waits for the keystroke; Ctrl-D ends the watch.
TEST_F(ApprovalsEverySessionTest, WatchAsksOnTheTerminalAndCtrlDEndsIt) {
  RunOptions o;
  o.env["XDG_RUNTIME_DIR"] = runtime_->path();
  PtySession term({WardBin(), "approvals", "watch"}, o);
  ASSERT_TRUE(term.WaitForText("Ctrl-D ends", std::chrono::seconds(10))) << term.output();
  uint64_t id = Ask("sess-a", "/data/typed.csv");
  ASSERT_TRUE(term.WaitForText("skip [s]? ", std::chrono::seconds(10))) << term.output();
  EXPECT_NE(term.output().find("session sess-a request " + std::to_string(id) +
                               ": file read /data/typed.csv  (/usr/bin/cat, pid 4242)"),
            std::string::npos)
      << term.output();
  EXPECT_TRUE(Decisions("sess-a").empty()) << "nothing is answered before the user types";
  term.Type("d\n");
  ASSERT_TRUE(term.WaitForText("denied request " + std::to_string(id) + " (session sess-a)",
                               std::chrono::seconds(10)))
      << term.output();
  term.Type("\x04");
  EXPECT_EQ(term.Finish(std::chrono::seconds(10)), 0) << term.output();
  ASSERT_EQ(Decisions("sess-a").size(), 1u);
  EXPECT_FALSE(Decisions("sess-a")[0].allow);
}

TEST_F(ApprovalsEverySessionTest, WatchPrintsRequestsThatComeLater) {
  std::thread later([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    Ask("sess-b", "/data/later.csv");
  });
  RunResult r = Ward({"approvals", "watch", "--json"}, "", /*timeout_s=*/3);
  later.join();
  EXPECT_TRUE(r.timed_out) << "watch --json runs until stopped";
  std::istringstream lines(r.out);
  std::string line;
  ASSERT_TRUE(std::getline(lines, line)) << r.out;
  nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["session"], "sess-b");
  EXPECT_EQ(j["subject"], "/data/later.csv");
  EXPECT_FALSE(std::getline(lines, line)) << "each request once: " << r.out;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(Decisions("sess-b").empty()) << "--json answers nothing";
}

}  // namespace
}  // namespace ward::test
