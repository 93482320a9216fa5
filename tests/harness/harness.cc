#include "harness.h"

#include "enforce/bpf.h"
#include "enforce/landlock.h"
#include "enforce/landlock_coverage.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ward::test {

bool RunningAsRoot() { return geteuid() == 0; }

std::string Variant() {
  const char* v = getenv("WARD_TEST_AS");
  return v ? v : "user";
}

std::string StageDir() {
  const char* s = getenv("WARD_TEST_STAGE_DIR");
  if (s && *s) return s;
  struct stat st;
  if (stat(WARD_TEST_STAGE "/ward", &st) == 0) return WARD_TEST_STAGE;
  return WARD_BUILD_BIN;
}
std::string WardBin() { return StageDir() + "/ward"; }
std::string ProbeBin() { return StageDir() + "/ward-probe"; }

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + ".XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp: " << strerror(errno);
    path_ = "/nonexistent";
    return;
  }
  path_ = buf.data();
  chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() {
  if (path_.rfind("/tmp/", 0) != 0) return;
  std::error_code ec;
  // Make everything removable first (tests create read-only trees).
  for (auto it = std::filesystem::recursive_directory_iterator(
           path_, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) chmod(it->path().c_str(), 0755);
  }
  std::filesystem::remove_all(path_, ec);
}

void WriteFile(const std::string& path, const std::string& content, int mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  ASSERT_GE(fd, 0) << path << ": " << strerror(errno);
  ASSERT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  fchmod(fd, mode);
  close(fd);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

std::vector<pid_t> FindHostProcesses(const std::string& needle) {
  std::vector<pid_t> found;
  DIR* d = opendir("/proc");
  if (!d) return found;
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    int fd = open((std::string("/proc/") + e->d_name + "/cmdline").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    std::string s;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
    close(fd);
    if (s.find(needle) != std::string::npos) found.push_back(atoi(e->d_name));
  }
  closedir(d);
  return found;
}

int CountHostProcesses(const std::string& needle) {
  return static_cast<int>(FindHostProcesses(needle).size());
}

bool ProbeIsRunning(const std::string& needle) {
  for (pid_t pid : FindHostProcesses(needle)) {
    if (ReadFile("/proc/" + std::to_string(pid) + "/comm") == "ward-probe\n") return true;
  }
  return false;
}

bool PathExists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

void MakeDirs(const std::string& path, int mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  chmod(path.c_str(), mode);
}

void PlantCanaryHome(const std::string& home) {
  MakeDirs(home + "/.ssh", 0700);
  WriteFile(home + "/.ssh/id_ed25519",
            std::string("-----BEGIN OPENSSH PRIVATE KEY-----\n") + kCanarySecret +
                "\n-----END OPENSSH PRIVATE KEY-----\n",
            0600);
  MakeDirs(home + "/.aws", 0700);
  WriteFile(home + "/.aws/credentials",
            std::string("[default]\naws_secret_access_key = ") + kCanarySecret + "\n", 0600);
  WriteFile(home + "/.netrc", std::string("machine example.com password ") + kCanarySecret + "\n",
            0600);
  WriteFile(home + "/.git-credentials", std::string("https://u:") + kCanarySecret + "@example\n",
            0600);
  MakeDirs(home + "/.config/gh", 0700);
  WriteFile(home + "/.config/gh/hosts.yml", std::string("oauth_token: ") + kCanarySecret + "\n",
            0600);
  WriteFile(home + "/notes.txt", std::string("private notes ") + kCanarySecret + "\n", 0600);
  WriteFile(home + "/.gitconfig", "[user]\n\tname = Ward Test\n\temail = test@ward.invalid\n");
}

std::string TcpConnectRefusal(bool loopback) {
  if (enforce::LandlockAbi() >= 4) return "err EACCES connect\n";
  return loopback ? "err ECONNREFUSED connect\n" : "err ENETUNREACH connect\n";
}

std::string KillInitResult() {
  return enforce::LandlockAbi() >= 6 ? "err EPERM kill\n" : "ok kill\n";
}

std::string WhyAskIsRefusedHere() {
  if (enforce::LandlockLacksTruncate(enforce::LandlockAbi())) {
    return "--ask is refused where Landlock lacks its truncate right (ABI 3, Linux 6.2): "
           "LowerLandlockAbis.AskNeedsTheTruncateRight checks the refusal";
  }
  return "";
}

std::map<std::string, std::string> BaseEnv(const std::string& home) {
  std::map<std::string, std::string> env;
  env["PATH"] = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
  env["HOME"] = home;
  env["LANG"] = "C.UTF-8";
  env["USER"] = RunningAsRoot() ? "root" : WARD_TEST_USER;
  env["ANTHROPIC_API_KEY"] = kCanaryApiKey;
  env["WARD_CANARY_TOKEN"] = kCanaryApiKey;
  if (const char* x = getenv("XDG_STATE_HOME")) env["XDG_STATE_HOME"] = x;
  if (const char* x = getenv("XDG_RUNTIME_DIR")) env["XDG_RUNTIME_DIR"] = x;
  if (const char* x = getenv("WARD_CGROUP_ROOT")) env["WARD_CGROUP_ROOT"] = x;
  return env;
}

// RunOptions::without_mount_api's filter: ENOSYS for open_tree .. fspick and mount_setattr.
static std::vector<sock_filter> MountApiHidingFilter() {
  static_assert(SYS_move_mount == SYS_open_tree + 1 && SYS_fspick == SYS_open_tree + 5);
  using enforce::BpfBuilder;
  BpfBuilder b;
  const BpfBuilder::Label allow = b.NewLabel(), enosys = b.NewLabel();
  b.LoadArch();
  b.Jump(BPF_JEQ, AUDIT_ARCH_X86_64, BpfBuilder::kNext, allow);
  b.LoadNr();
  b.Jump(BPF_JEQ, SYS_mount_setattr, enosys, BpfBuilder::kNext);
  b.Jump(BPF_JGE, SYS_open_tree, BpfBuilder::kNext, allow);
  b.Jump(BPF_JGT, SYS_fspick, allow, enosys);
  b.Bind(enosys);
  b.Ret(SECCOMP_RET_ERRNO | ENOSYS);
  b.Bind(allow);
  b.Ret(SECCOMP_RET_ALLOW);
  Result<std::vector<sock_filter>> insns = b.Finish();
  EXPECT_TRUE(insns.ok()) << insns.status().ToString();
  return insns.ok() ? *insns : std::vector<sock_filter>{};
}

// Installs `filter` on the calling thread (after fork: no allocation).
static bool InstallFilter(std::vector<sock_filter>& filter) {
  struct sock_fprog prog = {static_cast<unsigned short>(filter.size()), filter.data()};
  return !filter.empty() && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

PrintedPort StartServerPrintingItsPort(const std::vector<std::string>& argv) {
  PrintedPort out;
  int out_pipe[2];
  if (pipe(out_pipe) != 0) return out;
  out.pid = fork();
  if (out.pid == 0) {
    dup2(out_pipe[1], 1);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  char buf[32] = {};
  ssize_t n = read(out_pipe[0], buf, sizeof buf - 1);
  close(out_pipe[0]);
  if (n > 0) out.port = atoi(buf);
  return out;
}

RunResult RunProgram(const std::vector<std::string>& argv, const RunOptions& opts) {
  RunResult r;
  int out_pipe[2], err_pipe[2], in_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 ||
      pipe2(in_pipe, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe: " << strerror(errno);
    return r;
  }
  std::vector<std::string> env_strs;
  if (!opts.clean_env) {
    for (char** e = environ; *e; ++e) {
      std::string s = *e;
      std::string name = s.substr(0, s.find('='));
      if (opts.env.count(name) == 0) env_strs.push_back(s);
    }
  }
  for (const auto& [k, v] : opts.env) env_strs.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strs) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  std::vector<sock_filter> filter;
  if (opts.without_mount_api) filter = MountApiHidingFilter();

  pid_t pid = fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << strerror(errno);
    return r;
  }
  if (pid == 0) {
    setpgid(0, 0);
    if (!opts.stdin_file.empty()) {
      int in = open(opts.stdin_file.c_str(), O_RDONLY);
      if (in < 0 || dup2(in, 0) < 0) _exit(126);
    } else {
      dup2(in_pipe[0], 0);
    }
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    for (int fd : opts.pass_fds) {
      int flags = fcntl(fd, F_GETFD);
      fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
    }
    if (!opts.cwd.empty() && chdir(opts.cwd.c_str()) != 0) _exit(126);
    if (opts.without_mount_api && !InstallFilter(filter)) _exit(126);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(in_pipe[0]);
  if (!opts.stdin_data.empty()) {
    // Small inputs only: written before reading output.
    ssize_t n = write(in_pipe[1], opts.stdin_data.data(), opts.stdin_data.size());
    (void)n;
  }
  close(in_pipe[1]);

  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opts.timeout_s);
  struct pollfd pfds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_count = 2;
  char buf[65536];
  while (open_count > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    int n = poll(pfds, 2, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (pfds[i].fd < 0 || !(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(pfds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        close(pfds[i].fd);
        pfds[i].fd = -1;
        --open_count;
      } else {
        (i == 0 ? r.out : r.err).append(buf, got);
      }
    }
  }
  for (auto& p : pfds) {
    if (p.fd >= 0) close(p.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    r.status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.status = 128 + WTERMSIG(status);
  }
  return r;
}

RunResult RunWard(const std::vector<std::string>& args, const RunOptions& opts) {
  std::vector<std::string> argv = {WardBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProgram(argv, opts);
}

void SandboxTest::SetUp() {
  root_.emplace("ward-it");
  home_ = root_->path() + "/home";
  ws_ = root_->path() + "/ws";
  MakeDirs(home_, 0755);
  MakeDirs(ws_, 0755);
  PlantCanaryHome(home_);
}

RunOptions SandboxTest::Defaults() const {
  RunOptions o;
  o.cwd = ws_;
  o.env = BaseEnv(home_);
  o.clean_env = true;
  return o;
}

RunResult SandboxTest::Probe(const std::vector<std::string>& verb_and_args,
                             const std::vector<std::string>& ward_opts, RunOptions opts) {
  if (opts.cwd.empty()) {
    RunOptions d = Defaults();
    d.stdin_data = opts.stdin_data;
    d.stdin_file = opts.stdin_file;
    d.timeout_s = opts.timeout_s;
    d.pass_fds = opts.pass_fds;
    d.without_mount_api = opts.without_mount_api;
    for (auto& [k, v] : opts.env) d.env[k] = v;
    opts = d;
  }
  std::vector<std::string> args = {"run", "-r", StageDir()};
  args.insert(args.end(), ward_opts.begin(), ward_opts.end());
  args.push_back("--");
  args.push_back(ProbeBin());
  args.insert(args.end(), verb_and_args.begin(), verb_and_args.end());
  return RunWard(args, opts);
}

RunResult SandboxTest::Shell(const std::string& script, const std::vector<std::string>& ward_opts,
                             RunOptions opts) {
  if (opts.cwd.empty()) {
    RunOptions d = Defaults();
    d.stdin_data = opts.stdin_data;
    d.stdin_file = opts.stdin_file;
    d.timeout_s = opts.timeout_s;
    d.pass_fds = opts.pass_fds;
    d.without_mount_api = opts.without_mount_api;
    for (auto& [k, v] : opts.env) d.env[k] = v;
    opts = d;
  }
  std::vector<std::string> args = {"run", "-r", StageDir()};
  args.insert(args.end(), ward_opts.begin(), ward_opts.end());
  args.insert(args.end(), {"--", "/bin/sh", "-c", script});
  return RunWard(args, opts);
}

pid_t SpawnOnTerminal(const std::vector<std::string>& argv, const RunOptions& o, int master,
                      int slave) {
  std::vector<std::string> envs;
  for (const auto& [k, v] : o.env) envs.push_back(k + "=" + v);
  envs.push_back("TERM=xterm");
  std::vector<char*> envp, args;
  for (auto& s : envs) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    ioctl(slave, TIOCSCTTY, 0);
    dup2(slave, 0);
    dup2(slave, 1);
    dup2(slave, 2);
    close(master);
    if (!o.cwd.empty() && chdir(o.cwd.c_str()) != 0) _exit(126);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  return pid;
}

}  // namespace ward::test
