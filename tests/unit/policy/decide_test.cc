// DecidePath: the precedence written in docs/profiles.md ("How a path is decided").
#include <gtest/gtest.h>

#include "policy/decide.h"
#include "policy/loader.h"
#include "policy_test_util.h"

namespace ward::policy {
namespace {

using V = PathDecision::Visibility;
using ::testing::HasSubstr;

Origin O(const char* key, int line = 1) { return Origin{"test.toml", line, key}; }

// A hand-built policy: workspace /home/u/proj (write), HOME /home/u.
Policy Base() {
  Policy p;
  p.workspace = "/home/u/proj";
  p.workspace_access = Access::kWrite;
  p.workspace_origin = O("workspace.access", 2);
  p.home = "/home/u";
  p.paths = {
      {"/usr", Access::kRead, true, O("filesystem.read", 3)},
      {"/etc", Access::kRead, true, O("filesystem.read", 3)},
      {"/home/u/.gitconfig", Access::kRead, true, O("filesystem.read", 4)},
      {"/home/u/.npm", Access::kWrite, true, O("filesystem.write", 5)},
  };
  p.deny = {{"/etc/shadow", O("filesystem.deny", 6)},
            {"/etc/ssh/ssh_host_*_key", O("filesystem.deny", 7)},
            {"/home/u/proj/secrets", O("filesystem.deny", 8)}};
  p.protected_paths = {{".git/hooks", O("filesystem.protected", 9)},
                       {".envrc", O("filesystem.protected", 9)},
                       {".vscode", O("filesystem.protected", 9)}};
  p.nested_repo_depth = 3;
  return p;
}

TEST(DecidePath, BindsAreVisibleWithTheirRule) {
  Policy p = Base();
  PathDecision d = DecidePath(p, "/usr/bin/git");
  EXPECT_EQ(d.visibility, V::kRead);
  EXPECT_TRUE(d.host_file);
  EXPECT_EQ(d.via, "bind /usr (read)");
  ASSERT_TRUE(d.rule.has_value());
  EXPECT_EQ(d.rule->line, 3);
  EXPECT_THAT(d.reason, HasSubstr("read-only"));
  EXPECT_THAT(d.reason, HasSubstr("test.toml:3"));

  PathDecision npm = DecidePath(p, "/home/u/.npm/_cacache/x");
  EXPECT_EQ(npm.visibility, V::kWrite);
  EXPECT_TRUE(npm.host_file);
  EXPECT_EQ(npm.via, "bind /home/u/.npm (write)");
}

TEST(DecidePath, WorkspaceIsWritable) {
  PathDecision d = DecidePath(Base(), "/home/u/proj/src/main.cc");
  EXPECT_EQ(d.visibility, V::kWrite);
  EXPECT_TRUE(d.host_file);
  EXPECT_EQ(d.via, "workspace");
  EXPECT_EQ(d.rule->key, "workspace.access");
  EXPECT_FALSE(d.is_protected);
}

TEST(DecidePath, WorkspaceReadOrNone) {
  Policy p = Base();
  p.workspace_access = Access::kRead;
  EXPECT_EQ(DecidePath(p, "/home/u/proj/a").visibility, V::kRead);
  // Read-only workspace: not a writable root, so protection does not apply (nothing to do).
  EXPECT_FALSE(DecidePath(p, "/home/u/proj/.envrc").is_protected);
  p.workspace_access.reset();
  PathDecision none = DecidePath(p, "/home/u/proj/a");
  // Not mounted: what is left is the HOME tmpfs.
  EXPECT_EQ(none.via, "private HOME (tmpfs)");
  EXPECT_FALSE(none.host_file);
}

TEST(DecidePath, DenyBeatsEverythingAtOrBelowItsPath) {
  Policy p = Base();
  PathDecision shadow = DecidePath(p, "/etc/shadow");
  EXPECT_EQ(shadow.visibility, V::kHidden);
  EXPECT_TRUE(shadow.masked);  // /etc is bound: the planner must cover it
  EXPECT_FALSE(shadow.host_file);
  EXPECT_EQ(shadow.rule->line, 6);
  EXPECT_THAT(shadow.reason, HasSubstr("denied by /etc/shadow"));
  EXPECT_THAT(shadow.reason, HasSubstr("test.toml:6"));
  EXPECT_EQ(shadow.via, "bind /etc (read)");

  EXPECT_EQ(DecidePath(p, "/etc/shadow/below").visibility, V::kHidden);
  EXPECT_EQ(DecidePath(p, "/etc/shadowy").visibility, V::kRead);  // a path, not a prefix
  EXPECT_EQ(DecidePath(p, "/etc/passwd").visibility, V::kRead);

  // Inside the workspace too, and a write rule under the deny does not bring it back.
  p.paths.push_back({"/home/u/proj/secrets/out", Access::kWrite, false, O("--write", 0)});
  PathDecision ws = DecidePath(p, "/home/u/proj/secrets/out/key.pem");
  EXPECT_EQ(ws.visibility, V::kHidden);
  EXPECT_TRUE(ws.masked);
  EXPECT_EQ(ws.rule->line, 8);
}

TEST(DecidePath, DenyGlobInTheLastComponent) {
  Policy p = Base();
  EXPECT_EQ(DecidePath(p, "/etc/ssh/ssh_host_ed25519_key").visibility, V::kHidden);
  EXPECT_EQ(DecidePath(p, "/etc/ssh/ssh_host_rsa_key").visibility, V::kHidden);
  EXPECT_EQ(DecidePath(p, "/etc/ssh/ssh_host_rsa_key.pub").visibility, V::kRead);
  EXPECT_EQ(DecidePath(p, "/etc/ssh/ssh_config").visibility, V::kRead);
  // A leading '.' must be matched literally, as in the planner's fnmatch(FNM_PERIOD).
  p.deny.push_back({"/etc/*", O("filesystem.deny", 10)});
  EXPECT_EQ(DecidePath(p, "/etc/passwd").visibility, V::kHidden);
  EXPECT_EQ(DecidePath(p, "/etc/.pwd.lock").visibility, V::kRead);
  EXPECT_EQ(DecidePath(p, "/etc").visibility, V::kRead);  // the pattern's parent stays
}

TEST(DecidePath, DenyUnderTmpfsIsHiddenButNotMasked) {
  Policy p = Base();
  p.deny.push_back({"/home/u/.ssh", O("filesystem.deny", 11)});
  PathDecision d = DecidePath(p, "/home/u/.ssh/id_ed25519");
  EXPECT_EQ(d.visibility, V::kHidden);
  EXPECT_FALSE(d.masked);  // nothing of the host is there to mask
}

TEST(DecidePath, ProtectedUnderTheWorkspace) {
  Policy p = Base();
  PathDecision hooks = DecidePath(p, "/home/u/proj/.git/hooks/pre-commit");
  EXPECT_EQ(hooks.visibility, V::kRead);
  EXPECT_TRUE(hooks.is_protected);
  EXPECT_TRUE(hooks.host_file);
  EXPECT_EQ(hooks.rule->key, "filesystem.protected");
  EXPECT_THAT(hooks.reason, HasSubstr("protected path .git/hooks under writable root"));
  EXPECT_TRUE(DecidePath(p, "/home/u/proj/.envrc").is_protected);
  EXPECT_FALSE(DecidePath(p, "/home/u/proj/.git/objects/ab").is_protected);
  EXPECT_EQ(DecidePath(p, "/home/u/proj/.git/objects/ab").visibility, V::kWrite);
  EXPECT_FALSE(DecidePath(p, "/home/u/proj/.envrc.d").is_protected);
}

TEST(DecidePath, ProtectedUnderWriteRules) {
  Policy p = Base();
  p.paths.push_back({"/srv/build", Access::kWrite, false, O("--write", 0)});
  PathDecision d = DecidePath(p, "/srv/build/.vscode/tasks.json");
  EXPECT_EQ(d.visibility, V::kRead);
  EXPECT_TRUE(d.is_protected);
  EXPECT_THAT(d.reason, HasSubstr("/srv/build"));
  // A write rule inside a protected path of another writable root stays read-only.
  p.paths.push_back({"/home/u/proj/.vscode/cache", Access::kWrite, false, O("--write", 0)});
  EXPECT_TRUE(DecidePath(p, "/home/u/proj/.vscode/cache/x").is_protected);
  // Private tmpfs areas are not writable roots.
  EXPECT_FALSE(DecidePath(p, "/tmp/.envrc").is_protected);
  EXPECT_FALSE(DecidePath(p, "/home/u/.envrc").is_protected);
}

TEST(DecidePath, NestedRepositories) {
  Policy p = Base();
  // Inferred from the path: D/.git/hooks within the depth bound.
  EXPECT_TRUE(DecidePath(p, "/home/u/proj/vendor/lib/.git/hooks/post-checkout").is_protected);
  EXPECT_TRUE(DecidePath(p, "/home/u/proj/a/b/c/.git/hooks/x").is_protected);     // depth 3
  EXPECT_FALSE(DecidePath(p, "/home/u/proj/a/b/c/d/.git/hooks/x").is_protected);  // depth 4
  EXPECT_FALSE(DecidePath(p, "/home/u/proj/node_modules/x/.git/hooks/y").is_protected);
  // Other protected names in a nested repository need the roots found on disk.
  EXPECT_FALSE(DecidePath(p, "/home/u/proj/vendor/lib/.envrc").is_protected);
  EXPECT_TRUE(
      DecidePath(p, "/home/u/proj/vendor/lib/.envrc", {"/home/u/proj/vendor/lib"}).is_protected);
  EXPECT_THAT(DecidePath(p, "/home/u/proj/vendor/lib/.envrc", {"/home/u/proj/vendor/lib"}).reason,
              HasSubstr("nested repository /home/u/proj/vendor/lib"));
  // Roots outside the bound or outside any writable root do not count.
  EXPECT_FALSE(DecidePath(p, "/home/u/proj/a/b/c/d/.envrc", {"/home/u/proj/a/b/c/d"}).is_protected);
  p.nested_repo_depth = 0;
  EXPECT_FALSE(DecidePath(p, "/home/u/proj/vendor/lib/.git/hooks/x").is_protected);
  EXPECT_TRUE(DecidePath(p, "/home/u/proj/.git/hooks/x").is_protected);  // the root itself
}

TEST(DecidePath, LongestMatchWins) {
  Policy p = Base();
  p.paths.push_back({"/usr/local", Access::kWrite, false, O("--write", 0)});
  p.paths.push_back({"/home/u/proj/vendor", Access::kRead, false, O("--read", 0)});
  EXPECT_EQ(DecidePath(p, "/usr/local/bin/x").visibility, V::kWrite);
  EXPECT_EQ(DecidePath(p, "/usr/bin/x").visibility, V::kRead);
  PathDecision vendor = DecidePath(p, "/home/u/proj/vendor/a.c");
  EXPECT_EQ(vendor.visibility, V::kRead);
  EXPECT_EQ(vendor.via, "bind /home/u/proj/vendor (read)");
  EXPECT_FALSE(vendor.is_protected);
}

TEST(DecidePath, TheWorkspaceBeatsARuleForExactlyItsPath) {
  Policy p = Base();
  p.paths.push_back({"/home/u/proj", Access::kRead, false, O("--read", 0)});
  EXPECT_EQ(DecidePath(p, "/home/u/proj/x").via, "workspace");
  EXPECT_EQ(DecidePath(p, "/home/u/proj/x").visibility, V::kWrite);
}

TEST(DecidePath, VarTmpIsThePrivateTmpUnlessBound) {
  Policy p = Base();
  PathDecision d = DecidePath(p, "/var/tmp/x");
  EXPECT_EQ(d.visibility, V::kWrite);
  EXPECT_FALSE(d.host_file);
  EXPECT_EQ(d.via, "private tmpfs /tmp");
  EXPECT_EQ(DecidePath(p, "/var").visibility, V::kRead);  // a parent on the root
  EXPECT_EQ(DecidePath(p, "/var/lib").visibility, V::kHidden);
  p.paths.push_back({"/var", Access::kRead, false, O("--read", 0)});
  EXPECT_EQ(DecidePath(p, "/var/tmp/x").via, "bind /var (read)");
}

TEST(DecidePath, EqualPathsLaterRuleWins) {
  Policy p = Base();
  p.paths.push_back({"/home/u/.npm", Access::kRead, false, O("--read", 0)});
  EXPECT_EQ(DecidePath(p, "/home/u/.npm/x").visibility, V::kRead);
  p.paths.push_back({"/home/u/.npm", Access::kWrite, false, O("--write", 0)});
  EXPECT_EQ(DecidePath(p, "/home/u/.npm/x").visibility, V::kWrite);
}

TEST(DecidePath, HomeTmpfsVersusBoundFile) {
  Policy p = Base();
  PathDecision git = DecidePath(p, "/home/u/.gitconfig");
  EXPECT_EQ(git.visibility, V::kRead);
  EXPECT_TRUE(git.host_file);
  PathDecision rc = DecidePath(p, "/home/u/.bashrc");
  EXPECT_EQ(rc.visibility, V::kWrite);
  EXPECT_FALSE(rc.host_file);  // scratch: the host's ~/.bashrc is not there
  EXPECT_EQ(rc.via, "private HOME (tmpfs)");
  EXPECT_FALSE(rc.rule.has_value());
  EXPECT_THAT(rc.reason, HasSubstr("private tmpfs"));
  PathDecision key = DecidePath(p, "/home/u/.ssh/id_rsa");
  EXPECT_FALSE(key.host_file);
  EXPECT_EQ(DecidePath(p, "/home/u").via, "private HOME (tmpfs)");
}

TEST(DecidePath, SyntheticMounts) {
  Policy p = Base();
  PathDecision tmp = DecidePath(p, "/tmp/x");
  EXPECT_EQ(tmp.visibility, V::kWrite);
  EXPECT_FALSE(tmp.host_file);
  EXPECT_EQ(tmp.via, "private tmpfs /tmp");

  PathDecision proc = DecidePath(p, "/proc/self/status");
  EXPECT_EQ(proc.visibility, V::kRead);
  EXPECT_EQ(proc.via, "fresh /proc");

  for (const char* sys : {"/sys", "/sys/kernel/debug", "/sys/fs/cgroup"}) {
    PathDecision d = DecidePath(p, sys);
    EXPECT_EQ(d.visibility, V::kHidden) << sys;
    EXPECT_EQ(d.via, "not in the sandbox's view") << sys;
    EXPECT_THAT(d.reason, HasSubstr("/sys is never mounted"));
  }

  EXPECT_EQ(DecidePath(p, "/dev/null").visibility, V::kWrite);
  EXPECT_TRUE(DecidePath(p, "/dev/null").host_file);
  EXPECT_EQ(DecidePath(p, "/dev/urandom").visibility, V::kWrite);
  EXPECT_EQ(DecidePath(p, "/dev/pts/0").visibility, V::kWrite);
  EXPECT_EQ(DecidePath(p, "/dev/shm/x").visibility, V::kWrite);
  EXPECT_EQ(DecidePath(p, "/dev/fd").visibility, V::kRead);
  EXPECT_EQ(DecidePath(p, "/dev").visibility, V::kRead);
  for (const char* dev : {"/dev/sda", "/dev/kmsg", "/dev/mem", "/dev/kvm", "/dev/null/x"}) {
    EXPECT_EQ(DecidePath(p, dev).visibility, V::kHidden) << dev;
    EXPECT_EQ(DecidePath(p, dev).via, "minimal /dev") << dev;
  }
}

TEST(DecidePath, TheRootIsBuiltFromNothing) {
  Policy p = Base();
  PathDecision root = DecidePath(p, "/");
  EXPECT_EQ(root.visibility, V::kRead);
  EXPECT_FALSE(root.host_file);
  // /home exists only as the parent of HOME; other users are not there.
  PathDecision home = DecidePath(p, "/home");
  EXPECT_EQ(home.visibility, V::kRead);
  EXPECT_FALSE(home.host_file);
  EXPECT_EQ(home.via, "read-only tmpfs root");
  EXPECT_THAT(home.reason, HasSubstr("parent of /home/u"));
  for (const char* hidden : {"/home/other/.ssh/id_rsa", "/root", "/var/run/docker.sock",
                             "/run/user/1000/bus", "/srv", "/mnt/data"}) {
    PathDecision d = DecidePath(p, hidden);
    EXPECT_EQ(d.visibility, V::kHidden) << hidden;
    EXPECT_EQ(d.via, "not in the sandbox's view") << hidden;
  }
}

TEST(DecidePath, WorkspaceUnderTmpIsNotHiddenByThePrivateTmp) {
  Policy p = Base();
  p.workspace = "/tmp/ws";
  EXPECT_EQ(DecidePath(p, "/tmp/ws/file").via, "workspace");
  EXPECT_TRUE(DecidePath(p, "/tmp/ws/file").host_file);
  EXPECT_EQ(DecidePath(p, "/tmp/other").via, "private tmpfs /tmp");
}

TEST(DecidePath, PathsAreNormalisedLexically) {
  Policy p = Base();
  EXPECT_EQ(DecidePath(p, "/home/u/proj/../proj/./.git//hooks/x").visibility, V::kRead);
  EXPECT_TRUE(DecidePath(p, "/home/u/proj/../proj/./.git//hooks/x").is_protected);
  EXPECT_EQ(DecidePath(p, "/usr/../etc/shadow").visibility, V::kHidden);
  EXPECT_EQ(DecidePath(p, "/../../etc/shadow").visibility, V::kHidden);
  EXPECT_EQ(DecidePath(p, "relative/path").visibility, V::kHidden);
  EXPECT_EQ(DecidePath(p, "").visibility, V::kHidden);
}

TEST(DecidePath, WithTheBuiltinDefaultProfile) {
  testing::MemFs fs;
  Result<Policy> r = testing::Load(fs);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Policy& p = *r;
  PathDecision shadow = DecidePath(p, "/etc/shadow");
  EXPECT_EQ(shadow.visibility, V::kHidden);
  EXPECT_TRUE(shadow.masked);
  EXPECT_EQ(shadow.rule->source, "builtin:default");
  EXPECT_GT(shadow.rule->line, 0);
  EXPECT_THAT(shadow.reason, HasSubstr("builtin:default:"));
  EXPECT_EQ(DecidePath(p, "/etc/ssh/ssh_host_ecdsa_key").visibility, V::kHidden);
  EXPECT_EQ(DecidePath(p, "/etc/sudoers.d/90-cloud").visibility, V::kHidden);
  EXPECT_EQ(DecidePath(p, "/etc/hosts").visibility, V::kRead);
  EXPECT_EQ(DecidePath(p, "/usr/bin/env").visibility, V::kRead);
  EXPECT_EQ(DecidePath(p, "/home/u/.gitconfig").visibility, V::kRead);
  EXPECT_FALSE(DecidePath(p, "/home/u/.config/git/credentials").host_file);
  EXPECT_EQ(DecidePath(p, "/home/u/.ssh/id_ed25519").visibility, V::kHidden);
  EXPECT_EQ(DecidePath(p, "/home/u/.aws/credentials").visibility, V::kHidden);
  EXPECT_EQ(DecidePath(p, "/home/u/proj/main.c").visibility, V::kWrite);
  for (const char* prot : {".git/hooks/pre-commit", ".git/config", ".bashrc", ".zshenv",
                           ".vscode/tasks.json", ".idea/workspace.xml", ".envrc", ".mcp.json",
                           ".claude/settings.json", ".codex/config.toml", ".ward.toml"}) {
    PathDecision d = DecidePath(p, std::string("/home/u/proj/") + prot);
    EXPECT_TRUE(d.is_protected) << prot;
    EXPECT_EQ(d.visibility, V::kRead) << prot;
  }
}

}  // namespace
}  // namespace ward::policy
