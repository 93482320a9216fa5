// `ward run` end to end: exit statuses, --json-status, workspace handling, environment.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace ward::test {
namespace {

class RunTest : public SandboxTest {};

TEST_F(RunTest, ExitStatusIsTheCommands) {
  EXPECT_EQ(Probe({"exit", "0"}).status, 0);
  EXPECT_EQ(Probe({"exit", "3"}).status, 3);
  EXPECT_EQ(Probe({"exit", "255"}).status, 255);
}

TEST_F(RunTest, SignalGives128PlusN) {
  RunResult r = Probe({"signal-self", "15"});
  EXPECT_EQ(r.status, 128 + 15) << r.err;
  r = Probe({"signal-self", "9"});
  EXPECT_EQ(r.status, 128 + 9) << r.err;
}

TEST_F(RunTest, MissingCommandIs127AndNotExecutableIs126) {
  RunResult r = Shell("true", {});
  ASSERT_EQ(r.status, 0) << r.err;  // positive control: the shell itself runs
  r = RunWard({"run", "--", "/nonexistent/cmd"}, Defaults());
  EXPECT_EQ(r.status, 127) << r.err;
  EXPECT_NE(r.err.find("No such file"), std::string::npos) << r.err;
  r = RunWard({"run", "--", "no-such-command-ward"}, Defaults());
  EXPECT_EQ(r.status, 127) << r.err;
  WriteFile(ws_ + "/not-exec.sh", "#!/bin/sh\necho hi\n", 0644);
  r = RunWard({"run", "--", ws_ + "/not-exec.sh"}, Defaults());
  EXPECT_EQ(r.status, 126) << r.err;
}

TEST_F(RunTest, RefusalIs125AndNamesTheProblem) {
  RunResult r = RunWard({"run", "-r", "/nonexistent/path", "--", "/bin/true"}, Defaults());
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("/nonexistent/path"), std::string::npos) << r.err;
  r = RunWard({"run", "--allow-degraded", "bogus-layer", "--", "/bin/true"}, Defaults());
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("bogus-layer"), std::string::npos) << r.err;
  r = RunWard({"run", "-p", "no-such-profile", "--", "/bin/true"}, Defaults());
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("no-such-profile"), std::string::npos) << r.err;
}

// Reaps the children this process (a subreaper) was given, for `ms` milliseconds: how many
// there were.
int ReapOrphans(int ms = 300) {
  int n = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < deadline) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) ++n;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return n;
}

// `ward run` clones sandbox init before it parses its command line: a usage error or a refused
// run kills and reaps it before ward exits, so that nothing of it outlives ward.
TEST_F(RunTest, ARefusedRunLeavesNoSandboxInitBehind) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
  // Children that earlier tests in this process left behind are not this test's to count.
  ReapOrphans();
  // Positive control: what a program leaves behind is re-parented to this process.
  RunResult r = RunProgram({"/bin/sh", "-c", "sleep 0.1 >/dev/null 2>&1 & exit 0"});
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(ReapOrphans(), 1);
  const std::vector<std::vector<std::string>> refused = {
      {"run", "--no-such-option", "--", "/bin/true"},          // usage error
      {"run", "-p", "no-such-profile", "--", "/bin/true"},     // before the supervisor
      {"run", "-r", "/nonexistent/path", "--", "/bin/true"},   // refused by the planner
      {"run", "-C", ws_ + "/no-such-dir", "--", "/bin/true"},  // no workdir
  };
  for (const auto& args : refused) {
    r = RunWard(args, Defaults());
    EXPECT_EQ(r.status, 125) << args[1] << ": " << r.err;
    EXPECT_EQ(ReapOrphans(), 0) << args[1] << " left a process behind";
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
}

TEST_F(RunTest, MalformedProfileIsRefusedWithFileAndLine) {
  std::string profile = root_->path() + "/bad.toml";
  WriteFile(profile, "[filesystem]\nread = [\"/usr\"\nwrite = 3\n");
  RunResult r = RunWard({"run", "-p", profile, "--", "/bin/true"}, Defaults());
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("bad.toml"), std::string::npos) << r.err;
  WriteFile(profile, "[filesystem]\nwirte = [\"/tmp\"]\n");
  r = RunWard({"run", "-p", profile, "--", "/bin/true"}, Defaults());
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("bad.toml:2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wirte"), std::string::npos) << r.err;
}

TEST_F(RunTest, JsonStatusReportsTheOutcome) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  RunOptions o = Defaults();
  o.pass_fds = {fds[1]};
  RunResult r =
      RunWard({"run", "--json-status", std::to_string(fds[1]), "--", "/bin/sh", "-c", "exit 7"}, o);
  close(fds[1]);
  char buf[4096];
  ssize_t n = read(fds[0], buf, sizeof buf);
  close(fds[0]);
  ASSERT_GT(n, 0);
  auto j = nlohmann::json::parse(std::string(buf, n));
  EXPECT_EQ(r.status, 7);
  EXPECT_EQ(j["status"], "exited");
  EXPECT_EQ(j["exit_code"], 7);

  ASSERT_EQ(pipe(fds), 0);
  o.pass_fds = {fds[1]};
  r = RunWard(
      {"run", "--json-status", std::to_string(fds[1]), "-r", "/nonexistent", "--", "/bin/true"}, o);
  close(fds[1]);
  n = read(fds[0], buf, sizeof buf);
  close(fds[0]);
  ASSERT_GT(n, 0);
  j = nlohmann::json::parse(std::string(buf, n));
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(j["status"], "refused");
  EXPECT_NE(j["message"].get<std::string>().find("/nonexistent"), std::string::npos);
}

// A status that would have nowhere to go refuses the run before the command ran: a descriptor
// that is not open, one open for reading only, a negative number.
TEST_F(RunTest, JsonStatusToADescriptorThatCannotTakeItIsRefused) {
  RunOptions o = Defaults();
  const std::string marker = root_->path() + "/ran";
  const std::vector<std::string> command = {"--", "/bin/sh", "-c", "echo > '" + marker + "'"};
  auto run = [&](const std::string& fd) {
    std::vector<std::string> args = {"run", "--json-status", fd, "-w", root_->path()};
    args.insert(args.end(), command.begin(), command.end());
    return RunWard(args, o);
  };
  RunResult r = run("57");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("--json-status 57: not an open file descriptor"), std::string::npos)
      << r.err;
  EXPECT_FALSE(PathExists(marker));

  int ro = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(ro, 0);
  o.pass_fds = {ro};
  r = run(std::to_string(ro));
  close(ro);
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("not open for writing"), std::string::npos) << r.err;
  EXPECT_FALSE(PathExists(marker));

  o.pass_fds.clear();
  r = run("-3");
  EXPECT_EQ(r.status, 125) << r.err;
  EXPECT_NE(r.err.find("--json-status"), std::string::npos) << r.err;
  EXPECT_FALSE(PathExists(marker));

  // The positive control: a writable descriptor, and the command runs.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  o.pass_fds = {fds[1]};
  r = run(std::to_string(fds[1]));
  close(fds[1]);
  close(fds[0]);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(PathExists(marker));
}

TEST_F(RunTest, WorkspaceUnderTmpWithSpacesAndSymlink) {
  // The fixture's workspace already lives under /tmp, which is private inside.
  std::string spaced = root_->path() + "/my work space";
  MakeDirs(spaced);
  WriteFile(spaced + "/marker", "here");
  RunOptions o = Defaults();
  o.cwd = spaced;
  RunResult r = RunWard({"run", "-r", StageDir(), "--", ProbeBin(), "read", "marker"}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "ok here\n");
  std::string link = root_->path() + "/ws-link";
  ASSERT_EQ(symlink(spaced.c_str(), link.c_str()), 0);
  o.cwd = link;
  r = RunWard({"run", "-r", StageDir(), "--", ProbeBin(), "write", "created"}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(PathExists(spaced + "/created"));
  // -C names the workspace explicitly.
  r = RunWard({"run", "-C", spaced, "-r", StageDir(), "--", ProbeBin(), "read", "marker"},
              Defaults());
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(RunTest, HomeAsWorkspaceIsRefused) {
  RunOptions o = Defaults();
  o.cwd = home_;
  RunResult r = RunWard({"run", "--", "/bin/true"}, o);
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("HOME"), std::string::npos) << r.err;
}

TEST_F(RunTest, EnvironmentIsBuiltFromAnAllowList) {
  RunResult r = Probe({"getenv", "ANTHROPIC_API_KEY"});
  EXPECT_EQ(r.out, "err ENOENT ANTHROPIC_API_KEY\n");
  r = Probe({"getenv", "PATH"});
  EXPECT_EQ(r.status, 0);  // positive control: allow-listed names pass
  r = Probe({"getenv", "WARD_SET"}, {"-e", "WARD_SET=value1"});
  EXPECT_EQ(r.out, "ok value1\n");
  r = Probe({"getenv", "WARD_CANARY_TOKEN"}, {"-e", "WARD_CANARY_TOKEN"});
  EXPECT_EQ(r.out, std::string("ok ") + kCanaryApiKey + "\n");  // passed only when named
  r = Probe({"getenv", "HOME"});
  EXPECT_EQ(r.out, "ok " + home_ + "\n");
}

// Sandbox init starts off the supervisor's CPU (common/cpu.h) and must hand the command every
// CPU the caller may use.
TEST_F(RunTest, TheCommandMayUseEveryCpuTheCallerMay) {
  auto allowed_line = [](const std::string& status) {
    size_t at = status.find("Cpus_allowed_list:");
    return at == std::string::npos ? std::string() : status.substr(at, status.find('\n', at) - at);
  };
  std::string mine = allowed_line(ReadFile("/proc/self/status"));
  ASSERT_FALSE(mine.empty());
  for (int i = 0; i < 10; ++i) {  // a race between the two sides would show in some runs
    RunResult r = Shell("cat /proc/self/status", {});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(allowed_line(r.out), mine);
  }
}

TEST_F(RunTest, StdinAndStdoutPassThrough) {
  RunOptions o = Defaults();
  o.stdin_data = "line from stdin\n";
  RunResult r = Shell("cat; echo err >&2", {}, o);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "line from stdin\n");
  EXPECT_NE(r.err.find("err"), std::string::npos);
}

// The supervisor's threads while the sandbox runs: the main one only, until the command makes
// a file (a trapped syscall, which starts the notifier's thread). Audit records far apart
// start no flusher thread either.
class SupervisorThreadsTest : public RunTest {
 protected:
  // Starts `ward run -- sh -c SCRIPT` in the workspace; the script's stdin is `*stdin_w`, and
  // its stdout `*stdout_r`.
  pid_t StartWard(const std::string& script, int* stdin_w, int* stdout_r) {
    int in[2], out[2];
    EXPECT_EQ(pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
    RunOptions o = Defaults();
    std::vector<std::string> env;
    for (const auto& [k, v] : o.env) env.push_back(k + "=" + v);
    std::vector<std::string> argv = {WardBin(), "run", "--", "sh", "-c", script};
    pid_t pid = fork();
    if (pid == 0) {
      std::vector<char*> a, e;
      for (auto& s : argv) a.push_back(s.data());
      a.push_back(nullptr);
      for (auto& s : env) e.push_back(s.data());
      e.push_back(nullptr);
      int null = open("/dev/null", O_RDWR);
      dup2(in[0], 0);
      dup2(out[1], 1);
      dup2(null, 2);
      if (chdir(ws_.c_str()) != 0) _exit(126);
      execve(a[0], a.data(), e.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    *stdin_w = in[1];
    *stdout_r = out[0];
    return pid;
  }

  static int Threads(pid_t pid) {
    DIR* d = opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
    if (d == nullptr) return -1;
    int n = 0;
    while (struct dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
    return n;
  }

  // Waits (up to 10 s) until the supervisor has exactly `want` threads.
  static bool ReachesThreads(pid_t pid, int want) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (Threads(pid) == want) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  static int Finish(pid_t pid, int stdin_w, int stdout_r) {
    close(stdin_w);  // the script's `read` ends
    close(stdout_r);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

TEST_F(SupervisorThreadsTest, AQuietRunKeepsOneThreadAndAFileStartsTheNotifier) {
  int w = -1, r = -1;
  pid_t pid = StartWard("echo running; read x || true", &w, &r);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(ReadLine(r), "running");
  // The start record's thread ends; nothing else was made.
  EXPECT_TRUE(ReachesThreads(pid, 1)) << Threads(pid) << " threads";
  EXPECT_EQ(Finish(pid, w, r), 0);

  pid = StartWard("echo made > made.txt; echo running; read x || true", &w, &r);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(ReadLine(r), "running");
  EXPECT_TRUE(ReachesThreads(pid, 2)) << Threads(pid) << " threads";
  EXPECT_EQ(Finish(pid, w, r), 0);
  EXPECT_EQ(ReadFile(ws_ + "/made.txt"), "made\n");
}

// Anonymous mappings of at least `min_mib` MiB with the permissions `perms` in a maps file
// ("" when it cannot be read).
std::string LargeAnonymousMappings(const std::string& maps, const std::string& perms,
                                   unsigned long min_mib) {
  std::istringstream in(maps);
  std::string line, found;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string range, p, off, dev, inode, path;
    f >> range >> p >> off >> dev >> inode >> path;
    if (!path.empty() || p != perms) continue;
    const size_t dash = range.find('-');
    const unsigned long lo = std::stoul(range.substr(0, dash), nullptr, 16);
    const unsigned long hi = std::stoul(range.substr(dash + 1), nullptr, 16);
    if (hi - lo >= (min_mib << 20)) found += line + "\n";
  }
  return found;
}

// What sandbox init copies from the supervisor at the clone is only what the supervisor needs:
// no malloc arena of another thread (a 64 MiB reservation, one per thread without
// M_ARENA_MAX), and no stack of the joined kernel-probe thread (glibc caches 8 MiB stacks).
// Init's copy of such pages costs copy-on-write faults and its exit's teardown.
TEST_F(SupervisorThreadsTest, InitCopiesNoOtherThreadsArenaOrStack) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator replaces malloc's arenas, and its shadow "
                  "memory's reservations look like one";
#endif
  int w = -1, r = -1;
  pid_t pid = StartWard("echo running; read x || true", &w, &r);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(ReadLine(r), "running");
  const std::string supervisor_maps = ReadFile("/proc/" + std::to_string(pid) + "/maps");
  std::string init_maps;
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) +
                         "/children");
  std::string child;
  while (children >> child) {
    if (ReadFile("/proc/" + child + "/comm").rfind("ward-init", 0) == 0) {
      init_maps = ReadFile("/proc/" + child + "/maps");  // init is not dumpable: root only
    }
  }
  EXPECT_EQ(Finish(pid, w, r), 0);
  ASSERT_NE(supervisor_maps.find("[stack]"), std::string::npos) << supervisor_maps;
  EXPECT_EQ(LargeAnonymousMappings(supervisor_maps, "---p", 32), "")
      << "a malloc arena besides the main heap";
  if (RunningAsRoot()) {
    ASSERT_NE(init_maps.find("[stack]"), std::string::npos) << "init's maps: " << init_maps;
  }
  if (!init_maps.empty()) {
    EXPECT_EQ(LargeAnonymousMappings(init_maps, "---p", 32), "") << "an arena copied into init";
    EXPECT_EQ(LargeAnonymousMappings(init_maps, "rw-p", 4), "")
        << "a thread stack copied into init";
  }
}

// A root run with a cgroup: the cgroup's reaper holds the sandbox's mount namespace, so that
// its teardown happens in the reaper's exit after the run, not in init's exit, which the
// cgroup's removal waits for.
TEST_F(SupervisorThreadsTest, TheCgroupReaperHoldsTheSandboxsMountNamespace) {
  if (!RunningAsRoot()) {
    GTEST_SKIP() << "an unprivileged test cannot read sandbox init's /proc/PID/ns (the root "
                    "variant covers it)";
  }
  int w = -1, r = -1;
  pid_t pid = StartWard("echo running; read x || true", &w, &r);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(ReadLine(r), "running");
  std::string init_mnt, reaper_fd;
  auto link = [](const std::string& path) {
    char buf[256];
    ssize_t n = readlink(path.c_str(), buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  };
  // The supervisor starts the reaper before init may run the command: once the command has
  // printed, both are there (a supervisor killed from now on leaves no cgroup behind).
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) +
                         "/children");
  std::string child;
  while (children >> child) {
    std::string comm = ReadFile("/proc/" + child + "/comm");
    if (comm.rfind("ward-init", 0) == 0) init_mnt = link("/proc/" + child + "/ns/mnt");
    if (comm.rfind("ward-cgroup", 0) == 0) reaper_fd = link("/proc/" + child + "/fd/5");
  }
  EXPECT_EQ(Finish(pid, w, r), 0);
  ASSERT_FALSE(init_mnt.empty()) << "no sandbox init among ward's children";
  if (reaper_fd.empty()) {
    nlohmann::json check = nlohmann::json::parse(RunWard({"check", "--json"}, Defaults()).out,
                                                 nullptr, /*allow_exceptions=*/false);
    if (check.is_object() && check["limits"]["backend"].is_string() &&
        check["limits"]["backend"].get<std::string>().rfind("cgroup", 0) != 0) {
      GTEST_SKIP() << "this host gives the run no cgroup";
    }
  }
  EXPECT_EQ(reaper_fd, init_mnt);
  EXPECT_EQ(init_mnt.rfind("mnt:[", 0), 0u) << init_mnt;
}

}  // namespace
}  // namespace ward::test
