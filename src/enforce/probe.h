// What the running kernel offers (`ward check`). Probed at run time, never assumed from
// headers: every layer ward applies is planned against these facts.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ward::enforce {

struct CgroupInfo {
  bool v2_mounted = false;  // a cgroup2 hierarchy is mounted
  bool v2_unified = false;  // /sys/fs/cgroup itself is cgroup2 (no v1 controllers)
  std::string v2_path;      // where cgroup2 is mounted
  std::string v2_own;       // our cgroup inside it ("/user.slice/...")
  // Where per-run cgroups go: $WARD_CGROUP_ROOT (absolute, or relative to the cgroup2 mount)
  // when set; else our own cgroup; else, for root when other processes share our own cgroup
  // (a login session's scope), "ward" below the cgroup2 mount. Absolute directory.
  std::string v2_parent;
  bool v2_parent_is_own = false;
  bool v2_parent_create = false;  // v2_parent ("ward" below the mount) is made when missing
  // Why our own cgroup cannot take the run's cgroup ("" when it can): other processes live in
  // it, and the no-internal-process rule forbids giving controllers to its children then.
  std::string v2_own_busy;
  std::string v2_root_error;                // why $WARD_CGROUP_ROOT was not usable
  std::vector<std::string> v2_controllers;  // cgroup.controllers of v2_parent
  bool v2_delegated = false;  // we can create children of v2_parent and move processes
  bool v1_memory = false;     // v1 controllers mounted
  bool v1_pids = false;
  bool v1_cpu = false;
  std::string v1_memory_mount;  // where each v1 hierarchy is mounted ("" when it is not)
  std::string v1_pids_mount;
  std::string v1_cpu_mount;
  // The hierarchies of cpuacct and blkio where mounted apart from the three above: an engine's
  // statistics of a container read them.
  std::vector<std::string> v1_accounting_mounts;
  std::string v1_memory_dir;  // our own cgroup in each v1 hierarchy (absolute)
  std::string v1_pids_dir;
  std::string v1_cpu_dir;
  bool v1_memory_writable = false;  // we can create a child cgroup there (root)
  bool v1_pids_writable = false;
  bool v1_cpu_writable = false;
  bool v1_memsw = false;     // swap accounting (memory.memsw.limit_in_bytes)
  bool v1_writable = false;  // memory and pids both writable

  bool V2Has(const std::string& controller) const;
};

// Where process `pid` is in each cgroup hierarchy mounted here, as absolute directories ("" for
// a hierarchy not mounted, or, for v2, not listed for the process).
struct CgroupDirs {
  std::string v2, v1_memory, v1_pids, v1_cpu;
  std::vector<std::string> v1_accounting;  // in CgroupInfo::v1_accounting_mounts
};
CgroupDirs CgroupDirsOf(pid_t pid);

// Per-user kernel object caps and the process's own rlimits: what the limits planner derives
// the sandbox's share from, so the sandbox cannot exhaust what the caller has outside.
struct HostLimits {
  // /proc/sys/user/* of our user namespace; 0 when unreadable.
  long inotify_instances = 0;
  long inotify_watches = 0;
  long fanotify_groups = 0;
  long fanotify_marks = 0;
  bool time_namespaces = false;  // user.max_time_namespaces exists
  // Our current rlimits (soft, hard).
  struct Pair {
    unsigned long long soft = ~0ULL, hard = ~0ULL;  // RLIM_INFINITY
    bool settable = true;  // false: setrlimit refuses even its current value (gVisor's
                           // message queue and pending signal limits)
  };
  Pair data, nproc, fsize, nofile, msgqueue, sigpending;
  // Linux >= 5.14 counts RLIMIT_NPROC per user namespace, so inside a fresh one it limits the
  // sandbox only (never for uid 0, which the kernel exempts).
  bool nproc_per_userns = false;
};

struct KernelFeatures {
  std::string kernel_release;  // uname -r
  bool user_ns = false;        // an unprivileged user namespace can be created here
  bool user_ns_err_is_policy = false;
  int landlock_abi = 0;  // 0: no Landlock
  bool seccomp = false;
  bool seccomp_user_notif = false;
  bool seccomp_addfd_send = false;
  bool net_ns = false;
  bool pidfd = false;
  bool openat2 = false;
  bool mount_api = false;  // open_tree / move_mount / mount_setattr
  // mount(2) works in a new user namespace. Probed only where the mount API is missing (gVisor
  // refuses every mount in a nested user namespace); assumed elsewhere.
  bool userns_mounts = true;
  bool close_range = false;
  CgroupInfo cgroup;
  HostLimits host_limits;
  std::string outer_wall;          // detected virtualisation or container ("" = none detected)
  std::vector<std::string> notes;  // human notes: why a feature is missing
};

// Parses the running kernel's "major.minor" and compares.
bool KernelAtLeast(const std::string& release, int major, int minor);

// Probes the kernel. Cheap (well under a millisecond) except user_ns, which forks once.
KernelFeatures ProbeKernel(bool probe_user_ns = true);

// Outer isolation this process runs inside of: "microvm (firecracker)", "kvm", "container
// (docker)", "gvisor", ... or "" when none is detected.
std::string DetectOuterWall();

}  // namespace ward::enforce
