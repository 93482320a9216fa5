// SessionLog: layout and permissions, record format, when records reach the file,
// failure handling at Create, concurrency.
#include "audit/session_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "audit/record.h"
#include "audit/verify.h"
#include "audit_test_util.h"

namespace ward::audit {
namespace {

using testing::EventsPath;
using testing::HeadPath;
using testing::ReadFile;
using testing::ReadLines;
using testing::TempDir;
using testing::WriteFile;
using State = VerifyReport::State;

std::unique_ptr<SessionLog> MustCreate(
    const std::string& state, const std::string& id,
    std::chrono::milliseconds interval = std::chrono::milliseconds(50)) {
  SessionLog::Options o;
  o.state_dir = state;
  o.session_id = id;
  o.flush_interval = interval;
  auto log = SessionLog::Create(o);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(log).value() : nullptr;
}

mode_t Mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(SessionLogTest, CreatesPrivateLayout) {
  TempDir tmp;
  std::string state = tmp.path() + "/state/ward";  // parents created too
  auto log = MustCreate(state, "20261130T162233Z-3f9a1c2e");
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->dir(), state + "/sessions/20261130T162233Z-3f9a1c2e");
  EXPECT_EQ(Mode(state), 0700u);
  EXPECT_EQ(Mode(state + "/sessions"), 0700u);
  EXPECT_EQ(Mode(log->dir()), 0700u);
  EXPECT_EQ(Mode(EventsPath(log->dir())), 0600u);
  EXPECT_EQ(Mode(HeadPath(log->dir())), 0600u);
  EXPECT_EQ(ReadFile(HeadPath(log->dir())),
            "{\"hash\":\"" + std::string(kZeroHash) + "\",\"seq\":-1}\n");
  EXPECT_EQ(ReadFile(EventsPath(log->dir())), "");
}

TEST(SessionLogTest, RecordsHaveTheDocumentedShapeAndChain) {
  TempDir tmp;
  auto log = MustCreate(tmp.path(), "s");
  ASSERT_NE(log, nullptr);
  log->Emit("session.start", {{"command", {"true"}}});
  log->Emit("net.deny", {{"host", "x.example"}, {"port", 443}});
  log->Emit("session.end", {{"exit_code", 0}});
  ASSERT_TRUE(log->Close().ok());
  auto lines = ReadLines(EventsPath(log->dir()));
  ASSERT_EQ(lines.size(), 3u);
  std::string prev(kZeroHash);
  for (size_t i = 0; i < lines.size(); ++i) {
    auto rec = nlohmann::json::parse(lines[i]);
    EXPECT_EQ(rec["seq"], static_cast<int64_t>(i));
    EXPECT_TRUE(IsValidTimestamp(rec["ts"].get<std::string>())) << rec["ts"];
    EXPECT_EQ(rec["prev"], prev);
    std::string hash = rec["hash"];
    rec.erase("hash");
    EXPECT_EQ(Sha256Hex(CanonicalJson(rec)), hash);
    prev = hash;
  }
  EXPECT_EQ(nlohmann::json::parse(lines[1])["data"]["host"], "x.example");
  EXPECT_EQ(ReadFile(HeadPath(log->dir())), "{\"hash\":\"" + prev + "\",\"seq\":2}\n");
  EXPECT_EQ(VerifySession(log->dir()).state, State::kIntact);
}

TEST(SessionLogTest, SyncTypesReachTheFileBeforeEmitReturns) {
  TempDir tmp;
  // An interval so long that only the synchronous path can explain the record being there.
  auto log = MustCreate(tmp.path(), "s", std::chrono::hours(1));
  ASSERT_NE(log, nullptr);
  for (const char* type : {"session.start", "setup.error", "session.end"}) {
    log->Emit(type, {{"t", type}});
    auto lines = ReadLines(EventsPath(log->dir()));
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(nlohmann::json::parse(lines.back())["type"], type);
    // The head follows too.
    auto head = nlohmann::json::parse(ReadFile(HeadPath(log->dir())));
    EXPECT_EQ(head["seq"], static_cast<int64_t>(lines.size()) - 1);
  }
}

TEST(SessionLogTest, OrdinaryEventsAreBatchedThenWrittenWithinTheInterval) {
  TempDir tmp;
  auto log = MustCreate(tmp.path(), "s", std::chrono::milliseconds(200));
  ASSERT_NE(log, nullptr);
  auto t0 = std::chrono::steady_clock::now();
  log->Emit("net.deny", {{"host", "a"}});
  // Not written synchronously...
  EXPECT_EQ(ReadFile(EventsPath(log->dir())), "");
  // ...but by the flusher, without any further call.
  while (ReadLines(EventsPath(log->dir())).empty() &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto elapsed = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(ReadLines(EventsPath(log->dir())).size(), 1u);
  EXPECT_GE(elapsed, std::chrono::milliseconds(150));
}

int Threads() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)e;
    ++n;
  }
  return n;
}

TEST(SessionLogTest, OnDemandTheFlusherStartsWithABurstOnly) {
  TempDir tmp;
  SessionLog::Options o;
  o.state_dir = tmp.path();
  o.session_id = "s";
  o.flush_interval = std::chrono::milliseconds(300);
  o.start_flusher = false;
  auto made = SessionLog::Create(o);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  std::unique_ptr<SessionLog> log = std::move(made).value();
  const int threads = Threads();
  log->StartFlusherOnDemand();
  const std::string events = EventsPath(log->dir());
  // Records far apart (or of the types always written at once) are written through, and no
  // thread is made for them.
  log->Emit("session.start", {{"i", 0}});
  log->Emit("exec", {{"i", 1}});
  EXPECT_EQ(ReadLines(events).size(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  log->Emit("net.deny", {{"i", 2}});
  EXPECT_EQ(ReadLines(events).size(), 3u);
  EXPECT_EQ(Threads(), threads);
  // A second ordinary record within the interval: the flusher starts and batches it.
  auto t0 = std::chrono::steady_clock::now();
  log->Emit("net.deny", {{"i", 3}});
  EXPECT_EQ(Threads(), threads + 1);
  if (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(250)) {
    EXPECT_EQ(ReadLines(events).size(), 3u);
  }
  while (ReadLines(events).size() < 4 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(ReadLines(events).size(), 4u);
  log->Emit("session.end", {{"i", 4}});
  ASSERT_TRUE(log->Close().ok());
  EXPECT_EQ(ReadLines(events).size(), 5u);
  EXPECT_EQ(VerifySession(log->dir()).state, State::kIntact);
}

TEST(SessionLogTest, FlushWritesEverythingAtOnce) {
  TempDir tmp;
  auto log = MustCreate(tmp.path(), "s", std::chrono::hours(1));
  ASSERT_NE(log, nullptr);
  for (int i = 0; i < 10; ++i) log->Emit("net.deny", {{"i", i}});
  EXPECT_EQ(ReadFile(EventsPath(log->dir())), "");
  ASSERT_TRUE(log->Flush().ok());
  EXPECT_EQ(ReadLines(EventsPath(log->dir())).size(), 10u);
  EXPECT_EQ(VerifySession(log->dir()).state, State::kUnterminated);
}

TEST(SessionLogTest, NonObjectDataIsWrapped) {
  TempDir tmp;
  auto log = MustCreate(tmp.path(), "s");
  ASSERT_NE(log, nullptr);
  log->Emit("a.b", nullptr);
  log->Emit("a.b", 42);
  log->Emit("a.b", {1, 2});
  log->Emit("a.b", "text");
  ASSERT_TRUE(log->Close().ok());
  auto lines = ReadLines(EventsPath(log->dir()));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["data"], nlohmann::json::object());
  EXPECT_EQ(nlohmann::json::parse(lines[1])["data"]["value"], 42);
  EXPECT_EQ(nlohmann::json::parse(lines[2])["data"]["value"], nlohmann::json({1, 2}));
  EXPECT_EQ(nlohmann::json::parse(lines[3])["data"]["value"], "text");
}

TEST(SessionLogTest, HostileDataStaysVerifiable) {
  TempDir tmp;
  auto log = MustCreate(tmp.path(), "s");
  ASSERT_NE(log, nullptr);
  nlohmann::json deep = "leaf";
  for (int i = 0; i < 500; ++i) {
    nlohmann::json outer = nlohmann::json::array();  // moved, not copied: copies recurse
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  nlohmann::json deep_data = nlohmann::json::object();
  deep_data["v"] = std::move(deep);
  log->Emit("x.deep", std::move(deep_data));
  log->Emit("x.utf8", {{"bad", std::string("\xff\xfe ok \xc3", 6)},
                       {std::string("k\xff", 2), "v"},
                       {"ctl", std::string("a\0b\x1b[31m\x7f", 9)}});
  log->Emit("x.numbers", {{"big", UINT64_MAX},
                          {"neg", INT64_MIN},
                          {"f", 0.1},
                          {"e", 1e300},
                          {"tiny", 5e-324},
                          {"nan", std::nan("")},
                          {"negzero", -0.0}});
  log->Emit("x.huge", {{"blob", std::string(3 << 20, 'a')}});
  log->Emit(std::string(1000, 't'), {});
  log->Emit(std::string("ty\npe\xff", 7), {});
  ASSERT_TRUE(log->Close().ok());
  VerifyReport r = VerifySession(log->dir());
  EXPECT_EQ(r.state, State::kUnterminated) << r.detail;
  EXPECT_EQ(r.records, 6);
  auto lines = ReadLines(EventsPath(log->dir()));
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_NE(lines[0].find("[too deep]"), std::string::npos);
  EXPECT_LT(lines[3].size(), 1000u);
  EXPECT_NE(lines[3].find("too large"), std::string::npos);
  EXPECT_LT(lines[4].size(), 600u);
}

TEST(SessionLogTest, EmitAfterCloseIsDroppedAndCloseIsIdempotent) {
  TempDir tmp;
  auto log = MustCreate(tmp.path(), "s");
  ASSERT_NE(log, nullptr);
  log->Emit("session.start", {});
  ASSERT_TRUE(log->Close().ok());
  log->Emit("net.deny", {});
  EXPECT_TRUE(log->Close().ok());
  EXPECT_EQ(ReadLines(EventsPath(log->dir())).size(), 1u);
  EXPECT_EQ(log->dropped(), 1);
  EXPECT_EQ(log->emitted(), 1);
}

TEST(SessionLogTest, DestructorFlushes) {
  TempDir tmp;
  std::string dir;
  {
    auto log = MustCreate(tmp.path(), "s", std::chrono::hours(1));
    ASSERT_NE(log, nullptr);
    dir = log->dir();
    log->Emit("net.deny", {});
  }
  EXPECT_EQ(ReadLines(EventsPath(dir)).size(), 1u);
  EXPECT_EQ(VerifySession(dir).state, State::kUnterminated);
}

TEST(SessionLogTest, CreateRejectsBadOptions) {
  TempDir tmp;
  const std::vector<std::string> bad_ids = {"",
                                            ".",
                                            "..",
                                            ".hidden",
                                            "a/b",
                                            "../x",
                                            "a b",
                                            std::string(200, 'a'),
                                            std::string("a\0b", 3)};
  for (const std::string& id : bad_ids) {
    SessionLog::Options o;
    o.state_dir = tmp.path();
    o.session_id = id;
    auto log = SessionLog::Create(o);
    EXPECT_FALSE(log.ok()) << "id '" << id << "'";
    if (!log.ok()) {
      EXPECT_EQ(log.status().code(), Code::kInvalidArgument);
    }
  }
  SessionLog::Options o;
  o.session_id = "ok";
  EXPECT_FALSE(SessionLog::Create(o).ok());  // no state dir
  o.state_dir = tmp.path();
  o.flush_interval = std::chrono::milliseconds(0);
  EXPECT_FALSE(SessionLog::Create(o).ok());
}

TEST(SessionLogTest, CreateRejectsAnAbsurdReserve) {
  TempDir tmp;
  SessionLog::Options o;
  o.state_dir = tmp.path();
  o.session_id = "huge";
  o.reserve_bytes = uint64_t{1} << 40;
  auto log = SessionLog::Create(o);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), Code::kInvalidArgument);
  EXPECT_NE(log.status().ToString().find("too large"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/sessions/huge"));
}

// A log without a reserve may not share its file system with what a sandbox writes; with a
// reserve, or on a file system of its own, it may.
TEST(SessionLogTest, NoReserveOnAFileSystemTheSandboxWritesIsRefused) {
  TempDir tmp;
  SessionLog::Options o;
  o.state_dir = tmp.path() + "/state";
  o.session_id = "bare";
  o.reserve_bytes = 0;
  auto bare = SessionLog::Create(o);
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_FALSE((*bare)->reserved());
  EXPECT_FALSE((*bare)->cannot_preallocate());
  std::filesystem::create_directories(tmp.path() + "/ws");
  Status st = RequireReserveOrOwnFileSystem(**bare, {"/nonexistent", tmp.path() + "/ws"});
  EXPECT_EQ(st.code(), Code::kFailedPrecondition);
  EXPECT_NE(st.ToString().find((*bare)->dir()), std::string::npos) << st.ToString();
  EXPECT_NE(st.ToString().find(tmp.path() + "/ws, which the sandbox can write"), std::string::npos)
      << st.ToString();
  EXPECT_NE(st.ToString().find("none was asked for"), std::string::npos) << st.ToString();
  // Control: a path on another file system (procfs) is no threat.
  EXPECT_TRUE(RequireReserveOrOwnFileSystem(**bare, {"/proc/self"}).ok());
  o.session_id = "reserved";
  o.reserve_bytes = 64 * 1024;
  auto reserved = SessionLog::Create(o);
  ASSERT_TRUE(reserved.ok()) << reserved.status().ToString();
  if (!(*reserved)->reserved()) GTEST_SKIP() << "this file system cannot preallocate";
  EXPECT_TRUE(RequireReserveOrOwnFileSystem(**reserved, {tmp.path() + "/ws"}).ok());
}

TEST(SessionLogTest, CreateRefusesAnExistingSession) {
  TempDir tmp;
  auto first = MustCreate(tmp.path(), "same");
  ASSERT_NE(first, nullptr);
  first->Emit("session.start", {});
  SessionLog::Options o;
  o.state_dir = tmp.path();
  o.session_id = "same";
  auto second = SessionLog::Create(o);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("already exists"), std::string::npos);
  // The first session is untouched.
  EXPECT_EQ(ReadLines(EventsPath(first->dir())).size(), 1u);
}

TEST(SessionLogTest, CreateFailsClearlyWhenTheStateDirIsAFile) {
  TempDir tmp;
  std::string file = tmp.path() + "/file";
  WriteFile(file, "x");
  SessionLog::Options o;
  o.state_dir = file;
  o.session_id = "s";
  auto log = SessionLog::Create(o);
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().ToString().find(file), std::string::npos) << log.status().ToString();
}

TEST(SessionLogTest, CreateDoesNotFollowASymlinkedSessionDir) {
  TempDir tmp;
  ASSERT_EQ(::mkdir((tmp.path() + "/sessions").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((tmp.path() + "/target").c_str(), 0700), 0);
  ASSERT_EQ(::symlink((tmp.path() + "/target").c_str(), (tmp.path() + "/sessions/s").c_str()), 0);
  SessionLog::Options o;
  o.state_dir = tmp.path();
  o.session_id = "s";
  EXPECT_FALSE(SessionLog::Create(o).ok());
  EXPECT_NE(::access((tmp.path() + "/target/events.jsonl").c_str(), F_OK), 0);
}

TEST(SessionLogTest, ConcurrentEmittersGetConsecutiveSeqs) {
  TempDir tmp;
  auto log = MustCreate(tmp.path(), "s", std::chrono::milliseconds(1));
  ASSERT_NE(log, nullptr);
  log->Emit("session.start", {});
  constexpr int kThreads = 8;
  constexpr int kEach = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        log->Emit("net.deny", {{"thread", t}, {"i", i}});
        if (i % 500 == 0) (void)log->Flush();
      }
    });
  }
  for (auto& th : threads) th.join();
  log->Emit("session.end", {{"exit_code", 0}});
  ASSERT_TRUE(log->Close().ok());
  auto lines = ReadLines(EventsPath(log->dir()));
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kEach + 2));
  std::set<std::pair<int, int>> seen;
  for (size_t i = 0; i < lines.size(); ++i) {
    auto rec = nlohmann::json::parse(lines[i]);
    ASSERT_EQ(rec["seq"], static_cast<int64_t>(i));
    if (rec["type"] == "net.deny")
      seen.insert({rec["data"]["thread"].get<int>(), rec["data"]["i"].get<int>()});
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kThreads * kEach));
  VerifyReport r = VerifySession(log->dir());
  EXPECT_EQ(r.state, State::kIntact) << r.detail;
  EXPECT_EQ(r.records, kThreads * kEach + 2);
}

TEST(SessionLogTest, RegisteredSecretsNeverReachTheFile) {
  TempDir tmp;
  const std::string secret = "ghp_S3cr3tV4lu3ThatMustNeverLeak";
  auto log = MustCreate(tmp.path(), "s");
  ASSERT_NE(log, nullptr);
  log->redactor().AddSecret(secret);
  log->Emit("session.start", {{"command", {"curl", "-H", "Authorization: Bearer " + secret}},
                              {"env", {{"GITHUB_TOKEN", "phantom-or-real"}, {"LANG", "C.UTF-8"}}},
                              {"nested", {{"deeper", {{"list", {"x", "pre" + secret + "post"}}}}}},
                              {secret, "as a key"}});
  log->Emit("credential." + secret, {{"url", "https://user:hunter2@example.com/path"}});
  log->Emit("session.end", {});
  ASSERT_TRUE(log->Close().ok());
  std::string text = ReadFile(EventsPath(log->dir()));
  EXPECT_EQ(text.find(secret), std::string::npos);
  EXPECT_EQ(text.find("phantom-or-real"), std::string::npos);
  EXPECT_EQ(text.find("hunter2"), std::string::npos);
  EXPECT_NE(text.find("Bearer [redacted]"), std::string::npos);
  EXPECT_NE(text.find("pre[redacted]post"), std::string::npos);
  EXPECT_NE(text.find("C.UTF-8"), std::string::npos);
  EXPECT_EQ(VerifySession(log->dir()).state, State::kIntact);
}

TEST(SessionLogTest, DefaultStateDirFollowsXdgThenHome) {
  std::string old_xdg = std::getenv("XDG_STATE_HOME") ? std::getenv("XDG_STATE_HOME") : "";
  std::string old_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  bool had_xdg = std::getenv("XDG_STATE_HOME") != nullptr;
  bool had_home = std::getenv("HOME") != nullptr;
  ::setenv("XDG_STATE_HOME", "/xdg/state", 1);
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(DefaultStateDir(), "/xdg/state/ward");
  ::setenv("XDG_STATE_HOME", "relative/state", 1);  // the XDG spec says: ignore
  EXPECT_EQ(DefaultStateDir(), "/home/u/.local/state/ward");
  ::unsetenv("XDG_STATE_HOME");
  ::setenv("HOME", "/home/u/", 1);
  EXPECT_EQ(DefaultStateDir(), "/home/u/.local/state/ward");
  ::unsetenv("HOME");
  std::string from_passwd = DefaultStateDir();  // whatever the passwd entry says
  EXPECT_TRUE(from_passwd.empty() || from_passwd.ends_with("/.local/state/ward")) << from_passwd;
  if (had_xdg) ::setenv("XDG_STATE_HOME", old_xdg.c_str(), 1);
  if (had_home) ::setenv("HOME", old_home.c_str(), 1);
}

TEST(SessionLogTest, NewSessionIdsAreValidSortableAndDistinct) {
  std::set<std::string> ids;
  for (int i = 0; i < 200; ++i) {
    std::string id = NewSessionId();
    ASSERT_EQ(id.size(), 25u) << id;
    EXPECT_EQ(id[8], 'T');
    EXPECT_EQ(id[15], 'Z');
    EXPECT_EQ(id[16], '-');
    EXPECT_TRUE(IsValidSessionId(id));
    ids.insert(id);
  }
  EXPECT_GE(ids.size(), 199u);  // 32 random bits: a collision among 200 is ~5e-6
  std::string a = NewSessionId();
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  std::string b = NewSessionId();
  EXPECT_LT(a.substr(0, 16), b.substr(0, 16));
}

}  // namespace
}  // namespace ward::audit
