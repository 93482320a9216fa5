// Grants: matching (exact, prefix, host pattern, access, port), lifetimes (once consumed,
// session kept, duration expiring on an injected clock), revocation, and the pure helpers.
#include <gtest/gtest.h>

#include <thread>

#include "approvals_test_util.h"
#include "supervisor/approvals/approval_broker.h"

namespace ward::supervisor {
namespace {

using namespace std::chrono_literals;
using testing::EventsOfType;
using testing::ManualClock;

class GrantsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    BrokerOptions o;
    o.now = clock_.Fn();
    auto b = ApprovalBroker::Create(io_, o, &events_);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    broker_ = *b;
  }

  Grant Make(RequestKind kind, SubjectMatch match, std::string subject,
             GrantScope scope = {Lifetime::kSession, 0ms}, FileAccess access = FileAccess::kRead,
             uint16_t port = 443) {
    GrantSpec s;
    s.kind = kind;
    s.match = match;
    s.subject = std::move(subject);
    s.scope = scope;
    s.access = access;
    s.port = port;
    auto g = broker_->CreateGrant(s, "test");
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return g.ok() ? *g : Grant{};
  }

  bool MatchFile(std::string_view path, FileAccess a = FileAccess::kRead) {
    return broker_->Match(RequestKind::kFile, path, a, 0).has_value();
  }
  bool MatchHost(std::string_view host, uint16_t port = 443) {
    return broker_->Match(RequestKind::kHost, host, FileAccess::kRead, port).has_value();
  }

  asio::io_context io_;
  ManualClock clock_;
  MemoryEventSink events_;
  std::shared_ptr<ApprovalBroker> broker_;
};

TEST_F(GrantsTest, ExactPathMatchesOnlyThatPath) {
  Make(RequestKind::kFile, SubjectMatch::kExactPath, "/data/report.csv");
  EXPECT_TRUE(MatchFile("/data/report.csv"));
  EXPECT_TRUE(MatchFile("/data//./report.csv"));  // the same path, spelled differently
  EXPECT_FALSE(MatchFile("/data/report.csv.bak"));
  EXPECT_FALSE(MatchFile("/data/report"));
  EXPECT_FALSE(MatchFile("/data"));
  EXPECT_FALSE(MatchFile("/data/report.csv/x"));
}

TEST_F(GrantsTest, PrefixIsComponentWise) {
  Make(RequestKind::kFile, SubjectMatch::kPathPrefix, "/data/in");
  EXPECT_TRUE(MatchFile("/data/in"));
  EXPECT_TRUE(MatchFile("/data/in/a"));
  EXPECT_TRUE(MatchFile("/data/in/a/b/c"));
  EXPECT_FALSE(MatchFile("/data/inbox/a"));  // not a component boundary
  EXPECT_FALSE(MatchFile("/data"));
  EXPECT_FALSE(MatchFile("/data/other"));
}

TEST_F(GrantsTest, DotDotCannotClimbOutOfAPrefix) {
  Make(RequestKind::kFile, SubjectMatch::kPathPrefix, "/data/in");
  EXPECT_FALSE(MatchFile("/data/in/../../etc/shadow"));
  EXPECT_FALSE(MatchFile("/data/in/.."));
  EXPECT_TRUE(MatchFile("/data/in/x/../y"));  // stays inside
}

TEST_F(GrantsTest, RelativeOrMalformedPathsNeverMatch) {
  Make(RequestKind::kFile, SubjectMatch::kPathPrefix, "/data");
  EXPECT_FALSE(MatchFile("data/x"));
  EXPECT_FALSE(MatchFile(""));
  EXPECT_FALSE(MatchFile(std::string("/data/x\0y", 9)));
  EXPECT_FALSE(MatchFile("/data/" + std::string(5000, 'a')));
}

TEST_F(GrantsTest, AccessMustBeCovered) {
  Make(RequestKind::kFile, SubjectMatch::kExactPath, "/r", {Lifetime::kSession, 0ms},
       FileAccess::kRead);
  Make(RequestKind::kFile, SubjectMatch::kExactPath, "/rw", {Lifetime::kSession, 0ms},
       FileAccess::kReadWrite);
  Make(RequestKind::kFile, SubjectMatch::kExactPath, "/w", {Lifetime::kSession, 0ms},
       FileAccess::kWrite);
  Make(RequestKind::kFile, SubjectMatch::kExactPath, "/c", {Lifetime::kSession, 0ms},
       FileAccess::kCreate);
  EXPECT_TRUE(MatchFile("/r", FileAccess::kRead));
  EXPECT_FALSE(MatchFile("/r", FileAccess::kWrite));
  EXPECT_FALSE(MatchFile("/r", FileAccess::kReadWrite));
  EXPECT_FALSE(MatchFile("/r", FileAccess::kCreate));
  EXPECT_TRUE(MatchFile("/rw", FileAccess::kRead));
  EXPECT_TRUE(MatchFile("/rw", FileAccess::kWrite));
  EXPECT_TRUE(MatchFile("/rw", FileAccess::kReadWrite));
  EXPECT_FALSE(MatchFile("/rw", FileAccess::kCreate));
  EXPECT_FALSE(MatchFile("/w", FileAccess::kRead));
  EXPECT_TRUE(MatchFile("/w", FileAccess::kWrite));
  EXPECT_TRUE(MatchFile("/c", FileAccess::kCreate));
  EXPECT_TRUE(MatchFile("/c", FileAccess::kRead));
}

TEST_F(GrantsTest, AccessCoversTable) {
  EXPECT_TRUE(AccessCovers(FileAccess::kCreate, FileAccess::kReadWrite));
  EXPECT_FALSE(AccessCovers(FileAccess::kWrite, FileAccess::kRead));
  EXPECT_FALSE(AccessCovers(FileAccess::kRead, FileAccess::kWrite));
  EXPECT_FALSE(AccessCovers(FileAccess::kReadWrite, FileAccess::kCreate));
  for (auto a :
       {FileAccess::kRead, FileAccess::kWrite, FileAccess::kReadWrite, FileAccess::kCreate}) {
    EXPECT_TRUE(AccessCovers(a, a));
    EXPECT_EQ(ParseFileAccess(FileAccessName(a)), a);
  }
  EXPECT_FALSE(ParseFileAccess("rw").has_value());
}

TEST_F(GrantsTest, ExactHostAndPort) {
  Make(RequestKind::kHost, SubjectMatch::kExactHost, "API.Example.com.", {Lifetime::kSession, 0ms},
       FileAccess::kRead, 443);
  EXPECT_TRUE(MatchHost("api.example.com", 443));
  EXPECT_TRUE(MatchHost("API.EXAMPLE.COM", 443));
  EXPECT_FALSE(MatchHost("api.example.com", 80));
  EXPECT_FALSE(MatchHost("example.com", 443));
  EXPECT_FALSE(MatchHost("x.api.example.com", 443));
  EXPECT_FALSE(MatchHost("api.example.com.evil.test", 443));
  EXPECT_FALSE(MatchHost("not a host", 443));
}

TEST_F(GrantsTest, HostPatternMatchesSubdomainsOnly) {
  Make(RequestKind::kHost, SubjectMatch::kHostPattern, "*.example.com");
  EXPECT_TRUE(MatchHost("a.example.com"));
  EXPECT_TRUE(MatchHost("a.b.example.com"));
  EXPECT_FALSE(MatchHost("example.com"));
  EXPECT_FALSE(MatchHost("badexample.com"));
  EXPECT_FALSE(MatchHost("a.example.com.evil.test"));
  EXPECT_FALSE(MatchHost("a.example.com", 8443));
}

TEST_F(GrantsTest, AddressesMatchExactlyAndDisguisesAreTheSameAddress) {
  Make(RequestKind::kHost, SubjectMatch::kExactHost, "127.0.0.1", {Lifetime::kSession, 0ms},
       FileAccess::kRead, 8080);
  EXPECT_TRUE(MatchHost("127.0.0.1", 8080));
  EXPECT_TRUE(MatchHost("0x7f.1", 8080));  // inet_aton spelling of the same address
  EXPECT_FALSE(MatchHost("127.0.0.2", 8080));
}

TEST_F(GrantsTest, BadGrantSpecsAreRefused) {
  GrantSpec s;
  s.kind = RequestKind::kFile;
  s.match = SubjectMatch::kPathPrefix;
  s.subject = "/";
  s.scope.lifetime = Lifetime::kSession;
  EXPECT_FALSE(broker_->CreateGrant(s, "t").ok());  // everything
  s.subject = "relative";
  EXPECT_FALSE(broker_->CreateGrant(s, "t").ok());
  s.kind = RequestKind::kHost;
  s.match = SubjectMatch::kHostPattern;
  s.subject = "*.com";
  EXPECT_FALSE(broker_->CreateGrant(s, "t").ok());  // a top-level domain
  s.subject = "example.com";
  EXPECT_FALSE(broker_->CreateGrant(s, "t").ok());  // not a pattern
  s.match = SubjectMatch::kExactPath;
  EXPECT_FALSE(broker_->CreateGrant(s, "t").ok());  // kind and match disagree
  s.match = SubjectMatch::kExactHost;
  s.scope = {Lifetime::kDuration, 0ms};
  EXPECT_FALSE(broker_->CreateGrant(s, "t").ok());  // zero duration
  EXPECT_TRUE(broker_->Grants().empty());
}

TEST_F(GrantsTest, OnceIsConsumedByTheFirstUse) {
  Grant g = Make(RequestKind::kFile, SubjectMatch::kExactPath, "/once", {Lifetime::kOnce, 0ms});
  EXPECT_TRUE(MatchFile("/once"));
  EXPECT_FALSE(MatchFile("/once"));
  auto all = broker_->Grants();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].id, g.id);
  EXPECT_EQ(all[0].state, Grant::State::kUsed);
  EXPECT_EQ(all[0].uses, 1u);
}

TEST_F(GrantsTest, OnceGrantIsConsumedByExactlyOneOfManyThreads) {
  Make(RequestKind::kFile, SubjectMatch::kExactPath, "/race", {Lifetime::kOnce, 0ms});
  std::atomic<int> wins{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 100; ++k) {
        if (broker_->Match(RequestKind::kFile, "/race", FileAccess::kRead, 0)) ++wins;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wins.load(), 1);
}

TEST_F(GrantsTest, SessionGrantIsKept) {
  Make(RequestKind::kFile, SubjectMatch::kExactPath, "/s");
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(MatchFile("/s"));
  clock_.now += std::chrono::hours(24 * 365);
  EXPECT_TRUE(MatchFile("/s"));
  EXPECT_EQ(broker_->Grants()[0].uses, 6u);
}

TEST_F(GrantsTest, SessionGrantIsPreferredToAOnceGrant) {
  Grant once = Make(RequestKind::kFile, SubjectMatch::kExactPath, "/p", {Lifetime::kOnce, 0ms});
  Make(RequestKind::kFile, SubjectMatch::kPathPrefix, "/p");
  EXPECT_TRUE(MatchFile("/p"));
  EXPECT_TRUE(MatchFile("/p"));
  for (const Grant& g : broker_->Grants()) {
    if (g.id == once.id) {
      EXPECT_EQ(g.state, Grant::State::kLive);
    }
  }
}

TEST_F(GrantsTest, DurationExpiresOnTheInjectedClock) {
  Grant g = Make(RequestKind::kFile, SubjectMatch::kExactPath, "/d", {Lifetime::kDuration, 10min});
  EXPECT_TRUE(g.expires.has_value());
  EXPECT_TRUE(MatchFile("/d"));
  clock_.now += 9min + 59s;
  EXPECT_TRUE(MatchFile("/d"));
  clock_.now += 1s;
  EXPECT_FALSE(MatchFile("/d"));
  auto all = broker_->Grants();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, Grant::State::kExpired);
  auto expired = EventsOfType(events_, "grant.expire");
  ASSERT_EQ(expired.size(), 1u);  // reported once
  EXPECT_EQ(expired[0].data["grant"], g.id);
}

TEST_F(GrantsTest, RevokeStopsNewUsesAtOnce) {
  Grant g = Make(RequestKind::kFile, SubjectMatch::kPathPrefix, "/rv");
  EXPECT_TRUE(MatchFile("/rv/a"));
  ASSERT_TRUE(broker_->Revoke(g.id, "test").ok());
  EXPECT_FALSE(MatchFile("/rv/a"));
  EXPECT_EQ(broker_->Revoke(g.id, "test").code(), Code::kFailedPrecondition);
  EXPECT_EQ(broker_->Revoke(999, "test").code(), Code::kNotFound);
  auto revoked = EventsOfType(events_, "grant.revoke");
  ASSERT_EQ(revoked.size(), 1u);
  EXPECT_EQ(revoked[0].data["by"], "test");
}

TEST_F(GrantsTest, RevokeRacesWithMatchingThreads) {
  Grant g = Make(RequestKind::kFile, SubjectMatch::kPathPrefix, "/hot");
  std::atomic<bool> revoked{false};
  std::atomic<int> after{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 2000; ++k) {
        bool was_revoked = revoked.load();
        bool ok = broker_->Match(RequestKind::kFile, "/hot/f", FileAccess::kRead, 0).has_value();
        if (was_revoked && ok) ++after;  // a use that began after the revocation returned
      }
    });
  }
  std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(broker_->Revoke(g.id, "test").ok());
  revoked = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(after.load(), 0);
}

TEST_F(GrantsTest, EventsForCreateAndUseCarryTheGrant) {
  Grant g = Make(RequestKind::kHost, SubjectMatch::kExactHost, "example.com");
  EXPECT_TRUE(MatchHost("example.com"));
  auto created = EventsOfType(events_, "grant.create");
  ASSERT_EQ(created.size(), 1u);
  EXPECT_EQ(created[0].data["grant"], g.id);
  EXPECT_EQ(created[0].data["subject"], "example.com");
  EXPECT_EQ(created[0].data["scope"], "session");
  auto used = EventsOfType(events_, "grant.use");
  ASSERT_EQ(used.size(), 1u);
  EXPECT_EQ(used[0].data["uses"], 1);
}

TEST_F(GrantsTest, DeadGrantsAreForgottenFirstWhenFull) {
  BrokerOptions o;
  o.max_grants = 2;
  auto b = ApprovalBroker::Create(io_, o, nullptr);
  ASSERT_TRUE(b.ok());
  GrantSpec s;
  s.kind = RequestKind::kFile;
  s.subject = "/a";
  s.scope.lifetime = Lifetime::kSession;
  auto g1 = (*b)->CreateGrant(s, "t");
  s.subject = "/b";
  auto g2 = (*b)->CreateGrant(s, "t");
  ASSERT_TRUE(g1.ok() && g2.ok());
  s.subject = "/c";
  EXPECT_EQ((*b)->CreateGrant(s, "t").status().code(), Code::kResourceExhausted);
  ASSERT_TRUE((*b)->Revoke(g1->id, "t").ok());
  EXPECT_TRUE((*b)->CreateGrant(s, "t").ok());
  EXPECT_EQ((*b)->Grants().size(), 2u);
}

TEST(ApprovalsHelpers, ParseScope) {
  EXPECT_EQ(ParseScope("once")->lifetime, Lifetime::kOnce);
  EXPECT_EQ(ParseScope("session")->lifetime, Lifetime::kSession);
  auto ten = ParseScope("10m");
  ASSERT_TRUE(ten.ok());
  EXPECT_EQ(ten->lifetime, Lifetime::kDuration);
  EXPECT_EQ(ten->duration, std::chrono::minutes(10));
  EXPECT_EQ(ScopeName(*ten), "10m");
  EXPECT_EQ(ScopeName(*ParseScope("1h30m")), "1h30m");
  EXPECT_EQ(ScopeName(*ParseScope("90s")), "1m30s");
  EXPECT_EQ(ScopeName(*ParseScope("2d")), "2d");
  EXPECT_FALSE(ParseScope("").ok());
  EXPECT_FALSE(ParseScope("0s").ok());
  EXPECT_FALSE(ParseScope("forever").ok());
  EXPECT_FALSE(ParseScope("-5m").ok());
  EXPECT_FALSE(ParseScope("31d").ok());
  EXPECT_FALSE(ParseScope("99999999999999999999h").ok());
}

TEST(ApprovalsHelpers, NormalizeSubject) {
  EXPECT_EQ(*NormalizeSubject(RequestKind::kFile, "/a//b/./c/../d"), "/a/b/d");
  EXPECT_FALSE(NormalizeSubject(RequestKind::kFile, "a/b").ok());
  EXPECT_FALSE(NormalizeSubject(RequestKind::kFile, "").ok());
  EXPECT_EQ(*NormalizeSubject(RequestKind::kHost, "Bücher.Example."), "xn--bcher-kva.example");
  EXPECT_EQ(*NormalizeSubject(RequestKind::kHost, "[::1]"), "::1");
  EXPECT_FALSE(NormalizeSubject(RequestKind::kHost, "a b").ok());
  EXPECT_FALSE(NormalizeSubject(RequestKind::kHost, std::string(2000, 'a')).ok());
}

TEST(ApprovalsHelpers, PathGlobs) {
  auto split = [](std::string p) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < p.size()) {
      size_t j = p.find('/', i + 1);
      if (j == std::string::npos) j = p.size();
      if (j > i + 1) out.push_back(p.substr(i + 1, j - i - 1));
      i = j;
    }
    return out;
  };
  EXPECT_TRUE(MatchPathGlob(split("/home/u/*.csv"), "/home/u/a.csv"));
  EXPECT_FALSE(MatchPathGlob(split("/home/u/*.csv"), "/home/u/d/a.csv"));
  EXPECT_FALSE(MatchPathGlob(split("/home/u/*"), "/home/u/.ssh"));  // leading dot is literal
  EXPECT_TRUE(MatchPathGlob(split("/home/u/.*"), "/home/u/.ssh"));
  EXPECT_TRUE(MatchPathGlob(split("/home/u/**"), "/home/u/.ssh/id_ed25519"));
  EXPECT_TRUE(MatchPathGlob(split("/home/u/**"), "/home/u"));
  EXPECT_TRUE(MatchPathGlob(split("/**/id_rsa"), "/x/y/z/id_rsa"));
  EXPECT_FALSE(MatchPathGlob(split("/**/id_rsa"), "/x/y/z/id_rsa.pub"));
  EXPECT_TRUE(MatchPathGlob(split("/a/**/b/**/c"), "/a/x/b/y/z/c"));
  EXPECT_FALSE(MatchPathGlob(split("/a/b"), "/a/b/c"));
  // A long path from the sandbox against several "**" stays linear (a backtracking matcher
  // would take hours here and hit the test timeout).
  std::string deep;
  for (int i = 0; i < 2000; ++i) deep += "/d";
  EXPECT_FALSE(MatchPathGlob(split("/**/d/**/d/**/d/**/x"), deep));
  EXPECT_TRUE(MatchPathGlob(split("/**/d/**/d/**/d/**"), deep));
}

TEST(ApprovalsHelpers, DescribeAndJson) {
  ApprovalRequest r = testing::HostRequest("::1", 8080);
  r.id = 7;
  EXPECT_EQ(DescribeRequest(r), "connect [::1]:8080");
  nlohmann::json j = RequestToJson(r);
  EXPECT_EQ(j["id"], 7);
  EXPECT_EQ(j["kind"], "host");
  EXPECT_EQ(j["port"], 8080);
  EXPECT_FALSE(j.contains("access"));
  ApprovalRequest f = testing::FileRequest("/x", FileAccess::kCreate);
  EXPECT_EQ(DescribeRequest(f), "create /x");
  EXPECT_EQ(RequestToJson(f)["access"], "create");
}

}  // namespace
}  // namespace ward::supervisor
