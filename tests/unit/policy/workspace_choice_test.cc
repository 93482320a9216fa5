// Which directories are refused as the workspace, and why (policy/workspace_choice.h).
#include "policy/workspace_choice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

namespace ward::policy {
namespace {

using ::testing::HasSubstr;

constexpr const char* kHome = "/home/u";

// A host whose fixed directories are themselves (no symlinks), unless `links` says otherwise.
Canonicalizer Host(std::map<std::string, std::string> links = {}) {
  return [links](const std::string& p) {
    auto it = links.find(p);
    return it == links.end() ? p : it->second;
  };
}

std::string Why(const std::string& ws, const std::string& home = kHome,
                const Canonicalizer& canonical = Host()) {
  auto r = RefuseWorkspace(ws, home, canonical);
  return r ? r->why : std::string();
}

TEST(WorkspaceChoice, TheWholeFileSystemIsRefused) {
  EXPECT_THAT(Why("/"), HasSubstr("the workspace is / (the whole file system)"));
  EXPECT_THAT(RefuseWorkspace("/", kHome, Host())->advice, HasSubstr("-C DIR"));
}

TEST(WorkspaceChoice, SystemTreesAndEverythingBeneathThemAreRefused) {
  for (const std::string& t : SystemTrees()) {
    EXPECT_EQ(Why(t), "the workspace is " + t +
                          ", a system directory: a run could change what this host itself runs")
        << t;
    EXPECT_EQ(Why(t + "/sub/dir"), "the workspace " + t + "/sub/dir is inside " + t +
                                       ", a system directory: a run could change what this host "
                                       "itself runs")
        << t;
  }
  for (const char* t : {"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                        "/boot", "/var", "/proc", "/sys", "/dev", "/run"}) {
    EXPECT_FALSE(Why(t).empty()) << t;
  }
  EXPECT_FALSE(Why("/var/lib/app").empty());
  EXPECT_FALSE(Why("/run/user/1000/proj").empty());  // runtime files, not projects
  EXPECT_FALSE(Why("/dev/shm/x").empty());
  EXPECT_FALSE(Why("/usr/local/src/proj").empty());
}

TEST(WorkspaceChoice, SharedTemporaryDirectoriesThemselvesAreRefusedTheirSubdirectoriesNot) {
  EXPECT_THAT(Why("/tmp"), HasSubstr("/tmp itself, which every user and service"));
  EXPECT_THAT(Why("/var/tmp"), HasSubstr("/var/tmp itself"));
  EXPECT_THAT(RefuseWorkspace("/tmp", kHome, Host())->advice, HasSubstr("mkdir /tmp/work"));
  EXPECT_EQ(Why("/tmp/work"), "");
  EXPECT_EQ(Why("/tmp/a/b"), "");
  EXPECT_EQ(Why("/var/tmp/work"), "");  // beneath /var, but /var/tmp's subdirectories are fine
}

TEST(WorkspaceChoice, HomeAndTheCallersHomeThemselvesAreRefusedTheirSubdirectoriesNot) {
  EXPECT_THAT(Why("/home"), HasSubstr("/home itself, which holds every user's HOME"));
  EXPECT_THAT(Why(kHome), HasSubstr("your HOME itself (/home/u)"));
  EXPECT_THAT(RefuseWorkspace(kHome, kHome, Host())->advice, HasSubstr("~/project"));
  EXPECT_EQ(Why("/home/u/proj"), "");
  EXPECT_EQ(Why("/home/other"), "");  // someone else's HOME: their permissions decide
  EXPECT_THAT(Why("/root", "/root"), HasSubstr("your HOME itself"));
  EXPECT_EQ(Why("/root/proj", "/root"), "");
}

TEST(WorkspaceChoice, OrdinaryDirectoriesAreAccepted) {
  for (const char* ws : {"/srv/app", "/opt/proj", "/mnt/data/x", "/work", "/usrx", "/variable",
                         "/tmpfoo", "/homes"}) {
    EXPECT_EQ(Why(ws), "") << ws;
  }
}

// The workspace is canonical (what gets mounted), so the fixed names are compared in their
// canonical form on this host.
TEST(WorkspaceChoice, SymlinkedSystemNamesAreComparedResolved) {
  Canonicalizer merged = Host({{"/bin", "/usr/bin"}, {"/lib", "/usr/lib"}});
  EXPECT_THAT(Why("/usr/bin", kHome, merged), HasSubstr("the workspace is /usr/bin (/bin)"));
  EXPECT_THAT(Why("/usr/lib/x", kHome, merged), HasSubstr("inside /usr"));
}

TEST(WorkspaceChoice, HomeKeptInsideASystemTreeStillHoldsWorkspaces) {
  // /home -> /var/home (image-based distributions).
  Canonicalizer var_home = Host({{"/home", "/var/home"}});
  EXPECT_EQ(Why("/var/home/u/proj", "/var/home/u", var_home), "");
  EXPECT_EQ(Why("/var/home/other/x", "/var/home/u", var_home), "");
  EXPECT_THAT(Why("/var/home", "/var/home/u", var_home), HasSubstr("/var/home (/home) itself"));
  EXPECT_THAT(Why("/var/home/u", "/var/home/u", var_home), HasSubstr("your HOME itself"));
  EXPECT_THAT(Why("/var/lib/x", "/var/home/u", var_home), HasSubstr("inside /var"));
  // A service account's HOME under /var/lib: its subdirectories, nothing else of /var.
  EXPECT_EQ(Why("/var/lib/ci/job", "/var/lib/ci"), "");
  EXPECT_THAT(Why("/var/lib/other", "/var/lib/ci"), HasSubstr("inside /var"));
}

TEST(WorkspaceChoice, AHomeThatIsTheRootOrASystemTreeOpensNothing) {
  EXPECT_THAT(Why("/usr/src", "/usr"), HasSubstr("inside /usr"));
  EXPECT_THAT(Why("/var/x", "/var"), HasSubstr("inside /var"));
  EXPECT_THAT(Why("/etc/cron.d", "/"), HasSubstr("inside /etc"));
  EXPECT_THAT(Why("/etc/cron.d", ""), HasSubstr("inside /etc"));
  EXPECT_EQ(Why("/srv/x", ""), "");
}

// --workspace-anyway may accept a refused workspace, except one that holds the caller's HOME
// (every credential in it would be visible inside).
TEST(WorkspaceChoice, AWorkspaceThatHoldsTheHomeIsNeverOverridable) {
  for (const char* ws : {"/", "/home", kHome}) {
    auto r = RefuseWorkspace(ws, kHome, Host());
    ASSERT_TRUE(r) << ws;
    EXPECT_FALSE(r->overridable) << ws;
    EXPECT_THAT(r->advice, HasSubstr("a workspace that holds your HOME (/home/u) is refused even "
                                     "with --workspace-anyway"))
        << ws;
  }
  EXPECT_FALSE(RefuseWorkspace("/tmp", "/tmp/h", Host())->overridable);
  for (const char* ws : {"/usr", "/etc/x", "/tmp", "/var/tmp", "/run/lock/x"}) {
    auto r = RefuseWorkspace(ws, kHome, Host());
    ASSERT_TRUE(r) << ws;
    EXPECT_TRUE(r->overridable) << ws;
    EXPECT_THAT(r->advice, ::testing::Not(HasSubstr("HOME ("))) << ws;
  }
  EXPECT_TRUE(RefuseWorkspace("/home", "/root", Host())->overridable);  // root's HOME is elsewhere
}

TEST(WorkspaceChoice, PathsAreComparedNormalised) {
  EXPECT_THAT(Why("/usr/"), HasSubstr("the workspace is /usr,"));
  EXPECT_THAT(Why("/home/u/"), HasSubstr("your HOME itself"));
  EXPECT_THAT(Why("/tmp/work", "/tmp/work/"), HasSubstr("your HOME itself"));
}

}  // namespace
}  // namespace ward::policy
