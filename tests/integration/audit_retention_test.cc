// Audit retention: `ward audit prune` removes exactly the sessions its bounds name, never one
// still being written, and records what it removed; a run starts the automatic prune when the
// stamp says a day has passed, and not otherwise.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "audit/sessions.h"
#include "harness.h"

namespace ward::test {
namespace {

namespace fs = std::filesystem;

class RetentionTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    state_ = root_->path() + "/state";
    sessions_ = state_ + "/ward/sessions";
    config_ = root_->path() + "/config";
    MakeDirs(config_ + "/ward");
    // A real session to copy: made in a state directory of its own.
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = root_->path() + "/template";
    ASSERT_EQ(Probe({"exit", "0"}, {}, o).status, 0);
    auto made = audit::ListSessions(root_->path() + "/template/ward");
    ASSERT_EQ(made.size(), 1u);
    template_ = made[0].dir;
  }
  RunOptions WithState() {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = state_;
    o.env["XDG_CONFIG_HOME"] = config_;
    return o;
  }
  // A session last written `days` ago (an id of NewSessionId's form, ordered by `n`).
  std::string OldSession(int n, int days) {
    char id[64];
    std::snprintf(id, sizeof id, "20260101T0000%02dZ-%08d", n % 60, n);
    fs::create_directories(sessions_);
    fs::copy(template_, sessions_ + "/" + id, fs::copy_options::recursive);
    SetAge(sessions_ + "/" + id + "/events.jsonl", std::chrono::hours(24 * days));
    return id;
  }
  static void SetAge(const std::string& path, std::chrono::seconds age) {
    struct timespec t[2];
    ::clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= age.count();
    t[1] = t[0];
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), t, 0), 0) << path;
  }
  std::set<std::string> Remaining() {
    std::set<std::string> ids;
    for (const auto& s : audit::ListSessions(state_ + "/ward", true)) ids.insert(s.id);
    return ids;
  }
  std::vector<nlohmann::json> PruneLog() {
    std::vector<nlohmann::json> out;
    std::ifstream in(state_ + "/ward/audit-prune.jsonl");
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  std::string state_, sessions_, config_, template_;
};

TEST_F(RetentionTest, PruneRemovesExactlyWhatItsBoundsNameAndNeverALiveSession) {
  std::vector<std::string> old;  // newest first: 10 days ago, 11, ..., 39
  for (int i = 0; i < 30; ++i) old.push_back(OldSession(i, 10 + i));
  // A live session: a run waiting for a file, its log made to look the oldest of all.
  RunResult live_result;
  std::thread live([&] {
    live_result = Shell("while [ ! -e done ]; do sleep 0.05; done", {}, WithState());
  });
  std::string live_id;
  for (int i = 0; i < 400 && live_id.empty(); ++i) {
    for (const auto& s : audit::ListSessions(state_ + "/ward", true)) {
      if (s.command.find("done") != std::string::npos) live_id = s.id;
    }
    if (live_id.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_FALSE(live_id.empty());
  SetAge(sessions_ + "/" + live_id + "/events.jsonl", std::chrono::hours(24 * 100));

  RunResult r = RunWard({"audit", "prune", "--keep", "5"}, WithState());
  EXPECT_EQ(r.status, 0) << r.err;
  std::set<std::string> want(old.begin(), old.begin() + 5);
  want.insert(live_id);
  EXPECT_EQ(Remaining(), want);
  EXPECT_NE(r.out.find("removed " + old[5] + "  last written "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept " + live_id + ": still being written\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("removed 25 sessions (beyond the newest 5); 6 kept\n"), std::string::npos)
      << r.out;

  // A dry run says and removes nothing.
  r = RunWard({"audit", "prune", "--older-than", "12d", "--dry-run"}, WithState());
  EXPECT_NE(r.out.find("would remove 3 sessions (older than 12d); 3 kept\n"), std::string::npos)
      << r.out;
  EXPECT_EQ(Remaining(), want);

  r = RunWard({"audit", "prune", "--older-than", "1d"}, WithState());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Remaining(), std::set<std::string>{live_id});
  EXPECT_NE(r.out.find("removed 5 sessions (older than 1d); 1 kept\n"), std::string::npos)
      << r.out;

  // Both prunes are recorded (not the dry run), beside the sessions, not among them.
  std::vector<nlohmann::json> log = PruneLog();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0]["type"], "audit.prune");
  EXPECT_EQ(log[0]["trigger"], "ward audit prune");
  EXPECT_EQ(log[0]["keep"], 5);
  EXPECT_EQ(log[0]["removed"].size(), 25u);
  EXPECT_EQ(log[0]["removed"][0]["id"], old[5]);
  EXPECT_EQ(log[0]["removed"][0]["why"], "beyond the newest 5");
  EXPECT_EQ(log[0]["in_use"], nlohmann::json::array({live_id}));
  EXPECT_EQ(log[1]["older_than"], "1d");
  EXPECT_EQ(log[1]["removed"].size(), 5u);

  // The live session ends intact, and `ward audit verify --all` sees only sessions.
  WriteFile(ws_ + "/done", "");
  live.join();
  EXPECT_EQ(live_result.status, 0) << live_result.err;
  r = RunWard({"audit", "verify", "--all"}, WithState());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("audit-prune"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(live_id + "   intact  "), std::string::npos) << r.out;
}

TEST_F(RetentionTest, WithoutFlagsThePruneFollowsTheUsersConfig) {
  std::vector<std::string> old;
  for (int i = 0; i < 4; ++i) old.push_back(OldSession(i, 1 + i));
  WriteFile(config_ + "/ward/config.toml", "[audit]\nkeep_days = 0\nkeep_sessions = 2\n");
  RunResult r = RunWard({"audit", "prune"}, WithState());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Remaining(), (std::set<std::string>{old[0], old[1]}));
  EXPECT_NE(r.out.find("removed 2 sessions (beyond the newest 2); 2 kept\n"), std::string::npos)
      << r.out;
  // A mistake in the config is an error that names the file, the line and the key.
  WriteFile(config_ + "/ward/config.toml", "[audit]\nkeep_dayz = 3\n");
  r = RunWard({"audit", "prune"}, WithState());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "ward audit: prune: " + config_ +
                       "/ward/config.toml:2: audit.keep_dayz: unknown key (did you mean "
                       "'keep_days'?) (known: keep_days, keep_sessions)\n");
  EXPECT_EQ(Remaining(), (std::set<std::string>{old[0], old[1]}));
}

TEST_F(RetentionTest, ARunPrunesWhenTheStampIsADayOldAndNotBefore) {
  std::vector<std::string> old, young;
  for (int i = 0; i < 6; ++i) old.push_back(OldSession(i, 40 + i));
  for (int i = 0; i < 3; ++i) young.push_back(OldSession(10 + i, 1 + i));
  // The first run of a state directory starts the clock; it does not prune.
  ASSERT_EQ(Probe({"exit", "0"}, {}, WithState()).status, 0);
  const std::string stamp = state_ + "/ward/audit-prune.stamp";
  ASSERT_TRUE(PathExists(stamp));
  // A fresh stamp: nothing is pruned.
  ASSERT_EQ(Probe({"exit", "0"}, {}, WithState()).status, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(Remaining().size(), 11u);
  EXPECT_FALSE(PathExists(state_ + "/ward/audit-prune.jsonl"));
  // A stamp older than a day: the next run starts the prune, detached, after its session.
  SetAge(stamp, std::chrono::hours(25));
  RunResult r = Probe({"exit", "0"}, {}, WithState());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  std::vector<nlohmann::json> log;
  for (int i = 0; i < 200 && log.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (PathExists(state_ + "/ward/audit-prune.jsonl")) log = PruneLog();
  }
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["trigger"], "automatic");
  EXPECT_EQ(log[0]["older_than"], "30d");
  EXPECT_EQ(log[0]["keep"], 10000);
  EXPECT_EQ(log[0]["removed"].size(), 6u) << log[0].dump();
  std::set<std::string> remaining = Remaining();
  for (const auto& id : old) EXPECT_EQ(remaining.count(id), 0u) << id;
  for (const auto& id : young) EXPECT_EQ(remaining.count(id), 1u) << id;
  EXPECT_EQ(remaining.size(), 6u);
  // The stamp was renewed: the run after does not prune again.
  struct stat st {};
  ASSERT_EQ(::stat(stamp.c_str(), &st), 0);
  EXPECT_LT(::time(nullptr) - st.st_mtime, 60);
  ASSERT_EQ(Probe({"exit", "0"}, {}, WithState()).status, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_EQ(PruneLog().size(), 1u);
}

}  // namespace
}  // namespace ward::test
