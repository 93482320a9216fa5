// What the running kernel offers (`ward check`). Probed at run time, never assumed from
// headers: every layer ward applies is planned against these facts.
#pragma once

#include <string>
#include <vector>

namespace ward::enforce {

struct CgroupInfo {
  bool v2_mounted = false;        // a cgroup2 hierarchy is mounted
  bool v2_unified = false;        // /sys/fs/cgroup itself is cgroup2 (no v1 controllers)
  std::string v2_path;            // where cgroup2 is mounted
  std::string v2_own;             // our cgroup inside it ("/user.slice/...")
  bool v2_delegated = false;      // we can create children under our cgroup with controllers
  bool v1_memory = false;         // v1 controllers mounted
  bool v1_pids = false;
  bool v1_cpu = false;
  bool v1_writable = false;       // we can create a child cgroup in them (root)
};

struct KernelFeatures {
  std::string kernel_release;     // uname -r
  bool user_ns = false;           // an unprivileged user namespace can be created here
  bool user_ns_err_is_policy = false;
  int landlock_abi = 0;           // 0: no Landlock
  bool seccomp = false;
  bool seccomp_user_notif = false;
  bool seccomp_addfd_send = false;
  bool net_ns = false;
  bool pidfd = false;
  bool openat2 = false;
  bool mount_api = false;          // open_tree / move_mount / mount_setattr
  bool close_range = false;
  CgroupInfo cgroup;
  std::string outer_wall;          // detected virtualisation or container ("" = none detected)
  std::vector<std::string> notes;  // human notes: why a feature is missing
};

// Probes the kernel. Cheap (well under a millisecond) except user_ns, which forks once.
KernelFeatures ProbeKernel(bool probe_user_ns = true);

// Outer isolation this process runs inside of: "microvm (firecracker)", "kvm", "container
// (docker)", "gvisor", ... or "" when none is detected.
std::string DetectOuterWall();

}  // namespace ward::enforce
