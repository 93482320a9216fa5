// The host-executed content rule: git directories by structure, what inside them runs code,
// git config reviewed key by key, protected names at any depth.
#include "policy/host_executed.h"

#include <gtest/gtest.h>

#include "policy/paths.h"

namespace ward::policy {
namespace {

TEST(HostExecuted, GitDirIsFoundByStructureNotByName) {
  EXPECT_TRUE(IsGitDirShape({.head_file = true, .objects_dir = true, .refs_dir = true}));
  EXPECT_TRUE(IsGitDirShape({.head_file = true, .commondir_file = true}));
  EXPECT_FALSE(IsGitDirShape({.head_file = true, .objects_dir = true}));
  EXPECT_FALSE(IsGitDirShape({.objects_dir = true, .refs_dir = true}));
  // A bare ".git" that `git init` would make a repository of, hooks and all.
  EXPECT_TRUE(IsGitDirShape({.named_dot_git = true}));
}

TEST(HostExecuted, InsideAGitDirOnlyWhatRunsCodeIsFlagged) {
  EXPECT_EQ(ClassifyGitDirEntry("hooks/pre-commit"), GitDirEntry::kHook);
  EXPECT_EQ(ClassifyGitDirEntry("hooks"), GitDirEntry::kHook);
  EXPECT_EQ(ClassifyGitDirEntry("hooks/sub/x.sample"), GitDirEntry::kHook);
  EXPECT_EQ(ClassifyGitDirEntry("hooks/pre-commit.sample"), GitDirEntry::kInert);
  EXPECT_EQ(ClassifyGitDirEntry("config"), GitDirEntry::kConfig);
  EXPECT_EQ(ClassifyGitDirEntry("config.worktree"), GitDirEntry::kConfig);
  EXPECT_EQ(ClassifyGitDirEntry("worktrees/w/config.worktree"), GitDirEntry::kConfig);
  EXPECT_EQ(ClassifyGitDirEntry("commondir"), GitDirEntry::kCommonDir);
  EXPECT_EQ(ClassifyGitDirEntry("worktrees/w/commondir"), GitDirEntry::kCommonDir);
  EXPECT_EQ(ClassifyGitDirEntry("modules/m/config"), GitDirEntry::kConfig);
  EXPECT_EQ(ClassifyGitDirEntry("modules/a/b/hooks/pre-push"), GitDirEntry::kHook);
  EXPECT_EQ(ClassifyGitDirEntry("modules/a/b/commondir"), GitDirEntry::kCommonDir);
  EXPECT_EQ(ClassifyGitDirEntry("modules/m/objects/ab/cd"), GitDirEntry::kInert);
  EXPECT_EQ(ClassifyGitDirEntry("modules/m/hooks/x.sample"), GitDirEntry::kInert);
  for (const char* inert : {"objects/ab/cdef", "refs/heads/main", "HEAD", "index", "index.lock",
                            "logs/HEAD", "packed-refs", "COMMIT_EDITMSG", "ORIG_HEAD",
                            "rebase-merge/done", "info/exclude", "worktrees/w/HEAD",
                            "refs/heads/config", "objects/hooks"}) {
    EXPECT_EQ(ClassifyGitDirEntry(inert), GitDirEntry::kInert) << inert;
  }
}

TEST(HostExecuted, OnlyALinkedWorktreesWayBackIsAnInertCommonDir) {
  EXPECT_TRUE(IsInertCommonDir("worktrees/w/commondir", "../..\n"));
  EXPECT_FALSE(IsInertCommonDir("worktrees/w/commondir", "/elsewhere\n"));
  EXPECT_FALSE(IsInertCommonDir("commondir", "../..\n"));
}

TEST(HostExecuted, WhatGitInitAndCloneWriteIsInert) {
  GitConfigReview r = ReviewGitConfig(
      "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
      "\tlogallrefupdates = true\n[remote \"origin\"]\n\turl = /srv/repo.git\n"
      "\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n"
      "\tmerge = refs/heads/main\n");
  EXPECT_TRUE(r.inert) << r.error;
  EXPECT_TRUE(r.risky_keys.empty());
}

TEST(HostExecuted, EveryKeyThatRunsOrRedirectsIsRisky) {
  for (const char* text :
       {"[core]\n\tfsmonitor = /tmp/x\n", "[core]\n\thooksPath = /tmp/h\n",
        "[core]\n\tsshCommand = sh -c id\n", "[core]\n\tpager = sh\n",
        "[core]\n\tworktree = /etc\n", "[diff \"x\"]\n\ttextconv = sh\n",
        "[filter \"x\"]\n\tclean = sh\n", "[credential]\n\thelper = !sh\n",
        "[alias]\n\tst = !sh\n", "[include]\n\tpath = /tmp/evil\n",
        "[includeIf \"gitdir:/\"]\n\tpath = /tmp/evil\n", "[remote \"o\"]\n\tuploadpack = sh\n",
        "[submodule \"s\"]\n\tupdate = !sh\n", "[core \"x\"]\n\tbare = false\n",
        "[core.x]\n\tbare = false\n", "[Core]\n\tFSMonitor = x\n"}) {
    GitConfigReview r = ReviewGitConfig(text);
    EXPECT_FALSE(r.inert) << text;
    EXPECT_FALSE(r.risky_keys.empty() && r.error.empty()) << text;
  }
}

TEST(HostExecuted, SanitizedConfigKeepsOnlyInertKeysAndParsesAgain) {
  GitConfigReview r = ReviewGitConfig(
      "# comment\n[core]\n\tbare = false ; trailing\n\tfsmonitor = \"sh -c 'id'\"\n"
      "[remote \"o\\\"x\"]\n\turl = \"a b\\\\c\" # c\n[user]\n\tname = A \\\n B\n");
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_FALSE(r.inert);
  ASSERT_EQ(r.risky_keys.size(), 1u);
  EXPECT_EQ(r.risky_keys[0], "core.fsmonitor");
  EXPECT_EQ(r.sanitized.find("fsmonitor"), std::string::npos);
  GitConfigReview again = ReviewGitConfig(r.sanitized);
  EXPECT_TRUE(again.inert) << again.error << "\n" << r.sanitized;
  EXPECT_NE(r.sanitized.find("url = \"a b\\\\c\""), std::string::npos) << r.sanitized;
  EXPECT_NE(r.sanitized.find("[remote \"o\\\"x\"]"), std::string::npos) << r.sanitized;
  EXPECT_NE(r.sanitized.find("name = \"A  B\""), std::string::npos) << r.sanitized;
}

TEST(HostExecuted, MalformedConfigIsNotInert) {
  for (const char* text : {"[core\n", "key = 1\n", "[core]\n\tbare = \"x\n", "[core]\n\t=x\n",
                           "[core]\n\tbare = x\\q\n"}) {
    GitConfigReview r = ReviewGitConfig(text);
    EXPECT_FALSE(r.inert) << text;
    EXPECT_FALSE(r.error.empty()) << text;
  }
}

TEST(HostExecuted, GitFileTarget) {
  EXPECT_EQ(GitFileTarget("gitdir: ../.git/modules/s\n"), "../.git/modules/s");
  EXPECT_EQ(GitFileTarget("gitdir:/abs\r\n"), "/abs");
  EXPECT_EQ(GitFileTarget("ref: refs/heads/main\n"), "");
}

TEST(HostExecuted, ProtectedNamesMatchAtAnyDepth) {
  std::vector<std::vector<std::string>> prot = {PathComponents(".envrc"),
                                                PathComponents(".vscode"),
                                                PathComponents(".git/hooks")};
  size_t end = 0;
  EXPECT_EQ(MatchProtectedName(PathComponents("a/b/.envrc"), prot, &end), 2);
  EXPECT_EQ(end, 3u);
  EXPECT_EQ(MatchProtectedName(PathComponents("a/.vscode/tasks.json"), prot, &end), 1);
  EXPECT_EQ(end, 2u);
  EXPECT_EQ(MatchProtectedName(PathComponents("a/envrc"), prot, &end), -1);
}

TEST(HostExecuted, TriggersAreGitStructureAndProtectedNames) {
  std::vector<std::vector<std::string>> prot = {PathComponents(".envrc"),
                                                PathComponents(".claude"),
                                                PathComponents(".git/hooks")};
  for (const char* p : {"x/.git", "x/HEAD", "x/config", "x/commondir", "x/hooks",
                        "x/hooks/pre-commit", "a/.envrc", "a/.claude/settings.json",
                        "a/.claude/commands/x/y.md", "w/gitdir"}) {
    EXPECT_TRUE(IsHostExecutedTrigger(PathComponents(p), prot)) << p;
  }
  for (const char* p : {"x/.git/objects/ab/cd", "node_modules/a/index.js", "x/.git/index.lock",
                        "x/.git/refs/heads/main", "src/main.cc"}) {
    EXPECT_FALSE(IsHostExecutedTrigger(PathComponents(p), prot)) << p;
  }
}

}  // namespace
}  // namespace ward::policy
