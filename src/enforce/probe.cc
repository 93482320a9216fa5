#include "enforce/probe.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/linux.h"
#include "common/unique_fd.h"

namespace ward::enforce {
namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool KernelAtLeast(const std::string& release, int major, int minor) {
  int ma = 0, mi = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &ma, &mi) != 2) return false;
  return ma > major || (ma == major && mi >= minor);
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

void ProbeCgroups(CgroupInfo* cg) {
  std::ifstream mi("/proc/self/mountinfo");
  std::string line;
  std::string v1_memory_mnt, v1_pids_mnt, v1_cpu_mnt;
  while (std::getline(mi, line)) {
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream pre(line.substr(0, dash)), post(line.substr(dash + 3));
    std::string id, parent, devno, root, mnt;
    pre >> id >> parent >> devno >> root >> mnt;
    std::string fstype, source, opts;
    post >> fstype >> source >> opts;
    if (fstype == "cgroup2" && !cg->v2_mounted) {
      cg->v2_mounted = true;
      cg->v2_path = mnt;
      cg->v2_unified = (mnt == "/sys/fs/cgroup");
    } else if (fstype == "cgroup") {
      std::string o = "," + opts + ",";
      if (o.find(",memory,") != std::string::npos) {
        cg->v1_memory = true;
        v1_memory_mnt = mnt;
      }
      if (o.find(",pids,") != std::string::npos) {
        cg->v1_pids = true;
        v1_pids_mnt = mnt;
      }
      if (o.find(",cpu,") != std::string::npos || o.find(",cpu,cpuacct,") != std::string::npos) {
        cg->v1_cpu = true;
        v1_cpu_mnt = mnt;
      }
    }
  }
  std::ifstream self("/proc/self/cgroup");
  std::string v1_memory_path, v1_pids_path;
  while (std::getline(self, line)) {
    // "0::/user.slice/..." for v2; "4:memory:/x" for v1.
    auto c1 = line.find(':');
    auto c2 = line.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) continue;
    std::string ctrls = line.substr(c1 + 1, c2 - c1 - 1);
    std::string path = line.substr(c2 + 1);
    if (ctrls.empty()) cg->v2_own = path;
    std::string c = "," + ctrls + ",";
    if (c.find(",memory,") != std::string::npos) v1_memory_path = path;
    if (c.find(",pids,") != std::string::npos) v1_pids_path = path;
  }
  if (cg->v2_mounted && !cg->v2_own.empty()) {
    std::string dir = cg->v2_path + cg->v2_own;
    cg->v2_delegated = access((dir + "/cgroup.subtree_control").c_str(), W_OK) == 0 &&
                       access((dir + "/cgroup.procs").c_str(), W_OK) == 0 &&
                       access(dir.c_str(), W_OK) == 0;
  }
  if (cg->v1_memory && cg->v1_pids) {
    cg->v1_writable = access((v1_memory_mnt + v1_memory_path).c_str(), W_OK) == 0 &&
                      access((v1_pids_mnt + v1_pids_path).c_str(), W_OK) == 0;
  }
}

}  // namespace

std::string DetectOuterWall() {
  std::string cmdline = ReadSmallFile("/proc/cmdline");
  std::string kind;
  if (cmdline.find("firecracker") != std::string::npos) {
    kind = "microvm (firecracker)";
  } else {
    std::string vendor = ReadSmallFile("/sys/class/dmi/id/sys_vendor");
    while (!vendor.empty() && (vendor.back() == '\n' || vendor.back() == ' ')) vendor.pop_back();
    std::string cpuinfo = ReadSmallFile("/proc/cpuinfo");
    if (!vendor.empty() && vendor != "To be filled by O.E.M." &&
        cpuinfo.find(" hypervisor") != std::string::npos) {
      kind = "virtual machine (" + vendor + ")";
    } else if (cpuinfo.find(" hypervisor") != std::string::npos) {
      kind = "virtual machine";
    }
  }
  std::string version = ReadSmallFile("/proc/version");
  if (version.find("gVisor") != std::string::npos) kind = "gvisor";
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
    int r = sys::OpenTree(-1, "", 0);
    f.mount_api = !(r < 0 && errno == ENOSYS);
    if (r >= 0) close(r);
  }
  f.close_range = sys::CloseRange(UINT_MAX, UINT_MAX, 0) == 0;
  ProbeCgroups(&f.cgroup);
  f.outer_wall = DetectOuterWall();
  return f;
}

}  // namespace ward::enforce
