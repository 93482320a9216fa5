#include "supervisor/container_gate.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "common/descriptors.h"
#include "common/unix_socket.h"
#include "common/write_all.h"
#include "enforce/control.h"
#include "enforce/probe.h"

namespace ward::supervisor {
namespace {

// One connection: from this uid, saying "start". Answered "ok" when it does.
bool IsStart(int conn) {
  std::optional<struct ucred> peer = PeerCredentials(conn);
  if (!peer || peer->uid != geteuid()) return false;
  struct pollfd p = {conn, POLLIN, 0};
  if (poll(&p, 1, 5000) != 1) return false;
  char buf[16] = {};
  ssize_t n = recv(conn, buf, sizeof buf - 1, 0);
  if (n != 6 || std::string(buf, 6) != "start\n") return false;
  (void)send(conn, "ok\n", 3, MSG_NOSIGNAL);
  return true;
}

// Init ended before start: the reason it sent last, if any, among what it sent.
Status InitEnded(const enforce::Sandbox& sb, const std::vector<EarlyControl>& early = {}) {
  for (const EarlyControl& c : early) {
    if (c.msg.type == enforce::MsgType::kSetupError) {
      return Error(Code::kInternal, "sandbox init: " + enforce::DescribeChildError(c.msg.error));
    }
  }
  enforce::ControlMsg m;
  UniqueFd fd;
  while (enforce::RecvControl(sb.control.get(), &m, &fd, MSG_DONTWAIT) == 1) {
    if (m.type == enforce::MsgType::kSetupError) {
      return Error(Code::kInternal, "sandbox init: " + enforce::DescribeChildError(m.error));
    }
  }
  return Error(Code::kFailedPrecondition, "the container's init ended before it was started");
}

// The pty init opened for the container's process, sent to the engine's console socket. What
// init sent before it is kept for the run, in order.
Status HandOverConsole(const ContainerLaunch& launch, const enforce::Sandbox& sb,
                       std::vector<EarlyControl>* early) {
  while (true) {
    EarlyControl c;
    const int r = enforce::RecvControl(sb.control.get(), &c.msg, &c.fd);
    if (r != 1) return InitEnded(sb, *early);
    if (c.msg.type == enforce::MsgType::kFd && c.msg.fd_kind == enforce::FdKind::kPtyMaster && c.fd) {
      // Only a pty's master goes to the engine.
      if (!IsPtyMaster(c.fd.get())) {
        return Error(Code::kInternal, "sandbox init sent a terminal that is not a pty's master");
      }
      WARD_ASSIGN_OR_RETURN(UniqueFd conn, ConnectUnix(launch.console_socket));
      const char name[] = "ward-container-pty";
      const int fd = c.fd.get();
      if (SendWithFds(conn.get(), name, sizeof name - 1, &fd, 1) < 0) {
        return Errno("handing the container's terminal to --console-socket " + launch.console_socket);
      }
      return Ok();
    }
    const bool failed = c.msg.type == enforce::MsgType::kSetupError;
    early->push_back(std::move(c));
    if (failed) return InitEnded(sb, *early);
  }
}

}  // namespace

Status AwaitContainerStart(const ContainerLaunch& launch, const enforce::Sandbox& sb,
                           std::vector<EarlyControl>* early) {
  if (!launch.console_socket.empty()) WARD_TRY(HandOverConsole(launch, sb, early));
  WARD_TRY(WriteAll(launch.created_fd, "created " + std::to_string(sb.pid) + "\n",
                    "telling ward oci create that the container exists"));
  // The engine reads the container's output until its last writer closes: that is init and the
  // command, never the supervisor, which may outlive them by its teardown.
  StdioToDevNull();
  while (true) {
    struct pollfd p[2] = {{launch.start_listener, POLLIN, 0}, {sb.pidfd.get(), POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return Errno("waiting for ward oci start");
    }
    if (p[1].revents != 0) return InitEnded(sb, *early);
    if (p[0].revents & POLLIN) {
      UniqueFd conn(accept4(launch.start_listener, nullptr, nullptr, SOCK_CLOEXEC));
      if (conn && IsStart(conn.get())) return Ok();
    }
  }
}

Status AwaitInitInCgroup(const enforce::Sandbox& sb, const enforce::Cgroup& cgroup) {
  const std::vector<std::string> want = cgroup.paths();
  for (int waited_ms = 0; waited_ms < 30000; ++waited_ms) {
    const enforce::CgroupDirs in = enforce::CgroupDirsOf(sb.pid);
    const bool all = std::all_of(want.begin(), want.end(), [&](const std::string& p) {
      return p == in.v2 || p == in.v1_memory || p == in.v1_pids || p == in.v1_cpu ||
             std::find(in.v1_accounting.begin(), in.v1_accounting.end(), p) !=
                 in.v1_accounting.end();
    });
    if (all) return Ok();
    struct pollfd p = {sb.pidfd.get(), POLLIN, 0};
    if (poll(&p, 1, 1) > 0) return InitEnded(sb);
  }
  return Error(Code::kInternal, "the container's init did not join its cgroup");
}

}  // namespace ward::supervisor
