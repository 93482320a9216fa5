// Reading sessions back: list, resolve, tail, summaries, terminal safety.
#include "audit/sessions.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "audit/session_log.h"
#include "audit_test_util.h"

namespace ward::audit {
namespace {

using testing::EventsPath;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

std::unique_ptr<SessionLog> Open(const std::string& state, const std::string& id) {
  SessionLog::Options o;
  o.state_dir = state;
  o.session_id = id;
  auto log = SessionLog::Create(o);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(log).value() : nullptr;
}

TEST(SessionsTest, ListSummarisesNewestFirst) {
  TempDir tmp;
  {
    auto a = Open(tmp.path(), "20260101T000000Z-aaaaaaaa");
    a->Emit("session.start", {{"command", {"make", "test", "a b"}}});
    a->Emit("net.deny", {{"host", "x"}});
    a->Emit("dns.deny", {{"name", "x"}});
    a->Emit("net.allow", {{"host", "y"}});
    a->Emit("credential.leak_attempt", {{"name", "gh"}});
    a->Emit("limit.hit", {{"limit", "memory"}});
    a->Emit("session.end", {{"exit_code", 2}});
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // distinct start ms
  {
    auto b = Open(tmp.path(), "20260101T000001Z-bbbbbbbb");
    b->Emit("session.start", {{"command", "sh -c 'kill -9 $$'"}});
    b->Emit("session.end", {{"exit_code", nullptr}, {"signal", "SIGKILL"}});
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  {
    auto c = Open(tmp.path(), "20260101T000002Z-cccccccc");
    c->Emit("session.start", {{"command", {"true"}}});
    c->Emit("setup.error", {{"stage", "landlock"}, {"errno", 38}});
  }
  ASSERT_EQ(::mkdir((tmp.path() + "/sessions/.hidden").c_str(), 0700), 0);  // skipped
  WriteFile(tmp.path() + "/sessions/not-a-dir", "x");                       // skipped

  auto all = ListSessions(tmp.path());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, "20260101T000002Z-cccccccc");
  EXPECT_EQ(all[1].id, "20260101T000001Z-bbbbbbbb");
  EXPECT_EQ(all[2].id, "20260101T000000Z-aaaaaaaa");

  EXPECT_TRUE(all[0].setup_error);
  EXPECT_FALSE(all[0].ended);
  EXPECT_EQ(all[0].command, "true");

  EXPECT_TRUE(all[1].ended);
  EXPECT_EQ(all[1].signal, "SIGKILL");
  EXPECT_FALSE(all[1].exit_code.has_value());
  EXPECT_EQ(all[1].command, "sh -c 'kill -9 $$'");

  EXPECT_TRUE(all[2].ended);
  ASSERT_TRUE(all[2].exit_code.has_value());
  EXPECT_EQ(*all[2].exit_code, 2);
  EXPECT_EQ(all[2].denials, 4);  // net.deny, dns.deny, leak_attempt, limit.hit
  EXPECT_EQ(all[2].records, 7);
  EXPECT_EQ(all[2].command, "make test \"a b\"");
  EXPECT_FALSE(all[2].start.empty());

  auto brief = ListSessions(tmp.path(), /*brief=*/true);
  ASSERT_EQ(brief.size(), 3u);
  EXPECT_EQ(brief[2].denials, 0);
  EXPECT_EQ(brief[2].command, "make test \"a b\"");
}

TEST(SessionsTest, ListSurvivesGarbageLogs) {
  TempDir tmp;
  auto a = Open(tmp.path(), "a");
  a->Emit("session.start", {{"command", 5}});
  ASSERT_TRUE(a->Close().ok());
  WriteFile(EventsPath(a->dir()), ReadFile(EventsPath(a->dir())) + "garbage\n" +
                                      std::string(200000, '[') + "\n{\"type\":7}\n[]\n");
  auto all = ListSessions(tmp.path());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].command, "");
  EXPECT_GE(all[0].records, 1);
  EXPECT_TRUE(ListSessions(tmp.path() + "/does-not-exist").empty());
}

TEST(SessionsTest, ResolveByLastExactAndUniquePrefix) {
  TempDir tmp;
  EXPECT_EQ(ResolveSession(tmp.path(), "last").status().code(), Code::kNotFound);
  for (const char* id : {"20260101T000000Z-aaaa", "20260101T000000Z-aabb", "20260102T000000Z-cc"}) {
    auto log = Open(tmp.path(), id);
    log->Emit("session.start", {});
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto last = ResolveSession(tmp.path(), "last");
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->id, "20260102T000000Z-cc");
  auto exact = ResolveSession(tmp.path(), "20260101T000000Z-aaaa");
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->id, "20260101T000000Z-aaaa");
  auto prefix = ResolveSession(tmp.path(), "20260101T000000Z-aab");
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(prefix->id, "20260101T000000Z-aabb");
  auto ambiguous = ResolveSession(tmp.path(), "20260101");
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_NE(ambiguous.status().message().find("ambiguous"), std::string::npos);
  EXPECT_NE(ambiguous.status().message().find("20260101T000000Z-aaaa"), std::string::npos);
  auto unknown = ResolveSession(tmp.path(), "2027");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), Code::kNotFound);
  EXPECT_FALSE(ResolveSession(tmp.path(), "").ok());
  auto hostile = ResolveSession(tmp.path(), "\x1b]0;pwned\x07");
  ASSERT_FALSE(hostile.ok());
  EXPECT_EQ(hostile.status().message().find('\x1b'), std::string::npos);
}

TEST(SessionsTest, LogTailReturnsOnlyCompleteNewLines) {
  TempDir tmp;
  std::string dir = tmp.path() + "/s";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  LogTail tail(dir);
  auto none = tail.Poll();  // no file yet: nothing, no error
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  WriteFile(EventsPath(dir), "one\ntwo\nthr");
  auto first = tail.Poll();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, (std::vector<std::string>{"one", "two"}));
  WriteFile(EventsPath(dir), "one\ntwo\nthree\nfour\n");
  auto second = tail.Poll();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, (std::vector<std::string>{"three", "four"}));
  auto third = tail.Poll();
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->empty());
  WriteFile(EventsPath(dir), "x\n");  // shrank: someone truncated the log
  EXPECT_FALSE(tail.Poll().ok());
}

TEST(SessionsTest, LogTailFollowsALiveSession) {
  TempDir tmp;
  auto log = Open(tmp.path(), "live");
  LogTail tail(log->dir());
  log->Emit("session.start", {});
  auto a = tail.Poll();
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 1u);
  log->Emit("net.deny", {});
  log->Emit("session.end", {});
  auto b = tail.Poll();
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->size(), 2u);
  EXPECT_NE((*b)[1].find("session.end"), std::string::npos);
}

TEST(SessionsTest, TypeFilter) {
  EXPECT_TRUE(TypeMatches("", "net.deny"));
  EXPECT_TRUE(TypeMatches("net.deny", "net.deny"));
  EXPECT_TRUE(TypeMatches("net.", "net.deny"));
  EXPECT_FALSE(TypeMatches("net.", "dns.deny"));
  EXPECT_FALSE(TypeMatches("net", "net.deny"));  // a bare prefix is not a family
  EXPECT_FALSE(TypeMatches("net.deny", "net.denyall"));
}

TEST(SessionsTest, SanitizeForTerminalNeutralisesEscapes) {
  EXPECT_EQ(SanitizeForTerminal("plain ü ✓"), "plain ü ✓");
  EXPECT_EQ(SanitizeForTerminal("\x1b[31mred"), "\\x1b[31mred");
  EXPECT_EQ(SanitizeForTerminal("a\nb\tc\x7f"), "a\\x0ab\\x09c\\x7f");
  EXPECT_EQ(SanitizeForTerminal("\xc2\x9b"
                                "2J"),
            "\\u009b2J");  // C1 CSI
  EXPECT_EQ(SanitizeForTerminal("abc\xe2\x80\xae"
                                "fdp.exe"),
            "abc\\u202efdp.exe");  // RLO
  EXPECT_EQ(SanitizeForTerminal("\xff\xc3"), "\\xff\\xc3");
  EXPECT_EQ(SanitizeForTerminal("\xc0\xaf"), "\\xc0\\xaf");  // overlong '/'
  EXPECT_EQ(SanitizeForTerminal(std::string("\0", 1)), "\\x00");
}

TEST(SessionsTest, SummaryPutsWellKnownKeysFirstAndCuts) {
  nlohmann::json data = {{"zeta", 1},
                         {"host", "example.com"},
                         {"port", 443},
                         {"msg", "two words"},
                         {"obj", {{"a", 1}}}};
  EXPECT_EQ(SummarizeData(data),
            "host=example.com port=443 msg=\"two words\" obj={\"a\":1} zeta=1");
  std::string s = SummarizeData({{"k", std::string(500, 'x')}}, 40);
  EXPECT_EQ(s, "k=" + std::string(37, 'x') + "…");
  std::string u = SummarizeData({{"k", std::string(20, 'x') + "üüüüüüüüüüüüüüüüüü"}}, 25);
  EXPECT_TRUE(u.ends_with("…"));
  EXPECT_EQ(u, "k=" + std::string(20, 'x') + "üü…");
  EXPECT_EQ(SummarizeData({{"h", "\x1b]52;c;evil\x07"}}), "h=\\x1b]52;c;evil\\x07");
  EXPECT_EQ(SummarizeData(nlohmann::json::object()), "");
}

}  // namespace
}  // namespace ward::audit
