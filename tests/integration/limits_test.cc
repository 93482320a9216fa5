// Resource limits and lifetime, through the real ward binary and the static probe, as
// root (cgroup v1 on the test machines) and unprivileged (rlimits): fork bomb, memory bomb,
// disk fill, CPU hog, wall-clock timeout, per-user kernel objects, IPC lifetime; and the
// limit.hit events, through the supervisor in-process.
#include <dirent.h>
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/ipc.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <linux/sched.h>
#include <sys/syscall.h>

#include <algorithm>

#ifdef WARD_SANITIZE
#include <sanitizer/common_interface_defs.h>
#endif

#include "common/events.h"
#include "enforce/cgroup.h"
#include "enforce/probe.h"
#include "harness.h"
#include "policy/loader.h"
#include "supervisor/run.h"

namespace ward::test {
namespace {

using Clock = std::chrono::steady_clock;

std::string Marker() {
  std::random_device rd;
  std::stringstream ss;
  ss << "ward-limits-" << std::hex << rd() << rd();
  return ss.str();
}

bool WaitUntil(const std::function<bool()>& done, int seconds) {
  for (int i = 0; i < seconds * 20; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

bool WaitUntilGone(const std::string& needle, int seconds) {
  return WaitUntil([&] { return CountHostProcesses(needle) == 0; }, seconds);
}

// "ok forked=17" -> 17 for key "forked"; -1 when absent.
long Field(const std::string& out, const std::string& key) {
  size_t p = out.find(key + "=");
  if (p == std::string::npos) return -1;
  return std::strtol(out.c_str() + p + key.size() + 1, nullptr, 10);
}

double DoubleField(const std::string& out, const std::string& key) {
  size_t p = out.find(key + "=");
  if (p == std::string::npos) return -1;
  return std::strtod(out.c_str() + p + key.size() + 1, nullptr);
}

long ReadLong(const std::string& path) {
  std::ifstream in(path);
  long v = -1;
  in >> v;
  return v;
}

class LimitsTest : public SandboxTest {
 protected:
  // `ward run --json-status FD [opts] -- ward-probe ARGS`: the result and the status object.
  RunResult ProbeWithStatus(const std::vector<std::string>& args,
                            const std::vector<std::string>& ward_opts, nlohmann::json* status,
                            int timeout_s = 60) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    RunOptions o = Defaults();
    o.pass_fds = {fds[1]};
    o.timeout_s = timeout_s;
    std::vector<std::string> opts = {"--json-status", std::to_string(fds[1])};
    opts.insert(opts.end(), ward_opts.begin(), ward_opts.end());
    RunResult r = Probe(args, opts, o);
    close(fds[1]);
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, n);
    close(fds[0]);
    *status = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(status->is_discarded()) << "no --json-status: " << text << r.err;
    return r;
  }

  // `ward check --json`, for what this host and identity can enforce.
  nlohmann::json Check() {
    RunResult r = RunWard({"check", "--json"}, Defaults());
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
    return j;
  }
  bool CpuEnforceable() { return !Check()["limits"]["cpu"].get<std::string>().empty(); }
  std::string Backend() { return Check()["limits"]["backend"].get<std::string>(); }
};

TEST_F(LimitsTest, ForkBombStopsAtThePidsLimit) {
  std::string marker = Marker();
  nlohmann::json st;
  RunResult r = ProbeWithStatus({"forkbomb", marker}, {"--pids", "20"}, &st);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("err EAGAIN forked=", 0), 0u) << r.out;
  long forked = Field(r.out, "forked");
  // init and the command count too.
  EXPECT_GE(forked, 10) << r.out;
  EXPECT_LE(forked, 20) << r.out;
  if (Backend() != "rlimits") {
    EXPECT_NE(st["message"].get<std::string>().find("pids limit of 20"), std::string::npos) << st;
  }
  // Nothing is left, and the host can still fork.
  EXPECT_TRUE(WaitUntilGone(marker, 5));
  EXPECT_EQ(RunProgram({ProbeBin(), "fork"}).out, "ok fork\n");
  // Positive control: a higher limit lets the same probe fork more than 20.
  r = Probe({"forkbomb", marker}, {"--pids", "60"});
  EXPECT_GT(Field(r.out, "forked"), 20) << r.out;
  EXPECT_LE(Field(r.out, "forked"), 60) << r.out;
  EXPECT_TRUE(WaitUntilGone(marker, 5));
}

TEST_F(LimitsTest, MemoryBombIsContainedInside) {
  nlohmann::json st;
  RunResult r = ProbeWithStatus({"alloc", "1024"}, {"--memory", "64M"}, &st);
  if (Backend() == "rlimits") {
    // RLIMIT_DATA: the allocation fails inside; the command sees ENOMEM.
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    EXPECT_EQ(r.out.rfind("err ENOMEM allocated=", 0), 0u) << r.out;
    EXPECT_LT(Field(r.out, "allocated"), 64) << r.out;
    EXPECT_EQ(st["status"], "exited");
  } else {
    // The cgroup's OOM killer ends the command: 137, and the status says why.
    EXPECT_EQ(r.status, 137) << r.out << r.err;
    EXPECT_EQ(st["status"], "signaled");
    EXPECT_EQ(st["signal"], 9);
    EXPECT_NE(st["message"].get<std::string>().find("memory limit of 64 MiB"), std::string::npos)
        << st;
  }
  // The supervisor reported normally (above); the host is fine.
  EXPECT_EQ(RunProgram({ProbeBin(), "alloc", "128"}).out, "ok allocated=128\n");
  // Positive control: within the limit the same allocation succeeds.
  r = Probe({"alloc", "100"}, {"--memory", "512M"});
  EXPECT_EQ(r.out, "ok allocated=100\n") << r.err;
}

TEST_F(LimitsTest, DiskFillOfTmpAndHomeStopsAtTheTmpfsSize) {
  std::string name = Marker();
  for (const std::string& dir : {std::string("/tmp"), home_}) {
    std::string path = dir + "/" + name;
    RunResult r = Probe({"fill", path, "256"}, {"--tmp-size", "8M"});
    EXPECT_EQ(r.status, 1) << dir << ": " << r.out << r.err;
    EXPECT_EQ(r.out.rfind("err ENOSPC written=", 0), 0u) << dir << ": " << r.out;
    EXPECT_LE(Field(r.out, "written"), 8) << r.out;
    EXPECT_FALSE(PathExists(path)) << path << " reached the host";
  }
  // Positive control: below the size the write completes.
  RunResult r = Probe({"fill", "/tmp/" + name, "16"}, {"--tmp-size", "32M"});
  EXPECT_EQ(r.out, "ok written=16\n") << r.err;
  EXPECT_FALSE(PathExists("/tmp/" + name));
}

TEST_F(LimitsTest, FileSizeLimitStopsALargeWrite) {
  RunResult r = Probe({"fill", "big", "64"}, {"--file-size", "2M"});
  // SIGXFSZ ends the writer (128 + 25).
  EXPECT_EQ(r.status, 128 + SIGXFSZ) << r.out << r.err;
  struct stat st;
  ASSERT_EQ(stat((ws_ + "/big").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 2 << 20);
}

TEST_F(LimitsTest, CpuHogIsThrottledOrCpuIsRefusedWithoutACgroup) {
  if (!CpuEnforceable()) {
    // No cgroup with the cpu controller (unprivileged here): refused, naming the limit...
    RunResult r = Probe({"exit", "0"}, {"--cpu", "0.5"});
    EXPECT_EQ(r.status, 125);
    EXPECT_NE(r.err.find("cpu 0.5"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--allow-degraded=limits"), std::string::npos) << r.err;
    // ...and run weaker, saying so, when asked.
    nlohmann::json st;
    r = ProbeWithStatus({"exit", "0"}, {"--cpu", "0.5", "--allow-degraded=limits"}, &st);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("degraded: limits: cpu"), std::string::npos) << r.err;
    ASSERT_EQ(st["degraded"].size(), 1u) << st;
    EXPECT_NE(st["degraded"][0].get<std::string>().find("cpu"), std::string::npos);
    return;
  }
  // Two busy threads for 3 s under --cpu 0.5 get about half a core. The bounds are tolerant
  // (the machine is shared): the quota caps it from above whatever the load (plus the
  // kernel's per-CPU runtime slices); the lower bound only says the command was not starved.
  RunResult r = Probe({"spin", "3", "2"}, {"--cpu", "0.5"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  double limited = DoubleField(r.out, "cpu");
  EXPECT_GT(limited, 0.15) << r.out;
  EXPECT_LT(limited, 0.7) << r.out;
  // Positive control: without the limit the same probe uses clearly more. A busy machine can
  // hide the difference for a while, so the control gets a few tries.
  double unlimited = 0;
  for (int i = 0; i < 3 && unlimited <= limited + 0.15; ++i) {
    r = Probe({"spin", "2", "2"});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    unlimited = std::max(unlimited, DoubleField(r.out, "cpu"));
  }
  EXPECT_GT(unlimited, limited + 0.15) << "limited " << limited << ", unlimited " << unlimited;
}

TEST_F(LimitsTest, TimeoutKillsATreeThatIgnoresSigterm) {
  std::string marker = Marker();
  nlohmann::json st;
  auto t0 = Clock::now();
  RunResult r = ProbeWithStatus({"hang", marker}, {"--timeout", "1s"}, &st);
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(r.status, 124) << r.out << r.err;
  EXPECT_EQ(r.out, "ok hanging\n");
  EXPECT_EQ(st["status"], "timed_out");
  EXPECT_EQ(st["exit_code"], 124);
  EXPECT_NE(r.err.find("timed out"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SIGKILL after the 2 s grace period"), std::string::npos) << r.err;
  // 1 s, then the 2 s grace period, then SIGKILL.
  EXPECT_GE(secs, 2.9);
  EXPECT_LT(secs, 8.0);
  EXPECT_TRUE(WaitUntilGone(marker, 5)) << "the double-forked daemon survived the timeout";
}

TEST_F(LimitsTest, TimeoutOfACommandThatObeysSigtermNeedsNoGrace) {
  auto t0 = Clock::now();
  RunResult r = Probe({"sleep", "30"}, {"--timeout", "500ms"});
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_LT(secs, 2.4);
  EXPECT_EQ(r.err.find("grace period"), std::string::npos) << r.err;
  // Positive control: a command that finishes in time keeps its own status.
  EXPECT_EQ(Probe({"exit", "3"}, {"--timeout", "30s"}).status, 3);
}

// A killed supervisor still leaves nothing behind: no process, and (with a cgroup) no cgroup.
TEST_F(LimitsTest, KillingTheSupervisorOfALimitedRunLeavesNothing) {
  std::string marker = Marker();
  std::vector<std::string> argv = {WardBin(), "run",      "-r",    StageDir(), "--timeout",
                                   "60s",     "--memory", "256M",  "--pids",   "100",
                                   "--",      ProbeBin(), "sleep", "120",      marker};
  RunOptions o = Defaults();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (chdir(o.cwd.c_str()) != 0) _exit(126);
    std::vector<std::string> envs;
    for (auto& [k, v] : o.env) envs.push_back(k + "=" + v);
    std::vector<char*> envp, args;
    for (auto& s : envs) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (auto& s : argv) args.push_back(s.data());
    args.push_back(nullptr);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  // The probe sleeps: it runs in the run's cgroup, which init joined before it ran the probe.
  ASSERT_TRUE(WaitUntil([&] { return ProbeIsRunning(marker); }, 10));
  nlohmann::json check = Check();
  std::vector<std::string> parents;
  if (check["limits"]["backend"] == "cgroup v1") {
    parents = {check["cgroup"]["v1_memory_dir"], check["cgroup"]["v1_pids_dir"]};
  } else if (check["limits"]["backend"] == "cgroup v2") {
    parents = {check["cgroup"]["v2_parent"]};
  }
  std::string prefix = "ward-" + std::to_string(pid) + "-";
  auto leftovers = [&] {
    int n = 0;
    for (const auto& parent : parents) {
      DIR* d = opendir(parent.c_str());
      if (!d) continue;
      while (struct dirent* e = readdir(d)) n += std::string(e->d_name).rfind(prefix, 0) == 0;
      closedir(d);
    }
    return n;
  };
  if (!parents.empty()) {
    EXPECT_GE(leftovers(), 1) << "the run's cgroup is not where expected";
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_TRUE(WaitUntilGone(marker, 5)) << "the sandbox outlived its supervisor";
  // Within 4 s: the reaper's work, not the sweep of another run, which removes only cgroups
  // older than 5 s.
  EXPECT_TRUE(WaitUntil([&] { return leftovers() == 0; }, 4)) << "a cgroup was left behind";
}

// The reaper runs before the command may: it starts before the supervisor sends what init waits
// for last (the seccomp program), so no moment of the command's run is without it. The trace
// marks show the order (the supervisor's marks come from one thread, in the order of its work).
TEST_F(LimitsTest, TheCgroupReaperStartsBeforeTheCommandCan) {
  RunOptions o = Defaults();
  o.env["WARD_TRACE_TIMING"] = "1";
  RunResult r = Probe({"exit", "0"}, {"--memory", "256M", "--pids", "100"}, o);
  ASSERT_EQ(r.status, 0) << r.err;
  size_t created = r.err.find("cgroup created");
  if (created == std::string::npos) {
    ASSERT_NE(Check()["limits"]["backend"].get<std::string>().rfind("cgroup", 0), 0u)
        << "a cgroup backend, and no cgroup was made:\n"
        << r.err;
    GTEST_SKIP() << "this host gives the run no cgroup";
  }
  size_t reaper = r.err.find("cgroup reaper started");
  size_t seccomp = r.err.find("seccomp program sent");
  size_t forked = r.err.find("command: forked");
  ASSERT_NE(reaper, std::string::npos) << r.err;
  ASSERT_NE(seccomp, std::string::npos) << r.err;
  ASSERT_NE(forked, std::string::npos) << r.err;
  EXPECT_LT(created, reaper) << r.err;
  EXPECT_LT(reaper, seccomp) << r.err;
  EXPECT_LT(reaper, forked) << r.err;
}

TEST_F(LimitsTest, InotifyExhaustionInsideDoesNotBreakInotifyOutside) {
  long host_max = ReadLong("/proc/sys/user/max_inotify_instances");
  ASSERT_GT(host_max, 1);
  // Inside: the caps are lowered in the sandbox's own user namespace.
  EXPECT_EQ(Probe({"read", "/proc/sys/user/max_user_namespaces"}).out, "ok 0 \n");
  EXPECT_EQ(Probe({"read", "/proc/sys/user/max_inotify_instances"}).out,
            "ok " + std::to_string(host_max / 2) + " \n");
  // The probe exhausts inotify inside and holds the instances while the host tries.
  std::vector<std::string> argv = {WardBin(),         "run", "-r", StageDir(), "--", ProbeBin(),
                                   "inotify-exhaust", "10"};
  RunOptions o = Defaults();
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out[1], 1);
    if (chdir(o.cwd.c_str()) != 0) _exit(126);
    std::vector<std::string> envs;
    for (auto& [k, v] : o.env) envs.push_back(k + "=" + v);
    std::vector<char*> envp, args;
    for (auto& s : envs) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (auto& s : argv) args.push_back(s.data());
    args.push_back(nullptr);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out[1]);
  std::string line = ReadLine(out[0]);
  close(out[0]);
  EXPECT_EQ(line.rfind("err EMFILE instances=", 0), 0u) << line;
  long inside = Field(line, "instances");
  EXPECT_GE(inside, 1) << line;
  EXPECT_LE(inside, host_max / 2) << line;
  // Outside, the same user can still create instances while the sandbox holds its share.
  int fd = inotify_init1(IN_CLOEXEC);
  EXPECT_GE(fd, 0) << "inotify outside broke: " << strerror(errno);
  if (fd >= 0) close(fd);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
}

TEST_F(LimitsTest, IpcObjectsDieWithTheSandbox) {
  std::random_device rd;
  std::string key = std::to_string(0x57000000 + (rd() & 0xffffff));
  std::string queue = "/" + Marker();
  // Positive control: within one sandbox a SysV segment is there to find.
  std::string script = ProbeBin() + " shm-create " + key + " && " + ProbeBin() + " shm-get " + key +
                       "; " + ProbeBin() + " mq-create " + queue;
  RunResult r = Shell(script);
  EXPECT_EQ(r.out.rfind("ok created\nok shmget\n", 0), 0u) << r.out << r.err;
  // A POSIX queue is created in the IPC namespace's own mqueue mount, which Landlock does not
  // let the command open: mq_open fails, although the kernel may already have made the queue.
  EXPECT_NE(r.out.find("mq_open"), std::string::npos) << r.out;
  // Neither the host nor the next sandbox sees any of it.
  EXPECT_EQ(shmget(static_cast<key_t>(std::stol(key)), 0, 0), -1);
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(mq_open(queue.c_str(), O_RDONLY), static_cast<mqd_t>(-1));
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(Probe({"shm-get", key}).out, "err ENOENT shmget\n");
  EXPECT_EQ(Probe({"mq-open", queue}).out.rfind("err ", 0), 0u);
  // Positive control: the probe does create lasting objects where nothing cleans up after it.
  EXPECT_EQ(RunProgram({ProbeBin(), "mq-create", queue}).out, "ok mq_open\n");
  EXPECT_EQ(mq_unlink(queue.c_str()), 0);
}

TEST_F(LimitsTest, DefaultProfileLimitsApplyWithoutFlags) {
  if (Backend() == "rlimits") {
    EXPECT_EQ(Probe({"rlimit", "data"}).out, "ok soft=8589934592 hard=8589934592\n");
    EXPECT_EQ(Probe({"rlimit", "nproc"}).out, "ok soft=1024 hard=1024\n");
  } else {
    // A cgroup carries them: no per-process memory rlimit, the sandbox sits in its own cgroup.
    EXPECT_EQ(Probe({"rlimit", "data"}).out, "ok soft=unlimited hard=unlimited\n");
    RunResult r = Probe({"read", "/proc/self/cgroup"});
    if (Backend() == "cgroup v2") {
      // Born in the run's cgroup, init made its cgroup namespace there: the run's cgroup is
      // the root of what the command sees.
      EXPECT_EQ(r.out, "ok 0::/ \n");
    } else {
      EXPECT_NE(r.out.find(":/ward-"), std::string::npos) << r.out;
    }
    if (Backend() == "cgroup v1") {
      // Both limits' hierarchies: init joins them while it builds the root, before it may fork
      // the command (SendCgroupJoin), so the command starts inside each.
      for (const char* controller : {"memory", "pids"}) {
        bool inside = false;
        std::istringstream lines(r.out);  // "ok" and the file's lines, space-separated
        for (std::string line; lines >> line;) {
          size_t a = line.find(':'), b = line.find(':', a + 1);
          if (a == std::string::npos || b == std::string::npos) continue;
          std::string ctrls = "," + line.substr(a + 1, b - a - 1) + ",";
          if (ctrls.find(std::string(",") + controller + ",") == std::string::npos) continue;
          inside = line.compare(b + 1, 6, "/ward-") == 0;
        }
        EXPECT_TRUE(inside) << controller << " in " << r.out;
      }
    }
  }
  EXPECT_EQ(Probe({"rlimit", "as"}).out, "ok soft=unlimited hard=unlimited\n");
  std::string nofile = Probe({"rlimit", "nofile"}).out;
  EXPECT_LE(Field(nofile, "hard"), 65536) << nofile;
  // /tmp is the 2 GiB tmpfs of the default profile.
  RunResult r = Shell("df -k /tmp | tail -1");
  EXPECT_NE(r.out.find(" 2097152 "), std::string::npos) << r.out;
}

// ---- cgroup v2 plumbing where a writable cgroup2 hierarchy exists -------------------------

// The test machines attach every controller to v1, so the planner never picks v2 there; the
// v2 mechanics that do not need controllers (a cgroup created in the parent, a child born in it
// with CLONE_INTO_CGROUP, cgroup.kill, removal, the reaper) are exercised directly.
TEST_F(LimitsTest, CgroupV2CloneIntoKillAndTeardown) {
  enforce::KernelFeatures f = enforce::ProbeKernel(false);
  if (!f.cgroup.v2_mounted || !f.cgroup.v2_delegated) {
    GTEST_SKIP() << "no writable cgroup2 hierarchy for this identity";
  }
  enforce::CgroupSpec spec;
  spec.version = 2;
  spec.v2_parent = f.cgroup.v2_parent;
  spec.v2_parent_is_own = f.cgroup.v2_parent_is_own;
  spec.v2_parent_create = f.cgroup.v2_parent_create;
  if (!f.cgroup.v2_controllers.empty() && f.cgroup.V2Has("pids")) spec.pids = 50;
  Result<std::unique_ptr<enforce::Cgroup>> cg = enforce::Cgroup::Create(spec);
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  ASSERT_GE((*cg)->clone_fd(), 0);
  ASSERT_EQ((*cg)->paths().size(), 1u);
  std::string dir = (*cg)->paths()[0];
  EXPECT_TRUE(PathExists(dir));
  // A child born inside, which forks a grandchild; both wait forever. The grandchild, orphaned
  // when its parent is killed, comes back here to be reaped.
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  struct clone_args args = {};
  args.flags = CLONE_INTO_CGROUP;
  args.cgroup = static_cast<uint64_t>((*cg)->clone_fd());
  args.exit_signal = SIGCHLD;
  long pid = syscall(SYS_clone3, &args, sizeof args);
  ASSERT_GE(pid, 0) << strerror(errno);
  if (pid == 0) {
    if (fork() == 0) {
      for (;;) pause();
    }
    for (;;) pause();
  }
  std::string rel = dir.substr(f.cgroup.v2_path.size());
  std::string own = ReadFile("/proc/" + std::to_string(pid) + "/cgroup");
  EXPECT_NE(own.find("0::" + rel + "\n"), std::string::npos) << own;
  auto procs = [&] {
    std::string s = ReadFile(dir + "/cgroup.procs");
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
  };
  EXPECT_TRUE(WaitUntil([&] { return procs() == 2; }, 5)) << procs();
  (*cg)->KillAll();
  int status = 0;
  ASSERT_EQ(waitpid(static_cast<pid_t>(pid), &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_TRUE(WaitUntil([&] { return procs() == 0; }, 5)) << "the grandchild survived";
  EXPECT_TRUE(WaitUntil([&] { return waitpid(-1, nullptr, WNOHANG) > 0; }, 5));
  prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
  Status st = (*cg)->Destroy();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_FALSE(PathExists(dir));
}

// A cgroup this identity may create (v2 delegated, else v1 pids), or none.
std::optional<enforce::CgroupSpec> WritableCgroupSpec() {
  enforce::KernelFeatures f = enforce::ProbeKernel(false);
  enforce::CgroupSpec spec;
  if (f.cgroup.v2_mounted && f.cgroup.v2_delegated) {
    spec.version = 2;
    spec.v2_parent = f.cgroup.v2_parent;
    spec.v2_parent_is_own = f.cgroup.v2_parent_is_own;
    spec.v2_parent_create = f.cgroup.v2_parent_create;
  } else if (f.cgroup.v1_pids_writable) {
    spec.version = 1;
    spec.v1_pids_parent = f.cgroup.v1_pids_dir;
    spec.pids = 50;
  } else {
    return std::nullopt;
  }
  return spec;
}

// The reaper holds the descriptor it is given (ward run: the sandbox's mount namespace) until
// it exits, and it exits once the cgroup is torn down.
TEST_F(LimitsTest, CgroupReaperHoldsItsKeptDescriptorUntilTheCgroupIsGone) {
  std::optional<enforce::CgroupSpec> writable = WritableCgroupSpec();
  if (!writable) GTEST_SKIP() << "no writable cgroup for this identity";
  const enforce::CgroupSpec spec = *writable;
  Result<std::unique_ptr<enforce::Cgroup>> cg = enforce::Cgroup::Create(spec);
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  // The kept descriptor is a pipe's write end: its read end sees EOF once no one holds it.
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  (*cg)->StartReaper(p[1]);
  close(p[1]);
  auto at_eof = [&] {
    struct pollfd pfd = {p[0], POLLIN, 0};
    return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP);
  };
  usleep(100 * 1000);
  EXPECT_FALSE(at_eof()) << "the reaper let go of the descriptor before the cgroup was gone";
  ASSERT_TRUE((*cg)->Destroy(-1).ok());
  EXPECT_TRUE(WaitUntil(at_eof, 10)) << "the reaper still holds the descriptor";
  close(p[0]);
}

// The reaper shares the supervisor's memory instead of copying it (no page-table copy, no
// copy-on-write faults for the supervisor), yet is a process of its own: its own session and
// descriptors (only the pipe, the pidfd and the kept one beside the standard three, on
// /dev/null), every signal blocked.
TEST_F(LimitsTest, CgroupReaperSharesTheMemoryButNothingElse) {
  std::optional<enforce::CgroupSpec> writable = WritableCgroupSpec();
  if (!writable) GTEST_SKIP() << "no writable cgroup for this identity";
  Result<std::unique_ptr<enforce::Cgroup>> cg = enforce::Cgroup::Create(*writable);
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  (*cg)->StartReaper(p[1]);
  const pid_t reaper = (*cg)->reaper_pid();
  ASSERT_GT(reaper, 0);
  const std::string proc = "/proc/" + std::to_string(reaper);

  long same_vm = syscall(SYS_kcmp, getpid(), reaper, /*KCMP_VM=*/1, 0, 0);
#if defined(__x86_64__) && !defined(WARD_SANITIZE)
  if (same_vm < 0 && errno == ENOSYS) {
    ADD_FAILURE() << "no kcmp here to compare the address spaces";
  } else {
    EXPECT_EQ(same_vm, 0) << "the reaper has a copy of the supervisor's memory, not the same";
  }
#else
  EXPECT_NE(same_vm, 0) << "a fork is expected here (AddressSanitizer, or not x86-64)";
#endif
  // Its descriptors settle last as it sets itself up (session and name come first).
  auto fds = [&] {
    std::vector<int> out;
    DIR* d = opendir((proc + "/fd").c_str());
    if (d == nullptr) return out;
    while (struct dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') out.push_back(std::atoi(e->d_name));
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
  };
  const std::vector<int> expected = {0, 1, 2, 3, 4, 5};
  EXPECT_TRUE(WaitUntil([&] { return fds() == expected; }, 5))
      << "the reaper's descriptors: " << ::testing::PrintToString(fds());
  EXPECT_EQ(ReadFile(proc + "/comm"), "ward-cgroup-rea\n");
  EXPECT_NE(getsid(reaper), getsid(0));
  EXPECT_EQ(getsid(reaper), reaper);
  for (int fd : {0, 1, 2}) {
    char target[256] = "";
    ssize_t n = readlink((proc + "/fd/" + std::to_string(fd)).c_str(), target, sizeof target - 1);
    EXPECT_EQ(std::string(target, n > 0 ? n : 0), "/dev/null") << "fd " << fd;
  }
  // SigBlk: SIGHUP, SIGINT, SIGTERM (bits 0, 1, 14) at least.
  std::string status = ReadFile(proc + "/status");
  size_t at = status.find("SigBlk:");
  ASSERT_NE(at, std::string::npos);
  unsigned long long blocked = std::strtoull(status.c_str() + at + 7, nullptr, 16);
  for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGTSTP}) {
    EXPECT_TRUE(blocked & (1ULL << (sig - 1))) << "signal " << sig << " is not blocked";
  }
  // It still does its work: told the cgroup is gone, it exits, and lets go of the descriptor.
  close(p[1]);
  ASSERT_TRUE((*cg)->Destroy(-1).ok());
  EXPECT_TRUE(WaitUntil([&] { return !PathExists(proc + "/fd/5"); }, 10));
  close(p[0]);
}

TEST_F(LimitsTest, CgroupReaperRemovesTheCgroupOfAKilledSupervisor) {
  std::optional<enforce::CgroupSpec> writable = WritableCgroupSpec();
  if (!writable) GTEST_SKIP() << "no writable cgroup for this identity";
  const enforce::CgroupSpec spec = *writable;
  // A stand-in supervisor: creates the cgroup, puts a waiting process in it, reports the
  // directory, and is then killed without tearing anything down. Its orphans (the reaper and
  // the process inside) come back to this process, which reaps them.
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  int report[2];
  ASSERT_EQ(pipe2(report, O_CLOEXEC), 0);
  pid_t sup = fork();
  ASSERT_GE(sup, 0);
  if (sup == 0) {
    close(report[0]);
    Result<std::unique_ptr<enforce::Cgroup>> cg = enforce::Cgroup::Create(spec);
    if (!cg.ok()) _exit(3);
    (*cg)->StartReaper();
    // It does not exec, so it keeps every descriptor the stand-in had (the reaper must not
    // depend on them being closed).
    pid_t inside = fork();
    if (inside == 0) {
      for (;;) pause();
    }
    if (!(*cg)->Attach(inside).ok()) _exit(4);
    std::string line = std::to_string((*cg)->reaper_pid()) + " " + std::to_string(inside) + " " +
                       (*cg)->paths()[0] + "\n";
    if (write(report[1], line.data(), line.size()) < 0) _exit(5);
    for (;;) pause();
  }
  close(report[1]);
  std::istringstream reported(ReadLine(report[0]));
  close(report[0]);
  pid_t reaper = -1, inside = -1;
  std::string dir;
  reported >> reaper >> inside >> dir;
  ASSERT_FALSE(dir.empty()) << "the stand-in supervisor failed";
  ASSERT_GT(reaper, 0) << "no reaper";
  EXPECT_TRUE(PathExists(dir));
  kill(sup, SIGKILL);
  waitpid(sup, nullptr, 0);
  EXPECT_TRUE(WaitUntil([&] { return !PathExists(dir); }, 10)) << dir << " was left behind";
  // The reaper exits once done; the process inside was killed. (Other orphans of this process,
  // such as a retired reaper of an earlier test in it, may be reaped here too.)
  std::set<pid_t> reaped;
  WaitUntil(
      [&] {
        for (pid_t p; (p = waitpid(-1, nullptr, WNOHANG)) > 0;) reaped.insert(p);
        return reaped.count(reaper) && reaped.count(inside);
      },
      5);
  EXPECT_TRUE(reaped.count(reaper)) << "the reaper did not exit";
  EXPECT_TRUE(reaped.count(inside)) << "the process inside was not killed";
  prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
}

// ---- events, through the supervisor in-process ----------------------------------------------

class LimitsEventsTest : public LimitsTest {
 protected:
  // Runs the probe under `flags` with supervisor::Run in this process and collects events.
  supervisor::Outcome RunInProcess(policy::RunFlags flags, const std::vector<std::string>& args,
                                   MemoryEventSink* sink,
                                   std::optional<supervisor::RunAuditOptions> audit = {}) {
    flags.read.push_back(StageDir());
    policy::Context ctx;
    ctx.home = home_;
    ctx.cwd = ws_;
    char buf[PATH_MAX];
    EXPECT_NE(realpath(ws_.c_str(), buf), nullptr);
    ctx.workspace = buf;
    Result<policy::Policy> pol =
        policy::LoadPolicy(flags, ctx, [](const std::string& path) -> Result<std::string> {
          std::ifstream in(path);
          if (!in) return NotFound(path);
          std::stringstream ss;
          ss << in.rdbuf();
          return ss.str();
        });
    EXPECT_TRUE(pol.ok()) << pol.status().ToString();
    if (!pol.ok()) return supervisor::Outcome();
    supervisor::RunRequest req;
    req.policy = std::move(pol).value();
    req.argv = {ProbeBin()};
    req.argv.insert(req.argv.end(), args.begin(), args.end());
    req.env = {"PATH=/usr/bin:/bin", "HOME=" + home_};
    req.events = sink;
    req.audit = std::move(audit);
    // The harness dropped from root to the test user, which leaves this process non-dumpable;
    // the supervisor must be able to write its child's id maps, as an exec'ed ward can.
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    // No terminal for the sandbox: stdio goes to /dev/null during the run.
    std::fflush(nullptr);
    int saved[3];
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd < 3; ++fd) {
      saved[fd] = fcntl(fd, F_DUPFD_CLOEXEC, 10);
      dup2(null, fd);
    }
#ifdef WARD_SANITIZE
    // A sanitizer report from the supervisor running in this process must not vanish into
    // /dev/null with the rest of stderr: abort_on_error would end this binary without a word.
    __sanitizer_set_report_fd(reinterpret_cast<void*>(static_cast<intptr_t>(saved[2])));
#endif
    supervisor::Outcome out = supervisor::Run(req);
#ifdef WARD_SANITIZE
    __sanitizer_set_report_fd(reinterpret_cast<void*>(static_cast<intptr_t>(2)));
#endif
    for (int fd = 0; fd < 3; ++fd) {
      dup2(saved[fd], fd);
      close(saved[fd]);
    }
    close(null);
    return out;
  }

  static std::vector<nlohmann::json> Hits(const MemoryEventSink& sink) {
    std::vector<nlohmann::json> hits;
    for (const Event& e : sink.events()) {
      if (e.type == "limit.hit") hits.push_back(e.data);
    }
    return hits;
  }
};

// The supervisor keeps the run's audit trail itself when asked: session.start first (with the
// labels it was given), the run's own records, session.end last with the outcome; the caller's
// sink then gets nothing. Without the trail's options no session is made and the events go to
// the caller's sink (the positive control).
TEST_F(LimitsEventsTest, TheSupervisorKeepsTheRunsAuditTrailWhenAsked) {
  char tmpl[] = "/tmp/ward-run-audit-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string state = tmpl;
  supervisor::RunAuditOptions audit;
  audit.state_dir = state;
  audit.session_id = "20261205T000000Z-0a1b2c3d";
  audit.labels = {{"case", "in-process"}};
  audit.cwd = ws_;
  audit.ward_version = "test";
  policy::RunFlags flags;
  flags.timeout = "300ms";
  MemoryEventSink sink;
  supervisor::Outcome out = RunInProcess(flags, {"sleep", "30"}, &sink, audit);
  EXPECT_EQ(out.kind, supervisor::Outcome::Kind::kTimedOut) << out.message;
  EXPECT_EQ(out.audit_session, audit.session_id);
  EXPECT_TRUE(sink.events().empty()) << "the trail took the events";
  std::ifstream log(state + "/sessions/" + audit.session_id + "/events.jsonl");
  ASSERT_TRUE(log) << "no session in " << state;
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(log, line);) {
    records.push_back(nlohmann::json::parse(line, nullptr, false));
  }
  ASSERT_GE(records.size(), 3u);
  EXPECT_EQ(records.front().value("type", ""), "session.start");
  EXPECT_EQ(records.front()["data"]["labels"]["case"], "in-process") << records.front().dump();
  EXPECT_EQ(records.back().value("type", ""), "session.end");
  EXPECT_EQ(records.back()["data"]["status"], "timed_out") << records.back().dump();
  bool hit = false;
  for (const nlohmann::json& r : records) hit = hit || r.value("type", "") == "limit.hit";
  EXPECT_TRUE(hit) << "the run's limit.hit is in its trail";

  MemoryEventSink without;
  out = RunInProcess(flags, {"sleep", "30"}, &without);
  EXPECT_EQ(out.kind, supervisor::Outcome::Kind::kTimedOut) << out.message;
  EXPECT_EQ(out.audit_session, "");
  EXPECT_FALSE(Hits(without).empty());
  std::error_code ec;
  std::vector<std::string> sessions;
  for (const auto& e : std::filesystem::directory_iterator(state + "/sessions", ec)) {
    const std::string name = e.path().filename().string();
    if (name[0] != '.') sessions.push_back(name);  // .reserved: the reserves' registry
  }
  EXPECT_EQ(sessions, std::vector<std::string>{audit.session_id})
      << "a run without the trail's options made a session";
  std::filesystem::remove_all(state, ec);
}

TEST_F(LimitsEventsTest, TimeoutEmitsLimitHit) {
  MemoryEventSink sink;
  policy::RunFlags flags;
  flags.timeout = "300ms";
  supervisor::Outcome out = RunInProcess(flags, {"sleep", "30"}, &sink);
  EXPECT_EQ(out.kind, supervisor::Outcome::Kind::kTimedOut) << out.message;
  EXPECT_EQ(out.exit_code, 124);
  std::vector<nlohmann::json> hits = Hits(sink);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0]["limit"], "timeout");
  EXPECT_EQ(hits[0]["timeout_ms"], 300);
  EXPECT_EQ(hits[0]["grace_ms"], 2000);
  EXPECT_TRUE(out.limits.timed_out);
  EXPECT_FALSE(out.limits.killed_after_grace);
  // Positive control: no limit reached, no event.
  MemoryEventSink quiet;
  out = RunInProcess(flags, {"exit", "0"}, &quiet);
  EXPECT_EQ(out.exit_code, 0) << out.message;
  EXPECT_TRUE(Hits(quiet).empty());
}

TEST_F(LimitsEventsTest, MemoryAndPidsHitsAreReportedWhereObservable) {
  MemoryEventSink sink;
  policy::RunFlags flags;
  flags.memory = "48M";
  supervisor::Outcome out = RunInProcess(flags, {"alloc", "512"}, &sink);
  std::vector<nlohmann::json> hits = Hits(sink);
  if (out.limits.backend == "rlimits") {
    // Per-process RLIMIT_DATA: the command saw ENOMEM; the kernel reports nothing to observe.
    EXPECT_EQ(out.exit_code, 1) << out.message;
    EXPECT_TRUE(hits.empty());
    GTEST_SKIP() << "memory and pids limit hits are observable only with a cgroup";
  }
  EXPECT_EQ(out.exit_code, 137) << out.message;
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0]["limit"], "memory");
  EXPECT_EQ(hits[0]["limit_bytes"], 48u << 20);
  EXPECT_GE(hits[0]["oom_kills"].get<int>(), 1);
  EXPECT_EQ(out.limits.hits.size(), 1u);
  EXPECT_FALSE(out.limits.cgroup.empty());
  for (const auto& dir : out.limits.cgroup) EXPECT_FALSE(PathExists(dir)) << dir << " left behind";

  // CPU: throttling is counted (two busy threads under a fifth of a core).
  flags = policy::RunFlags();
  flags.cpu = "0.2";
  MemoryEventSink cpu_sink;
  out = RunInProcess(flags, {"spin", "1", "2"}, &cpu_sink);
  EXPECT_EQ(out.exit_code, 0) << out.message;
  EXPECT_GT(out.limits.cpu_throttled_periods, 0u);

  MemoryEventSink pids_sink;
  flags = policy::RunFlags();
  flags.pids = "12";
  out = RunInProcess(flags, {"forkbomb"}, &pids_sink);
  hits = Hits(pids_sink);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0]["limit"], "pids");
  EXPECT_EQ(hits[0]["max"], 12);
  EXPECT_GE(hits[0]["refused_forks"].get<int>(), 1);
}

}  // namespace
}  // namespace ward::test
