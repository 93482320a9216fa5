// The daemon's approvals client (api/approvals_relay.h) against a real approval socket served
// on the same event loop: the protocol round trip, and every way a socket can fail (missing,
// stale, not a socket, a directory others can write, a server of another uid, a stuck server)
// ends in a clear error of the right kind, within the timeout, without blocking the loop.
#include "api/approvals_relay.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio/steady_timer.hpp>
#include <cstring>

#include "api_test_util.h"
#include "audit/session_log.h"
#include "common/unix_socket.h"
#include "supervisor/approvals/approval_broker.h"
#include "supervisor/approvals/socket.h"
#include "supervisor/runtime_dir.h"

namespace ward::api {
namespace {

using namespace std::chrono_literals;
using testing::RunUntil;
using testing::TempDir;

class ApprovalsRelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = getenv("XDG_RUNTIME_DIR");
    if (old) old_runtime_ = old;
    setenv("XDG_RUNTIME_DIR", runtime_.path().c_str(), 1);
    dir_ = supervisor::WardRuntimeDir();
    ASSERT_EQ(dir_, runtime_.path() + "/ward");
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

  // A live run's socket: a broker and its server for a fresh session.
  std::string Serve() {
    supervisor::BrokerOptions o;
    auto b = supervisor::ApprovalBroker::Create(io_, o, nullptr);
    EXPECT_TRUE(b.ok());
    broker_ = *b;
    EXPECT_TRUE(supervisor::PreparePrivateDir(dir_).ok());
    session_ = audit::NewSessionId();
    supervisor::ApprovalServerOptions so;
    so.path = ApprovalSocketPathFor(session_);
    so.session = session_;
    auto s = supervisor::ApprovalServer::Start(io_, broker_, so);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
    return so.path;
  }

  uint64_t Ask(const std::string& path, std::optional<supervisor::ApprovalDecision>* out) {
    supervisor::ApprovalRequest r;
    r.kind = supervisor::RequestKind::kFile;
    r.subject = path;
    r.access = supervisor::FileAccess::kRead;
    r.pid = 42;
    return broker_->Ask(r, [out](const supervisor::ApprovalDecision& d) { *out = d; });
  }

  // One call, run to completion on the loop.
  Expected<nlohmann::json> Call(const std::string& path, const nlohmann::json& request,
                                std::chrono::milliseconds timeout = 2000ms) {
    std::optional<Expected<nlohmann::json>> got;
    CallApprovalSocketAsync(io_, path, request, timeout,
                            [&](Expected<nlohmann::json> r) { got = std::move(r); });
    EXPECT_FALSE(got.has_value()) << "the callback ran inline";
    EXPECT_TRUE(RunUntil(
        io_, [&] { return got.has_value(); }, 10s));
    if (!got) return MakeError(ErrorKind::kInterrupted, "no answer");
    return std::move(*got);
  }
  static std::string Kind(const Expected<nlohmann::json>& r) {
    return r.ok() ? "ok" : std::string(ErrorKindName(r.error().kind));
  }

  asio::io_context io_;
  TempDir runtime_;
  std::optional<std::string> old_runtime_;
  std::string dir_, session_;
  std::shared_ptr<supervisor::ApprovalBroker> broker_;
  std::unique_ptr<supervisor::ApprovalServer> server_;
};

TEST_F(ApprovalsRelayTest, ListApproveGrantsRevokeThroughTheSocket) {
  std::string path = Serve();
  std::optional<supervisor::ApprovalDecision> first, second;
  uint64_t id = Ask("/data/report.csv", &first);
  RunUntil(io_, [&] { return !broker_->Pending().empty(); });

  auto list = Call(path, {{"op", "list"}});
  ASSERT_TRUE(list.ok()) << list.error().message;
  ASSERT_EQ((*list)["requests"].size(), 1u) << list->dump();
  EXPECT_EQ((*list)["requests"][0]["id"], id);
  EXPECT_EQ((*list)["requests"][0]["subject"], "/data/report.csv");

  auto approved = Call(path, {{"op", "approve"}, {"id", id}, {"scope", "session"}});
  ASSERT_TRUE(approved.ok()) << approved.error().message;
  EXPECT_EQ((*approved)["decision"], "allow");
  ASSERT_TRUE((*approved)["grant"].is_object());
  uint64_t grant = (*approved)["grant"]["id"];
  ASSERT_TRUE(RunUntil(io_, [&] { return first.has_value(); }));
  EXPECT_TRUE(first->allow);

  // Answered already: the socket's not_found comes back as not_found.
  EXPECT_EQ(Kind(Call(path, {{"op", "deny"}, {"id", id}})), "not_found");
  EXPECT_EQ(Kind(Call(path, {{"op", "approve"}, {"id", 999}})), "not_found");
  // A request the socket refuses (a bad scope) is invalid_request.
  uint64_t id2 = Ask("/data/other.csv", &second);
  RunUntil(io_, [&] { return broker_->Pending().size() == 1; });
  EXPECT_EQ(Kind(Call(path, {{"op", "approve"}, {"id", id2}, {"scope", "forever"}})),
            "invalid_request");
  auto denied = Call(path, {{"op", "deny"}, {"id", id2}, {"reason", "no"}});
  ASSERT_TRUE(denied.ok());
  EXPECT_EQ((*denied)["decision"], "deny");
  ASSERT_TRUE(RunUntil(io_, [&] { return second.has_value(); }));
  EXPECT_FALSE(second->allow);

  auto grants = Call(path, {{"op", "grants"}});
  ASSERT_TRUE(grants.ok());
  ASSERT_EQ((*grants)["grants"].size(), 1u);
  EXPECT_EQ((*grants)["grants"][0]["state"], "live");
  EXPECT_TRUE(Call(path, {{"op", "revoke"}, {"grant", grant}}).ok());
  // Not live any more: the socket's failed_precondition is an invalid request.
  EXPECT_EQ(Kind(Call(path, {{"op", "revoke"}, {"grant", grant}})), "invalid_request");
  EXPECT_EQ(Kind(Call(path, {{"op", "revoke"}, {"grant", 77}})), "not_found");
}

TEST_F(ApprovalsRelayTest, PendingCount) {
  std::string path = Serve();
  std::optional<uint64_t> n;
  bool called = false;
  auto count = [&] {
    called = false;
    CountPendingApprovals(io_, session_, 1000ms, [&](std::optional<uint64_t> v) {
      n = v;
      called = true;
    });
    EXPECT_TRUE(RunUntil(io_, [&] { return called; }));
  };
  count();
  EXPECT_EQ(n, std::optional<uint64_t>(0));
  std::optional<supervisor::ApprovalDecision> d1, d2;
  Ask("/data/a", &d1);
  Ask("/data/b", &d2);
  RunUntil(io_, [&] { return broker_->Pending().size() == 2; });
  count();
  EXPECT_EQ(n, std::optional<uint64_t>(2));
  // A run without a socket (not started, or over) has nothing pending.
  server_->Stop();
  count();
  EXPECT_EQ(n, std::optional<uint64_t>(0));
  // A malformed session id is never turned into a path.
  called = false;
  CountPendingApprovals(io_, "../../etc", 1000ms, [&](std::optional<uint64_t> v) {
    n = v;
    called = true;
  });
  EXPECT_TRUE(RunUntil(io_, [&] { return called; }));
  EXPECT_FALSE(n.has_value());
}

TEST_F(ApprovalsRelayTest, SessionPathsOnlyForRealSessionIds) {
  std::string id = audit::NewSessionId();
  EXPECT_EQ(ApprovalSocketPathFor(id), dir_ + "/approvals-" + id + ".sock");
  for (const char* bad : {"", "../x", "a/b", "20261130T162233Z-3f9a1c2e/../../x", "x y"}) {
    EXPECT_EQ(ApprovalSocketPathFor(bad), "") << bad;
  }
}

TEST_F(ApprovalsRelayTest, MissingStaleAndFakeSocketsAreClearErrors) {
  // No directory at all, then no socket in it.
  std::string path = ApprovalSocketPathFor(audit::NewSessionId());
  auto r = Call(path, {{"op", "list"}});
  EXPECT_EQ(Kind(r), "not_found");
  ASSERT_TRUE(supervisor::PreparePrivateDir(dir_).ok());
  r = Call(path, {{"op", "list"}});
  EXPECT_EQ(Kind(r), "not_found");
  EXPECT_NE(r.error().message.find(path), std::string::npos) << r.error().message;
  // A dead server's socket: refused at once, not a hang.
  {
    auto l = ListenPrivateUnix(path, 4);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
  }  // closed: the file stays behind
  auto t0 = std::chrono::steady_clock::now();
  r = Call(path, {{"op", "list"}});
  EXPECT_EQ(Kind(r), "interrupted") << (r.ok() ? r->dump() : r.error().message);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  unlink(path.c_str());
  // Something that is not a socket.
  testing::Write(path, "not a socket\n", 0600);
  EXPECT_EQ(Kind(Call(path, {{"op", "list"}})), "policy_denied");
  unlink(path.c_str());
}

TEST_F(ApprovalsRelayTest, ADirectoryOthersCanWriteIsRefused) {
  std::string path = Serve();
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
  auto r = Call(path, {{"op", "list"}});
  EXPECT_EQ(Kind(r), "policy_denied");
  EXPECT_NE(r.error().message.find("writable by others"), std::string::npos) << r.error().message;
  ASSERT_EQ(chmod(dir_.c_str(), 0700), 0);
  EXPECT_TRUE(Call(path, {{"op", "list"}}).ok());  // positive control
}

TEST_F(ApprovalsRelayTest, AStuckServerTimesOutWithoutBlockingTheLoop) {
  ASSERT_TRUE(supervisor::PreparePrivateDir(dir_).ok());
  std::string path = ApprovalSocketPathFor(audit::NewSessionId());
  // Listening, never accepting nor answering: a supervisor that is stopped or wedged.
  auto l = ListenPrivateUnix(path, 4);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  int ticks = 0;
  asio::steady_timer ticker(io_);
  std::function<void()> tick = [&] {
    ticker.expires_after(20ms);
    ticker.async_wait([&](const asio::error_code& ec) {
      if (ec) return;
      ++ticks;
      tick();
    });
  };
  tick();
  auto t0 = std::chrono::steady_clock::now();
  auto r = Call(path, {{"op", "list"}}, 300ms);
  auto took = std::chrono::steady_clock::now() - t0;
  ticker.cancel();
  EXPECT_EQ(Kind(r), "timeout");
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 2s);
  EXPECT_GE(ticks, 5) << "the loop was blocked while waiting";
}

TEST_F(ApprovalsRelayTest, AServerOfAnotherUidIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to listen as another uid";
  ASSERT_TRUE(supervisor::PreparePrivateDir(dir_).ok());
  std::string path = ApprovalSocketPathFor(audit::NewSessionId());
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    // Bound as root (the directory is root's), listening as nobody: SO_PEERCRED reports the
    // uid that called listen().
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a = {};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0 ||
        listen(fd, 4) != 0) {
      _exit(1);
    }
    char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  auto r = Call(path, {{"op", "list"}});
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(Kind(r), "policy_denied");
  if (!r.ok()) {
    EXPECT_NE(r.error().message.find("uid 65534"), std::string::npos) << r.error().message;
  }
}

TEST_F(ApprovalsRelayTest, ManyAtOnceKeepTheirOrder) {
  std::string live = Serve();
  std::string missing = ApprovalSocketPathFor(audit::NewSessionId());
  std::optional<ApprovalResults> got;
  CallApprovalSockets(io_, {missing, live, live}, {{"op", "hello"}}, 2000ms,
                      [&](ApprovalResults r) { got = std::move(r); });
  ASSERT_TRUE(RunUntil(io_, [&] { return got.has_value(); }));
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ(Kind(*(*got)[0]), "not_found");
  ASSERT_TRUE((*got)[1]->ok());
  EXPECT_EQ((*(*got)[1])->value("session", ""), session_);
  EXPECT_TRUE((*got)[2]->ok());
  got.reset();
  CallApprovalSockets(io_, {}, {{"op", "hello"}}, 2000ms,
                      [&](ApprovalResults r) { got = std::move(r); });
  ASSERT_TRUE(RunUntil(io_, [&] { return got.has_value(); }));
  EXPECT_TRUE(got->empty());
}

}  // namespace
}  // namespace ward::api
