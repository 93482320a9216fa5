#include "enforce/launcher.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "common/cpu.h"
#include "common/linux.h"
#include "common/trace.h"
#include "enforce/bpf.h"
#include "enforce/caps.h"
#include "enforce/cgroup.h"
#include "enforce/control.h"
#include "enforce/exec_server.h"
#include "enforce/guard_agent.h"
#include "enforce/init_confine.h"
#include "enforce/landlock.h"
#include "enforce/mount.h"
#include "enforce/ns/net.h"
#include "enforce/ns/user.h"
#include "enforce/plan_wire.h"
#include "enforce/seccomp.h"
#include "enforce/spawn.h"

namespace ward::enforce {
namespace {

char* g_args_begin = nullptr;
char* g_args_end = nullptr;

constexpr int kForwardedSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};

[[noreturn]] void ReportAndExit(int ctl, const ChildError& err) {
  ControlMsg m;
  m.type = MsgType::kSetupError;
  m.error = err;
  SendControl(ctl, m);
  _exit(125);
}

void WipeProcessArgs(const char* name) {
  prctl(PR_SET_NAME, name, 0, 0, 0);
  if (g_args_begin == nullptr || g_args_end <= g_args_begin) return;
  std::memset(g_args_begin, 0, g_args_end - g_args_begin);
  size_t len = std::strlen(name) + 1;
  if (static_cast<size_t>(g_args_end - g_args_begin) > len) std::memcpy(g_args_begin, name, len);
  // environ pointed into the wiped area.
  static char* empty_env[] = {nullptr};
  environ = empty_env;
}

void NoopHandler(int) {}

// A container's exec server (`ward oci exec`), beside its command: forked by the command once
// every layer is on, so that it holds exactly the command's (and is watched by the same seccomp
// listener), as init's child (CLONE_PARENT), which reaps it, and in a session of its own, out of
// reach of the signals init passes to the command's group. The command execs on.
void StartExecServerBeside(const LaunchPlan& plan, const std::vector<std::string>& env,
                           int exec_server, int ctl, int exec_pipe) {
  const long pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, nullptr, nullptr, nullptr, 0);
  if (pid < 0) {
    ChildError err;
    err.Set("exec server", errno, "fork");
    ReportAndExit(ctl, err);
  }
  if (pid == 0) {
    setsid();
    WipeProcessArgs("ward-exec");
    ExecServerMain(plan, env, exec_server, ctl, exec_pipe);
  }
  close(exec_server);
}

// The command: runs the process layers in the design's order, then execs; or, with
// `exec_server` (a live sandbox), becomes the exec server on that socket. Never returns.
[[noreturn]] void CommandMain(const LaunchPlan& plan, const ExecArgs& exec_args,
                              const SeccompProgram& seccomp, int ctl, int exec_pipe,
                              int pty_slave, int landlock, int exec_server,
                              const std::vector<std::string>& env) {
  ChildError err;
  auto fail = [&](const char* stage, int e, const char* d = "") {
    err.Set(stage, e, d);
    ReportAndExit(ctl, err);
  };
  // Signals: the command starts with default dispositions and an empty mask. execve resets
  // caught signals itself; ignored ones (the supervisor ignores SIGPIPE) must be reset here.
  sigset_t none;
  sigemptyset(&none);
  signal(SIGPIPE, SIG_DFL);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  TraceMark("command: forked");
  if (setsid() < 0) fail("setsid", errno);
  if (pty_slave >= 0) {
    if (ioctl(pty_slave, TIOCSCTTY, 0) != 0) fail("pty", errno, "TIOCSCTTY");
    for (int fd = 0; fd < 3; ++fd) {
      if (plan.tty[fd] && dup2(pty_slave, fd) < 0) fail("pty", errno, "dup2");
    }
    if (pty_slave > 2) close(pty_slave);
  }
  if (chdir(plan.process.workdir.c_str()) != 0) {
    fail("chdir", errno, plan.process.workdir.c_str());
  }
  // An exec server allocates as it serves: each exec takes the limits instead (exec_server.h).
  if (!plan.exec_server) {
    if (const char* limit = ApplyRlimits(plan.process.rlimits)) fail("rlimit", errno, limit);
  }
  // Every fd but 0, 1, 2 closes at execve (the control socket and exec pipe are still needed).
  if (!CloseOnExecFrom3()) fail("close_range", errno);
  TraceMark("command: rlimits, fds");
  int rc = DropAllCapabilities();
  if (rc != 0) fail("capabilities", -rc);
  TraceMark("command: capabilities dropped");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("no_new_privs", errno);
  // A domain of its own, nested in init's (same rules): init may signal it, it may not signal
  // init or the guard agent.
  if (landlock >= 0 && !RestrictLandlock(landlock, &err)) ReportAndExit(ctl, err);
  TraceMark("command: landlock");

  if (plan.seccomp_enabled) {
    int listener = -1;
    rc = ApplySeccomp(seccomp, &listener);
    if (rc != 0) fail("seccomp", -rc);
    if (listener >= 0) {
      ControlMsg m;
      m.type = MsgType::kFd;
      m.fd_kind = FdKind::kNotifyListener;
      rc = SendControl(ctl, m, listener);
      close(listener);
      if (rc != 0) fail("seccomp", -rc, "passing the listener");
    }
  }
  // A container's own filter, on top of ward's: it can refuse more, never allow more.
  if (!plan.process.container_seccomp.empty()) {
    rc = ApplyFurtherSeccomp(plan.process.container_seccomp);
    if (rc != 0) fail("seccomp", -rc, "the container's filter");
  }
  if (plan.exec_server) ExecServerMain(plan, env, exec_server, ctl, exec_pipe);
  if (exec_server >= 0) StartExecServerBeside(plan, env, exec_server, ctl, exec_pipe);
  TraceMark("command: layers applied, exec");
  int e = ExecCommand(exec_args);
  int32_t code = e;
  ssize_t n = write(exec_pipe, &code, sizeof code);
  (void)n;
  _exit(e == ENOENT ? 127 : 126);
}

// What the command's process starts with (SpawnCommand).
struct CommandStart {
  const LaunchPlan* plan;
  const ExecArgs* exec_args;
  const SeccompProgram* seccomp;
  int ctl, exec_pipe_read, exec_pipe_write, sfd, pty_slave;
  const cpu_set_t* cpus;  // every CPU init may use: init kept the child on its own CPU to start
  int landlock;           // the ruleset of init's domain, -1 without Landlock
  int exec_server;        // the exec server's socket (a live sandbox), else -1
  const std::vector<std::string>* env;  // the command's environment
};

int CommandEntry(void* arg) {
  const CommandStart* s = static_cast<const CommandStart*>(arg);
  if (s->cpus) sched_setaffinity(0, sizeof *s->cpus, s->cpus);
  close(s->exec_pipe_read);
  close(s->sfd);
  CommandMain(*s->plan, *s->exec_args, *s->seccomp, s->ctl, s->exec_pipe_write, s->pty_slave,
              s->landlock, s->exec_server, *s->env);
}

// Starts the command's process. Not a fork: init is a copy of the supervisor's address space,
// and copying its page tables, then tearing them down again at execve, cost the start-up
// about half a millisecond (SpawnOnOwnStack). An exec server never execs, and a container's
// command forks one (StartExecServerBeside): both are forked.
pid_t SpawnCommand(CommandStart* start) {
  if (start->exec_server >= 0) {
    pid_t pid = fork();
    if (pid == 0) CommandEntry(start);
    return pid;
  }
  return SpawnOnOwnStack(&CommandEntry, start);
}

// Init's receive during its setup: the next message from the supervisor, sleeping on the kick
// eventfd rather than on the socket (see Sandbox::kick). Returns like RecvControl: 0 when the
// supervisor is gone.
int AwaitControl(int ctl, int kick, ControlMsg* m, UniqueFd* fd) {
  while (true) {
    int r = RecvControl(ctl, m, fd, MSG_DONTWAIT);
    if (r != -EAGAIN && r != -EWOULDBLOCK) return r;
    // Only hang-ups of the socket wake this poll (no POLLIN asked): its data wakeups do not.
    struct pollfd p[2] = {{kick, POLLIN, 0}, {ctl, 0, 0}};
    if (poll(p, 2, -1) < 0 && errno != EINTR) return -errno;
    if (p[0].revents & POLLIN) {
      uint64_t n;
      (void)!read(kick, &n, sizeof n);
    }
    if (p[1].revents & (POLLHUP | POLLERR)) return RecvControl(ctl, m, fd, MSG_DONTWAIT);
  }
}

// The late setup's layout in its memfd: u64 length of the file content, the content, then the
// environment's entries, each followed by a NUL.
bool ReceiveLateSetup(const LaunchPlan& plan, int ctl, int kick, MountSpec* mount,
                      std::vector<std::string>* env) {
  ChildError err;
  ControlMsg m;
  UniqueFd fd;
  int r = AwaitControl(ctl, kick, &m, &fd);
  if (r != 1) return false;  // the supervisor is gone, or failed and is killing us
  if (m.type != MsgType::kLateSetup || !fd || m.value < static_cast<int32_t>(sizeof(uint64_t))) {
    err.Set("credentials", EPROTO, "receiving the late setup");
    ReportAndExit(ctl, err);
  }
  std::string blob(static_cast<size_t>(m.value), '\0');
  if (pread(fd.get(), blob.data(), blob.size(), 0) != static_cast<ssize_t>(blob.size())) {
    err.Set("credentials", errno ? errno : EIO, "reading the late setup");
    ReportAndExit(ctl, err);
  }
  uint64_t file_len = 0;
  std::memcpy(&file_len, blob.data(), sizeof file_len);
  if (file_len > blob.size() - sizeof file_len) {
    err.Set("credentials", EPROTO, "late setup too short");
    ReportAndExit(ctl, err);
  }
  *mount = plan.mount;
  if (plan.late_file_op >= 0 && static_cast<size_t>(plan.late_file_op) < mount->ops.size()) {
    mount->ops[plan.late_file_op].content = blob.substr(sizeof file_len, file_len);
  }
  size_t pos = sizeof file_len + file_len;
  while (pos < blob.size()) {
    size_t end = blob.find('\0', pos);
    if (end == std::string::npos) end = blob.size();
    env->push_back(blob.substr(pos, end - pos));
    pos = end + 1;
  }
  return true;
}

// The plan attached to the go message (see StartSandbox): a memfd of `go.value` bytes.
Status ReceivePlan(const ControlMsg& go, int fd, LaunchPlan* plan, InitLaunch* launch) {
  if (fd < 0 || go.value <= 0 || static_cast<size_t>(go.value) > kMaxInitPlanBytes) {
    return InvalidArgument("no launch plan with the go message");
  }
  std::string blob(static_cast<size_t>(go.value), '\0');
  if (pread(fd, blob.data(), blob.size(), 0) != static_cast<ssize_t>(blob.size())) {
    return Errno("reading the launch plan");
  }
  return DecodeInitPlan(blob, plan, launch);
}

// The caller's stdio served the command's start (the command inherited what is not its pty);
// init itself needs none of it, and holding the user's terminal or pipes would put them within
// reach of anything that ever ran as init. Trace marks keep stderr.
void ReleaseCallerStdio() {
  const int last = TraceEnabled() ? 1 : 2;
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd <= last; ++fd) {
    if (null >= 0) {
      dup2(null, fd);
    } else {
      close(fd);
    }
  }
  if (null > last) close(null);
}

// The covers' templates (see ApplyMounts) go to the supervisor, which closes them: the last
// close of a detached mount waits for an RCU grace period, and the supervisor has nothing else
// to do while the command starts. Init's own copies close at once (not the last reference).
void HandOverDetachedMounts(int ctl, std::vector<UniqueFd>* detached) {
  for (const UniqueFd& fd : *detached) {
    ControlMsg m;
    m.type = MsgType::kFd;
    m.fd_kind = FdKind::kDetachedMount;
    SendControl(ctl, m, fd.get());
  }
  detached->clear();
}

// Init's Landlock domain (init_confine.h), entered before it forks the command: the ruleset is
// built once, for init and for the command, which nests its own domain in init's with it.
UniqueFd EnterLandlockDomain(const LaunchPlan& plan, int ctl) {
  if (!plan.landlock.enabled) return UniqueFd();
  ChildError err;
  UniqueFd ruleset(BuildLandlockRuleset(plan.landlock, &err));
  if (!ruleset || !RestrictLandlock(ruleset.get(), &err)) ReportAndExit(ctl, err);
  TraceMark("init: landlock domain entered");
  return ruleset;
}

// Once the command runs, init keeps nothing it does not need (init_confine.h). A failure ends
// the sandbox: the command must not run beside an unconfined pid 1.
void ConfineSelf(const LaunchPlan& plan, int ctl) {
  ChildError err;
  if (int rc = DropAllCapabilities(); rc != 0) err.Set("init", -rc, "dropping capabilities");
  if (!err.stage[0] && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    err.Set("init", errno, "no_new_privs");
  }
  ReleaseCallerStdio();
  if (!err.stage[0] && plan.seccomp_enabled) LoadInitSeccomp(&err);
  if (err.stage[0]) {
    kill(-1, SIGKILL);
    ReportAndExit(ctl, err);
  }
  TraceMark("init: confined");
}

// Forks the guard agent on `sock` (its end of the supervisor's socketpair). The agent inherits
// init's confinement; it keeps only its socket.
void StartGuardAgent(UniqueFd sock) {
  pid_t pid = fork();
  if (pid != 0) return;  // init: its copy of the socket closes with `sock`
  const int fd = sock.get();
  if (fd > 0) sys::CloseRange(0, static_cast<unsigned>(fd) - 1, 0);
  sys::CloseRange(static_cast<unsigned>(fd) + 1, UINT_MAX, 0);
  GuardAgentMain(fd);
}

// A message from the supervisor while the command runs. False: the supervisor is gone.
bool OnControl(int ctl) {
  ControlMsg m;
  UniqueFd fd;
  int r = RecvControl(ctl, &m, &fd, MSG_DONTWAIT);
  if (r == -EAGAIN || r == -EWOULDBLOCK || r == -EINTR) return true;
  if (r != 1) return false;
  if (m.type == MsgType::kTerminate) {
    // The deadline passed: everything inside (kill(-1) spares only init itself) gets SIGTERM,
    // and SIGCONT so that stopped processes see it. The supervisor follows with SIGKILL after
    // the grace period.
    kill(-1, SIGTERM);
    kill(-1, SIGCONT);
  } else if (m.type == MsgType::kGuardAgent && fd) {
    StartGuardAgent(std::move(fd));
  }
  return true;
}

// Signals for pid 1: forwarded ones go to the command's process group; SIGCHLD reaps. When the
// command itself is reaped, everything it left behind dies and is reaped here (orphans are
// re-parented to init before their parent can be reaped, so ECHILD means this namespace holds no
// other process). Only then does the supervisor hear of the end: it need not wait for init's
// own exit, whose namespace teardown is kernel work. A container's init exits with the
// command's status, which is what its engine reads (LaunchPlan::container_init).
void OnSignals(int ctl, int sfd, pid_t cmd, bool exit_with_command) {
  struct signalfd_siginfo si;
  while (read(sfd, &si, sizeof si) == sizeof si) {
    if (si.ssi_signo != SIGCHLD) {
      kill(-cmd, static_cast<int>(si.ssi_signo));
      kill(cmd, static_cast<int>(si.ssi_signo));
      continue;
    }
    int status;
    pid_t w;
    while ((w = waitpid(-1, &status, WNOHANG)) > 0) {
      if (w != cmd) continue;
      TraceMark("init: command reaped");
      kill(-1, SIGKILL);
      while (waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
        kill(-1, SIGKILL);
      }
      TraceMark("init: emptied");
      ControlMsg m;
      m.type = MsgType::kExited;
      m.value = status;
      getrusage(RUSAGE_CHILDREN, &m.usage);
      SendControl(ctl, m);
      if (!exit_with_command) _exit(0);
      _exit(WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
    }
  }
}

// Init's life once the command runs. When the supervisor goes away, everything inside ends.
[[noreturn]] void ServeAsPid1(int ctl, int sfd, pid_t cmd, bool exit_with_command) {
  struct pollfd pfds[2] = {{sfd, POLLIN, 0}, {ctl, POLLIN, 0}};
  while (true) {
    int n = poll(pfds, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      _exit(125);
    }
    if ((pfds[1].revents & (POLLIN | POLLHUP | POLLERR)) && !OnControl(ctl)) {
      kill(-1, SIGKILL);
      _exit(137);
    }
    if (pfds[0].revents & POLLIN) OnSignals(ctl, sfd, cmd, exit_with_command);
  }
}

// Where a network namespace cannot be joined (gVisor refuses setns for one), a run that needs
// only loopback (no proxy or DNS stub, whose sockets the supervisor made in the namespace it
// sent) makes its own: the same namespace with only lo. `err` is setns's errno.
bool OwnNetworkNamespace(const LaunchPlan& plan, int setns_err, ChildError* err) {
  if (plan.net.enabled || (setns_err != EOPNOTSUPP && setns_err != EINVAL)) {
    return err->Set("net", setns_err, "joining the network namespace");
  }
  if (unshare(CLONE_NEWNET) != 0) return err->Set("net", errno, "creating a network namespace");
  if (int rc = BringUpLoopback(nullptr); rc != 0) return err->Set("net", -rc, "bringing up lo");
  return true;
}

// The ids an unprivileged init maps for itself, before anything else.
struct OwnIds {
  uid_t uid;
  gid_t gid;
};

// Keeps only 0, 1, 2, the control socket, the kick eventfd and the exit pipe (when there is
// one, see Sandbox::pidfd).
void CloseInheritedFds(int ctl, int kick, int exit_fd) {
  int keep[3] = {ctl, kick, exit_fd};
  std::sort(keep, keep + 3);
  unsigned next = 3;
  for (int fd : keep) {
    if (fd < 0) continue;
    if (static_cast<unsigned>(fd) > next) sys::CloseRange(next, static_cast<unsigned>(fd) - 1, 0);
    next = static_cast<unsigned>(fd) + 1;
  }
  sys::CloseRange(next, UINT_MAX, 0);
}

// Writes init's own id maps and tells the supervisor (kMapped).
void MapOwnIds(int ctl, const OwnIds& ids) {
  char failed[64] = "";
  if (int rc = WriteOwnIdMaps(ids.uid, ids.gid, failed, sizeof failed); rc != 0) {
    ChildError err;
    err.Set("id maps", -rc, failed);
    ReportAndExit(ctl, err);
  }
  ControlMsg mapped;
  mapped.type = MsgType::kMapped;
  SendControl(ctl, mapped);
  TraceMark("init: id maps written");
}

// Waits for the go message and takes the launch plan it carries.
LaunchPlan AwaitPlan(int ctl, int kick, const cpu_set_t* cpus) {
  ControlMsg go;
  UniqueFd plan_fd;
  if (AwaitControl(ctl, kick, &go, &plan_fd) != 1 || go.type != MsgType::kGo) _exit(125);
  TraceMark("init: go");
  // Every CPU the supervisor may use again (CloneSandboxInit kept init off the supervisor's CPU
  // until now); the command inherits this.
  if (cpus) sched_setaffinity(0, sizeof *cpus, cpus);
  ChildError err;
  LaunchPlan plan;
  InitLaunch launch;
  Status got = ReceivePlan(go, plan_fd.get(), &plan, &launch);
  plan_fd.reset();
  if (!got.ok()) {
    err.Set("plan", got.err() ? got.err() : EPROTO, got.message().c_str());
    ReportAndExit(ctl, err);
  }
  // Moved into the run's cgroup after the clone: a cgroup namespace rooted there.
  if (launch.unshare_cgroup_ns && unshare(CLONE_NEWCGROUP) != 0) {
    err.Set("cgroup", errno, "entering a cgroup namespace");
    ReportAndExit(ctl, err);
  }
  TraceMark("init: plan received");
  return plan;
}

// Drops supplementary groups (as root) and names the sandbox's host.
void SetGroupsAndHostname(const LaunchPlan& plan, int ctl) {
  ChildError err;
  // The raw syscall: glibc's wrapper would try to broadcast to threads this clone does not have.
  if (plan.privileged && syscall(SYS_setgroups, 0, nullptr) != 0) {
    err.Set("setgroups", errno);
    ReportAndExit(ctl, err);
  }
  if (sethostname(plan.mount.hostname.c_str(), plan.mount.hostname.size()) != 0) {
    err.Set("uts", errno, "sethostname");
    ReportAndExit(ctl, err);
  }
}

// Builds the root and pivots into it, then sends it to the supervisor as an O_PATH descriptor
// (kMounted). Returns the sysctls, to be written once in the network namespace.
PendingSysctls BuildRoot(const MountSpec& mount, int ctl) {
  ChildError err;
  MountReport report;
  std::vector<UniqueFd> detached;  // handed to the supervisor (see HandOverDetachedMounts)
  PendingSysctls sysctls;
  if (!ApplyMounts(mount, &report, &err, &detached, &sysctls)) ReportAndExit(ctl, err);
  TraceMark("init: root built");
  ControlMsg m;
  m.type = MsgType::kMounted;
  m.report = report;
  UniqueFd root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  SendControl(ctl, m, root.get());
  HandOverDetachedMounts(ctl, &detached);
  return sysctls;
}

// The sandbox's own terminal, from its private devpts: the master goes to the supervisor, the
// slave (returned; -1 without a terminal) to the command.
int OpenPty(const LaunchPlan& plan, int ctl) {
  if (!plan.tty[0] && !plan.tty[1] && !plan.tty[2]) return -1;
  ChildError err;
  int pty_master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (pty_master < 0 || unlockpt(pty_master) != 0) {
    err.Set("pty", errno, "/dev/ptmx");
    ReportAndExit(ctl, err);
  }
  char name[64];
  if (ptsname_r(pty_master, name, sizeof name) != 0) {
    err.Set("pty", errno, "ptsname");
    ReportAndExit(ctl, err);
  }
  int pty_slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (pty_slave < 0) {
    err.Set("pty", errno, name);
    ReportAndExit(ctl, err);
  }
  if (plan.has_termios) tcsetattr(pty_slave, TCSANOW, &plan.termios);
  if (plan.has_winsize) ioctl(pty_slave, TIOCSWINSZ, &plan.winsize);
  ControlMsg m;
  m.type = MsgType::kFd;
  m.fd_kind = FdKind::kPtyMaster;
  SendControl(ctl, m, pty_master);
  close(pty_master);
  return pty_slave;
}

// The network namespace, made by the supervisor while the root was being built (see
// CreateSandboxNet): joined before the sysctls forbid new namespaces and before the command.
void JoinNetworkNamespace(const LaunchPlan& plan, int ctl, int kick) {
  ChildError err;
  ControlMsg m;
  UniqueFd netns;
  int r = AwaitControl(ctl, kick, &m, &netns);
  if (r != 1) _exit(125);  // the supervisor is gone (or failed and is killing us)
  if (m.type != MsgType::kNetns || !netns) {
    err.Set("net", EPROTO, "receiving the network namespace");
    ReportAndExit(ctl, err);
  }
  if (setns(netns.get(), CLONE_NEWNET) != 0 && !OwnNetworkNamespace(plan, errno, &err)) {
    ReportAndExit(ctl, err);
  }
  TraceMark("init: network namespace joined");
}

// The run's v1 cgroups, made by the supervisor while the root was being built: joined before
// the command is forked.
void JoinV1Cgroups(int ctl, int kick) {
  ChildError err;
  for (int more = 1; more > 0;) {
    ControlMsg m;
    UniqueFd tasks;
    int r = AwaitControl(ctl, kick, &m, &tasks);
    if (r != 1) _exit(125);  // the supervisor is gone (or failed and is killing us)
    if (m.type != MsgType::kCgroupJoin || !tasks || m.value < 0) {
      err.Set("cgroup", EPROTO, "receiving the run's cgroup");
      ReportAndExit(ctl, err);
    }
    if (write(tasks.get(), "0", 1) != 1) {
      err.Set("cgroup", errno, "joining the run's cgroup");
      ReportAndExit(ctl, err);
    }
    more = m.value;
  }
  TraceMark("init: cgroup joined");
}

// The filter, when the supervisor sent it while the root was being built (the plan did not
// carry it).
SeccompProgram ReceiveSeccompProgram(int ctl, int kick) {
  ChildError err;
  SeccompProgram program;
  ControlMsg m;
  UniqueFd none;
  int r = AwaitControl(ctl, kick, &m, &none);
  if (r != 1) _exit(125);  // the supervisor is gone (or failed and is killing us)
  if (m.type != MsgType::kSeccomp || m.value <= 0 || static_cast<size_t>(m.value) > kBpfMaxInsns) {
    err.Set("seccomp", EPROTO, "receiving the filter");
    ReportAndExit(ctl, err);
  }
  program.insns.resize(static_cast<size_t>(m.value));
  const size_t want = program.insns.size() * sizeof(struct sock_filter);
  ssize_t n;
  do {
    n = recv(ctl, program.insns.data(), want, 0);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(want)) {
    err.Set("seccomp", n < 0 ? errno : EPROTO, "receiving the filter");
    ReportAndExit(ctl, err);
  }
  TraceMark("init: seccomp program received");
  return program;
}

// Signals are handled synchronously through a signalfd (returned). pid 1 only receives signals
// it has handlers for, so each gets a no-op handler and stays blocked. Non-blocking: init reads
// what is pending and goes back to waiting on both the signals and its control socket (a read
// that blocked after reaping a child other than the command would miss the supervisor's end).
int OpenSignalFd(int ctl) {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  for (int s : kForwardedSignals) sigaddset(&mask, s);
  struct sigaction sa = {};
  sa.sa_handler = NoopHandler;
  for (int s : kForwardedSignals) sigaction(s, &sa, nullptr);
  sigaction(SIGCHLD, &sa, nullptr);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    ChildError err;
    err.Set("init", errno, "signalfd");
    ReportAndExit(ctl, err);
  }
  return sfd;
}

// Whether the command exec'd, read from the exec pipe (the command writes its errno there when
// execve fails; the pipe closes on exec), reported to the supervisor: kStarted with its pid, or
// kExecFailed.
void ReportExec(int ctl, int exec_pipe_read, pid_t cmd) {
  int32_t exec_errno = 0;
  ssize_t n;
  do {
    n = read(exec_pipe_read, &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  close(exec_pipe_read);
  ControlMsg m;
  if (n == sizeof exec_errno) {
    m.type = MsgType::kExecFailed;
    m.value = exec_errno;
  } else {
    m.type = MsgType::kStarted;
    m.value = cmd;
  }
  SendControl(ctl, m);
  TraceMark("init: started sent");
}

// A live sandbox's exec channel: a socketpair whose other end (*server_end) the exec server
// keeps; the returned end goes to the supervisor.
UniqueFd OpenExecServerChannel(int ctl, UniqueFd* server_end) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    ChildError err;
    err.Set("init", errno, "socketpair for the exec server");
    ReportAndExit(ctl, err);
  }
  server_end->reset(sv[1]);
  return UniqueFd(sv[0]);
}

void HandOverExecServerChannel(int ctl, UniqueFd fd) {
  ControlMsg m;
  m.type = MsgType::kFd;
  m.fd_kind = FdKind::kExecServer;
  SendControl(ctl, m, fd.get());
}

// Starts the command (SpawnCommand) with `env` and `seccomp`, and reports whether it exec'd.
// `exec_args` receives its execve arguments, which point into the plan and `env`: init keeps
// them as it keeps those. Init keeps neither the pty's slave nor the exec pipe.
pid_t StartCommand(const LaunchPlan& plan, const std::vector<std::string>& env,
                   const SeccompProgram& seccomp, int ctl, int sfd, int pty_slave, int landlock,
                   ExecArgs* exec_args) {
  ChildError err;
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    err.Set("init", errno, "pipe");
    ReportAndExit(ctl, err);
  }
  // A live sandbox's first process is its exec server; a container has one beside its command.
  UniqueFd server[2];
  if (plan.exec_server || plan.container_init) server[0] = OpenExecServerChannel(ctl, &server[1]);
  if (!plan.exec_server) *exec_args = PrepareExec(plan.process.argv, env);
  TraceMark("init: forking the command");
  // Init sleeps until the command execs: the command starts on init's CPU (see StayOnThisCpu).
  StayOnThisCpu pin;
  CommandStart start{&plan,         exec_args,    &seccomp,      ctl,
                     exec_pipe[0],  exec_pipe[1], sfd,           pty_slave,
                     pin.allowed(), landlock,     server[1].get(), &env};
  pid_t cmd = SpawnCommand(&start);
  pin.Release();
  if (cmd < 0) {
    err.Set("fork", errno);
    ReportAndExit(ctl, err);
  }
  close(exec_pipe[1]);
  if (pty_slave >= 0) close(pty_slave);
  server[1].reset();
  if (server[0]) HandOverExecServerChannel(ctl, std::move(server[0]));
  ReportExec(ctl, exec_pipe[0], cmd);
  return cmd;
}

// Sandbox init: pid 1 of the new namespaces. Writes its own id maps when `own_ids` is given
// (nullptr: the supervisor wrote them), then waits for its plan with the go message. A
// sibling of the supervisor (a container's init) has no parent-death signal: its parent exits
// at once, and the closing of the control socket ends it instead. Never returns.
[[noreturn]] void InitMain(int ctl, int kick, int exit_fd, const cpu_set_t* cpus,
                           const OwnIds* own_ids, bool sibling) {
  CloseInheritedFds(ctl, kick, exit_fd);
  if (!sibling) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  // A session of its own: init and what it forks (the guard agent) never have the caller's
  // terminal as their controlling terminal, so no open of /dev/tty inside can reach it.
  setsid();
  WipeProcessArgs("ward-init");
  if (own_ids) MapOwnIds(ctl, *own_ids);

  // Init never execs, so an empty bounding set takes nothing from it, and the command inherits
  // it: its own DropAllCapabilities then only checks. Done now, while init waits for the
  // supervisor's plan, rather than one credential commit per capability on the command's path.
  // A failure here is not fatal: the command drops them itself and fails closed.
  (void)DropBoundingSet();
  TraceMark("init: bounding set dropped");

  const LaunchPlan plan = AwaitPlan(ctl, kick, cpus);

  // Brokered credentials: the environment with the phantoms and the CA bundle, made by the
  // supervisor after the clone (their secrets were never in this process's memory).
  MountSpec late_mount;
  std::vector<std::string> late_env;
  const MountSpec* mount = &plan.mount;
  const std::vector<std::string>* env = &plan.process.env;
  if (plan.await_late_setup) {
    if (!ReceiveLateSetup(plan, ctl, kick, &late_mount, &late_env)) _exit(125);
    mount = &late_mount;
    env = &late_env;
    TraceMark("init: late setup received");
  }

  SetGroupsAndHostname(plan, ctl);
  PendingSysctls sysctls = BuildRoot(*mount, ctl);
  const int pty_slave = OpenPty(plan, ctl);
  // On a pty for all three, the command needs none of the caller's stdio, and an engine that
  // gave `ward oci create` a pipe to read its output from waits for their end before it starts
  // the container.
  if (plan.tty[0] && plan.tty[1] && plan.tty[2]) ReleaseCallerStdio();
  JoinNetworkNamespace(plan, ctl, kick);
  if (plan.cgroup_after_clone) JoinV1Cgroups(ctl, kick);
  ChildError err;
  if (!WriteSysctls(&sysctls, &err)) ReportAndExit(ctl, err);
  const UniqueFd landlock = EnterLandlockDomain(plan, ctl);
  SeccompProgram deferred;  // when the plan did not carry the filter
  if (plan.seccomp_enabled && plan.seccomp.insns.empty()) {
    deferred = ReceiveSeccompProgram(ctl, kick);
  }
  const SeccompProgram& seccomp = plan.seccomp.insns.empty() ? deferred : plan.seccomp;

  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  const int sfd = OpenSignalFd(ctl);
  ExecArgs exec_args;
  const pid_t cmd =
      StartCommand(plan, *env, seccomp, ctl, sfd, pty_slave, landlock.get(), &exec_args);
  ConfineSelf(plan, ctl);
  ServeAsPid1(ctl, sfd, cmd, plan.container_init);
}

}  // namespace

void HideProcessArgs(const char* name) { WipeProcessArgs(name); }

void RememberProcessArgs(int argc, char** argv) {
  if (argc <= 0 || argv == nullptr || argv[0] == nullptr) return;
  g_args_begin = argv[0];
  char* end = argv[argc - 1] + std::strlen(argv[argc - 1]) + 1;
  for (char** e = environ; e && *e; ++e) {
    char* last = *e + std::strlen(*e) + 1;
    // Only strings contiguous with argv (the kernel places envp right after it).
    if (*e >= g_args_begin && last > end && *e <= end + 1) end = last;
  }
  g_args_end = end;
}

std::string DescribeChildError(const ChildError& e) {
  std::string s = e.stage;
  if (e.detail[0]) {
    s += ": ";
    s += e.detail;
  }
  if (e.err) {
    s += ": ";
    s += std::strerror(e.err);
  }
  return s;
}

namespace {

// Wakes init for the message just sent (see Sandbox::kick). 0 or -errno.
int Kick(const Sandbox& sb) {
  const uint64_t one = 1;
  ssize_t n;
  do {
    n = write(sb.kick.get(), &one, sizeof one);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof one) ? 0 : -(n < 0 ? errno : EIO);
}

// Kills and reaps an init that has not been told to go.
void KillInit(Sandbox* sb) {
  if (sb->pid <= 0) return;
  SignalInit(*sb, SIGKILL);
  while (waitpid(sb->pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  sb->pid = -1;
}

// `ward run`'s init, cloned first thing (PrecloneSandboxInit) and taken by StartSandbox.
std::optional<Sandbox> g_precloned;

// Clones init with its ids mapped (by init itself when unprivileged: see OwnIds); init then
// waits for its plan (LaunchSandbox), so it may be cloned before the plan exists. `cgroup`: a
// v2 cgroup to be born in. The caller must be single-threaded.
// clone(2) with the namespace flags of `args`, for kernels without clone3 (gVisor, Linux <
// 5.3), which have no pidfd either: *exit_read gets the read end of a pipe whose write end the
// child keeps (*exit_write in the child, closed in the parent). Fork-like: no new stack.
long CloneWithoutPidfd(const struct clone_args& args, UniqueFd* exit_read, int* exit_write) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  const uint64_t ns = args.flags & ~static_cast<uint64_t>(CLONE_PIDFD | CLONE_INTO_CGROUP);
  long pid =
      syscall(SYS_clone, static_cast<unsigned long>(ns) | SIGCHLD, nullptr, nullptr, nullptr, 0);
  if (pid == 0) {
    close(p[0]);
    *exit_write = p[1];
    return 0;
  }
  const int e = errno;
  close(p[1]);
  if (pid < 0) {
    close(p[0]);
    errno = e;
    return -1;
  }
  exit_read->reset(p[0]);
  return pid;
}

Result<Sandbox> CloneSandboxInit(uid_t uid, gid_t gid, bool privileged, bool user_ns,
                                 bool sibling, Cgroup* cgroup) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return Errno("socketpair");
  }
  UniqueFd parent_end(sv[0]), child_end(sv[1]);
  UniqueFd kick(eventfd(0, EFD_CLOEXEC));
  if (!kick) return Errno("eventfd");
  const CpuPlacement cpus = CurrentCpuPlacement();
  int pidfd = -1;
  struct clone_args args = {};
  // Not CLONE_NEWNET: the network namespace is made off init's path (StartSandboxNet).
  args.flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
               CLONE_PIDFD | (user_ns ? CLONE_NEWUSER : 0);
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  if (sibling) {
    // The caller's parent becomes init's (clone3 takes no exit signal with CLONE_PARENT: init
    // inherits the caller's, SIGCHLD).
    args.flags |= CLONE_PARENT;
    args.exit_signal = 0;
  }
  if (cgroup && cgroup->clone_fd() >= 0) {
    // Born inside its cgroup (Linux 5.7): nothing of the sandbox ever runs outside it, and the
    // new cgroup namespace is rooted there.
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(cgroup->clone_fd());
  }
  long pid = sys::Clone3(&args);
  if (pid < 0 && (args.flags & CLONE_INTO_CGROUP) && (errno == EINVAL || errno == E2BIG)) {
    args.flags &= ~static_cast<uint64_t>(CLONE_INTO_CGROUP);  // older kernel: attached at launch
    args.cgroup = 0;
    pid = sys::Clone3(&args);
  }
  UniqueFd exit_read;
  int exit_write = -1;
  if (pid < 0 && errno == ENOSYS) {
    pid = CloneWithoutPidfd(args, &exit_read, &exit_write);
    args.flags &= ~static_cast<uint64_t>(CLONE_INTO_CGROUP);
  }
  if (pid < 0) {
    int e = errno;
    return ErrnoError(std::string("creating namespaces (clone with ") + (user_ns ? "user, " : "") +
                          "mount, pid, ipc, uts, cgroup)",
                      e);
  }
  // Unprivileged, init writes its own id maps: the supervisor goes on meanwhile (LaunchSandbox
  // waits for init's word). As root, the maps (with setgroups allowed, so that init can drop the
  // supplementary groups) need the supervisor's capabilities.
  const OwnIds own_ids = {uid, gid};
  if (pid == 0) {
    parent_end.reset();
    InitMain(child_end.release(), kick.get(), exit_write, cpus.has_others ? &cpus.allowed : nullptr,
             privileged || !user_ns ? nullptr : &own_ids, sibling);
  }
  if (cpus.has_others) {
    // Init builds the root while the supervisor opens the audit trail and makes the network
    // namespace: it starts on another CPU (common/cpu.h) and allows every CPU again once told
    // to go.
    sched_setaffinity(static_cast<pid_t>(pid), sizeof cpus.others, &cpus.others);
  }
  Sandbox sb;
  sb.pid = static_cast<pid_t>(pid);
  if (exit_read) {
    sb.pidfd = std::move(exit_read);
    sb.has_pidfd = false;
  } else {
    sb.pidfd.reset(pidfd);
  }
  sb.user_ns = user_ns;
  sb.uid = uid;
  sb.gid = gid;
  sb.privileged = privileged;
  sb.in_cgroup = (args.flags & CLONE_INTO_CGROUP) != 0;
  child_end.reset();
  sb.control = std::move(parent_end);
  sb.kick = std::move(kick);
  sb.maps_pending = !privileged && user_ns;
  if (privileged && user_ns) {
    Status st = WriteIdMaps(sb.pid, uid, gid, privileged);
    if (!st.ok()) {
      KillInit(&sb);
      return std::move(st).With("writing user namespace id maps");
    }
  }
  return sb;
}

// Sends init its plan and tells it to proceed; a v2 cgroup init was not born in is joined
// first. On an error init is killed and reaped.
Status LaunchSandbox(Sandbox* sb, const LaunchPlan& plan, Cgroup* cgroup) {
  auto fail = [sb](Status st) {
    KillInit(sb);
    return st;
  };
  if (sb->maps_pending) {
    // Init's word that it mapped its ids, sent at its first run (normally long done by now).
    ControlMsg m;
    UniqueFd none;
    int r;
    do {
      r = RecvControl(sb->control.get(), &m, &none);
    } while (r == -EINTR);
    if (r == 1 && m.type == MsgType::kSetupError) {
      return fail(Error(Code::kInternal, "sandbox init: " + DescribeChildError(m.error)));
    }
    if (r == 0) return fail(Error(Code::kInternal, "sandbox init exited before its setup"));
    if (r != 1 || m.type != MsgType::kMapped) {
      return fail(ErrnoError("sandbox init: waiting for its id maps", r < 0 ? -r : EPROTO));
    }
    sb->maps_pending = false;
  }
  InitLaunch launch;
  if (cgroup && !sb->in_cgroup) {
    // Init waits for kGo before doing anything, so it cannot fork before it is inside.
    Status joined = cgroup->Attach(sb->pid);
    if (!joined.ok()) return fail(std::move(joined).With("moving sandbox init into its cgroup"));
    launch.unshare_cgroup_ns = true;
  }
  const std::string blob = EncodeInitPlan(plan, launch);
  if (blob.size() > kMaxInitPlanBytes) {
    return fail(InvalidArgument("the launch plan is too large (" + std::to_string(blob.size()) +
                                " bytes)"));
  }
  UniqueFd fd(memfd_create("ward-plan", MFD_CLOEXEC));
  if (!fd) return fail(Errno("memfd_create"));
  for (size_t off = 0; off < blob.size();) {
    ssize_t n = write(fd.get(), blob.data() + off, blob.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(Errno("writing the launch plan"));
    off += static_cast<size_t>(n);
  }
  ControlMsg go;
  go.type = MsgType::kGo;
  go.value = static_cast<int32_t>(blob.size());
  if (int rc = SendControl(sb->control.get(), go, fd.get()); rc != 0 || (rc = Kick(*sb)) != 0) {
    return fail(ErrnoError("starting sandbox init", -rc));
  }
  return Ok();
}

}  // namespace

void PrecloneSandboxInit() {
  if (g_precloned) return;
  // As root on a cgroup2-only host the run's cgroup is a v2 one, made before the clone so that
  // init is born in it (StartSandbox): an init cloned now would only be discarded.
  struct statfs fs;
  if (geteuid() == 0 && statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) {
    return;
  }
  Result<Sandbox> sb = CloneSandboxInit(getuid(), getgid(), geteuid() == 0, true, false, nullptr);
  // Not fatal: StartSandbox clones again and reports what fails then.
  if (sb.ok()) g_precloned = std::move(sb).value();
  TraceMark("init cloned");
}

void DiscardPreclonedInit() {
  if (!g_precloned) return;
  KillInit(&*g_precloned);
  g_precloned.reset();
}

Result<Sandbox> StartSandbox(const LaunchPlan& plan, Cgroup* cgroup) {
  if (cgroup && cgroup->version() != 2) {
    return InvalidArgument("only a v2 cgroup is joined at the clone (v1: SendCgroupJoin)");
  }
  std::optional<Sandbox> sb;
  if (g_precloned) {
    sb = std::move(g_precloned);
    g_precloned.reset();
    // A v2 cgroup: init is cloned into it instead (the caller discarded the pre-cloned one
    // before making the cgroup; see DiscardPreclonedInit).
    if (sb->uid != plan.uid || sb->gid != plan.gid || sb->privileged != plan.privileged ||
        sb->user_ns != plan.user_ns || plan.container_init || cgroup) {
      KillInit(&*sb);
      sb.reset();
    }
  }
  if (!sb) {
    Result<Sandbox> cloned =
        CloneSandboxInit(plan.uid, plan.gid, plan.privileged, plan.user_ns, plan.container_init,
                         cgroup);
    if (!cloned.ok()) return cloned.status();
    sb = std::move(cloned).value();
  }
  Status launched = LaunchSandbox(&*sb, plan, cgroup);
  if (!launched.ok()) return launched;
  return std::move(*sb);
}

void SignalInit(const Sandbox& sb, int sig) {
  if (sb.has_pidfd) {
    sys::PidfdSendSignal(sb.pidfd.get(), sig, nullptr, 0);
  } else if (sb.pid > 0) {
    kill(sb.pid, sig);
  }
}

void ReapInit(const Sandbox& sb, siginfo_t* si) {
  int r;
  do {
    r = sb.has_pidfd ? waitid(P_PIDFD, static_cast<id_t>(sb.pidfd.get()), si, WEXITED)
                     : waitid(P_PID, static_cast<id_t>(sb.pid), si, WEXITED);
  } while (r < 0 && errno == EINTR);
}

// A send to init that failed because init had already given up: init's own report of why,
// sent just before it exited, says more than the broken pipe does.
Status InitsOwnError(const Sandbox& sb, Status failed) {
  ControlMsg m;
  UniqueFd none;
  int r;
  do {
    r = RecvControl(sb.control.get(), &m, &none, MSG_DONTWAIT);
  } while (r == -EINTR);
  if (r == 1 && m.type == MsgType::kSetupError) {
    return Error(Code::kInternal, "sandbox init: " + DescribeChildError(m.error));
  }
  return failed;
}

Status StartSandboxNet(Sandbox* sb, const LaunchPlan& plan) {
  // The namespace is owned by init's user namespace, named by its pidfd or its /proc file.
  UniqueFd userns;
  int userns_fd = -1;
  if (sb->user_ns) {
    if (!sb->has_pidfd) {
      userns.reset(
          open(("/proc/" + std::to_string(sb->pid) + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
      if (!userns) return Errno("opening sandbox init's user namespace");
    }
    userns_fd = userns ? userns.get() : sb->pidfd.get();
  }
  Result<SandboxNet> net = CreateSandboxNet(userns_fd, plan.net);
  if (!net.ok()) return InitsOwnError(*sb, net.status());
  sb->egress_sockets = std::move(net->sockets);
  sb->net_snmp = std::move(net->snmp);
  sb->net_snmp6 = std::move(net->snmp6);
  sb->capture_error = std::move(net->capture_error);
  sb->capture_v6 = net->capture_v6;
  ControlMsg m;
  m.type = MsgType::kNetns;
  if (int rc = SendControl(sb->control.get(), m, net->netns.get());
      rc != 0 || (rc = Kick(*sb)) != 0) {
    return InitsOwnError(*sb, ErrnoError("sending the network namespace to sandbox init", -rc));
  }
  sb->netns = std::move(net->netns);
  return Ok();
}

Status SendCgroupJoin(const Sandbox& sb, const std::vector<int>& tasks_fds) {
  if (tasks_fds.empty()) return InvalidArgument("no cgroup to join");
  for (size_t i = 0; i < tasks_fds.size(); ++i) {
    ControlMsg m;
    m.type = MsgType::kCgroupJoin;
    m.value = static_cast<int32_t>(tasks_fds.size() - 1 - i);
    if (int rc = SendControl(sb.control.get(), m, tasks_fds[i]); rc != 0 || (rc = Kick(sb)) != 0) {
      return InitsOwnError(sb, ErrnoError("sending the run's cgroup to sandbox init", -rc));
    }
  }
  return Ok();
}

Status SendLateSetup(const Sandbox& sb, const std::vector<std::string>& env,
                     const std::string& file_content) {
  std::string blob(sizeof(uint64_t), '\0');
  const uint64_t file_len = file_content.size();
  std::memcpy(blob.data(), &file_len, sizeof file_len);
  blob += file_content;
  for (const std::string& e : env) {
    if (e.find('\0') != std::string::npos) {
      return InvalidArgument("an environment entry contains a NUL byte");
    }
    blob += e;
    blob.push_back('\0');
  }
  if (blob.size() > static_cast<size_t>(INT32_MAX)) {
    return InvalidArgument("the environment and CA bundle are too large");
  }
  UniqueFd fd(memfd_create("ward-late-setup", MFD_CLOEXEC));
  if (!fd) return Errno("memfd_create");
  size_t off = 0;
  while (off < blob.size()) {
    ssize_t n = write(fd.get(), blob.data() + off, blob.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("writing the late setup");
    off += static_cast<size_t>(n);
  }
  ControlMsg m;
  m.type = MsgType::kLateSetup;
  m.value = static_cast<int32_t>(blob.size());
  if (int rc = SendControl(sb.control.get(), m, fd.get()); rc != 0 || (rc = Kick(sb)) != 0) {
    return ErrnoError("sending the late setup to sandbox init", -rc);
  }
  return Ok();
}

Status SendSeccompProgram(const Sandbox& sb, const SeccompProgram& program) {
  if (program.insns.empty() || program.insns.size() > kBpfMaxInsns) {
    return Error(Code::kInternal,
                 "seccomp program of " + std::to_string(program.insns.size()) + " instructions");
  }
  ControlMsg m;
  m.type = MsgType::kSeccomp;
  m.value = static_cast<int32_t>(program.insns.size());
  if (int rc = SendControl(sb.control.get(), m); rc != 0) {
    return ErrnoError("sending the seccomp filter to sandbox init", -rc);
  }
  const size_t len = program.insns.size() * sizeof(struct sock_filter);
  ssize_t n;
  do {
    n = send(sb.control.get(), program.insns.data(), len, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(len)) {
    return ErrnoError("sending the seccomp filter to sandbox init", n < 0 ? errno : EIO);
  }
  if (int rc = Kick(sb); rc != 0) return ErrnoError("waking sandbox init", -rc);
  return Ok();
}

}  // namespace ward::enforce
