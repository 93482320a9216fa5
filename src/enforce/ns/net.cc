#include "enforce/ns/net.h"

#include <fcntl.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <string_view>
#include <vector>

#include "common/cpu.h"
#include "enforce/ns/capture.h"

namespace ward::enforce {

int BringUpLoopback(int* netns) {
  if (netns != nullptr) *netns = -1;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  struct ifreq ifr = {};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  int rc = 0;
  if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) {
    rc = -errno;
  } else if ((ifr.ifr_flags & IFF_UP) == 0) {  // gVisor's is up already, and cannot be set
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) rc = -errno;
  }
  // The socket's namespace as an fd (close-on-exec; Linux 4.9), cheaper than a path in /proc.
  if (rc == 0 && netns != nullptr) *netns = ioctl(fd, SIOCGSKNS);
  close(fd);
  return rc;
}

namespace {

constexpr int kMaxSockets = 5;

// Shared between the supervisor and the helper (the helper's results are written here).
struct NetHelper {
  int userns;  // init's user namespace (a pidfd or an ns file), -1: the caller's own
  NetSpec net;
  int netns = -1;
  int socks[kMaxSockets] = {-1, -1, -1, -1, -1};
  static_assert(kMaxSockets == 5, "every slot starts at -1");
  int snmp = -1, snmp6 = -1;
  FdKind kinds[kMaxSockets] = {};
  int err = 0;
  const char* what = nullptr;
  int capture_err = 0;  // capture could not be set up (the run goes on without it)
  const char* capture_what = nullptr;
  bool capture_v6 = false;
};

// A socket of the helper's, bound to the loopback address of `family` at `port` (listening
// for SOCK_STREAM). 0 or errno.
int LoopbackSocket(int family, int type, uint16_t port, int* out) {
  int fd = socket(family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  *out = fd;
  int one = 1;
  struct sockaddr_in sa = {};
  struct sockaddr_in6 sa6 = {};
  struct sockaddr* addr = reinterpret_cast<struct sockaddr*>(&sa);
  socklen_t len = sizeof sa;
  if (family == AF_INET) {
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  } else {
    sa6.sin6_family = AF_INET6;
    sa6.sin6_port = htons(port);
    sa6.sin6_addr = in6addr_loopback;
    addr = reinterpret_cast<struct sockaddr*>(&sa6);
    len = sizeof sa6;
    if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0) return errno;
  }
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(fd, addr, len) != 0 || (type == SOCK_STREAM && listen(fd, 1024) != 0)) {
    return errno;
  }
  return 0;
}

// Transparent capture: the ranges routed and redirected, and the listener they reach (on ::1 as
// well when IPv6 is captured). A failure leaves the run without it, said by the supervisor.
void SetUpCaptureListeners(NetHelper* h, int* next) {
  int rc = SetUpCapture(h->net, &h->capture_v6, &h->capture_what);
  if (rc != 0) {
    h->capture_err = -rc;
    return;
  }
  for (int family : {AF_INET, AF_INET6}) {
    if (family == AF_INET6 && !h->capture_v6) break;
    h->kinds[*next] = FdKind::kNetCapture;
    if (int err = LoopbackSocket(family, SOCK_STREAM, h->net.capture_port, &h->socks[(*next)++]);
        err != 0) {
      h->capture_err = err;
      h->capture_what = "creating the capture listener";
      return;
    }
  }
}

// The helper: shares the supervisor's fd table (what it opens is the supervisor's), and its
// memory too except under AddressSanitizer. It allocates nothing.
int NetHelperMain(void* arg) {
  NetHelper* h = static_cast<NetHelper*>(arg);
  auto fail = [h](int err, const char* what) {
    h->err = err;
    h->what = what;
    _exit(1);
  };
  if (h->userns >= 0 && setns(h->userns, CLONE_NEWUSER) != 0) {
    fail(errno, "joining the sandbox's user namespace");
  }
  if (unshare(CLONE_NEWNET) != 0) fail(errno, "creating the network namespace");
  if (int rc = BringUpLoopback(&h->netns); rc != 0) fail(-rc, "bringing up lo");
  if (h->net.enabled) {
    const struct {
      int type;
      uint16_t port;
      FdKind kind;
      bool wanted;
    } socks[] = {{SOCK_STREAM, h->net.proxy_port, FdKind::kNetProxy, true},
                 {SOCK_DGRAM, 53, FdKind::kNetDnsUdp, h->net.dns},
                 {SOCK_STREAM, 53, FdKind::kNetDnsTcp, h->net.dns}};
    int next = 0;
    for (const auto& s : socks) {
      if (!s.wanted) continue;
      h->kinds[next] = s.kind;
      if (int err = LoopbackSocket(AF_INET, s.type, s.port, &h->socks[next++]); err != 0) {
        fail(err, "creating the proxy and DNS sockets");
      }
    }
    if (h->net.capture_port != 0) SetUpCaptureListeners(h, &next);
  }
  // This thread's view of /proc/net is the new namespace's, and an open file keeps it.
  h->snmp = open("/proc/thread-self/net/snmp", O_RDONLY | O_CLOEXEC);
  h->snmp6 = open("/proc/thread-self/net/snmp6", O_RDONLY | O_CLOEXEC);
  if (h->netns < 0) h->netns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (h->netns < 0) fail(errno, "opening the network namespace");
  _exit(0);
}

}  // namespace

Result<SandboxNet> CreateSandboxNet(int userns, const NetSpec& net) {
  // One mapping for the helper's stack and the shared results (MAP_SHARED, so that they are
  // shared as well when the helper does not share the memory).
  constexpr size_t kSize = 256 << 10;
  void* mem = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return Errno("net: mapping the helper's stack");
  NetHelper* h = new (mem) NetHelper{userns, net};
  // The supervisor sleeps meanwhile: the helper starts on its CPU (see StayOnThisCpu).
  StayOnThisCpu pin;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // AddressSanitizer and ThreadSanitizer keep per-thread state the helper would share and do not
  // know a stack of our own: under them the helper is a copy of this process, fork-like (the clone syscall without
  // a new stack), still sharing the fd table.
  pid_t pid = static_cast<pid_t>(
      syscall(SYS_clone, CLONE_FILES | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
  if (pid == 0) NetHelperMain(h);
#else
  // Like posix_spawn: CLONE_VM | CLONE_VFORK costs no page-table copy, and the supervisor sleeps
  // until the helper is done.
  pid_t pid = clone(&NetHelperMain, static_cast<char*>(mem) + kSize,
                    CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD, h);
#endif
  int clone_err = errno;
  pin.Release();
  int status = 0;
  if (pid > 0) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  SandboxNet out;
  for (int i = 0; i < kMaxSockets; ++i) {
    if (h->socks[i] >= 0) out.sockets.emplace_back(h->kinds[i], UniqueFd(h->socks[i]));
  }
  out.netns.reset(h->netns);
  out.snmp.reset(h->snmp);
  out.snmp6.reset(h->snmp6);
  const int err = h->err;
  const std::string what = h->what ? h->what : "";
  if (h->capture_err != 0) {
    out.capture_error = std::string(h->capture_what ? h->capture_what : "transparent capture") +
                        ": " + std::strerror(h->capture_err);
    // Half made: none of it is served (the stub then hands out real addresses, as without).
    std::erase_if(out.sockets, [](const auto& s) { return s.first == FdKind::kNetCapture; });
  }
  out.capture_v6 = h->capture_v6 && h->capture_err == 0;
  h->~NetHelper();
  munmap(mem, kSize);
  if (pid < 0) return ErrnoError("net: starting the helper that creates the namespace", clone_err);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !out.netns) {
    return ErrnoError("net: " + (what.empty() ? std::string("the namespace helper failed") : what),
                      err ? err : EPROTO);
  }
  return out;
}

namespace {

// The value of `field` in a /proc/net/snmp-style pair of lines ("Ip: A B ...\nIp: 1 2 ...") or
// an snmp6-style "Name value" line; 0 when absent.
uint64_t CounterIn(std::string_view text, std::string_view prefix, std::string_view field) {
  auto next_line = [&](size_t* pos) {
    size_t end = text.find('\n', *pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(*pos, end - *pos);
    *pos = end + 1;
    return line;
  };
  auto words = [](std::string_view line) {
    std::vector<std::string_view> w;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      size_t start = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
      if (i > start) w.push_back(line.substr(start, i - start));
    }
    return w;
  };
  auto number = [](std::string_view v) {
    uint64_t n = 0;
    for (char c : v) {
      if (c < '0' || c > '9') return uint64_t{0};
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    return n;
  };
  size_t pos = 0;
  while (pos < text.size()) {
    std::vector<std::string_view> head = words(next_line(&pos));
    if (head.empty()) continue;
    if (head.size() == 2 && head[0] == field) return number(head[1]);  // snmp6
    if (head[0] != prefix || pos >= text.size()) continue;
    std::vector<std::string_view> values = words(next_line(&pos));
    for (size_t i = 1; i < head.size() && i < values.size(); ++i) {
      if (head[i] == field) return number(values[i]);
    }
  }
  return 0;
}

uint64_t ReadCounter(int fd, std::string_view prefix, std::string_view field) {
  if (fd < 0) return 0;
  char buf[16384];
  size_t n = 0;
  while (n < sizeof buf) {
    ssize_t r = read(fd, buf + n, sizeof buf - n);  // read once, from the start
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += static_cast<size_t>(r);
  }
  return CounterIn(std::string_view(buf, n), prefix, field);
}

}  // namespace

uint64_t CountUnroutedSends(int snmp, int snmp6) {
  return ReadCounter(snmp, "Ip:", "OutNoRoutes") + ReadCounter(snmp6, "", "Ip6OutNoRoutes");
}

}  // namespace ward::enforce
