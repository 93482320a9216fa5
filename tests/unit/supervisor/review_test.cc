// The pure parts of review mode: which paths are host-executed content, how paths are quoted in
// a diff, how paths are split and changes selected.
#include <gtest/gtest.h>

#include "supervisor/review_apply.h"
#include "supervisor/review_changes.h"
#include "supervisor/review_diff.h"

namespace ward::supervisor {
namespace {

const std::vector<std::string> kProtected = {".git/hooks", ".git/config", ".envrc", ".vscode",
                                             ".ward.toml"};

bool HostExecuted(const std::string& rel, EntryType type = EntryType::kFile, int git_dir_at = -1) {
  std::vector<std::string> c;
  EXPECT_TRUE(SplitRelative(rel, &c)) << rel;
  std::string rule;
  return IsHostExecutedPath(c, type, git_dir_at, kProtected, &rule);
}

TEST(ReviewHostExecutedTest, ProtectedNamesAtAnyDepth) {
  EXPECT_TRUE(HostExecuted(".envrc"));
  EXPECT_TRUE(HostExecuted("a/b/.envrc"));
  EXPECT_TRUE(HostExecuted(".vscode/tasks.json"));
  EXPECT_TRUE(HostExecuted("pkg/.vscode/settings.json"));
  EXPECT_TRUE(HostExecuted("vendor/x/.git/hooks/pre-commit", EntryType::kFile, 2));
  EXPECT_TRUE(HostExecuted(".ward.toml"));
  EXPECT_FALSE(HostExecuted("src/main.c"));
  EXPECT_FALSE(HostExecuted("envrc"));
  EXPECT_FALSE(HostExecuted("a/.envrc.example"));
}

TEST(ReviewHostExecutedTest, InsideAGitDirectoryOnlyGitsDataIsInert) {
  // .git at index 0: components after it.
  for (const char* inert : {".git/objects/ab/cdef", ".git/refs/heads/main", ".git/logs/HEAD",
                            ".git/index", ".git/HEAD", ".git/packed-refs", ".git/ORIG_HEAD",
                            ".git/FETCH_HEAD", ".git/COMMIT_EDITMSG", ".git/info/exclude",
                            ".git/modules/m/objects/ab"}) {
    EXPECT_FALSE(HostExecuted(inert, EntryType::kFile, 0)) << inert;
  }
  for (const char* risky : {".git/config", ".git/config.worktree", ".git/commondir",
                            ".git/worktrees/w/commondir", ".git/modules/m/config",
                            ".git/modules/a/b/hooks/pre-push"}) {
    EXPECT_TRUE(HostExecuted(risky, EntryType::kFile, 0)) << risky;
  }
  // A bare repository found by its shape (the caller says where it is).
  EXPECT_TRUE(HostExecuted("repo.git/hooks/post-update", EntryType::kFile, 0));
  EXPECT_FALSE(HostExecuted("repo.git/objects/pack/p.pack", EntryType::kFile, 0));
}

TEST(ReviewHostExecutedTest, AGitFileOrLinkRedirectsGit) {
  EXPECT_TRUE(HostExecuted("sub/.git", EntryType::kFile));
  EXPECT_TRUE(HostExecuted("sub/.git", EntryType::kSymlink));
  EXPECT_FALSE(HostExecuted("sub/.git", EntryType::kDir));  // its contents are judged one by one
}

TEST(ReviewPathsTest, SplitRelativeRefusesEverythingButPlainComponents) {
  std::vector<std::string> c;
  EXPECT_TRUE(SplitRelative("a/b/c", &c));
  EXPECT_EQ(c, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(SplitRelative("..x/a\nb", &c));
  for (const char* bad : {"", "/a", "a/../b", "..", ".", "a//b", "a/", "./a"}) {
    EXPECT_FALSE(SplitRelative(bad, &c)) << bad;
  }
}

TEST(ReviewPathsTest, QuotePathAsGitDoes) {
  EXPECT_EQ(QuotePath("src/main.c"), "src/main.c");
  EXPECT_EQ(QuotePath("a b"), "a b");
  EXPECT_EQ(QuotePath("a\nb"), "\"a\\nb\"");
  EXPECT_EQ(QuotePath("tab\there"), "\"tab\\there\"");
  EXPECT_EQ(QuotePath("q\"uote"), "\"q\\\"uote\"");
  EXPECT_EQ(QuotePath("esc\x1b[2J"), "\"esc\\033[2J\"");
  EXPECT_EQ(QuotePath("caf\xc3\xa9"), "\"caf\\303\\251\"");
}

ReviewChange Change(const std::string& path, ReviewChange::Kind kind, EntryType type) {
  ReviewChange c;
  c.path = path;
  c.kind = kind;
  c.new_type = kind == ReviewChange::Kind::kDelete ? EntryType::kNone : type;
  c.old_type = kind == ReviewChange::Kind::kAdd ? EntryType::kNone : type;
  return c;
}

TEST(ReviewPathsTest, SelectionTakesWhatIsBelowAndTheNewDirectoriesAbove) {
  const std::vector<ReviewChange> all = {
      Change("a", ReviewChange::Kind::kModify, EntryType::kFile),
      Change("ab", ReviewChange::Kind::kAdd, EntryType::kFile),
      Change("new", ReviewChange::Kind::kAdd, EntryType::kDir),
      Change("new/deep", ReviewChange::Kind::kAdd, EntryType::kDir),
      Change("new/deep/f", ReviewChange::Kind::kAdd, EntryType::kFile),
      Change("new/g", ReviewChange::Kind::kAdd, EntryType::kFile),
  };
  std::vector<std::string> unmatched;
  auto paths = [](const std::vector<ReviewChange>& v) {
    std::vector<std::string> out;
    for (const auto& c : v) out.push_back(c.path);
    return out;
  };
  EXPECT_EQ(paths(SelectChanges(all, {"a"}, &unmatched)), std::vector<std::string>{"a"});
  EXPECT_EQ(paths(SelectChanges(all, {"new/deep/f"}, &unmatched)),
            (std::vector<std::string>{"new", "new/deep", "new/deep/f"}));
  EXPECT_EQ(paths(SelectChanges(all, {"new"}, &unmatched)),
            (std::vector<std::string>{"new", "new/deep", "new/deep/f", "new/g"}));
  EXPECT_TRUE(unmatched.empty());
  EXPECT_TRUE(SelectChanges(all, {"nothing"}, &unmatched).empty());
  EXPECT_EQ(unmatched, std::vector<std::string>{"nothing"});
  EXPECT_EQ(SelectChanges(all, {}, nullptr).size(), all.size());
}

}  // namespace
}  // namespace ward::supervisor
