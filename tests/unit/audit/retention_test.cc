// Retention: which sessions a prune removes, that it leaves a session its writer holds and one
// being created, that it takes the session's reserve link with it, and when the automatic prune
// is due.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "audit/retention.h"
#include "audit/session_log.h"
#include "audit/sessions.h"
#include "audit_test_util.h"

namespace ward::audit {
namespace {

using testing::TempDir;
using testing::WriteFile;
using Clock = std::chrono::system_clock;

class RetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_.path();
    sessions_ = SessionsDir(state_);
    ::mkdir(sessions_.c_str(), 0700);
  }
  // A finished session whose log was last written `age` ago.
  std::string Session(const std::string& id, std::chrono::seconds age, bool with_log = true) {
    const std::string d = sessions_ + "/" + id;
    EXPECT_EQ(::mkdir(d.c_str(), 0700), 0);
    WriteFile(d + "/head", "0 x\n");
    const std::string target = with_log ? d + "/events.jsonl" : d;
    if (with_log) WriteFile(target, "{}\n");
    struct timespec t[2];
    t[0].tv_sec = ::time(nullptr) - age.count();
    t[0].tv_nsec = 0;
    t[1] = t[0];
    EXPECT_EQ(::utimensat(AT_FDCWD, target.c_str(), t, 0), 0);
    return id;
  }
  std::set<std::string> Remaining() {
    std::set<std::string> out;
    for (const auto& s : ListSessions(state_, true)) out.insert(s.id);
    return out;
  }
  static std::chrono::seconds Days(int n) { return std::chrono::hours(24 * n); }

  TempDir dir_;
  std::string state_, sessions_;
};

TEST_F(RetentionTest, KeepRemovesAllButTheMostRecentlyWritten) {
  Session("s-old", Days(3));
  Session("s-new", Days(1));
  Session("s-mid", Days(2));
  PruneReport r = PruneSessions(state_, {std::nullopt, 1}, Clock::now(), false);
  EXPECT_EQ(Remaining(), std::set<std::string>{"s-new"});
  ASSERT_EQ(r.removed.size(), 2u);
  EXPECT_EQ(r.removed[0].id, "s-mid");
  EXPECT_EQ(r.removed[0].why, "beyond the newest 1");
  EXPECT_EQ(r.removed[1].id, "s-old");
  EXPECT_EQ(r.kept, 1u);
  EXPECT_TRUE(r.errors.empty());
}

TEST_F(RetentionTest, OlderThanRemovesByLastWriteAndADryRunRemovesNothing) {
  Session("a", Days(40));
  Session("b", Days(20));
  PruneLimits limits{Days(30), std::nullopt};
  PruneReport dry = PruneSessions(state_, limits, Clock::now(), true);
  ASSERT_EQ(dry.removed.size(), 1u);
  EXPECT_EQ(dry.removed[0].why, "older than 30d");
  EXPECT_EQ(Remaining(), (std::set<std::string>{"a", "b"}));
  PruneSessions(state_, limits, Clock::now(), false);
  EXPECT_EQ(Remaining(), std::set<std::string>{"b"});
}

TEST_F(RetentionTest, ASessionWhoseWriterHoldsItsLogIsKept) {
  Session("ended", Days(50));
  Session("writing", Days(60));
  UniqueFd writer(::open((sessions_ + "/writing/events.jsonl").c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_EQ(::flock(writer.get(), LOCK_SH | LOCK_NB), 0);
  PruneReport r = PruneSessions(state_, {std::nullopt, 0}, Clock::now(), false);
  EXPECT_EQ(Remaining(), std::set<std::string>{"writing"});
  EXPECT_EQ(r.in_use, std::vector<std::string>{"writing"});
  EXPECT_EQ(r.kept, 1u);
  writer.reset();  // closed: now it goes
  PruneSessions(state_, {std::nullopt, 0}, Clock::now(), false);
  EXPECT_TRUE(Remaining().empty());
}

TEST_F(RetentionTest, ARealSessionLogIsInUseUntilClosed) {
  SessionLog::Options o;
  o.state_dir = state_;
  o.session_id = NewSessionId();
  o.start_flusher = false;
  o.reserve_bytes = 0;  // without a reserve too
  auto log = SessionLog::Create(o);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  (*log)->Emit("session.start", {});
  PruneReport r = PruneSessions(state_, {std::nullopt, 0}, Clock::now(), false);
  EXPECT_EQ(r.in_use, std::vector<std::string>{o.session_id});
  ASSERT_TRUE((*log)->Close().ok());
  log->reset();
  r = PruneSessions(state_, {std::nullopt, 0}, Clock::now(), false);
  EXPECT_EQ(r.removed.size(), 1u);
  EXPECT_TRUE(Remaining().empty());
}

TEST_F(RetentionTest, ADirectoryWithoutItsLogIsLeftWhileNew) {
  Session("creating", std::chrono::seconds(5), /*with_log=*/false);
  Session("leftover", Days(3), /*with_log=*/false);
  PruneReport r = PruneSessions(state_, {std::nullopt, 0}, Clock::now(), false);
  EXPECT_EQ(r.in_use, std::vector<std::string>{"creating"});
  EXPECT_EQ(Remaining(), std::set<std::string>{"creating"});
}

TEST_F(RetentionTest, TheReserveLinkGoesWithTheSession) {
  Session("s", Days(3));
  const std::string reserved = sessions_ + "/.reserved";
  ASSERT_EQ(::mkdir(reserved.c_str(), 0700), 0);
  ASSERT_EQ(::link((sessions_ + "/s/events.jsonl").c_str(), (reserved + "/s").c_str()), 0);
  PruneSessions(state_, {Days(1), std::nullopt}, Clock::now(), false);
  struct stat st {};
  EXPECT_NE(::stat((reserved + "/s").c_str(), &st), 0);
  EXPECT_NE(::stat((sessions_ + "/s").c_str(), &st), 0);
}

TEST_F(RetentionTest, NoBoundRemovesNothing) {
  Session("s", Days(3000));
  PruneReport r = PruneSessions(state_, {}, Clock::now(), false);
  EXPECT_TRUE(r.removed.empty());
  EXPECT_EQ(r.kept, 1u);
}

TEST_F(RetentionTest, TheAutomaticPruneIsDueADayAfterTheStamp) {
  const std::string stamp = state_ + "/" + std::string(kPruneStampFile);
  // No stamp: made now, due a day later.
  EXPECT_EQ(CheckAutoPrune(state_, Clock::now()), AutoPrune::kNotDue);
  struct stat st {};
  ASSERT_EQ(::stat(stamp.c_str(), &st), 0);
  EXPECT_EQ(CheckAutoPrune(state_, Clock::now() + std::chrono::hours(23)), AutoPrune::kNotDue);
  EXPECT_EQ(CheckAutoPrune(state_, Clock::now() + std::chrono::hours(25)), AutoPrune::kDue);
  // Another prune holds the lock: a second one that does not wait gets none.
  Result<UniqueFd> first = LockPrune(state_, false);
  ASSERT_TRUE(first.ok() && *first);
  Result<UniqueFd> second = LockPrune(state_, false);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(*second);
}

TEST_F(RetentionTest, AgesAreShownInTheirLargestExactUnit) {
  EXPECT_EQ(FormatAge(Days(30)), "30d");
  EXPECT_EQ(FormatAge(std::chrono::hours(36)), "36h");
  EXPECT_EQ(FormatAge(std::chrono::minutes(90)), "90m");
  EXPECT_EQ(FormatAge(std::chrono::seconds(61)), "61s");
}

}  // namespace
}  // namespace ward::audit
