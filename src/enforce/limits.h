// Resource limits of one run: which mechanism enforces each limit on this host (the best one
// available: a delegated cgroup v2 subtree, writable cgroup v1 controllers, or rlimits and sized
// tmpfs), and the rlimits and namespace sysctls that every run gets. Pure planning: no syscalls,
// so every decision is unit-tested; cgroup.h carries it out.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "enforce/probe.h"
#include "enforce/spec.h"
#include "policy/policy.h"

namespace ward::enforce {

// At the deadline everything inside gets SIGTERM, and SIGKILL this much later.
inline constexpr uint64_t kTimeoutGraceMs = 2000;
inline constexpr uint64_t kCpuPeriodUs = 100000;
inline constexpr uint64_t kMinCpuQuotaUs = 1000;  // the kernel's minimum cfs quota
// Open files per process inside (a cap on the caller's own limit).
inline constexpr uint64_t kMaxOpenFiles = 65536;

struct LimitsPlan {
  LimitsSpec spec;
  std::vector<ProcessSpec::Rlimit> rlimits;  // for the command, besides RLIMIT_CORE 0
  std::vector<Sysctl> sysctls;               // written by sandbox init into its /proc/sys
  std::vector<std::string> degraded;  // limits not enforced (--allow-degraded=limits), with why
};

// Decides, per limit, what enforces it here. A limit nothing here can enforce refuses the run
// (kFailedPrecondition, naming the limit and --allow-degraded=limits) unless the policy allows
// degraded limits; then it is listed in `degraded`. `uid` is the caller's (root is exempt from
// RLIMIT_NPROC).
Result<LimitsPlan> PlanLimits(const policy::Policy& policy, const KernelFeatures& features,
                              uid_t uid);

// The cgroup version that covers most of the wanted controllers (v2 on a tie); 0 when none
// covers any. Which of them it covers is returned too.
struct CgroupChoice {
  int version = 0;
  bool memory = false, pids = false, cpu = false;
};
CgroupChoice ChooseCgroup(const CgroupInfo& cg, bool memory, bool pids, bool cpu);

// A container's cgroup where its engine names it (linux.cgroupsPath, "/a/b/leaf"), in every
// hierarchy ward may write here, with limits or without: the engine reads the container's
// statistics there, and the limits of the cgroups above it (a Kubernetes pod's) hold. Only as
// root: a rootless engine's path is not below the root ward could write (its delegated subtree
// is), and the run keeps a cgroup of ward's own where it has one. "" changes nothing.
void PlanEngineCgroup(const CgroupInfo& info, const std::string& path, bool root,
                      LimitsSpec* spec);

// `ward check`: what would enforce each kind of limit on this host, for this caller.
struct LimitsMechanism {
  LimitsBackend backend = LimitsBackend::kRlimits;  // for memory + pids (the default profile)
  std::string summary;            // "cgroup v1 (memory, pids, cpu) below /sys/fs/cgroup/memory/..."
  std::string memory, pids, cpu;  // the mechanism, or "" when it cannot be enforced here
  std::string pids_why_not, cpu_why_not;
};
LimitsMechanism DescribeLimitsMechanism(const KernelFeatures& f, uid_t uid);

// One line for `ward explain`'s layer list: the backend and each limit with what enforces it,
// e.g. "cgroup v1: memory 8 GiB (cgroup v1 memory.limit_in_bytes ...); pids 1024 (...)".
// Every line of spec.lines is there; unenforced ones are marked NOT ENFORCED.
std::string LimitsSummary(const LimitsSpec& spec);

}  // namespace ward::enforce
