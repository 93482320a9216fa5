#include "oci/pod_network.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "common/socket_peer.h"
#include "common/untrusted_file.h"
#include "common/write_all.h"
#include "policy/paths.h"

namespace ward::oci {
namespace {

// The content of the engine's bind at `destination`, when config.json has one.
Result<std::optional<std::string>> EngineFile(const Config& config,
                                              const std::string& destination) {
  for (size_t i = 0; i < config.mounts.size(); ++i) {
    const Mount& m = config.mounts[i];
    if (!m.bind() || policy::NormalizePath(m.destination) != destination) continue;
    const std::string where =
        "config.json: mounts[" + std::to_string(i) + "] (" + destination + ")";
    char real[PATH_MAX];
    if (realpath(m.source.c_str(), real) == nullptr)
      return ErrnoError(where + ": " + m.source, errno);
    UntrustedFileRules rules;
    rules.max_bytes = size_t{64} * 1024;
    rules.owners = {0, geteuid()};
    Result<std::string> text = ReadUntrustedFile(real, rules);
    if (!text.ok())
      return Error(text.status().code(), where + ": " + real + ": " + text.status().message());
    return std::optional<std::string>(std::move(text).value());
  }
  return std::optional<std::string>();
}

// The node's nsswitch.conf with host names looked up in files and DNS only; nothing when the
// node has none (glibc then does the same).
std::optional<std::string> FilesAndDnsNsswitch() {
  std::ifstream in("/etc/nsswitch.conf");
  if (!in) return std::nullopt;
  std::ostringstream out;
  std::string line;
  while (std::getline(in, line)) {
    const size_t start = line.find_first_not_of(" \t");
    const bool hosts = start != std::string::npos && line.compare(start, 6, "hosts:") == 0;
    out << (hosts ? "hosts: files dns" : line) << '\n';
  }
  return out.str();
}

// Binds a file holding `content` over `target` (in the caller's own mount namespace). The file
// is made in `dir`, bound by its descriptor (nothing is looked up by name again), then unlinked
// (neither a memfd nor an unlinked file can be bound).
Status BindContent(const std::string& content, const std::string& dir, const char* target) {
  const std::string file = dir + "/pod" + std::string(std::strrchr(target, '/')).replace(0, 1, "-");
  unlink(file.c_str());  // one a killed supervisor left
  UniqueFd fd(open(file.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return ErrnoError(file + " for the pod's " + target, errno);
  Status made = WriteAll(fd.get(), content, file);
  const std::string self = "/proc/self/fd/" + std::to_string(fd.get());
  if (made.ok() && mount(self.c_str(), target, nullptr, MS_BIND, nullptr) != 0) {
    made = ErrnoError(std::string("binding the pod's file over ") + target, errno);
  }
  unlink(file.c_str());
  return made;
}

}  // namespace

Result<PodNetwork> OpenPodNetwork(const Config& config) {
  PodNetwork pod;
  pod.path = PodNetworkPath(config);
  if (pod.path.empty()) return pod;
  const std::string field = "config.json: linux.namespaces[network].path " + pod.path;
  // Whatever is at the path is looked at before it is opened for reading (a FIFO would hang a
  // read-only open, a device could act on it).
  UniqueFd at(open(pod.path.c_str(), O_PATH | O_CLOEXEC));
  if (!at) return ErrnoError(field, errno);
  struct statfs fs;
  if (fstatfs(at.get(), &fs) == 0 && fs.f_type == NSFS_MAGIC) {
    pod.netns.reset(
        open(("/proc/self/fd/" + std::to_string(at.get())).c_str(), O_RDONLY | O_CLOEXEC));
  }
  if (!pod.netns || ioctl(pod.netns.get(), NS_GET_NSTYPE) != CLONE_NEWNET) {
    return InvalidArgument(field +
                           ": not a network namespace (a pod's is named by a file such "
                           "as /proc/PID/ns/net or one under /run/netns)");
  }
  WARD_ASSIGN_OR_RETURN(pod.resolv_conf, EngineFile(config, "/etc/resolv.conf"));
  WARD_ASSIGN_OR_RETURN(pod.hosts, EngineFile(config, "/etc/hosts"));
  return pod;
}

Status EnterPodNetwork(const PodNetwork& pod, const std::string& dir) {
  if (!pod.netns) return Ok();
  WARD_TRY(KeepHomeNamespaces());  // the engine's, where `ward oci exec` comes from
  if (setns(pod.netns.get(), CLONE_NEWNET) != 0) {
    return ErrnoError("joining the pod's network namespace at " + pod.path +
                          " (ward oci needs CAP_SYS_ADMIN over it, as the engine that made it has)",
                      errno);
  }
  if (unshare(CLONE_NEWNS) != 0) return Errno("a mount namespace for the pod's resolver files");
  if (mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
    return Errno("keeping the pod's resolver files from the node");
  }
  if (pod.resolv_conf) WARD_TRY(BindContent(*pod.resolv_conf, dir, "/etc/resolv.conf"));
  if (pod.hosts) WARD_TRY(BindContent(*pod.hosts, dir, "/etc/hosts"));
  if (std::optional<std::string> ns = FilesAndDnsNsswitch()) {
    WARD_TRY(BindContent(*ns, dir, "/etc/nsswitch.conf"));
  }
  return Ok();
}

namespace {

// A listener on every address of `family` at `port`; nullopt where the pod has no such family.
Result<std::optional<UniqueFd>> ListenOn(int family, uint16_t port) {
  UniqueFd fd(socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) {
    if (family == AF_INET6 && errno == EAFNOSUPPORT) return std::optional<UniqueFd>();
    return ErrnoError("run.ward/expose: a socket for port " + std::to_string(port), errno);
  }
  const int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage sa = {};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&sa);
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof *v4;
  } else {
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&sa);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof *v6;
  }
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), len) != 0) {
    if (family == AF_INET6 && errno == EADDRNOTAVAIL) return std::optional<UniqueFd>();
    return ErrnoError("run.ward/expose: port " + std::to_string(port) + " in the pod's network" +
                          (errno == EADDRINUSE ? " (another of the pod's containers has it)" : ""),
                      errno);
  }
  if (listen(fd.get(), 128) != 0) {
    return ErrnoError("run.ward/expose: listening on port " + std::to_string(port), errno);
  }
  return std::optional<UniqueFd>(std::move(fd));
}

}  // namespace

Result<std::vector<std::pair<uint16_t, UniqueFd>>> ListenForExposedPorts(
    const std::vector<uint16_t>& ports) {
  std::vector<std::pair<uint16_t, UniqueFd>> out;
  for (uint16_t port : ports) {
    for (int family : {AF_INET, AF_INET6}) {
      WARD_ASSIGN_OR_RETURN(std::optional<UniqueFd> fd, ListenOn(family, port));
      if (fd) out.emplace_back(port, std::move(*fd));
    }
  }
  return out;
}

}  // namespace ward::oci
