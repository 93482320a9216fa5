// The filesystem view: a root built from nothing, a private HOME and /tmp, protected paths.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"

namespace ward::test {
namespace {

class FilesystemTest : public SandboxTest {};

TEST_F(FilesystemTest, CanarySecretsInHomeAreInvisible) {
  for (const char* rel : {".ssh/id_ed25519", ".aws/credentials", ".netrc", ".git-credentials",
                          ".config/gh/hosts.yml", "notes.txt"}) {
    std::string path = home_ + "/" + rel;
    RunResult r = Probe({"read", path});
    EXPECT_EQ(r.out, "err ENOENT open\n") << rel;
    r = Probe({"stat", path});
    EXPECT_EQ(r.out, "err ENOENT " + path + "\n") << rel;  // not even its existence leaks
  }
  // Positive control: the probe can read a HOME file when the policy names it.
  std::string notes = home_ + "/notes.txt";
  RunResult r = Probe({"read", notes}, {"-r", notes});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(kCanarySecret), std::string::npos);
  // Naming a denied secret explicitly is refused, not silently ignored.
  r = Probe({"read", home_ + "/.ssh/id_ed25519"}, {"-r", home_ + "/.ssh/id_ed25519"});
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("denied"), std::string::npos) << r.err;
}

TEST_F(FilesystemTest, ProfileSelectedHomeFileIsReadOnly) {
  RunResult r = Probe({"read", home_ + "/.gitconfig"});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Ward Test"), std::string::npos);
  r = Probe({"append", home_ + "/.gitconfig"});
  EXPECT_EQ(r.out, "err EROFS open\n");
}

TEST_F(FilesystemTest, WritesOutsideWritableRootsFailAndLeaveNothing) {
  RunResult r = Probe({"write", "/usr/ward-canary"});
  EXPECT_EQ(r.out, "err EROFS open\n");
  r = Probe({"write", "/ward-canary"});
  EXPECT_EQ(r.out, "err EROFS open\n");
  r = Probe({"write", "/etc/ward-canary"});
  EXPECT_EQ(r.out, "err EROFS open\n");
  // HOME and /tmp are private: writes succeed inside and never reach the host.
  r = Probe({"write", home_ + "/.bashrc", "evil"});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_FALSE(PathExists(home_ + "/.bashrc"));
  std::string host_tmp = root_->path() + "/tmp-canary";
  r = Probe({"write", host_tmp});
  EXPECT_EQ(r.status, 0) << r.out;  // the fixture dir lies in the private /tmp inside
  EXPECT_FALSE(PathExists(host_tmp));
  // Positive control: the workspace is writable and the write reaches the host.
  r = Probe({"write", ws_ + "/out.txt", "data"});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(ReadFile(ws_ + "/out.txt"), "data");
}

TEST_F(FilesystemTest, ExtraWritableAndReadOnlyPaths) {
  std::string extra = root_->path() + "/extra";
  MakeDirs(extra);
  RunResult r = Probe({"write", extra + "/f"}, {"-w", extra});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(PathExists(extra + "/f"));
  r = Probe({"write", extra + "/g"}, {"-r", extra});
  EXPECT_EQ(r.out, "err EROFS open\n");
  r = Probe({"read", extra + "/f"}, {"-r", extra});
  EXPECT_EQ(r.status, 0);
}

TEST_F(FilesystemTest, DenyHidesInsideTheWorkspace) {
  MakeDirs(ws_ + "/secrets");
  WriteFile(ws_ + "/secrets/token", kCanarySecret);
  RunResult r = Probe({"read", ws_ + "/secrets/token"}, {"--deny", ws_ + "/secrets"});
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.out.find(kCanarySecret), std::string::npos);
  r = Probe({"read", ws_ + "/secrets/token"});  // positive control
  EXPECT_NE(r.out.find(kCanarySecret), std::string::npos);
}

TEST_F(FilesystemTest, SystemCredentialFilesAreMasked) {
  RunResult r = Probe({"read", "/etc/shadow"});
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.out.find("root:"), std::string::npos);
  r = Probe({"read", "/etc/passwd"});  // positive control
  EXPECT_NE(r.out.find("root:"), std::string::npos);
}

// A deny rule with a pattern inside a visible tree covers every entry it matches there, read
// from that directory when the root is built (a leading dot is matched only explicitly).
TEST_F(FilesystemTest, PatternDenyRulesCoverEveryMatchingEntry) {
  WriteFile(ws_ + "/cred-a.txt", kCanarySecret);
  WriteFile(ws_ + "/cred-b.txt", kCanarySecret);
  WriteFile(ws_ + "/.cred-c.txt", "dotfile");
  WriteFile(ws_ + "/keep.txt", "kept");
  const std::vector<std::string> deny = {"--deny", ws_ + "/cred-*.txt"};
  for (const char* name : {"/cred-a.txt", "/cred-b.txt"}) {
    RunResult r = Probe({"read", ws_ + name}, deny);
    EXPECT_EQ(r.out.find(kCanarySecret), std::string::npos) << name << ": " << r.out;
    EXPECT_NE(r.status, 0) << name;
  }
  // Positive controls: what the pattern does not match stays readable.
  EXPECT_NE(Probe({"read", ws_ + "/keep.txt"}, deny).out.find("kept"), std::string::npos);
  EXPECT_NE(Probe({"read", ws_ + "/.cred-c.txt"}, deny).out.find("dotfile"), std::string::npos);
  EXPECT_NE(Probe({"read", ws_ + "/cred-a.txt"}).out.find(kCanarySecret), std::string::npos);
}

TEST_F(FilesystemTest, NoSysAndMinimalDev) {
  EXPECT_EQ(Probe({"stat", "/sys"}).out, "err ENOENT /sys\n");
  RunResult r = Probe({"ls", "/dev"});
  ASSERT_EQ(r.status, 0);
  for (const char* want :
       {"null", "zero", "full", "random", "urandom", "tty", "pts", "ptmx", "shm"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << " in " << r.out;
  }
  for (const char* absent : {"sda", "vda", "mem", "kmsg", "kvm", "console", "vcs"}) {
    EXPECT_EQ(r.out.find(std::string(absent) + ","), std::string::npos)
        << absent << " in " << r.out;
  }
  EXPECT_EQ(Probe({"write", "/dev/null"}).status, 0);
}

TEST_F(FilesystemTest, HostUnixSocketsAreUnreachable) {
  // A listener on the host in /tmp (like an ssh-agent or X11 socket).
  std::string sock = root_->path() + "/agent.sock";
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  struct sockaddr_un sa = {};
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  RunResult r = Probe({"unix-connect", sock});
  EXPECT_EQ(r.out, "err ENOENT connect\n");
  // Positive control: the same probe outside the sandbox connects.
  RunResult outside = RunProgram({ProbeBin(), "unix-connect", sock});
  EXPECT_EQ(outside.out, "ok connect\n");
  close(fd);
}

TEST_F(FilesystemTest, ProtectedPathsAreReadOnlyAndNotCreatable) {
  MakeDirs(ws_ + "/.git/hooks");
  WriteFile(ws_ + "/.git/config", "[core]\n");
  WriteFile(ws_ + "/.vscode-placeholder", "");
  RunResult r = Probe({"write", ws_ + "/.git/hooks/pre-commit"});
  EXPECT_EQ(r.out, "err EROFS open\n");
  r = Probe({"append", ws_ + "/.git/config"});
  EXPECT_EQ(r.out, "err EROFS open\n");
  EXPECT_EQ(ReadFile(ws_ + "/.git/config"), "[core]\n");
  // Absent protected names cannot be created, by any route.
  EXPECT_EQ(Probe({"write", ws_ + "/.envrc"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"mkdir", ws_ + "/.vscode"}).out, "err EROFS " + ws_ + "/.vscode\n");
  EXPECT_EQ(Probe({"symlink", "x", ws_ + "/.mcp.json"}).out, "err EROFS " + ws_ + "/.mcp.json\n");
  EXPECT_EQ(Probe({"rename", ws_ + "/.vscode-placeholder", ws_ + "/.idea"}).out,
            "err EROFS " + ws_ + "/.idea\n");
  EXPECT_FALSE(PathExists(ws_ + "/.envrc"));
  EXPECT_FALSE(PathExists(ws_ + "/.vscode"));
  EXPECT_FALSE(PathExists(ws_ + "/.mcp.json"));
  EXPECT_FALSE(PathExists(ws_ + "/.idea"));
  // A symlink planted in the workspace cannot be used to create the protected name.
  ASSERT_EQ(symlink(".envrc", (ws_ + "/innocent").c_str()), 0);
  EXPECT_EQ(Probe({"write", ws_ + "/innocent"}).out, "err EROFS open\n");
  EXPECT_FALSE(PathExists(ws_ + "/.envrc"));
  // The protection cannot be carried away by renaming or removing what contains it.
  EXPECT_EQ(Probe({"rename", ws_ + "/.git", ws_ + "/moved"}).out, "err EBUSY " + ws_ + "/moved\n");
  EXPECT_EQ(Probe({"rename", ws_ + "/.git/hooks", ws_ + "/.git/h2"}).out,
            "err EBUSY " + ws_ + "/.git/h2\n");
  EXPECT_TRUE(PathExists(ws_ + "/.git/hooks"));
  // Positive controls: ordinary files, directories, links and renames work.
  EXPECT_EQ(Probe({"write", ws_ + "/src.c"}).status, 0);
  EXPECT_EQ(Probe({"mkdir", ws_ + "/build"}).status, 0);
  EXPECT_EQ(Probe({"symlink", "src.c", ws_ + "/link.c"}).status, 0);
  EXPECT_EQ(Probe({"rename", ws_ + "/src.c", ws_ + "/main.c"}).status, 0);
  EXPECT_TRUE(PathExists(ws_ + "/main.c"));
  EXPECT_EQ(Probe({"write", ws_ + "/.git/index"}).status, 0);  // the rest of .git is writable
}

TEST_F(FilesystemTest, NestedRepositoriesAreProtected) {
  MakeDirs(ws_ + "/vendor/lib/.git/hooks");
  WriteFile(ws_ + "/vendor/lib/.git/config", "[core]\n");
  EXPECT_EQ(Probe({"write", ws_ + "/vendor/lib/.git/hooks/post-checkout"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"append", ws_ + "/vendor/lib/.git/config"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"write", ws_ + "/vendor/lib/.envrc"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"write", ws_ + "/vendor/lib/code.c"}).status, 0);  // positive control
}

// Protected names that exist are bound read-only, at the root and in a nested repository (init
// reads each directory once and looks up only the names it holds).
TEST_F(FilesystemTest, ExistingProtectedEntriesAreReadOnlyAtTheRootAndInNestedRepos) {
  WriteFile(ws_ + "/.envrc", "export A=1\n");
  MakeDirs(ws_ + "/.vscode");
  WriteFile(ws_ + "/.vscode/settings.json", "{}\n");
  MakeDirs(ws_ + "/vendor/lib/.git");
  WriteFile(ws_ + "/vendor/lib/.mcp.json", "{}\n");
  WriteFile(ws_ + "/vendor/lib/.zshrc", "# rc\n");
  for (const std::string rel :
       {"/.envrc", "/.vscode/settings.json", "/vendor/lib/.mcp.json", "/vendor/lib/.zshrc"}) {
    EXPECT_EQ(Probe({"append", ws_ + rel}).out, "err EROFS open\n") << rel;
  }
  EXPECT_EQ(Probe({"write", ws_ + "/.vscode/tasks.json"}).out, "err EROFS open\n");
  EXPECT_EQ(ReadFile(ws_ + "/.envrc"), "export A=1\n");
  EXPECT_EQ(ReadFile(ws_ + "/vendor/lib/.mcp.json"), "{}\n");
  // Positive controls: their neighbours are writable.
  EXPECT_EQ(Probe({"write", ws_ + "/envrc.txt"}).status, 0);
  EXPECT_EQ(Probe({"write", ws_ + "/vendor/lib/code.c"}).status, 0);
}

TEST_F(FilesystemTest, GitInitAtTheWorkspaceRootCannotPlantConfig) {
  // .git is absent: creating .git/config (a protected path) is refused even through a fresh .git.
  EXPECT_EQ(Probe({"mkdir", ws_ + "/.git"}).status, 0);
  EXPECT_EQ(Probe({"write", ws_ + "/.git/config"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"mkdir", ws_ + "/.git/hooks"}).out, "err EROFS " + ws_ + "/.git/hooks\n");
}

TEST_F(FilesystemTest, SymlinkPlantedByAPreviousRunCannotRedirectProtection) {
  // A previous run planted .git -> ~/.ssh: the protection must not bind or expose the target.
  ASSERT_EQ(symlink((home_ + "/.ssh").c_str(), (ws_ + "/.git").c_str()), 0);
  RunResult r = Probe({"ls", ws_ + "/.git/"});
  EXPECT_NE(r.status, 0) << r.out;
  r = Probe({"read", ws_ + "/.git/id_ed25519"});
  EXPECT_EQ(r.out.find(kCanarySecret), std::string::npos);
  EXPECT_NE(r.status, 0);
}

TEST_F(FilesystemTest, RelativeAndDotDotPathsInTheGuard) {
  MakeDirs(ws_ + "/a/b");
  RunResult r = Shell("cd a/b && echo x > ../../.envrc", {});
  EXPECT_NE(r.status, 0);
  EXPECT_FALSE(PathExists(ws_ + "/.envrc"));
  r = Shell("cd a/b && echo x > ../../fine.txt && cat ../../fine.txt", {});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "x\n");
  r = Shell("umask 077 && echo x > private.txt", {});
  EXPECT_EQ(r.status, 0);
  struct stat st;
  ASSERT_EQ(stat((ws_ + "/private.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  r = Shell("echo to-stdout > /dev/stdout", {});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "to-stdout\n");
}

// A program may create entries in a directory it holds open through its own descriptor's link
// (/proc/self/fd/N/NAME: Claude Code makes its task output files so): the guard creates them in
// that directory, and a protected name is still refused by that route.
TEST_F(FilesystemTest, CreationsBelowTheCallersDescriptorLinks) {
  MakeDirs(ws_ + "/held");
  MakeDirs(ws_ + "/.git");
  RunResult r = Shell(
      "exec 3<held 4<.git && mkdir /proc/self/fd/3/sub && echo x > /proc/self/fd/3/f && "
      "echo y > /dev/fd/3/g && echo z > /proc/thread-self/fd/3/sub/h && cat held/f held/g "
      "held/sub/h",
      {});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "x\ny\nz\n");
  EXPECT_EQ(ReadFile(ws_ + "/held/sub/h"), "z\n");
  r = Shell("exec 4<.git; mkdir /proc/self/fd/4/hooks; echo x > /proc/self/fd/4/config", {});
  EXPECT_NE(r.status, 0);
  EXPECT_FALSE(PathExists(ws_ + "/.git/hooks"));
  EXPECT_FALSE(PathExists(ws_ + "/.git/config"));
  // A descriptor the caller does not hold names nothing.
  r = Shell("mkdir /proc/self/fd/9/x", {});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("No such file"), std::string::npos) << r.err;
}

// /var/tmp is the private /tmp inside, as a link, except where the workspace lies below it:
// then its path is made of directories and the workspace is bound there.
TEST_F(FilesystemTest, AWorkspaceBelowVarTmpWorks) {
  char tmpl[] = "/var/tmp/ward-it.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string ws = std::string(tmpl) + "/ws";
  MakeDirs(ws);
  RunOptions o = Defaults();
  o.cwd = ws;
  RunResult r = RunWard({"run", "--", "/bin/sh", "-c", "touch made && pwd"}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, ws + "\n");
  EXPECT_TRUE(PathExists(ws + "/made"));
  RunResult plain = Shell("test -L /var/tmp && echo link");
  EXPECT_EQ(plain.out, "link\n") << plain.err;  // control: elsewhere /var/tmp is the link
  RunProgram({"/bin/rm", "-rf", tmpl});
}

}  // namespace
}  // namespace ward::test
