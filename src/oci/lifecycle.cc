#include "oci/lifecycle.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <cstring>
#include <ctime>

#include "audit/record.h"
#include "audit/session_log.h"
#include "common/descriptors.h"
#include "common/unique_fd.h"
#include "common/unix_socket.h"
#include "common/write_all.h"
#include "oci/bundle.h"
#include "oci/container_cgroup.h"
#include "oci/container_view.h"
#include "oci/pod_network.h"
#include "oci/rlimits.h"
#include "oci/run_flags.h"
#include "oci/seccomp_filter.h"
#include "oci/state.h"
#include "supervisor/egress_capture.h"
#include "supervisor/run.h"

namespace ward::oci {
namespace {

// Everything `create` makes of the bundle before anything starts.
struct Prepared {
  Bundle bundle;
  ContainerChoices choices;
  policy::Policy policy;
  enforce::ImageRoot image;
  PodNetwork pod;
  std::vector<std::string> warnings;
};

// ward's own listeners inside the container (the proxy, the DNS stub, transparent capture's) are
// not the container's to expose: a peer in the pod would be joined to the proxy, with the
// container's rules and its credentials' routes.
Status CheckExposedPorts(const std::vector<uint16_t>& ports) {
  enforce::NetSpec net;
  net.capture_port = supervisor::kCapturePort;  // whether or not this container's is planned
  const std::vector<uint16_t> ward_own = net.tcp_ports();
  for (uint16_t port : ports) {
    if (std::find(ward_own.begin(), ward_own.end(), port) != ward_own.end()) {
      return InvalidArgument("annotation run.ward/expose: port " + std::to_string(port) +
                             " is ward's own inside the container (its " +
                             (port == 53                           ? "DNS stub"
                              : port == supervisor::kCapturePort ? "transparent capture"
                                                                 : "egress proxy") +
                             "), not one to expose");
    }
  }
  return Ok();
}

Result<Prepared> Prepare(const CreateOptions& o) {
  Prepared p;
  WARD_TRY(CheckContainerId(o.id));
  WARD_ASSIGN_OR_RETURN(p.bundle, LoadBundle(o.bundle));
  const Process& proc = p.bundle.config.process;
  // As runc: a terminal's master goes to the engine's console socket, which it needs then only.
  if (proc.terminal && o.console_socket.empty()) {
    return InvalidArgument("config.json: process.terminal: a terminal needs --console-socket, "
                           "where its master goes");
  }
  if (!proc.terminal && !o.console_socket.empty()) {
    return InvalidArgument("--console-socket " + o.console_socket +
                           ": config.json's process.terminal is false: there is no terminal");
  }
  WARD_TRY(CheckProcessUser(proc, "config.json: process.user"));
  WARD_ASSIGN_OR_RETURN(std::vector<PlannedRlimit> rlimits, PlanRlimitsHere(proc.rlimits));
  p.choices = ChoicesFor(p.bundle, o.node);
  WARD_ASSIGN_OR_RETURN(p.policy, ContainerPolicy(p.choices, o.node.credentials_dir));
  WARD_ASSIGN_OR_RETURN(p.image, ContainerRoot(p.bundle));
  WARD_ASSIGN_OR_RETURN(p.image.cgroup_path,
                        EngineCgroupPath(p.bundle.config.cgroups_path, o.systemd_cgroup));
  if (policy::InterceptsTls(p.policy)) {
    WARD_ASSIGN_OR_RETURN(p.image.ca_bundle, CaBundleInImage(p.bundle));
  }
  for (const PlannedRlimit& r : rlimits) {
    p.image.rlimits.push_back({r.resource, r.soft, r.hard});
    if (r.clamped) p.warnings.push_back(DescribeClamp(r));
  }
  if (p.bundle.config.seccomp) {
    WARD_ASSIGN_OR_RETURN(p.image.seccomp, CompileContainerSeccomp(*p.bundle.config.seccomp));
  }
  // A pod's network is where the container's supervisor connects from; the container keeps
  // its own (pod_network.h).
  WARD_TRY(CheckExposedPorts(p.bundle.ward.expose));
  WARD_ASSIGN_OR_RETURN(p.pod, OpenPodNetwork(p.bundle.config));
  if (!p.bundle.ward.expose.empty() && !p.pod.netns) {
    return InvalidArgument(
        "annotation run.ward/expose: the container has no network of its engine's (a pod's) to "
        "expose ports on: config.json names no network namespace by path");
  }
  p.image.listen_ports = p.bundle.ward.expose;
  // Narrower than asked, never wider: the engine's other namespaces (a pod's shared ipc) are
  // not joined; each is said.
  for (const Namespace& ns : p.bundle.config.namespaces) {
    if (ns.path.empty() || ns.type == "network") continue;
    p.warnings.push_back("linux.namespaces: the " + ns.type + " namespace at " + ns.path +
                         " is not joined: the container has its own");
  }
  return p;
}

// The supervisor in the pod's network (when the container has one), listening there for the
// ports the container exposes.
Result<std::vector<std::pair<uint16_t, UniqueFd>>> EnterPodNetworkAndListen(
    const CreateOptions& o, const Prepared& p) {
  WARD_TRY(EnterPodNetwork(p.pod, StateDir(o.root, o.id)));
  return ListenForExposedPorts(p.bundle.ward.expose);
}

// The container's supervisor: the run, from its plan to its audit trail's end. A run refused
// before its init existed says why on `created` ("refused ...").
[[noreturn]] void SupervisorMain(const CreateOptions& o, Prepared p, int created, int listener,
                                 int exec_listener) {
  Result<std::vector<std::pair<uint16_t, UniqueFd>>> exposed = EnterPodNetworkAndListen(o, p);
  if (!exposed.ok()) {
    const std::string line = "refused " + exposed.status().ToString() + "\n";
    (void)!write(created, line.data(), line.size());
    _exit(0);
  }
  (void)p.pod.netns.release();  // closed with the rest below
  // It lives as long as the container: it keeps nothing the engine left open in `create` but
  // the container's stdio (an engine waits for the end of a pipe it gave create).
  std::vector<int> keep = {created, listener, exec_listener};
  std::vector<std::pair<uint16_t, int>> exposed_fds;
  for (auto& [port, fd] : *exposed) {
    keep.push_back(fd.get());
    exposed_fds.emplace_back(port, fd.release());
  }
  CloseAllFrom3Except(keep);
  setsid();
  if (chdir("/") != 0) _exit(125);
  supervisor::RunRequest req;
  req.policy = std::move(p.policy);
  req.argv = p.bundle.config.process.args;
  req.env = p.bundle.config.process.env;
  req.quiet = true;
  req.approvals.approver = p.choices.approver;
  req.upstream_ca = o.node.upstream_ca;
  if (req.policy.audit) {
    supervisor::RunAuditOptions a;
    a.state_dir = p.choices.audit_dir.empty() ? audit::DefaultStateDir() : p.choices.audit_dir;
    a.session_id = audit::NewSessionId();
    a.labels = {{"container", o.id}};
    a.cwd = p.bundle.dir;
    a.ward_version = o.ward_version;
    req.audit = std::move(a);
    req.approvals.session = req.audit->session_id;
  }
  req.container = supervisor::ContainerLaunch{std::move(p.image), created, listener, exec_listener,
                                              StateDir(o.root, o.id) + "/" + kExecSocket,
                                              o.console_socket, std::move(exposed_fds)};
  const supervisor::Outcome out = supervisor::Run(req);
  if (out.kind == supervisor::Outcome::Kind::kRefused ||
      out.kind == supervisor::Outcome::Kind::kSetupFailed) {
    const std::string line = "refused " + out.message + "\n";
    (void)!write(created, line.data(), line.size());
  }
  unlink((StateDir(o.root, o.id) + "/" + kStartSocket).c_str());
  unlink((StateDir(o.root, o.id) + "/" + kExecSocket).c_str());
  _exit(0);
}

// The supervisor's first word: "created PID", or why it was refused.
Result<pid_t> AwaitCreated(int fd) {
  std::string line;
  char c;
  while (line.size() < size_t{64} * 1024) {
    ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;
    line += c;
  }
  if (line.starts_with("created ")) {
    const long pid = std::strtol(line.c_str() + 8, nullptr, 10);
    if (pid > 0) return static_cast<pid_t>(pid);
  }
  if (line.starts_with("refused ")) return InvalidArgument(line.substr(8));
  return Error(Code::kInternal, "the container's supervisor ended before its init existed");
}

Result<std::vector<std::string>> LaunchClaimed(const CreateOptions& o, Prepared p) {
  ContainerState state;
  state.id = o.id;
  state.bundle = p.bundle.dir;
  state.created = audit::FormatTimestamp(std::chrono::system_clock::now());
  state.annotations = p.bundle.config.annotations;
  state.cgroup_leaf = p.image.cgroup_path;
  WARD_TRY(SaveState(o.root, state));
  const std::string sock = StateDir(o.root, o.id) + "/" + kStartSocket;
  WARD_ASSIGN_OR_RETURN(UnixListener listener, ListenPrivateUnix(sock, 4));
  WARD_ASSIGN_OR_RETURN(UnixListener exec_listener,
                        ListenPrivateUnix(StateDir(o.root, o.id) + "/" + kExecSocket, 64,
                                          SOCK_SEQPACKET));
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return Errno("pipe2");
  UniqueFd created_read(pipe_fds[0]), created_write(pipe_fds[1]);
  std::vector<std::string> warnings = p.warnings;
  const pid_t child = fork();
  if (child < 0) return Errno("fork");
  if (child == 0) {
    created_read.reset();
    SupervisorMain(o, std::move(p), created_write.get(), listener.fd.get(),
                   exec_listener.fd.get());
  }
  created_write.reset();
  listener.fd.reset();
  exec_listener.fd.reset();
  WARD_ASSIGN_OR_RETURN(const pid_t pid, AwaitCreated(created_read.get()));
  state.pid = pid;
  state.pid_start = ProcessStartTime(pid);
  WARD_TRY(SaveState(o.root, state));
  WARD_TRY(WritePidFile(o.pid_file, pid));
  return warnings;
}

}  // namespace

Status WritePidFile(const std::string& path, pid_t pid) {
  if (path.empty()) return Ok();
  const std::string tmp = path + ".ward-tmp";
  UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd) return ErrnoError("--pid-file " + path, errno);
  Status written = WriteAll(fd.get(), std::to_string(pid), "--pid-file " + path);
  if (written.ok() && rename(tmp.c_str(), path.c_str()) != 0) {
    written = ErrnoError("--pid-file " + path, errno);
  }
  if (!written.ok()) unlink(tmp.c_str());
  return written;
}

Status CheckProcessUser(const Process& p, const std::string& field) {
  if (p.uid != geteuid() || p.gid != getegid()) {
    return InvalidArgument(field + ": ward oci runs the container's processes as " +
                           std::to_string(geteuid()) + ":" + std::to_string(getegid()) +
                           " (the engine's user), not " + std::to_string(p.uid) + ":" +
                           std::to_string(p.gid));
  }
  return Ok();
}

Result<std::vector<std::string>> Create(const CreateOptions& o) {
  WARD_ASSIGN_OR_RETURN(Prepared p, Prepare(o));
  WARD_TRY(ClaimState(o.root, o.id));
  Result<std::vector<std::string>> done = LaunchClaimed(o, std::move(p));
  if (!done.ok()) {
    if (Result<ContainerState> s = LoadState(o.root, o.id); s.ok()) (void)KillInit(*s, SIGKILL);
    (void)RemoveState(o.root, o.id);
  }
  return done;
}

Status Start(const std::string& root, const std::string& id) {
  WARD_ASSIGN_OR_RETURN(ContainerState s, LoadState(root, id));
  const std::string status = ContainerStatus(s);
  if (status != "created") {
    return InvalidArgument("container " + id + " is " + status + ", not created: it cannot start");
  }
  WARD_ASSIGN_OR_RETURN(UniqueFd conn, ConnectUnix(StateDir(root, id) + "/" + kStartSocket));
  if (send(conn.get(), "start\n", 6, MSG_NOSIGNAL) != 6) return Errno("starting container " + id);
  struct pollfd pfd = {conn.get(), POLLIN, 0};
  char buf[4] = {};
  if (poll(&pfd, 1, 30000) != 1 || recv(conn.get(), buf, 3, 0) != 3 || std::string(buf) != "ok\n") {
    return Error(Code::kInternal, "container " + id + ": its supervisor did not take the start");
  }
  s.started = true;
  return SaveState(root, s);
}

// The parent of `pid` from /proc/PID/stat (readable for every process; its namespaces are not
// for a caller without ptrace rights over it), -1 when it is gone.
pid_t ParentOf(pid_t pid) {
  UniqueFd fd(open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC));
  char buf[1024];
  const ssize_t n = fd ? read(fd.get(), buf, sizeof buf - 1) : -1;
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* close_paren = strrchr(buf, ')');
  int ppid = -1;
  if (close_paren == nullptr || sscanf(close_paren + 1, " %*c %d", &ppid) != 1) return -1;
  return ppid;
}

Result<std::vector<pid_t>> ContainerPids(const std::string& root, const std::string& id) {
  WARD_ASSIGN_OR_RETURN(ContainerState s, LoadState(root, id));
  const std::string status = ContainerStatus(s);
  if (status != "created" && status != "running") return std::vector<pid_t>{};
  // Everything in the container descends from init (orphans are re-parented to it).
  std::map<pid_t, pid_t> parent;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return Errno("/proc");
  while (struct dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end == '\0' && pid > 0) parent[static_cast<pid_t>(pid)] = ParentOf(static_cast<pid_t>(pid));
  }
  closedir(proc);
  std::vector<pid_t> pids = {s.pid};
  for (size_t i = 0; i < pids.size(); ++i) {
    for (const auto& [pid, ppid] : parent) {
      if (ppid == pids[i]) pids.push_back(pid);
    }
  }
  return pids;
}

Result<int> ParseSignal(const std::string& text) {
  if (!text.empty() && std::isdigit(static_cast<unsigned char>(text[0]))) {
    char* end = nullptr;
    const long n = std::strtol(text.c_str(), &end, 10);
    if (*end == '\0' && n > 0 && n < NSIG) return static_cast<int>(n);
  }
  std::string name = text.starts_with("SIG") ? text.substr(3) : text;
  for (int sig = 1; sig < NSIG; ++sig) {
    const char* abbrev = sigabbrev_np(sig);
    if (abbrev != nullptr && name == abbrev) return sig;
  }
  return InvalidArgument("unknown signal " + text + " (a name such as TERM or SIGKILL, or a number)");
}

}  // namespace ward::oci
