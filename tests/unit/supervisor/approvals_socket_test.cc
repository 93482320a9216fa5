// The per-session approval socket end to end: a real unix socket served on a loop thread, the
// CLI's blocking client, the protocol (hello, list, approve once/session/10m/prefix, deny,
// grants, revoke), hostile input, peers of another uid or inside the sandbox's pid namespace,
// and the socket directory rules.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio/executor_work_guard.hpp>
#include <atomic>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include "approvals_test_util.h"
#include "supervisor/approvals/approval_broker.h"
#include "supervisor/approvals/socket.h"
#include "supervisor/runtime_dir.h"

namespace ward::supervisor {
namespace {

using namespace std::chrono_literals;
using testing::FileRequest;
using testing::HostRequest;
using testing::TempDir;

// A raw client for tests that send several lines or hostile bytes.
class RawClient {
 public:
  explicit RawClient(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a = {};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawClient() { ::close(fd_); }
  bool connected() const { return connected_; }
  bool Send(std::string_view data) {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += n;
    }
    return true;
  }
  // One line (without '\n'); nullopt on EOF or timeout.
  std::optional<std::string> Line(int timeout_ms = 5000) {
    while (true) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      struct pollfd p = {fd_, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return std::nullopt;
      char tmp[4096];
      ssize_t n = ::read(fd_, tmp, sizeof tmp);
      if (n <= 0) return std::nullopt;
      buf_.append(tmp, n);
    }
  }
  std::optional<nlohmann::json> Call(const nlohmann::json& j) {
    if (!Send(j.dump() + "\n")) return std::nullopt;
    auto line = Line();
    if (!line) return std::nullopt;
    return nlohmann::json::parse(*line);
  }
  // True when the server closes the connection.
  bool Closed(int timeout_ms = 5000) {
    struct pollfd p = {fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char tmp[4096];
    while (true) {
      ssize_t n = ::read(fd_, tmp, sizeof tmp);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
      if (::poll(&p, 1, timeout_ms) <= 0) return false;
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

class SocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    BrokerOptions o;
    o.policy.timeout_ms = 60000;
    auto b = ApprovalBroker::Create(io_, o, &events_);
    ASSERT_TRUE(b.ok());
    broker_ = *b;
    path_ = ApprovalSocketPath(dir_.path(), "20261130T000000Z-0000abcd");
    ASSERT_TRUE(StartServer().ok());
  }
  void TearDown() override {
    StopLoop();
    server_.reset();
  }
  Status StartServer(ApprovalServerOptions o = {}) {
    o.path = path_;
    o.session = "20261130T000000Z-0000abcd";
    auto s = ApprovalServer::Start(io_, broker_, o);
    if (!s.ok()) return s.status();
    server_ = std::move(s).value();
    return Ok();
  }
  void StartLoop() {
    work_.emplace(io_.get_executor());
    loop_ = std::thread([this] { io_.run(); });
  }
  void StopLoop() {
    if (!loop_.joinable()) return;
    work_.reset();
    io_.stop();
    loop_.join();
  }
  nlohmann::json Call(const nlohmann::json& j) {
    auto r = CallApprovalSocket(path_, j, 5s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : nlohmann::json();
  }
  // Asks from the test thread; the decision arrives on the loop thread.
  struct Asked {
    uint64_t id = 0;
    std::shared_ptr<std::promise<ApprovalDecision>> promise;
    std::future<ApprovalDecision> future;
  };
  Asked Ask(ApprovalRequest r) {
    Asked a;
    a.promise = std::make_shared<std::promise<ApprovalDecision>>();
    a.future = a.promise->get_future();
    auto p = a.promise;
    a.id = broker_->Ask(std::move(r), [p](const ApprovalDecision& d) { p->set_value(d); });
    // Wait until it is pending (the loop thread registers it).
    for (int i = 0; i < 500; ++i) {
      for (const auto& q : broker_->Pending()) {
        if (q.id == a.id) return a;
      }
      std::this_thread::sleep_for(2ms);
    }
    ADD_FAILURE() << "request " << a.id << " never became pending";
    return a;
  }

  TempDir dir_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread loop_;
  MemoryEventSink events_;
  std::shared_ptr<ApprovalBroker> broker_;
  std::unique_ptr<ApprovalServer> server_;
  std::string path_;
};

TEST_F(SocketTest, SocketIsPrivate) {
  struct stat st;
  ASSERT_EQ(::lstat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

TEST_F(SocketTest, HelloAndList) {
  StartLoop();
  nlohmann::json hello = Call({{"op", "hello"}});
  EXPECT_EQ(hello["ok"], true);
  EXPECT_EQ(hello["session"], "20261130T000000Z-0000abcd");
  EXPECT_EQ(hello["pending"], 0);
  Asked a = Ask(FileRequest("/data/a.csv"));
  Asked h = Ask(HostRequest("api.example.com", 443));
  nlohmann::json list = Call({{"op", "list"}});
  ASSERT_EQ(list["ok"], true);
  ASSERT_EQ(list["requests"].size(), 2u);
  EXPECT_EQ(list["requests"][0]["id"], a.id);
  EXPECT_EQ(list["requests"][0]["subject"], "/data/a.csv");
  EXPECT_EQ(list["requests"][0]["access"], "read");
  EXPECT_EQ(list["requests"][1]["subject"], "api.example.com");
  EXPECT_EQ(list["requests"][1]["port"], 443);
  broker_->Shutdown();
}

TEST_F(SocketTest, ApproveOnce) {
  StartLoop();
  Asked a = Ask(FileRequest("/data/once"));
  nlohmann::json r = Call({{"op", "approve"}, {"id", a.id}, {"scope", "once"}});
  ASSERT_EQ(r["ok"], true) << r.dump();
  EXPECT_EQ(r["decision"], "allow");
  EXPECT_EQ(r["grant"]["state"], "used");
  ASSERT_EQ(a.future.wait_for(5s), std::future_status::ready);
  ApprovalDecision d = a.future.get();
  EXPECT_TRUE(d.allow);
  EXPECT_EQ(d.channel, "socket");
  EXPECT_FALSE(broker_->Match(RequestKind::kFile, "/data/once", FileAccess::kRead, 0));
  // Answered: a second answer finds nothing.
  nlohmann::json again = Call({{"op", "deny"}, {"id", a.id}});
  EXPECT_EQ(again["ok"], false);
  EXPECT_EQ(again["error"]["code"], "not_found");
}

TEST_F(SocketTest, ApproveSessionThenRevoke) {
  StartLoop();
  Asked a = Ask(HostRequest("api.example.com", 443));
  nlohmann::json r = Call({{"op", "approve"}, {"id", a.id}, {"scope", "session"}});
  ASSERT_EQ(r["ok"], true) << r.dump();
  uint64_t gid = r["grant"]["id"];
  EXPECT_TRUE(a.future.get().allow);
  EXPECT_TRUE(broker_->Match(RequestKind::kHost, "api.example.com", FileAccess::kRead, 443));
  nlohmann::json grants = Call({{"op", "grants"}});
  ASSERT_EQ(grants["grants"].size(), 1u);
  EXPECT_EQ(grants["grants"][0]["state"], "live");
  EXPECT_EQ(grants["grants"][0]["scope"], "session");
  EXPECT_EQ(grants["grants"][0]["uses"], 1);
  nlohmann::json rv = Call({{"op", "revoke"}, {"grant", gid}});
  EXPECT_EQ(rv["ok"], true) << rv.dump();
  EXPECT_FALSE(broker_->Match(RequestKind::kHost, "api.example.com", FileAccess::kRead, 443));
  EXPECT_EQ(Call({{"op", "grants"}})["grants"][0]["state"], "revoked");
  nlohmann::json twice = Call({{"op", "revoke"}, {"grant", gid}});
  EXPECT_EQ(twice["error"]["code"], "failed_precondition");
  EXPECT_EQ(Call({{"op", "revoke"}, {"grant", 999}})["error"]["code"], "not_found");
}

TEST_F(SocketTest, ApproveForTenMinutesWithPrefix) {
  StartLoop();
  Asked a = Ask(FileRequest("/data/in/2026/a.csv", FileAccess::kReadWrite));
  nlohmann::json bad =
      Call({{"op", "approve"}, {"id", a.id}, {"scope", "10m"}, {"prefix", "/etc"}});
  EXPECT_EQ(bad["error"]["code"], "invalid_argument");
  nlohmann::json r = Call({{"op", "approve"}, {"id", a.id}, {"scope", "10m"}, {"prefix", true}});
  ASSERT_EQ(r["ok"], true) << r.dump();
  EXPECT_EQ(r["grant"]["scope"], "10m");
  EXPECT_EQ(r["grant"]["match"], "prefix");
  EXPECT_EQ(r["grant"]["subject"], "/data/in/2026");
  EXPECT_EQ(r["grant"]["access"], "read-write");
  EXPECT_FALSE(r["grant"]["expires"].is_null());
  EXPECT_TRUE(a.future.get().allow);
  EXPECT_TRUE(broker_->Match(RequestKind::kFile, "/data/in/2026/b.csv", FileAccess::kWrite, 0));
}

TEST_F(SocketTest, Deny) {
  StartLoop();
  Asked a = Ask(FileRequest("/secret"));
  nlohmann::json r = Call({{"op", "deny"}, {"id", a.id}, {"reason", "no"}});
  ASSERT_EQ(r["ok"], true) << r.dump();
  EXPECT_EQ(r["decision"], "deny");
  ApprovalDecision d = a.future.get();
  EXPECT_FALSE(d.allow);
  EXPECT_EQ(d.channel, "socket");
  EXPECT_EQ(d.reason, "no");
  EXPECT_TRUE(Call({{"op", "list"}})["requests"].empty());
}

TEST_F(SocketTest, HostileRequestsGetErrorsAndTheConnectionSurvives) {
  StartLoop();
  Asked a = Ask(FileRequest("/x"));
  RawClient c(path_);
  ASSERT_TRUE(c.connected());
  const std::vector<std::string> bad = {
      "not json",
      "[1,2,3]",
      "\"op\"",
      R"({"op":5})",
      R"({"op":"launch"})",
      R"({"op":"approve"})",
      R"({"op":"approve","id":-1})",
      R"({"op":"approve","id":1.5})",
      R"({"op":"approve","id":"1"})",
      R"({"op":"approve","id":1,"scope":"forever"})",
      R"({"op":"approve","id":1,"scope":7})",
      R"({"op":"approve","id":1,"prefix":7})",
      R"({"op":"approve","id":1,"reason":")" + std::string(1000, 'r') + R"("})",
      R"({"op":"revoke","grant":null})",
      std::string("{\"op\":\"list\"\xff\xfe}"),
  };
  for (const std::string& line : bad) {
    ASSERT_TRUE(c.Send(line + "\n"));
    auto reply = c.Line();
    ASSERT_TRUE(reply.has_value()) << line;
    auto j = nlohmann::json::parse(*reply);
    EXPECT_EQ(j["ok"], false) << line << " -> " << *reply;
  }
  ASSERT_TRUE(c.Send("\n  \n"));  // blank lines are ignored
  auto list = c.Call({{"op", "list"}});
  ASSERT_TRUE(list.has_value());
  EXPECT_EQ((*list)["requests"].size(), 1u);  // nothing was approved by the junk
  EXPECT_EQ(a.future.wait_for(0s), std::future_status::timeout);
  broker_->Shutdown();
}

TEST_F(SocketTest, NonUtf8SubjectsAreListedWithoutBreakingTheReply) {
  StartLoop();
  Ask(FileRequest("/data/\xff\xfe.bin"));
  nlohmann::json list = Call({{"op", "list"}});
  ASSERT_EQ(list["ok"], true);
  ASSERT_EQ(list["requests"].size(), 1u);
  broker_->Shutdown();
}

TEST_F(SocketTest, OversizedLineClosesTheConnection) {
  StartLoop();
  RawClient c(path_);
  ASSERT_TRUE(c.connected());
  c.Send(std::string(70 * 1024, 'x'));
  auto reply = c.Line();
  ASSERT_TRUE(reply.has_value());
  EXPECT_NE(reply->find("longer than"), std::string::npos);
  EXPECT_TRUE(c.Closed());
  // The server still serves others.
  EXPECT_EQ(Call({{"op", "hello"}})["ok"], true);
}

TEST_F(SocketTest, ConnectionLimit) {
  StopLoop();
  server_.reset();
  ApprovalServerOptions o;
  o.max_connections = 1;
  ASSERT_TRUE(StartServer(o).ok());
  StartLoop();
  RawClient first(path_);
  ASSERT_TRUE(first.Call({{"op", "hello"}}).has_value());
  RawClient second(path_);
  auto line = second.Line();
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(nlohmann::json::parse(*line)["error"]["code"], "resource_exhausted");
  EXPECT_TRUE(second.Closed());
  EXPECT_GE(server_->refused(), 1u);
}

// What a sandboxed process looks like from the socket: our uid, its own user, pid and mount
// namespaces. It is refused (one error, then closed), the request stays pending, and the attempt
// is recorded. Control: the same approve from this process (our namespaces) is accepted.
TEST_F(SocketTest, APeerInOtherNamespacesIsRefusedAndRecorded) {
  StopLoop();
  server_.reset();
  MemoryEventSink refusals;
  ApprovalServerOptions o;
  o.events = &refusals;
  ASSERT_TRUE(StartServer(o).ok());
  StartLoop();
  Asked a = Ask(FileRequest("/x"));
  std::string line = nlohmann::json({{"op", "approve"}, {"id", a.id}}).dump() + "\n";
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(out[0]);
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID) != 0) _exit(20);
    pid_t inner = ::fork();  // pid 1 of the new pid namespace, like sandbox init's children
    if (inner != 0) {
      int st = 0;
      ::waitpid(inner, &st, 0);
      _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 21);
    }
    RawClient c(path_);
    if (!c.connected()) _exit(22);
    c.Send(line);
    std::optional<std::string> reply = c.Line();
    std::string text = reply.value_or("") + "\n";
    (void)!::write(out[1], text.data(), text.size());
    _exit(c.Closed() ? 0 : 23);
  }
  ::close(out[1]);
  std::string reply;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) reply.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 20) {
    broker_->Shutdown();
    GTEST_SKIP() << "cannot make user namespaces here";
  }
  EXPECT_EQ(WEXITSTATUS(status), 0) << reply;  // refused, then closed
  nlohmann::json j = nlohmann::json::parse(reply, nullptr, false);
  EXPECT_EQ(j["ok"], false) << reply;
  EXPECT_EQ(j["error"]["code"], "permission_denied") << reply;
  EXPECT_EQ(broker_->Pending().size(), 1u);
  EXPECT_GE(server_->refused(), 1u);
  std::vector<Event> recorded;
  for (const Event& e : refusals.events()) {
    if (e.type == kPeerRefusedEvent) recorded.push_back(e);
  }
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].data["socket"], path_);
  EXPECT_EQ(recorded[0].data["uid"], ::geteuid());
  EXPECT_EQ(recorded[0].data["differs"], nlohmann::json::array({"pid", "user", "mnt"}));
  // Control: from here the same answer goes through.
  nlohmann::json ok = Call({{"op", "approve"}, {"id", a.id}});
  EXPECT_EQ(ok["ok"], true) << ok.dump();
  EXPECT_EQ(ok["decision"], "allow");
  EXPECT_TRUE(a.future.get().allow);
}

// Forks a child that becomes another uid and tries to approve request `id` over `path`.
// Returns the child's status: 10 connect refused by the file system, 11 the server refused
// (error reply and close), 12 something was approved (the failure we guard against).
int OtherUidTries(const std::string& path, uid_t uid, gid_t gid, uint64_t id) {
  std::string line = nlohmann::json({{"op", "approve"}, {"id", id}}).dump() + "\n";
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) _exit(2);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a = {};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      _exit(errno == EACCES || errno == EPERM ? 10 : 3);
    }
    // The server may refuse and close before this write: EPIPE, not a SIGPIPE death.
    (void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
    char buf[4096];
    ssize_t total = 0, n;
    while ((n = ::read(fd, buf + total, sizeof buf - 1 - total)) > 0) total += n;
    buf[total] = 0;
    if (std::strstr(buf, "\"ok\":true")) _exit(12);
    if (std::strstr(buf, "permission_denied")) _exit(11);
    _exit(4);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(SocketTest, AnotherUidIsRefused) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root to become another uid (run as root to cover SO_PEERCRED)";
  }
  uid_t uid = 65534;
  gid_t gid = 65534;
  if (struct passwd* pw = ::getpwnam("ward-test")) {
    uid = pw->pw_uid;
    gid = pw->pw_gid;
  }
  StartLoop();
  Asked a = Ask(FileRequest("/x"));
  // The file system refuses first: a 0700 directory and a 0600 socket.
  EXPECT_EQ(OtherUidTries(path_, uid, gid, a.id), 10);
  // With both opened up, SO_PEERCRED still refuses.
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(path_.c_str(), 0666), 0);
  EXPECT_EQ(OtherUidTries(path_, uid, gid, a.id), 11);
  EXPECT_EQ(broker_->Pending().size(), 1u);
  EXPECT_GE(server_->refused(), 1u);
  broker_->Shutdown();
}

TEST_F(SocketTest, StartRefusesALiveSocketAndReplacesAStaleOne) {
  auto dup = ApprovalServer::Start(io_, broker_, {path_, "x"});
  EXPECT_FALSE(dup.ok());
  // A stale socket (nobody listening) is replaced.
  std::string stale = dir_.path() + "/approvals-stale.sock";
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a = {};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, stale.c_str(), sizeof a.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::close(fd);
  }
  auto s = ApprovalServer::Start(io_, broker_, {stale, "stale"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  (*s)->Stop();
  struct stat st;
  EXPECT_NE(::lstat(stale.c_str(), &st), 0);  // removed at Stop
  // A regular file at the path is not ours to remove.
  std::string file = dir_.path() + "/approvals-file.sock";
  ::close(::open(file.c_str(), O_CREAT | O_WRONLY, 0600));
  EXPECT_FALSE(ApprovalServer::Start(io_, broker_, {file, "f"}).ok());
  EXPECT_EQ(::lstat(file.c_str(), &st), 0);
  EXPECT_FALSE(ApprovalServer::Start(io_, broker_, {"relative.sock", "r"}).ok());
}

TEST_F(SocketTest, FindSessionsListsOnlyLiveOnes) {
  StartLoop();
  std::string other_path = ApprovalSocketPath(dir_.path(), "20261130T000001Z-00000001");
  auto other = ApprovalServer::Start(io_, broker_, {other_path, "other"});
  ASSERT_TRUE(other.ok());
  // Junk next to them.
  ::close(::open((dir_.path() + "/approvals-notasocket.sock").c_str(), O_CREAT | O_WRONLY, 0600));
  ::close(::open((dir_.path() + "/ward.sock").c_str(), O_CREAT | O_WRONLY, 0600));
  std::string dead = ApprovalSocketPath(dir_.path(), "20261130T000002Z-00000002");
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a = {};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, dead.c_str(), sizeof a.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::close(fd);
  }
  auto found = FindApprovalSessions(dir_.path());
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ((*found)[0].session, "20261130T000000Z-0000abcd");
  EXPECT_EQ((*found)[1].session, "20261130T000001Z-00000001");
  EXPECT_EQ((*found)[1].path, other_path);
  auto none = FindApprovalSessions(dir_.path() + "/missing");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  StopLoop();
}

TEST(ApprovalSocketDir, PathOfASession) {
  EXPECT_EQ(ApprovalSocketPath("/d", "S"), "/d/approvals-S.sock");
}

TEST(ApprovalSocketDir, ADirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a directory owned by another uid";
  TempDir t;
  std::string d = t.path() + "/theirs";
  ASSERT_EQ(::mkdir(d.c_str(), 0700), 0);
  ASSERT_EQ(::chown(d.c_str(), 65534, 65534), 0);
  Status st = PreparePrivateDir(d);
  EXPECT_EQ(st.code(), Code::kPermissionDenied);
  EXPECT_NE(st.message().find("not to us"), std::string::npos);
  EXPECT_FALSE(CheckPrivateDir(d).ok());
  EXPECT_FALSE(FindApprovalSessions(d).ok());
}

TEST(ApprovalProtocol, HandleWithoutASocket) {
  asio::io_context io;
  auto b = *ApprovalBroker::Create(io, {}, nullptr);
  EXPECT_EQ(HandleApprovalMessage(*b, nlohmann::json::array(), "s")["ok"], false);
  EXPECT_EQ(HandleApprovalMessage(*b, {{"op", "hello"}}, "s")["session"], "s");
  EXPECT_EQ(HandleApprovalMessage(*b, {{"op", "grants"}}, "s")["grants"].size(), 0u);
  auto r = HandleApprovalMessage(*b, {{"op", "approve"}, {"id", 18446744073709551615ULL}}, "s");
  EXPECT_EQ(r["error"]["code"], "not_found");
}

TEST(ApprovalClient, RefusesMissingSocketsAndBadReplies) {
  TempDir t;
  EXPECT_FALSE(CallApprovalSocket(t.path() + "/none.sock", {{"op", "hello"}}, 1s).ok());
  // A server that answers garbage, or nothing.
  std::string path = t.path() + "/junk.sock";
  int lfd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a = {};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 4), 0);
  std::thread server([lfd] {
    int c = ::accept(lfd, nullptr, nullptr);
    char buf[256];
    (void)!::read(c, buf, sizeof buf);
    (void)!::write(c, "garbage\n", 8);
    ::close(c);
    c = ::accept(lfd, nullptr, nullptr);
    (void)!::read(c, buf, sizeof buf);
    std::this_thread::sleep_for(500ms);  // no reply in time
    ::close(c);
  });
  auto bad = CallApprovalSocket(path, {{"op", "hello"}}, 2s);
  EXPECT_FALSE(bad.ok());
  auto slow = CallApprovalSocket(path, {{"op", "hello"}}, 100ms);
  EXPECT_EQ(slow.status().code(), Code::kTimeout);
  server.join();
  ::close(lfd);
}

}  // namespace
}  // namespace ward::supervisor
