#include "api/spawn_ward.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <vector>

#include "common/linux.h"

namespace ward::api {
namespace {

// Runs in the child of clone(CLONE_VM | CLONE_VFORK): syscalls only, nothing that allocates.
// Not instrumented: ASan's stack bookkeeping would write to memory the parent shares.
__attribute__((no_sanitize_address)) int SpawnChild(void* p) {
  static const char kSpawnFailed[] = "{\"status\":\"spawn_failed\"}\n";
  auto* a = static_cast<SpawnArgs*>(p);
  // The sandbox must not outlive the daemon: `ward run` dies with it, and the sandbox with
  // `ward run`.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != a->parent) _exit(125);
  setpgid(0, 0);
  // The signals `ward run` forwards to the command stay blocked across execve until its
  // supervisor handles them (supervisor::Run unblocks them then): an exec.signal sent while
  // `ward run` starts (slow under ASan and load) reaches the command instead of
  // killing `ward run` and leaving the exec "interrupted".
  sigset_t forwarded;
  sigemptyset(&forwarded);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaddset(&forwarded, s);
  sigprocmask(SIG_SETMASK, &forwarded, nullptr);
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &dfl, nullptr);
  for (int i = 0; i < 5; ++i) {
    if (a->fds[i] < 0 && i == 4) break;
    if (a->fds[i] < 0 || dup2(a->fds[i], i) < 0) _exit(125);
  }
  sys::CloseRange(a->fds[4] < 0 ? 4 : 5, ~0U, 0);
  execve(a->path, a->argv, a->envp);
  ssize_t ignored = write(3, kSpawnFailed, sizeof kSpawnFailed - 1);
  (void)ignored;
  _exit(125);
}

}  // namespace

int Raise(int fd) {
  if (fd >= 10) return fd;
  int r = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return r;
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Starts SpawnChild with vfork semantics (shared memory, parent paused until execve): no page
// tables to copy and no copy-on-write faults, whatever the daemon's size; CLONE_PIDFD hands back
// the pidfd at once. Under ThreadSanitizer, whose interceptors (sigaction, dup2) would change the
// tables of the daemon the child shares them with, a fork (which TSan intercepts) and pidfd_open.
pid_t StartSpawnChild(SpawnArgs* sa, int* pidfd) {
#if defined(__SANITIZE_THREAD__)
  const pid_t pid = fork();
  if (pid == 0) SpawnChild(sa);  // execs or exits
  if (pid > 0) *pidfd = sys::PidfdOpen(pid, 0);
  return pid;
#else
  std::vector<char> stack(64 * 1024);
  return clone(SpawnChild, stack.data() + stack.size(),
               CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, sa, pidfd);
#endif
}

}  // namespace ward::api
