#include "enforce/probe.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string_view>
#include <vector>

#include "common/linux.h"
#include "common/unique_fd.h"

namespace ward::enforce {
namespace {

// Plain read(2): iostreams cost more than the file here, and this runs on every `ward run`.
std::string ReadSmallFile(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return "";
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n'; }

// The whitespace-separated fields of `text`.
std::vector<std::string_view> Fields(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsBlank(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !IsBlank(text[j])) ++j;
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

// Calls `fn` with each line of `text` (without the newline).
template <typename Fn>
void ForEachLine(std::string_view text, Fn fn) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    fn(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

bool ProbeUserNs(std::string* note) {
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : (errno & 0x7f));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  if (WIFEXITED(status)) {
    int err = WEXITSTATUS(status);
    *note = std::string("unshare(CLONE_NEWUSER) failed: ") + strerror(err) +
            " (check kernel.unprivileged_userns_clone, user.max_user_namespaces, AppArmor's "
            "kernel.apparmor_restrict_unprivileged_userns)";
  }
  return false;
}

// Whether a new user namespace may mount: a child unshares a user and a mount namespace and
// changes the propagation of its own copy of "/" (which touches nothing outside it). Only
// EPERM says no; whatever else the call answers, the kernel checked the capability first.
bool ProbeUserNsMounts(std::string* note) {
  pid_t pid = fork();
  if (pid < 0) return true;
  if (pid == 0) {
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) _exit(0);  // no user namespace: not this probe's
    _exit(mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 && errno == EPERM);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 1) {
    *note = "mount(2) is refused in a new user namespace (gVisor does this)";
    return false;
  }
  return true;
}

bool HasOption(const std::string& opts, const char* name) {
  return ("," + opts + ",").find(std::string(",") + name + ",") != std::string::npos;
}

bool Writable(const std::string& path) { return access(path.c_str(), W_OK) == 0; }

// The controllers a cgroup2 directory may hand to its children (its cgroup.controllers).
std::vector<std::string> ControllersOf(const std::string& dir) {
  // The text must outlive the views Fields returns.
  const std::string text = ReadSmallFile(dir + "/cgroup.controllers");
  std::vector<std::string> out;
  for (std::string_view c : Fields(text)) out.emplace_back(c);
  return out;
}

// Processes in a cgroup other than this one and its children: they keep it from handing
// controllers to child cgroups, and moving ward alone out of their way does not help.
int OtherProcessesIn(const std::string& dir) {
  const std::string procs = ReadSmallFile(dir + "/cgroup.procs");
  const pid_t self = getpid();
  int others = 0;
  ForEachLine(procs, [&](std::string_view line) {
    long pid = std::strtol(std::string(line).c_str(), nullptr, 10);
    if (pid <= 0 || pid == self) return;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'.
    const std::string stat = ReadSmallFile("/proc/" + std::to_string(pid) + "/stat");
    size_t close = stat.rfind(')');
    long ppid = close == std::string::npos
                    ? 0
                    : std::strtol(stat.c_str() + std::min(close + 4, stat.size()), nullptr, 10);
    if (ppid != self) ++others;
  });
  return others;
}

// Our own cgroup shared with other processes (a login session's scope, a terminal's scope, a
// daemon's service): root takes "ward" below the cgroup2 mount instead, as container engines
// do; anyone else is left without a cgroup, told how to get a delegated one.
void AvoidBusyOwnCgroup(CgroupInfo* cg) {
  if (!cg->v2_parent_is_own || cg->v2_own == "/") return;  // the root cgroup may hold both
  const int others = OtherProcessesIn(cg->v2_parent);
  if (others == 0) return;
  cg->v2_own_busy = "your cgroup " + cg->v2_own + " also holds " + std::to_string(others) +
                    " other process" + (others == 1 ? "" : "es");
  if (geteuid() == 0 && Writable(cg->v2_path + "/cgroup.subtree_control") &&
      Writable(cg->v2_path + "/cgroup.procs")) {
    cg->v2_parent = cg->v2_path + "/ward";
    cg->v2_parent_is_own = false;
    cg->v2_parent_create = true;
    cg->v2_controllers = ControllersOf(cg->v2_path);
    return;
  }
  cg->v2_delegated = false;
}

// Where each hierarchy is mounted here (mountinfo): the mount point of cgroup2 and of the v1
// memory, pids and cpu controllers, "" for what is not mounted (or mounted at a subtree, which
// would shift every path).
struct CgroupMounts {
  std::string v2, v1_memory, v1_pids, v1_cpu;
  // cpuacct and blkio (controller, mount point), where mounted apart from those.
  std::vector<std::pair<std::string, std::string>> v1_accounting;
};

CgroupMounts ReadCgroupMounts() {
  CgroupMounts m;
  ForEachLine(ReadSmallFile("/proc/self/mountinfo"), [&](std::string_view line) {
    auto dash = line.find(" - ");
    if (dash == std::string_view::npos) return;
    std::vector<std::string_view> pre = Fields(line.substr(0, dash));
    std::vector<std::string_view> post = Fields(line.substr(dash + 3));
    if (pre.size() < 5 || post.size() < 3) return;
    const std::string_view root = pre[3], fstype = post[0];
    const std::string mnt(pre[4]), opts(post[2]);
    if (root != "/") return;
    if (fstype == "cgroup2" && m.v2.empty()) {
      m.v2 = mnt;
    } else if (fstype == "cgroup") {
      if (HasOption(opts, "memory") && m.v1_memory.empty()) m.v1_memory = mnt;
      if (HasOption(opts, "pids") && m.v1_pids.empty()) m.v1_pids = mnt;
      if (HasOption(opts, "cpu") && m.v1_cpu.empty()) m.v1_cpu = mnt;
      const bool ours = HasOption(opts, "memory") || HasOption(opts, "pids") ||
                        HasOption(opts, "cpu");
      for (const char* c : {"cpuacct", "blkio"}) {
        if (!ours && HasOption(opts, c)) m.v1_accounting.emplace_back(c, mnt);
      }
    }
  });
  return m;
}

// A process's cgroup in each hierarchy, from its /proc/PID/cgroup: paths relative to the
// hierarchy's root ("" for the root itself); v2 is "/" for the root, "" when not listed.
struct CgroupMembership {
  std::string v2, v1_memory, v1_pids, v1_cpu;
  std::map<std::string, std::string> v1_other;  // by each controller of a hierarchy's line
};

CgroupMembership ReadCgroupMembership(const std::string& proc_cgroup) {
  CgroupMembership m;
  ForEachLine(ReadSmallFile(proc_cgroup), [&](std::string_view line) {
    // "0::/user.slice/..." for v2; "4:memory:/x" or "2:cpu,cpuacct:/" for v1.
    auto c1 = line.find(':');
    if (c1 == std::string_view::npos) return;
    auto c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) return;
    std::string ctrls(line.substr(c1 + 1, c2 - c1 - 1));
    std::string path(line.substr(c2 + 1));
    if (path == "/") path.clear();
    if (ctrls.empty()) m.v2 = path.empty() ? "/" : path;
    if (HasOption(ctrls, "memory")) m.v1_memory = path;
    if (HasOption(ctrls, "pids")) m.v1_pids = path;
    if (HasOption(ctrls, "cpu")) m.v1_cpu = path;
    for (size_t from = 0; !ctrls.empty() && from <= ctrls.size();) {
      size_t comma = ctrls.find(',', from);
      if (comma == std::string::npos) comma = ctrls.size();
      m.v1_other[ctrls.substr(from, comma - from)] = path;
      from = comma + 1;
    }
  });
  return m;
}

void ProbeCgroups(CgroupInfo* cg) {
  const CgroupMounts mounts = ReadCgroupMounts();
  cg->v2_mounted = !mounts.v2.empty();
  cg->v2_path = mounts.v2;
  cg->v2_unified = mounts.v2 == "/sys/fs/cgroup";
  cg->v1_memory = !mounts.v1_memory.empty();
  cg->v1_pids = !mounts.v1_pids.empty();
  cg->v1_cpu = !mounts.v1_cpu.empty();
  const std::string v1_memory_mnt = mounts.v1_memory, v1_pids_mnt = mounts.v1_pids,
                    v1_cpu_mnt = mounts.v1_cpu;
  cg->v1_memory_mount = v1_memory_mnt;
  cg->v1_pids_mount = v1_pids_mnt;
  cg->v1_cpu_mount = v1_cpu_mnt;
  for (const auto& [controller, mnt] : mounts.v1_accounting) {
    cg->v1_accounting_mounts.push_back(mnt);
  }
  const CgroupMembership self = ReadCgroupMembership("/proc/self/cgroup");
  cg->v2_own = self.v2;
  const std::string v1_memory_path = self.v1_memory, v1_pids_path = self.v1_pids,
                    v1_cpu_path = self.v1_cpu;
  if (cg->v2_mounted && !cg->v2_own.empty()) {
    std::string own = cg->v2_path + (cg->v2_own == "/" ? "" : cg->v2_own);
    const char* root = getenv("WARD_CGROUP_ROOT");
    std::string parent = own;
    if (root && *root) {
      // A directory below the cgroup2 mount, or a cgroup path like those in /proc/self/cgroup.
      std::string r = root;
      while (r.size() > 1 && r.back() == '/') r.pop_back();
      if (r.rfind(cg->v2_path + "/", 0) == 0) {
        parent = r;
      } else {
        parent = cg->v2_path + (r[0] == '/' ? "" : "/") + r;
      }
      if (("/" + r + "/").find("/../") != std::string::npos) {
        parent.clear();
        cg->v2_root_error = "WARD_CGROUP_ROOT must not contain '..'";
      }
    }
    cg->v2_parent = parent;
    cg->v2_parent_is_own = parent == own;
    if (!parent.empty()) {
      cg->v2_controllers = ControllersOf(parent);
      cg->v2_delegated = Writable(parent) && Writable(parent + "/cgroup.subtree_control") &&
                         Writable(parent + "/cgroup.procs");
      if (cg->v2_delegated) AvoidBusyOwnCgroup(cg);
    }
  }
  if (cg->v1_memory) {
    cg->v1_memory_dir = v1_memory_mnt + v1_memory_path;
    cg->v1_memory_writable = Writable(cg->v1_memory_dir);
    cg->v1_memsw = access((cg->v1_memory_dir + "/memory.memsw.limit_in_bytes").c_str(), F_OK) == 0;
  }
  if (cg->v1_pids) {
    cg->v1_pids_dir = v1_pids_mnt + v1_pids_path;
    cg->v1_pids_writable = Writable(cg->v1_pids_dir);
  }
  if (cg->v1_cpu) {
    cg->v1_cpu_dir = v1_cpu_mnt + v1_cpu_path;
    cg->v1_cpu_writable = Writable(cg->v1_cpu_dir);
  }
  cg->v1_writable = cg->v1_memory_writable && cg->v1_pids_writable;
}

long ReadLong(const std::string& path) {
  std::string s = ReadSmallFile(path);
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  return end == s.c_str() || v < 0 ? 0 : v;
}

void ProbeHostLimits(const std::string& release, HostLimits* h) {
  h->inotify_instances = ReadLong("/proc/sys/user/max_inotify_instances");
  h->inotify_watches = ReadLong("/proc/sys/user/max_inotify_watches");
  h->fanotify_groups = ReadLong("/proc/sys/user/max_fanotify_groups");
  h->fanotify_marks = ReadLong("/proc/sys/user/max_fanotify_marks");
  h->time_namespaces = access("/proc/sys/user/max_time_namespaces", F_OK) == 0;
  auto get = [](int resource, HostLimits::Pair* p) {
    struct rlimit rl;
    if (getrlimit(resource, &rl) == 0) {
      p->soft = rl.rlim_cur;
      p->hard = rl.rlim_max;
    }
  };
  get(RLIMIT_DATA, &h->data);
  get(RLIMIT_NPROC, &h->nproc);
  get(RLIMIT_FSIZE, &h->fsize);
  get(RLIMIT_NOFILE, &h->nofile);
  get(RLIMIT_MSGQUEUE, &h->msgqueue);
  get(RLIMIT_SIGPENDING, &h->sigpending);
  // gVisor implements neither of these two and refuses to set them at all.
  for (auto [resource, pair] :
       {std::pair{RLIMIT_MSGQUEUE, &h->msgqueue}, std::pair{RLIMIT_SIGPENDING, &h->sigpending}}) {
    struct rlimit same = {pair->soft, pair->hard};
    if (setrlimit(resource, &same) != 0 && errno == EPERM) pair->settable = false;
  }
  h->nproc_per_userns = KernelAtLeast(release, 5, 14);
}

}  // namespace

CgroupDirs CgroupDirsOf(pid_t pid) {
  const CgroupMounts mounts = ReadCgroupMounts();
  const CgroupMembership m = ReadCgroupMembership("/proc/" + std::to_string(pid) + "/cgroup");
  CgroupDirs d;
  if (!mounts.v2.empty() && !m.v2.empty()) d.v2 = mounts.v2 + (m.v2 == "/" ? "" : m.v2);
  if (!mounts.v1_memory.empty()) d.v1_memory = mounts.v1_memory + m.v1_memory;
  if (!mounts.v1_pids.empty()) d.v1_pids = mounts.v1_pids + m.v1_pids;
  if (!mounts.v1_cpu.empty()) d.v1_cpu = mounts.v1_cpu + m.v1_cpu;
  for (const auto& [controller, mnt] : mounts.v1_accounting) {
    auto it = m.v1_other.find(controller);
    if (it != m.v1_other.end()) d.v1_accounting.push_back(mnt + it->second);
  }
  return d;
}

bool CgroupInfo::V2Has(const std::string& controller) const {
  for (const auto& c : v2_controllers) {
    if (c == controller) return true;
  }
  return false;
}

bool KernelAtLeast(const std::string& release, int major, int minor) {
  int ma = 0, mi = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &ma, &mi) != 2) return false;
  return ma > major || (ma == major && mi >= minor);
}

// The hypervisor CPUID bit and vendor signature, read from the CPU itself (reading
// /proc/cpuinfo costs a cross-CPU call per core).
std::string HypervisorVendor(bool* present) {
  *present = false;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return "";
  if (!(c & (1u << 31))) return "";
  *present = true;
  __cpuid(0x40000000, a, b, c, d);
  char sig[13] = {};
  std::memcpy(sig, &b, 4);
  std::memcpy(sig + 4, &c, 4);
  std::memcpy(sig + 8, &d, 4);
  std::string s(sig);
  if (s == "KVMKVMKVM") return "KVM";
  if (s == "Microsoft Hv") return "Hyper-V";
  if (s == "VMwareVMware") return "VMware";
  if (s == "XenVMMXenVMM") return "Xen";
  if (s == "TCGTCGTCGTCG") return "QEMU";
  if (s == " lrpepyh  vr") return "Parallels";
  if (s == "ACRNACRNACRN") return "ACRN";
  return s;
#else
  return "";
#endif
}

std::string DetectOuterWall() {
  std::string cmdline = ReadSmallFile("/proc/cmdline");
  std::string kind;
  bool hypervisor = false;
  std::string hv = HypervisorVendor(&hypervisor);
  if (cmdline.find("firecracker") != std::string::npos) {
    kind = "microvm (firecracker)";
  } else if (hypervisor) {
    std::string vendor = ReadSmallFile("/sys/class/dmi/id/sys_vendor");
    while (!vendor.empty() && (vendor.back() == '\n' || vendor.back() == ' ')) vendor.pop_back();
    if (vendor.empty() || vendor == "To be filled by O.E.M.") vendor = hv;
    kind = vendor.empty() ? "virtual machine" : "virtual machine (" + vendor + ")";
  }
  std::string version = ReadSmallFile("/proc/version");
  // gVisor calls itself Linux 4.4.0 with a fixed build line; some releases also name it.
  if (version.find("gVisor") != std::string::npos ||
      version.find("4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016") != std::string::npos) {
    kind = "gvisor";
  }
  std::string container;
  struct stat st;
  if (stat("/.dockerenv", &st) == 0) {
    container = "container (docker)";
  } else if (stat("/run/.containerenv", &st) == 0) {
    container = "container (podman)";
  }
  if (!container.empty()) return kind.empty() ? container : kind + ", " + container;
  return kind;
}

KernelFeatures ProbeKernel(bool probe_user_ns) {
  KernelFeatures f;
  struct utsname u;
  if (uname(&u) == 0) f.kernel_release = u.release;

  std::string note;
  if (probe_user_ns) {
    f.user_ns = ProbeUserNs(&note);
    if (!note.empty()) f.notes.push_back(note);
  } else {
    f.user_ns = access("/proc/self/ns/user", F_OK) == 0;
  }

  long abi = sys::LandlockCreateRuleset(nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi > 0) {
    f.landlock_abi = static_cast<int>(abi);
  } else {
    f.notes.push_back(errno == EOPNOTSUPP
                          ? "Landlock is built in but disabled (add landlock to the lsm= boot list)"
                          : "Landlock is not available in this kernel");
  }

  f.seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
  unsigned action = SECCOMP_RET_USER_NOTIF;
  f.seccomp_user_notif = sys::Seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
  f.seccomp_addfd_send = f.seccomp_user_notif && KernelAtLeast(f.kernel_release, 5, 14);

  f.net_ns = access("/proc/self/ns/net", F_OK) == 0;
  {
    UniqueFd fd(sys::PidfdOpen(getpid(), 0));
    f.pidfd = fd.valid();
  }
  {
    UniqueFd fd(sys::Openat2(AT_FDCWD, "/", O_PATH | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS));
    f.openat2 = fd.valid();
  }
  {
    // open_tree and move_mount came in Linux 5.2, mount_setattr (which every read-only or
    // nosuid view needs) in 5.12: the root is built with the mount API only where both exist.
    int r = sys::OpenTree(-1, "", 0);
    f.mount_api = !(r < 0 && errno == ENOSYS);
    if (r >= 0) close(r);
    if (f.mount_api && sys::MountSetattr(-1, "", 0, nullptr) < 0 && errno == ENOSYS) {
      f.mount_api = false;
    }
  }
  if (!f.mount_api) {
    // Only where the mount API is missing (gVisor, Linux < 5.12): the root is then built with
    // mount(2), and whether that works in a user namespace decides whether init gets one.
    f.userns_mounts = ProbeUserNsMounts(&note);
    if (!f.userns_mounts) f.notes.push_back(note);
  }
  f.close_range = sys::CloseRange(UINT_MAX, UINT_MAX, 0) == 0;
  ProbeCgroups(&f.cgroup);
  ProbeHostLimits(f.kernel_release, &f.host_limits);
  f.outer_wall = DetectOuterWall();
  return f;
}

}  // namespace ward::enforce
