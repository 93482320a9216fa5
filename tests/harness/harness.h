// Test harness for sandbox tests: every test binary runs once as root and once as an
// unprivileged user (WARD_TEST_AS=root|user). Helpers run the real ward binary.
#pragma once

#include <gtest/gtest.h>

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ward::test {

// Identity the tests run under.
bool RunningAsRoot();
std::string Variant();  // "root" or "user"

// Paths of the staged binaries (reachable by the test user; bind them with `-r StageDir()`).
std::string StageDir();
std::string WardBin();
std::string ProbeBin();

// A directory removed (recursively) when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "ward-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// A fake HOME with canary secrets (~/.ssh/id_ed25519, ~/.aws/credentials, ~/.netrc, ...).
inline constexpr const char* kCanarySecret = "WARD-CANARY-SECRET-7f3a9c";
inline constexpr const char* kCanaryApiKey = "sk-ward-canary-api-key-4b1d";
void WriteFile(const std::string& path, const std::string& content, int mode = 0644);
std::string ReadFile(const std::string& path);
// One line from `fd`, without its newline: what was read before the newline, EOF or an error.
std::string ReadLine(int fd);
bool PathExists(const std::string& path);
// Host processes whose command line contains `needle`. A process that exits while it is read
// counts as gone (its /proc files then fail with ESRCH).
std::vector<pid_t> FindHostProcesses(const std::string& needle);
int CountHostProcesses(const std::string& needle);
// Whether the probe itself runs with `needle` on its command line. ward and sandbox init carry
// the same command line before init execs the command, so counting those would also count a
// sandbox that is still being built.
bool ProbeIsRunning(const std::string& needle);
void MakeDirs(const std::string& path, int mode = 0755);
void PlantCanaryHome(const std::string& home);

struct RunResult {
  int status = -1;  // exit code, or 128+signal
  std::string out;
  std::string err;
  bool timed_out = false;
};

struct RunOptions {
  std::string cwd;                         // default: current directory
  std::map<std::string, std::string> env;  // added to the base environment
  bool clean_env = false;                  // start from an empty environment
  std::string stdin_data;
  std::string stdin_file;  // when set, stdin is this file opened read-only (not a pipe)
  int timeout_s = 60;
  std::vector<int> pass_fds;  // inherited fds (for --json-status N)
  // The program sees a kernel without the mount API (Linux < 5.12): a seccomp filter answers
  // ENOSYS to open_tree, move_mount, fsopen, fsconfig, fsmount, fspick and mount_setattr, so
  // ward builds the root by path, as it does there.
  bool without_mount_api = false;
};

// Forks `argv` with the pty's slave as its controlling terminal and stdio, in o.cwd, with
// o.env plus TERM=xterm; the caller keeps `master` and closes `slave`.
pid_t SpawnOnTerminal(const std::vector<std::string>& argv, const RunOptions& o, int master,
                      int slave);

// What a sandboxed TCP connect that ward forbids gets: Landlock's EACCES from ABI 4 on; below
// it the network namespace's answer (no route out; nothing of the host listening on the
// sandbox's own loopback), the layer docs/kernels.md names for that right.
std::string TcpConnectRefusal(bool loopback = false);
// What a sandboxed kill of init (pid 1 of its namespace) gets: Landlock's EPERM from ABI 6 on;
// below it the call succeeds and the kernel drops the signal (init handles none it could be
// stopped or killed by), which the caller checks by init's survival.
std::string KillInitResult();
// Why `--ask` is refused on this kernel ("" where it runs): approvals need Landlock's truncate
// right (ABI 3); LowerLandlockAbis.AskNeedsTheTruncateRight checks the refusal itself.
std::string WhyAskIsRefusedHere();

// The environment every ward invocation gets: PATH, HOME=<home>, and a canary API key.
std::map<std::string, std::string> BaseEnv(const std::string& home);

// Runs an arbitrary program (no shell) and collects its output.
RunResult RunProgram(const std::vector<std::string>& argv, const RunOptions& opts = {});

// Runs `ward ARGS...`.
RunResult RunWard(const std::vector<std::string>& args, const RunOptions& opts = {});

// A server for a test (`argv`, argv[0] a full path) that prints the port it listens on as its
// first line and serves until killed: its pid and that port (0 when it printed none). Its
// stderr goes to /dev/null. The caller kills and reaps it.
struct PrintedPort {
  pid_t pid = -1;
  int port = 0;
};
PrintedPort StartServerPrintingItsPort(const std::vector<std::string>& argv);

// A fixture with a workspace and a canary HOME, owned by the test identity.
class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override;
  // `ward run [extra] -- ward-probe VERB ARGS...` in the workspace, probe dir bound read-only.
  RunResult Probe(const std::vector<std::string>& verb_and_args,
                  const std::vector<std::string>& ward_opts = {}, RunOptions opts = {});
  // `ward run [extra] -- sh -c SCRIPT` in the workspace.
  RunResult Shell(const std::string& script, const std::vector<std::string>& ward_opts = {},
                  RunOptions opts = {});
  RunOptions Defaults() const;

  std::optional<TempDir> root_;  // holds home/ and ws/
  std::string home_;
  std::string ws_;
};

}  // namespace ward::test
