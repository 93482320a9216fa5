// The resource-limits planner: which mechanism enforces each limit on a given host, what is
// refused, and what every run gets (pure: hosts are described, not probed).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "common/format.h"
#include "enforce/limits.h"
#include "policy/loader.h"

namespace ward::enforce {
namespace {

constexpr uid_t kUser = 1000;
constexpr uid_t kRoot = 0;

// A host with no usable cgroup and a recent kernel (RLIMIT_NPROC per user namespace).
KernelFeatures RlimitsHost() {
  KernelFeatures f;
  f.kernel_release = "6.1.0";
  HostLimits& h = f.host_limits;
  h.inotify_instances = 128;
  h.inotify_watches = 65536;
  h.fanotify_groups = 128;
  h.fanotify_marks = 8192;
  h.time_namespaces = true;
  h.nofile = {1024, 524288};
  h.msgqueue = {819200, 819200};
  h.sigpending = {63000, 63000};
  h.nproc_per_userns = true;
  return f;
}

// Root on a v1/hybrid host (like the test machines): memory, pids and cpu writable.
KernelFeatures V1Host() {
  KernelFeatures f = RlimitsHost();
  CgroupInfo& c = f.cgroup;
  c.v2_mounted = true;
  c.v2_path = "/sys/fs/cgroup/unified";
  c.v2_own = "/";
  c.v2_parent = "/sys/fs/cgroup/unified";
  c.v2_delegated = true;  // writable, but no controllers are attached to v2 here
  c.v1_memory = c.v1_pids = c.v1_cpu = true;
  c.v1_memory_dir = "/sys/fs/cgroup/memory/session";
  c.v1_pids_dir = "/sys/fs/cgroup/pids";
  c.v1_cpu_dir = "/sys/fs/cgroup/cpu";
  c.v1_memory_writable = c.v1_pids_writable = c.v1_cpu_writable = true;
  c.v1_memsw = true;
  c.v1_writable = true;
  return f;
}

// A systemd user session with a delegated cgroup2 subtree.
KernelFeatures V2Host() {
  KernelFeatures f = RlimitsHost();
  CgroupInfo& c = f.cgroup;
  c.v2_mounted = c.v2_unified = true;
  c.v2_path = "/sys/fs/cgroup";
  c.v2_own = "/user.slice/user-1000.slice/user@1000.service/app.slice/ward.scope";
  c.v2_parent = c.v2_path + c.v2_own;
  c.v2_parent_is_own = true;
  c.v2_controllers = {"cpu", "memory", "pids"};
  c.v2_delegated = true;
  return f;
}

policy::Policy WithLimits(std::optional<uint64_t> memory, std::optional<uint64_t> pids,
                          std::optional<double> cpu) {
  policy::Policy p;
  p.limits.memory_bytes = memory;
  p.limits.pids = pids;
  p.limits.cpu_cores = cpu;
  if (memory) p.limits.origins["memory"] = {"cli", 0, "--memory"};
  if (pids) p.limits.origins["pids"] = {"cli", 0, "--pids"};
  if (cpu) p.limits.origins["cpu"] = {"cli", 0, "--cpu"};
  return p;
}

void AllowDegraded(policy::Policy* p) {
  p->allow_degraded.insert(policy::Layer::kLimits);
  p->degraded_origins[policy::Layer::kLimits] = {"cli", 0, "--allow-degraded"};
}

const ProcessSpec::Rlimit* FindRlimit(const LimitsPlan& lp, int resource) {
  for (const auto& r : lp.rlimits) {
    if (r.resource == resource) return &r;
  }
  return nullptr;
}

const Sysctl* FindSysctl(const LimitsPlan& lp, const std::string& path) {
  for (const auto& s : lp.sysctls) {
    if (s.path == path) return &s;
  }
  return nullptr;
}

const LimitLine* FindLine(const LimitsPlan& lp, const std::string& limit) {
  for (const auto& l : lp.spec.lines) {
    if (l.limit == limit) return &l;
  }
  return nullptr;
}

LimitsPlan MustPlan(const policy::Policy& p, const KernelFeatures& f, uid_t uid) {
  Result<LimitsPlan> r = PlanLimits(p, f, uid);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : LimitsPlan();
}

TEST(PlanLimits, NoLimitsNeedNoCgroupButEveryRunGetsItsShare) {
  LimitsPlan lp = MustPlan(policy::Policy(), V1Host(), kRoot);
  EXPECT_EQ(lp.spec.backend, LimitsBackend::kNone);
  EXPECT_EQ(lp.spec.cgroup.version, 0);
  EXPECT_EQ(lp.spec.timeout_ms, 0u);
  EXPECT_TRUE(lp.degraded.empty());
  for (const char* ns : {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup", "time"}) {
    const Sysctl* s = FindSysctl(lp, std::string("user/max_") + ns + "_namespaces");
    ASSERT_NE(s, nullptr) << ns;
    EXPECT_EQ(s->value, "0") << ns;
  }
  EXPECT_FALSE(FindSysctl(lp, "user/max_user_namespaces")->optional);
  EXPECT_TRUE(FindSysctl(lp, "user/max_time_namespaces")->optional);  // Linux >= 5.6 only
  EXPECT_EQ(FindSysctl(lp, "user/max_inotify_instances")->value, "64");
  EXPECT_EQ(FindSysctl(lp, "user/max_inotify_watches")->value, "32768");
  EXPECT_EQ(FindSysctl(lp, "user/max_fanotify_groups")->value, "64");
  EXPECT_EQ(FindSysctl(lp, "user/max_fanotify_marks")->value, "4096");
  const ProcessSpec::Rlimit* mq = FindRlimit(lp, RLIMIT_MSGQUEUE);
  ASSERT_NE(mq, nullptr);
  EXPECT_EQ(mq->soft, 409600u);
  EXPECT_EQ(mq->hard, 409600u);
  EXPECT_EQ(FindRlimit(lp, RLIMIT_SIGPENDING)->hard, 31500u);
  const ProcessSpec::Rlimit* nofile = FindRlimit(lp, RLIMIT_NOFILE);
  ASSERT_NE(nofile, nullptr);
  EXPECT_EQ(nofile->soft, 1024u);
  EXPECT_EQ(nofile->hard, kMaxOpenFiles);
  EXPECT_EQ(FindRlimit(lp, RLIMIT_DATA), nullptr);
  EXPECT_EQ(FindRlimit(lp, RLIMIT_NPROC), nullptr);
}

TEST(PlanLimits, V1HostUsesTheV1ControllersForMemoryPidsAndCpu) {
  LimitsPlan lp = MustPlan(WithLimits(64ull << 20, 20, 0.5), V1Host(), kRoot);
  EXPECT_EQ(lp.spec.backend, LimitsBackend::kCgroupV1);
  const CgroupSpec& c = lp.spec.cgroup;
  EXPECT_EQ(c.version, 1);
  EXPECT_EQ(c.v1_memory_parent, "/sys/fs/cgroup/memory/session");
  EXPECT_EQ(c.v1_pids_parent, "/sys/fs/cgroup/pids");
  EXPECT_EQ(c.v1_cpu_parent, "/sys/fs/cgroup/cpu");
  EXPECT_TRUE(c.v1_memsw);
  EXPECT_EQ(c.memory_bytes, 64ull << 20);
  EXPECT_EQ(c.pids, 20u);
  EXPECT_EQ(c.cpu_quota_us, 50000u);
  EXPECT_EQ(c.cpu_period_us, kCpuPeriodUs);
  EXPECT_TRUE(c.v2_parent.empty());
  // No rlimit stands in for what the cgroup enforces.
  EXPECT_EQ(FindRlimit(lp, RLIMIT_DATA), nullptr);
  EXPECT_EQ(FindRlimit(lp, RLIMIT_NPROC), nullptr);
  EXPECT_NE(FindLine(lp, "memory")->mechanism.find("memory.limit_in_bytes"), std::string::npos);
  EXPECT_NE(FindLine(lp, "memory")->mechanism.find("memsw"), std::string::npos);
  EXPECT_EQ(FindLine(lp, "memory")->origin, "cli (--memory)");
  EXPECT_TRUE(lp.degraded.empty());
}

TEST(PlanLimits, OnlyTheControllersInUseAreCreated) {
  LimitsPlan lp = MustPlan(WithLimits(std::nullopt, 10, std::nullopt), V1Host(), kRoot);
  EXPECT_EQ(lp.spec.cgroup.version, 1);
  EXPECT_TRUE(lp.spec.cgroup.v1_memory_parent.empty());
  EXPECT_EQ(lp.spec.cgroup.v1_pids_parent, "/sys/fs/cgroup/pids");
  EXPECT_TRUE(lp.spec.cgroup.v1_cpu_parent.empty());
}

TEST(PlanLimits, DelegatedV2IsPreferred) {
  KernelFeatures f = V2Host();
  f.cgroup.v1_memory = f.cgroup.v1_pids = f.cgroup.v1_cpu = true;  // both available: v2 wins
  f.cgroup.v1_memory_writable = f.cgroup.v1_pids_writable = f.cgroup.v1_cpu_writable = true;
  LimitsPlan lp = MustPlan(WithLimits(1ull << 30, 100, 2), f, kUser);
  EXPECT_EQ(lp.spec.backend, LimitsBackend::kCgroupV2);
  const CgroupSpec& c = lp.spec.cgroup;
  EXPECT_EQ(c.version, 2);
  EXPECT_EQ(c.v2_parent, f.cgroup.v2_parent);
  EXPECT_TRUE(c.v2_parent_is_own);
  EXPECT_TRUE(c.v1_memory_parent.empty());
  EXPECT_EQ(c.cpu_quota_us, 200000u);
  EXPECT_NE(FindLine(lp, "memory")->mechanism.find("memory.oom.group"), std::string::npos);
  EXPECT_NE(FindLine(lp, "cpu")->mechanism.find("cpu.max"), std::string::npos);
}

TEST(PlanLimits, AWritableV2WithoutControllersIsNotUsed) {
  // The test machines: cgroup2 mounted and writable by root, every controller on v1.
  CgroupChoice c = ChooseCgroup(V1Host().cgroup, true, true, true);
  EXPECT_EQ(c.version, 1);
  KernelFeatures f = RlimitsHost();
  f.cgroup.v2_delegated = true;  // writable, controllers empty
  c = ChooseCgroup(f.cgroup, true, true, false);
  EXPECT_EQ(c.version, 0);
}

TEST(PlanLimits, TheVersionCoveringMoreControllersWins) {
  KernelFeatures f = V1Host();
  f.cgroup.v2_controllers = {"memory"};  // v2 covers memory only, v1 covers all three
  CgroupChoice c = ChooseCgroup(f.cgroup, true, true, true);
  EXPECT_EQ(c.version, 1);
  EXPECT_TRUE(c.memory && c.pids && c.cpu);
  // Nothing wanted: no cgroup at all.
  EXPECT_EQ(ChooseCgroup(f.cgroup, false, false, false).version, 0);
}

TEST(PlanLimits, PartialCgroupFallsBackPerLimit) {
  KernelFeatures f = V1Host();
  f.cgroup.v1_pids_writable = false;
  LimitsPlan lp = MustPlan(WithLimits(1ull << 30, 50, std::nullopt), f, kUser);
  EXPECT_EQ(lp.spec.backend, LimitsBackend::kCgroupV1);
  EXPECT_EQ(lp.spec.cgroup.memory_bytes, 1ull << 30);
  EXPECT_FALSE(lp.spec.cgroup.pids.has_value());
  EXPECT_TRUE(lp.spec.cgroup.v1_pids_parent.empty());
  const ProcessSpec::Rlimit* nproc = FindRlimit(lp, RLIMIT_NPROC);
  ASSERT_NE(nproc, nullptr);
  EXPECT_EQ(nproc->hard, 50u);
}

TEST(PlanLimits, RlimitsHostUsesDataAndNprocForAnUnprivilegedCaller) {
  LimitsPlan lp = MustPlan(WithLimits(8ull << 30, 1024, std::nullopt), RlimitsHost(), kUser);
  EXPECT_EQ(lp.spec.backend, LimitsBackend::kRlimits);
  EXPECT_EQ(lp.spec.cgroup.version, 0);
  const ProcessSpec::Rlimit* data = FindRlimit(lp, RLIMIT_DATA);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->soft, 8ull << 30);
  EXPECT_EQ(data->hard, 8ull << 30);
  EXPECT_EQ(FindRlimit(lp, RLIMIT_AS), nullptr);  // JITs reserve large PROT_NONE regions
  const ProcessSpec::Rlimit* nproc = FindRlimit(lp, RLIMIT_NPROC);
  ASSERT_NE(nproc, nullptr);
  EXPECT_EQ(nproc->soft, 1024u);
  EXPECT_NE(FindLine(lp, "pids")->mechanism.find("user namespace"), std::string::npos);
  EXPECT_TRUE(lp.degraded.empty());
}

TEST(PlanLimits, CpuWithoutACgroupIsRefusedUnlessDegradedIsAllowed) {
  policy::Policy p = WithLimits(std::nullopt, std::nullopt, 0.5);
  Result<LimitsPlan> r = PlanLimits(p, RlimitsHost(), kUser);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("cpu 0.5 cores"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("--cpu"), std::string::npos);
  EXPECT_NE(r.status().message().find("--allow-degraded=limits"), std::string::npos);
  AllowDegraded(&p);
  LimitsPlan lp = MustPlan(p, RlimitsHost(), kUser);
  ASSERT_EQ(lp.degraded.size(), 1u);
  EXPECT_NE(lp.degraded[0].find("cpu"), std::string::npos);
  EXPECT_NE(lp.degraded[0].find("--allow-degraded"), std::string::npos);
  EXPECT_FALSE(FindLine(lp, "cpu")->enforced);
  EXPECT_EQ(lp.spec.backend, LimitsBackend::kRlimits);
  EXPECT_FALSE(lp.spec.cgroup.cpu_quota_us.has_value());
}

TEST(PlanLimits, RootIsExemptFromNprocSoPidsNeedACgroup) {
  Result<LimitsPlan> r = PlanLimits(WithLimits(std::nullopt, 100, std::nullopt), RlimitsHost(), 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("pids 100"), std::string::npos);
  EXPECT_NE(r.status().message().find("uid 0"), std::string::npos);
  // Memory alone still works for root (RLIMIT_DATA has no such exemption).
  LimitsPlan lp = MustPlan(WithLimits(1ull << 30, std::nullopt, std::nullopt), RlimitsHost(), 0);
  EXPECT_NE(FindRlimit(lp, RLIMIT_DATA), nullptr);
}

TEST(PlanLimits, OldKernelsCountNprocForTheWholeUid) {
  KernelFeatures f = RlimitsHost();
  f.host_limits.nproc_per_userns = false;
  Result<LimitsPlan> r = PlanLimits(WithLimits(std::nullopt, 100, std::nullopt), f, kUser);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("5.14"), std::string::npos);
}

TEST(PlanLimits, SeveralUnenforceableLimitsAreAllNamed) {
  KernelFeatures f = RlimitsHost();
  f.host_limits.nproc_per_userns = false;
  Result<LimitsPlan> r = PlanLimits(WithLimits(1ull << 30, 100, 1.5), f, kUser);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("pids 100"), std::string::npos);
  EXPECT_NE(r.status().message().find("cpu 1.5 cores"), std::string::npos);
  EXPECT_NE(r.status().message().find("limits on this host"), std::string::npos);
}

TEST(PlanLimits, RlimitsNeverAskForMoreThanTheCallerHas) {
  KernelFeatures f = RlimitsHost();
  f.host_limits.data = {4ull << 30, 4ull << 30};
  f.host_limits.nproc = {500, 500};
  f.host_limits.fsize = {1ull << 20, 1ull << 20};
  policy::Policy p = WithLimits(UINT64_MAX, UINT64_MAX, std::nullopt);
  p.limits.file_size_bytes = 1ull << 40;
  LimitsPlan lp = MustPlan(p, f, kUser);
  EXPECT_EQ(FindRlimit(lp, RLIMIT_DATA)->hard, 4ull << 30);
  EXPECT_EQ(FindRlimit(lp, RLIMIT_NPROC)->hard, 500u);
  EXPECT_EQ(FindRlimit(lp, RLIMIT_FSIZE)->hard, 1ull << 20);
  f.host_limits.nofile = {100, 200};
  lp = MustPlan(policy::Policy(), f, kUser);
  EXPECT_EQ(FindRlimit(lp, RLIMIT_NOFILE)->soft, 100u);
  EXPECT_EQ(FindRlimit(lp, RLIMIT_NOFILE)->hard, 200u);
}

TEST(PlanLimits, TinyCpuQuotaIsClampedToTheKernelMinimum) {
  LimitsPlan lp = MustPlan(WithLimits(std::nullopt, std::nullopt, 0.001), V1Host(), kRoot);
  EXPECT_EQ(lp.spec.cgroup.cpu_quota_us, kMinCpuQuotaUs);
  lp = MustPlan(WithLimits(std::nullopt, std::nullopt, 1024), V1Host(), kRoot);
  EXPECT_EQ(lp.spec.cgroup.cpu_quota_us, 1024 * kCpuPeriodUs);
}

TEST(PlanLimits, TimeoutFileSizeAndTmpSizeAreBackendIndependent) {
  policy::Policy p;
  p.limits.timeout_ms = 1500;
  p.limits.file_size_bytes = 1 << 20;
  p.limits.tmp_size_bytes = 8 << 20;
  LimitsPlan lp = MustPlan(p, RlimitsHost(), kUser);
  EXPECT_EQ(lp.spec.timeout_ms, 1500u);
  EXPECT_EQ(lp.spec.grace_ms, kTimeoutGraceMs);
  EXPECT_EQ(lp.spec.backend, LimitsBackend::kNone);  // nothing here needs a cgroup
  EXPECT_EQ(FindRlimit(lp, RLIMIT_FSIZE)->hard, 1u << 20);
  EXPECT_NE(FindLine(lp, "timeout"), nullptr);
  EXPECT_NE(FindLine(lp, "tmp_size")->mechanism.find("tmpfs"), std::string::npos);
}

TEST(PlanLimits, UnknownOrInfiniteHostValuesAddNothingBogus) {
  KernelFeatures f = RlimitsHost();
  f.host_limits.inotify_instances = 0;  // unreadable
  f.host_limits.inotify_watches = 1;    // halving must not reach 0
  f.host_limits.fanotify_groups = 0;
  f.host_limits.fanotify_marks = 0;
  f.host_limits.time_namespaces = false;
  f.host_limits.msgqueue = {RLIM_INFINITY, RLIM_INFINITY};
  f.host_limits.sigpending = {1, 1};
  LimitsPlan lp = MustPlan(policy::Policy(), f, kUser);
  EXPECT_EQ(FindSysctl(lp, "user/max_inotify_instances"), nullptr);
  EXPECT_EQ(FindSysctl(lp, "user/max_inotify_watches")->value, "1");
  EXPECT_EQ(FindSysctl(lp, "user/max_fanotify_groups"), nullptr);
  EXPECT_EQ(FindSysctl(lp, "user/max_time_namespaces"), nullptr);
  EXPECT_EQ(FindRlimit(lp, RLIMIT_MSGQUEUE), nullptr);
  EXPECT_EQ(FindRlimit(lp, RLIMIT_SIGPENDING), nullptr);
  for (const auto& s : lp.sysctls) EXPECT_NE(s.value, "") << s.path;
}

// The built-in default profile must run unprivileged without a cgroup (and not be refused).
TEST(PlanLimits, DefaultProfileIsEnforceableByRlimitsForUsers) {
  policy::RunFlags flags;
  policy::Context ctx{"/home/u", "/home/u/proj", "/home/u/proj", ""};
  Result<policy::Policy> p = policy::LoadPolicy(
      flags, ctx, [](const std::string& path) -> Result<std::string> { return NotFound(path); });
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(p->limits.memory_bytes.has_value());
  ASSERT_TRUE(p->limits.pids.has_value());
  ASSERT_TRUE(p->limits.tmp_size_bytes.has_value());
  EXPECT_EQ(*p->limits.memory_bytes, 8ull << 30);
  EXPECT_EQ(*p->limits.pids, 1024u);
  EXPECT_EQ(*p->limits.tmp_size_bytes, 2ull << 30);
  LimitsPlan lp = MustPlan(*p, RlimitsHost(), kUser);
  EXPECT_TRUE(lp.degraded.empty());
  EXPECT_EQ(lp.spec.backend, LimitsBackend::kRlimits);
  lp = MustPlan(*p, V1Host(), kRoot);
  EXPECT_EQ(lp.spec.backend, LimitsBackend::kCgroupV1);
}

// A container's cgroup where its engine names it: below each hierarchy's root rather than ward's
// own cgroup, in every hierarchy ward may write (accounting ones too), limits or not.
TEST(PlanEngineCgroup, TheEnginesPathIsMadeInEveryHierarchyWardMayWrite) {
  KernelFeatures f = V1Host();
  f.cgroup.v1_memory_mount = "/sys/fs/cgroup/memory";
  f.cgroup.v1_pids_mount = "/sys/fs/cgroup/pids";
  f.cgroup.v1_cpu_mount = "/sys/fs/cgroup/cpu";
  f.cgroup.v1_accounting_mounts = {"/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/blkio"};
  // No limit: a cgroup all the same, for the engine's statistics and the pod's limits.
  LimitsPlan none = MustPlan(policy::Policy(), f, kRoot);
  PlanEngineCgroup(f.cgroup, "/kubepods/pod1/c1", true, &none.spec);
  const CgroupSpec& c = none.spec.cgroup;
  EXPECT_EQ(none.spec.backend, LimitsBackend::kCgroupV1);
  EXPECT_EQ(c.version, 1);
  EXPECT_EQ(c.fixed_leaf, "/kubepods/pod1/c1");
  EXPECT_EQ(c.v1_memory_parent, "/sys/fs/cgroup/memory");  // the root, not ward's own cgroup
  EXPECT_EQ(c.v1_pids_parent, "/sys/fs/cgroup/pids");
  EXPECT_EQ(c.v1_cpu_parent, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(c.v1_accounting_parents, f.cgroup.v1_accounting_mounts);
  EXPECT_FALSE(c.memory_bytes.has_value());
  const LimitLine* line = nullptr;
  for (const LimitLine& l : none.spec.lines) {
    if (l.limit == "cgroup") line = &l;
  }
  ASSERT_NE(line, nullptr);
  EXPECT_EQ(line->value, "/kubepods/pod1/c1");
  EXPECT_EQ(line->origin, "config.json linux.cgroupsPath");
  // With limits: the same limits, at the engine's path.
  LimitsPlan some = MustPlan(WithLimits(64 << 20, 100, std::nullopt), f, kRoot);
  PlanEngineCgroup(f.cgroup, "/docker/c2", true, &some.spec);
  EXPECT_EQ(some.spec.cgroup.memory_bytes, 64u << 20);
  EXPECT_EQ(some.spec.cgroup.pids, 100u);
  EXPECT_EQ(some.spec.cgroup.v1_memory_parent, "/sys/fs/cgroup/memory");
  EXPECT_EQ(some.spec.cgroup.v1_cpu_parent, "/sys/fs/cgroup/cpu");
  // "" changes nothing.
  LimitsPlan own = MustPlan(WithLimits(64 << 20, std::nullopt, std::nullopt), f, kRoot);
  PlanEngineCgroup(f.cgroup, "", true, &own.spec);
  EXPECT_EQ(own.spec.cgroup.fixed_leaf, "");
  EXPECT_EQ(own.spec.cgroup.v1_memory_parent, "/sys/fs/cgroup/memory/session");
}

TEST(PlanEngineCgroup, OnV2TheLeafIsBelowTheMountAndNotUsedByAUserOrWhereNothingIsWritable) {
  KernelFeatures v2 = V2Host();
  LimitsPlan lp = MustPlan(WithLimits(64 << 20, std::nullopt, std::nullopt), v2, kUser);
  // A rootless engine's path: not used; the run keeps its own cgroup in the user's subtree.
  PlanEngineCgroup(v2.cgroup, "/user.slice/c.scope", false, &lp.spec);
  EXPECT_EQ(lp.spec.cgroup.fixed_leaf, "");
  EXPECT_EQ(lp.spec.cgroup.v2_parent, v2.cgroup.v2_parent);
  PlanEngineCgroup(v2.cgroup, "/kubepods.slice/c.scope", true, &lp.spec);
  EXPECT_EQ(lp.spec.cgroup.version, 2);
  EXPECT_EQ(lp.spec.cgroup.v2_parent, "/sys/fs/cgroup");
  EXPECT_FALSE(lp.spec.cgroup.v2_parent_is_own);
  EXPECT_EQ(lp.spec.cgroup.fixed_leaf, "/kubepods.slice/c.scope");
  // An unprivileged engine's path on a host ward may write nothing of: not used, and said
  // nowhere as a cgroup of the container's.
  LimitsPlan none = MustPlan(policy::Policy(), RlimitsHost(), kUser);
  PlanEngineCgroup(RlimitsHost().cgroup, "/user/c", true, &none.spec);
  EXPECT_EQ(none.spec.cgroup.version, 0);
  EXPECT_EQ(none.spec.cgroup.fixed_leaf, "");
  EXPECT_EQ(FindLine(none, "cgroup"), nullptr);
}

TEST(DescribeLimitsMechanism, NamesTheBackendAndWhatCannotBeEnforced) {
  LimitsMechanism m = DescribeLimitsMechanism(V1Host(), kRoot);
  EXPECT_EQ(m.backend, LimitsBackend::kCgroupV1);
  EXPECT_EQ(m.summary, "cgroup v1 (memory, pids, cpu) below /sys/fs/cgroup/memory/session");
  EXPECT_EQ(m.cpu, "cgroup v1");
  m = DescribeLimitsMechanism(V2Host(), kUser);
  EXPECT_EQ(m.backend, LimitsBackend::kCgroupV2);
  EXPECT_NE(m.summary.find("cgroup v2 (memory, pids, cpu) in /sys/fs/cgroup/user.slice"),
            std::string::npos);
  m = DescribeLimitsMechanism(RlimitsHost(), kUser);
  EXPECT_EQ(m.backend, LimitsBackend::kRlimits);
  EXPECT_EQ(m.pids, "RLIMIT_NPROC (per user namespace)");
  EXPECT_EQ(m.cpu, "");
  EXPECT_FALSE(m.cpu_why_not.empty());
  m = DescribeLimitsMechanism(RlimitsHost(), kRoot);
  EXPECT_EQ(m.pids, "");
  EXPECT_NE(m.pids_why_not.find("uid 0"), std::string::npos);
}

TEST(LimitsSummary, NamesTheBackendEveryLimitAndWhatIsNotEnforced) {
  policy::Policy p = WithLimits(64ull << 20, 20, 0.5);
  AllowDegraded(&p);
  LimitsPlan lp = MustPlan(p, RlimitsHost(), kUser);
  std::string s = LimitsSummary(lp.spec);
  EXPECT_EQ(s.rfind("rlimits: memory 64 MiB (RLIMIT_DATA", 0), 0u) << s;
  EXPECT_NE(s.find("; pids 20 (RLIMIT_NPROC 20"), std::string::npos) << s;
  EXPECT_NE(s.find("; cpu 0.5 cores (NOT ENFORCED: "), std::string::npos) << s;
  EXPECT_NE(s.find("open files"), std::string::npos) << s;
  lp = MustPlan(WithLimits(64ull << 20, 20, 0.5), V1Host(), kRoot);
  s = LimitsSummary(lp.spec);
  EXPECT_EQ(s.rfind("cgroup v1: memory 64 MiB (cgroup v1 memory.limit_in_bytes", 0), 0u) << s;
  EXPECT_EQ(s.find("NOT ENFORCED"), std::string::npos) << s;
}

TEST(FormatSize, BinaryUnits) {
  EXPECT_EQ(FormatSize(0), "0 bytes");
  EXPECT_EQ(FormatSize(1), "1 byte");
  EXPECT_EQ(FormatSize(1023), "1023 bytes");
  EXPECT_EQ(FormatSize(1024), "1 KiB");
  EXPECT_EQ(FormatSize(64ull << 20), "64 MiB");
  EXPECT_EQ(FormatSize(3ull << 29), "1.5 GiB");
  EXPECT_EQ(FormatSize(8ull << 30), "8 GiB");
  EXPECT_EQ(FormatSize(UINT64_MAX), "16 EiB");
}

}  // namespace
}  // namespace ward::enforce
