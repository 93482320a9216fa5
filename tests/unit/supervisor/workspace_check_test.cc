// The check after a run, on a tree made here: what it takes without a journal (it walks), what
// it leaves (older than the run, inert, behind a link), and the quarantine's round trips.
#include "supervisor/workspace_check.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace ward::supervisor {
namespace {

class WorkspaceCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ward-wscheck.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    top_ = tmpl;
    ws_ = top_ + "/ws";
    state_ = top_ + "/state";
    mkdir(ws_.c_str(), 0755);
    store_ = QuarantineStore(state_);
  }
  void TearDown() override { system(("rm -rf " + top_).c_str()); }

  void Write(const std::string& rel, const std::string& text, mode_t mode = 0644) {
    std::string path = ws_ + "/" + rel;
    system(("mkdir -p \"$(dirname " + path + ")\"").c_str());
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
  }
  void Repo(const std::string& rel) {
    for (const char* d : {"objects", "refs/heads", "hooks"}) {
      system(("mkdir -p " + ws_ + "/" + rel + "/" + d).c_str());
    }
    Write(rel + "/HEAD", "ref: refs/heads/main\n");
  }
  bool Exists(const std::string& rel) {
    struct stat st;
    return lstat((ws_ + "/" + rel).c_str(), &st) == 0;
  }
  static struct timespec Now() {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME_COARSE, &t);
    return t;
  }
  WorkspaceCheckOutcome Check(const struct timespec& start, const CreationJournal* journal) {
    WorkspaceCheckInput in;
    in.roots = {ws_};
    in.protected_relpaths = {".envrc", ".vscode", ".git/hooks", ".git/config"};
    in.journal = journal;
    in.start = start;
    in.session = "20261204T000000Z-00000000";
    in.store = &store_;
    return CheckWorkspaceAfterRun(in);
  }

  std::string top_, ws_, state_;
  QuarantineStore store_{""};  // set in SetUp, below the test's own directory
};

TEST_F(WorkspaceCheckTest, WithoutAJournalItWalksAndTakesWhatTheRunMade) {
  Repo("old/.git");
  Write("old/.git/hooks/pre-commit", "#!/bin/sh\n", 0755);
  Write("old/.envrc", "x\n");
  sleep(1);  // past the coarse clock's tick and the file system's timestamp granularity
  const struct timespec start = Now();
  Repo("a/b/.git");
  Write("a/b/.git/hooks/pre-commit", "#!/bin/sh\n", 0755);
  Write("a/b/.git/hooks/pre-commit.sample", "#!/bin/sh\n", 0755);
  Write("a/b/.git/config", "[core]\n\tbare = false\n\tfsmonitor = x\n");
  Write("c/.envrc", "x\n");
  Write("bin/tool", "#!/bin/sh\n", 04755);
  WorkspaceCheckOutcome out = Check(start, nullptr);
  EXPECT_TRUE(out.walked);
  EXPECT_FALSE(Exists("a/b/.git/hooks/pre-commit"));
  EXPECT_TRUE(Exists("a/b/.git/hooks/pre-commit.sample"));
  EXPECT_FALSE(Exists("c/.envrc"));
  std::ifstream cfg(ws_ + "/a/b/.git/config");
  std::string text((std::istreambuf_iterator<char>(cfg)), {});
  EXPECT_EQ(text.find("fsmonitor"), std::string::npos) << text;
  EXPECT_NE(text.find("bare"), std::string::npos) << text;
  // Older than the run: left alone (control: the walk did reach them).
  EXPECT_TRUE(Exists("old/.git/hooks/pre-commit"));
  EXPECT_TRUE(Exists("old/.envrc"));
  struct stat st;
  ASSERT_EQ(stat((ws_ + "/bin/tool").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(out.quarantined.size(), 3u);
  EXPECT_EQ(out.privilege_bits.size(), 1u);
  EXPECT_TRUE(out.errors.empty());
}

TEST_F(WorkspaceCheckTest, ALinkToOutsideIsNeverFollowed) {
  const std::string outside = top_ + "/outside";
  system(("mkdir -p " + outside + "/.git/objects " + outside + "/.git/refs " + outside +
          "/.git/hooks").c_str());
  std::ofstream(outside + "/.git/HEAD") << "ref: refs/heads/main\n";
  std::ofstream(outside + "/.git/hooks/pre-commit") << "#!/bin/sh\n";
  std::ofstream(outside + "/.envrc") << "x\n";
  const struct timespec start = {0, 0};  // everything counts as the run's
  ASSERT_EQ(symlink(outside.c_str(), (ws_ + "/link").c_str()), 0);
  WorkspaceCheckOutcome out = Check(start, nullptr);
  struct stat st;
  EXPECT_EQ(stat((outside + "/.git/hooks/pre-commit").c_str(), &st), 0);
  EXPECT_EQ(stat((outside + "/.envrc").c_str(), &st), 0);
  EXPECT_TRUE(out.quarantined.empty());
}

TEST_F(WorkspaceCheckTest, AGitFilePointingOutsideTheRootsIsTaken) {
  const struct timespec start = {0, 0};
  Write("sub/.git", "gitdir: /somewhere/else/.git\n");
  Write("in/.git", "gitdir: ../repo\n");  // inside: judged as a git directory, not taken
  WorkspaceCheckOutcome out = Check(start, nullptr);
  EXPECT_FALSE(Exists("sub/.git"));
  EXPECT_TRUE(Exists("in/.git"));
  ASSERT_EQ(out.quarantined.size(), 1u);
  EXPECT_EQ(out.quarantined[0].kind, "gitfile");
}

TEST_F(WorkspaceCheckTest, QuarantineRestoresOnlyWhereNothingTookThePlace) {
  const struct timespec start = {0, 0};
  Write("d/.envrc", "original\n");
  WorkspaceCheckOutcome out = Check(start, nullptr);
  ASSERT_EQ(out.quarantined.size(), 1u);
  const std::string id = out.quarantined[0].id;
  Write("d/.envrc", "new\n");
  EXPECT_FALSE(store_.Restore(id).ok());  // something is there now
  unlink((ws_ + "/d/.envrc").c_str());
  ASSERT_TRUE(store_.Restore(id).ok());
  std::ifstream f(ws_ + "/d/.envrc");
  std::string text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(text, "original\n");
  EXPECT_FALSE(store_.Get(id).ok());
  // Drop: gone for good.
  out = Check(start, nullptr);
  ASSERT_EQ(out.quarantined.size(), 1u);
  ASSERT_TRUE(store_.Drop(out.quarantined[0].id).ok());
  Result<std::vector<QuarantineItem>> left = store_.List();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
  EXPECT_FALSE(Exists("d/.envrc"));
}

TEST_F(WorkspaceCheckTest, ARestoreCannotBeSteeredThroughALink) {
  const struct timespec start = {0, 0};
  Write("d/.envrc", "x\n");
  WorkspaceCheckOutcome out = Check(start, nullptr);
  ASSERT_EQ(out.quarantined.size(), 1u);
  const std::string outside = top_ + "/outside";
  mkdir(outside.c_str(), 0755);
  system(("rm -rf " + ws_ + "/d").c_str());
  ASSERT_EQ(symlink(outside.c_str(), (ws_ + "/d").c_str()), 0);
  EXPECT_FALSE(store_.Restore(out.quarantined[0].id).ok());
  struct stat st;
  EXPECT_NE(stat((outside + "/.envrc").c_str(), &st), 0);
}

TEST_F(WorkspaceCheckTest, WithAJournalOnlyWhatItNamesIsLookedAt) {
  const struct timespec start = {0, 0};
  Write("x/.envrc", "x\n");
  Write("y/.envrc", "y\n");
  CreationJournal journal({{".envrc"}});
  int dir = open((ws_ + "/x").c_str(), O_PATH | O_DIRECTORY);
  ASSERT_GE(dir, 0);
  journal.Record(dir, ".envrc", false);
  close(dir);
  WorkspaceCheckOutcome out = Check(start, &journal);
  EXPECT_FALSE(out.walked);
  EXPECT_FALSE(Exists("x/.envrc"));
  EXPECT_TRUE(Exists("y/.envrc"));  // not journaled: not looked at
}

}  // namespace
}  // namespace ward::supervisor
