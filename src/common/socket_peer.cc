#include "common/socket_peer.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <optional>
#include <utility>

#include "common/linux.h"
#include "common/unique_fd.h"
#include "common/unix_socket.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77  // Linux 6.5
#endif

namespace ward {
namespace {

constexpr const char* kNamespaces[] = {"pid", "user", "mnt"};

PeerVerdict Refused(PeerVerdict v, std::string reason) {
  v.admitted = false;
  v.reason = std::move(reason);
  return v;
}

std::string ErrnoText(int err) { return std::strerror(err); }

// A pidfd on the process SO_PEERCRED names. With kBest the kernel hands the one that connected
// (SO_PEERPIDFD) and `*must_hold_socket` stays false; otherwise the pid is opened now and the
// caller must prove that this process holds the connection's other end.
Result<UniqueFd> PinPeerProcess(int fd, pid_t pid, PeerPinning pinning, bool* must_hold_socket) {
  *must_hold_socket = false;
  if (pinning == PeerPinning::kBest) {
    int pidfd = -1;
    socklen_t len = sizeof pidfd;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0) {
      return UniqueFd(pidfd);  // close-on-exec, like every pidfd
    }
    if (errno != ENOPROTOOPT && errno != EINVAL) {
      return Errno("SO_PEERPIDFD (the peer's process is gone?)");
    }
  }
  *must_hold_socket = true;
  UniqueFd pidfd(sys::PidfdOpen(pid, 0));
  if (!pidfd) return Errno("pidfd_open(" + std::to_string(pid) + ")");
  return pidfd;
}

// How long a client waits for its server to accept before it can check the server's socket.
constexpr int kAcceptWaitSteps = 200;
constexpr int kAcceptWaitStepUs = 10000;

// Whether the process behind `pidfd` has exited (a pidfd polls readable once it has).
bool Exited(int pidfd) {
  struct pollfd p = {pidfd, POLLIN, 0};
  return ::poll(&p, 1, 0) != 0;
}

// The inode of the socket at the other end of the connected unix socket `fd` (sock_diag).
std::optional<uint32_t> PeerSocketInode(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return std::nullopt;
  UniqueFd nl(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!nl) return std::nullopt;
  struct {
    struct nlmsghdr h;
    struct unix_diag_req r;
  } req = {};
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  req.h.nlmsg_flags = NLM_F_REQUEST;
  req.r.sdiag_family = AF_UNIX;
  req.r.udiag_states = ~0u;
  req.r.udiag_ino = static_cast<uint32_t>(st.st_ino);
  req.r.udiag_show = UDIAG_SHOW_PEER;
  req.r.udiag_cookie[0] = req.r.udiag_cookie[1] = ~0u;  // no cookie: look up by inode
  struct sockaddr_nl kernel = {};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(nl.get(), &req, sizeof req, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) != static_cast<ssize_t>(sizeof req)) {
    return std::nullopt;
  }
  alignas(struct nlmsghdr) char buf[8192];
  ssize_t n = ::recv(nl.get(), buf, sizeof buf, 0);
  if (n <= 0) return std::nullopt;
  int left = static_cast<int>(n);
  for (auto* h = reinterpret_cast<struct nlmsghdr*>(buf); NLMSG_OK(h, left);
       h = NLMSG_NEXT(h, left)) {
    if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY) return std::nullopt;  // NLMSG_ERROR, DONE
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg))) return std::nullopt;
    auto* m = static_cast<struct unix_diag_msg*>(NLMSG_DATA(h));
    if (m->udiag_ino != req.r.udiag_ino) continue;
    int alen = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
    for (auto* a = reinterpret_cast<struct rtattr*>(m + 1); RTA_OK(a, alen);
         a = RTA_NEXT(a, alen)) {
      if (a->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(a) >= sizeof(uint32_t)) {
        uint32_t peer;
        std::memcpy(&peer, RTA_DATA(a), sizeof peer);
        return peer;
      }
    }
  }
  return std::nullopt;
}

// Whether the process whose /proc directory is `proc` has socket inode `ino` open.
bool HoldsSocket(int proc, uint32_t ino) {
  int dfd = ::openat(proc, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return false;
  DIR* d = ::fdopendir(dfd);
  if (d == nullptr) {
    ::close(dfd);
    return false;
  }
  const std::string want = "socket:[" + std::to_string(ino) + "]";
  bool found = false;
  while (struct dirent* e = ::readdir(d)) {
    char target[64];
    ssize_t n = ::readlinkat(::dirfd(d), e->d_name, target, sizeof target);
    if (n > 0 && std::string_view(target, static_cast<size_t>(n)) == want) {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

// The namespace `name` of the process whose /proc directory is `dirfd` (AT_FDCWD with
// "/proc/self/ns/..." for our own).
Result<std::pair<dev_t, ino_t>> NamespaceOf(int dirfd, const std::string& path) {
  struct stat st;
  if (::fstatat(dirfd, path.c_str(), &st, 0) != 0) return Errno(path);
  return std::make_pair(st.st_dev, st.st_ino);
}

// The namespaces kept by KeepHomeNamespaces(), in kNamespaces' order; empty: none kept.
std::vector<std::pair<dev_t, ino_t>>& KeptHome() {
  static std::vector<std::pair<dev_t, ino_t>> kept;
  return kept;
}

// Compares the peer's pid, user and mount namespaces (through its /proc directory `proc`) with
// ours; fills `differs`. A reason to refuse, or nothing when they are all ours.
std::optional<std::string> CompareNamespaces(int proc, std::vector<std::string>* differs) {
  for (size_t i = 0; i < std::size(kNamespaces); ++i) {
    const char* ns = kNamespaces[i];
    const std::string rel = std::string("ns/") + ns;
    Result<std::pair<dev_t, ino_t>> ours = KeptHome().empty()
                                               ? NamespaceOf(AT_FDCWD, "/proc/self/" + rel)
                                               : Result<std::pair<dev_t, ino_t>>(KeptHome()[i]);
    if (!ours.ok()) return "cannot read our own namespaces: " + ours.status().ToString();
    Result<std::pair<dev_t, ino_t>> theirs = NamespaceOf(proc, rel);
    if (!theirs.ok()) {
      return "cannot read the peer's " + std::string(ns) + " namespace (" +
             ErrnoText(theirs.status().err()) + ")";
    }
    if (*ours != *theirs) differs->emplace_back(ns);
  }
  if (differs->empty()) return std::nullopt;
  std::string list;
  for (const std::string& d : *differs) list += (list.empty() ? "" : ", ") + d;
  return "the peer is in namespaces other than ours (" + list +
         "): a sandboxed process is never answered";
}

// Whether our end of `fd` has seen the other end close.
bool HungUp(int fd) {
  struct pollfd p = {fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP)) != 0;
}

// Where SO_PEERPIDFD is missing: proves that the pinned process (`pidfd`, /proc directory
// `proc`) holds the connection's other end. The other end has no file yet while it waits in the
// listener's queue (a client checks its server as soon as connect() returns) and none any more
// once its holder closed it: the first is waited for, briefly and while the server lives; the
// second sets `hung_up`. A reason to refuse, or nothing when proven.
std::optional<std::string> ProveHolder(int fd, int pidfd, int proc, bool* hung_up) {
  std::optional<uint32_t> peer_ino = PeerSocketInode(fd);
  for (int i = 0; peer_ino == 0u && i < kAcceptWaitSteps; ++i) {
    if (HungUp(fd)) {
      *hung_up = true;
      return "the peer closed the connection before it was checked";
    }
    if (Exited(pidfd)) return "the peer's process exited before it was checked";
    ::usleep(kAcceptWaitStepUs);
    peer_ino = PeerSocketInode(fd);
  }
  if (!peer_ino) {
    return "cannot tell which socket is the connection's other end (sock_diag) on a kernel "
           "without SO_PEERPIDFD";
  }
  if (*peer_ino == 0) return "the other end of the connection was never accepted";
  if (!HoldsSocket(proc, *peer_ino)) {
    return "its process does not hold the connection's other end (its pid was reused?)";
  }
  return std::nullopt;
}

}  // namespace

Status KeepHomeNamespaces() {
  std::vector<std::pair<dev_t, ino_t>> kept;
  for (const char* ns : kNamespaces) {
    WARD_ASSIGN_OR_RETURN(auto id, NamespaceOf(AT_FDCWD, std::string("/proc/self/ns/") + ns));
    kept.push_back(id);
  }
  KeptHome() = std::move(kept);
  return Ok();
}

PeerVerdict CheckSocketPeer(int fd, PeerPinning pinning) {
  // A peer's /proc/<pid>/ns and fd entries are checked against the reader's effective
  // capabilities (a root peer's permitted set must be within them); a supervisor that serves a
  // sandbox runs without them and makes them effective for this reading only.
  const sys::ScopedEffectiveCapabilities caps;
  PeerVerdict v;
  const std::optional<struct ucred> cred = PeerCredentials(fd);
  if (!cred) {
    return Refused(v, "cannot tell who the peer is (SO_PEERCRED: " + ErrnoText(errno) + ")");
  }
  v.pid = cred->pid;
  v.uid = cred->uid;
  if (cred->uid != ::geteuid()) {
    return Refused(v, "this socket serves uid " + std::to_string(::geteuid()) +
                          " only; the peer is uid " + std::to_string(cred->uid));
  }
  if (cred->pid <= 0) {
    return Refused(v,
                   "the peer's process is not visible from here (it is in a pid namespace "
                   "that is not ours or below it)");
  }
  bool must_hold_socket = false;
  Result<UniqueFd> pidfd = PinPeerProcess(fd, cred->pid, pinning, &must_hold_socket);
  if (!pidfd.ok()) return Refused(v, "cannot pin the peer's process: " + pidfd.status().ToString());
  const std::string proc_path = "/proc/" + std::to_string(cred->pid);
  UniqueFd proc(::open(proc_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!proc) return Refused(v, "the peer's process is gone (" + ErrnoText(errno) + ")");
  // The pinned process is still alive after `proc` was opened: the pid was its own all along,
  // so `proc` is that process (and reads through it fail once it is gone, whatever takes the
  // pid next).
  if (Exited(pidfd->get())) return Refused(v, "the peer's process exited before it was checked");
  // Namespaces first: a process in other namespaces is refused for that, whether or not the pid
  // is still the peer's; only an admission needs the proof that it is.
  if (std::optional<std::string> why = CompareNamespaces(proc.get(), &v.differs)) {
    return Refused(v, *why);
  }
  if (must_hold_socket) {
    if (std::optional<std::string> why = ProveHolder(fd, pidfd->get(), proc.get(), &v.hung_up)) {
      return Refused(v, *why);
    }
  }
  v.admitted = true;
  return v;
}

nlohmann::json PeerRefusedData(const std::string& socket, const PeerVerdict& v) {
  return {{"socket", socket},
          {"pid", v.pid},
          {"uid", v.uid},
          {"differs", v.differs},
          {"reason", v.reason}};
}

PeerVerdict PeerGate::Admit(int fd) {
  PeerVerdict v = CheckSocketPeer(fd);
  if (v.admitted || v.hung_up) return v;
  EventSink* events = nullptr;
  uint64_t n = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    n = ++refused_;
    events = events_;
  }
  if (events == nullptr) return v;
  if (n <= kMaxAudited) {
    events->Emit(kPeerRefusedEvent, PeerRefusedData(socket_, v));
  } else if (n == kMaxAudited + 1) {
    events->Emit(kPeerRefusedEvent,
                 {{"socket", socket_},
                  {"suppressed", true},
                  {"reason", "more than " + std::to_string(kMaxAudited) +
                                 " refused peers: the rest are counted, not recorded"}});
  }
  return v;
}

uint64_t PeerGate::refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

void PeerGate::set_events(EventSink* events) {
  std::lock_guard<std::mutex> lock(mu_);
  events_ = events;
}

}  // namespace ward
