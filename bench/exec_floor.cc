// Stands in for `ward run --exec-channel=4` with nothing of a sandbox: each exec on the channel
// is a posix_spawn of its argv with the stdio it came with, and its start and end are reported
// as the exec server reports them. `ward serve --ward-binary` pointed at it gives the floor of
// a live sandbox's exec.run: the same client, daemon and protocol, a bare fork and exec.
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "enforce/exec_wire.h"

extern char** environ;

int main() {
  using namespace ward::enforce;
  const int sock = 4;
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  const int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  std::map<pid_t, uint64_t> running;
  struct pollfd pfds[2] = {{sock, POLLIN, 0}, {sfd, POLLIN, 0}};
  while (poll(pfds, 2, -1) >= 0) {
    if (pfds[1].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == sizeof si) {
      }
      int st = 0;
      struct rusage ru = {};
      pid_t w;
      while ((w = wait4(-1, &st, WNOHANG, &ru)) > 0) {
        ExecMsg out;
        out.type = ExecMsgType::kExited;
        out.id = running[w];
        out.value = st;
        out.usage = ru;
        running.erase(w);
        SendExecMsg(sock, out);
      }
    }
    if (!(pfds[0].revents & (POLLIN | POLLHUP))) continue;
    ExecMsg m;
    ward::UniqueFd fds[4];
    if (RecvExecMsg(sock, &m, fds, MSG_DONTWAIT) != 1) {
      if (pfds[0].revents & POLLHUP) return 0;
      continue;
    }
    if (m.type != ExecMsgType::kStart) continue;
    ExecRequest req;
    if (!ReadExecRequest(fds[0].get(), m.length, &req).ok()) continue;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    for (int i = 0; i < 3; ++i) posix_spawn_file_actions_adddup2(&fa, fds[i + 1].get(), i);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSID);
    std::vector<char*> argv;
    for (auto& a : req.argv) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    ExecMsg out;
    out.id = m.id;
    if (posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), environ) == 0) {
      running[pid] = m.id;
      out.type = ExecMsgType::kStarted;
      out.value = pid;
    } else {
      out.type = ExecMsgType::kFailed;
      out.value = 127;
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    SendExecMsg(sock, out);
  }
  return 0;
}
