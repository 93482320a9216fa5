#include "enforce/limits.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/format.h"

namespace ward::enforce {
namespace {

std::string OriginOf(const policy::Limits& l, const std::string& key) {
  auto it = l.origins.find(key);
  return it == l.origins.end() ? std::string() : it->second.ToString();
}

std::string FormatCores(double cores) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", cores);
  return std::string(buf) + (cores == 1 ? " core" : " cores");
}

// Never asks for more than the caller has: raising a hard limit needs privileges outside.
rlim_t Clamp(uint64_t want, const HostLimits::Pair& have) {
  return static_cast<rlim_t>(std::min<unsigned long long>(want, have.hard));
}

// Half of what the caller may have, so that the sandbox cannot take all of it.
void AddHalf(int resource, const HostLimits::Pair& have, std::vector<ProcessSpec::Rlimit>* out) {
  if (have.soft == RLIM_INFINITY || have.soft < 2 || !have.settable) return;
  rlim_t v = static_cast<rlim_t>(have.soft / 2);
  out->push_back({resource, v, v});
}

std::string CgroupName(int version) { return version == 2 ? "cgroup v2" : "cgroup v1"; }

std::string NprocWhyNot(const KernelFeatures& f, uid_t uid) {
  if (uid == 0) {
    return "the kernel exempts uid 0 from RLIMIT_NPROC and no writable cgroup with the pids "
           "controller was found";
  }
  if (!f.host_limits.nproc_per_userns) {
    return "RLIMIT_NPROC would count every process of uid " + std::to_string(uid) +
           " on the host (Linux < 5.14) and no writable cgroup with the pids controller was found";
  }
  return "";
}

// What to do when our own cgroup is delegated but shared with other processes.
std::string V2BusyAdvice(const CgroupInfo& cg) {
  return cg.v2_own_busy +
         "; for whole-sandbox limits run ward in a cgroup of its own: systemd-run --user --scope "
         "-p Delegate=yes ward run ..., or set WARD_CGROUP_ROOT to an empty delegated cgroup";
}

std::string CpuWhyNot(const KernelFeatures& f) {
  if (!f.cgroup.v2_own_busy.empty()) {
    return "needs a writable cgroup with the cpu controller (" + V2BusyAdvice(f.cgroup) + ")";
  }
  return "needs a writable cgroup with the cpu controller (none here)";
}

// The plan as each limit is decided: its lines in order, and the limits nothing here enforces.
class LimitsDraft {
 public:
  explicit LimitsDraft(const policy::Limits& limits) : limits_(limits) {}

  LimitsPlan out;
  std::vector<std::string> unenforced;  // "cpu 0.5 cores (cli (--cpu)): why"
  bool wants_rlimit_fallback = false;

  void Line(const std::string& key, std::string value, std::string mechanism,
            bool enforced = true) {
    out.spec.lines.push_back(
        {key, std::move(value), std::move(mechanism), enforced, OriginOf(limits_, key)});
  }

  void Cannot(const std::string& key, const std::string& value, const std::string& why) {
    std::string origin = OriginOf(limits_, key);
    unenforced.push_back(key + " " + value + (origin.empty() ? "" : " (" + origin + ")") + ": " +
                         why);
    Line(key, value, "not enforced: " + why, false);
  }

 private:
  const policy::Limits& limits_;
};

void PlanMemory(uint64_t m, const CgroupChoice& cg, const KernelFeatures& f, LimitsDraft* d) {
  if (cg.memory) {
    d->out.spec.cgroup.memory_bytes = m;
    d->Line("memory", FormatSize(m),
            cg.version == 2
                ? "cgroup v2 memory.max (whole sandbox), memory.swap.max 0, memory.oom.group"
                : std::string("cgroup v1 memory.limit_in_bytes (whole sandbox)") +
                      (f.cgroup.v1_memsw ? " and memory.memsw.limit_in_bytes (no swap)" : ""));
    return;
  }
  // RLIMIT_DATA, not RLIMIT_AS: JIT runtimes reserve large PROT_NONE regions.
  d->wants_rlimit_fallback = true;
  rlim_t v = Clamp(m, f.host_limits.data);
  d->out.rlimits.push_back({RLIMIT_DATA, v, v});
  d->Line("memory", FormatSize(m),
          "RLIMIT_DATA " + FormatSize(v) +
              " per process (no cgroup here: shared memory, tmpfs and the sum over processes "
              "are not counted)");
}

void PlanPids(uint64_t n, const CgroupChoice& cg, const KernelFeatures& f, uid_t uid,
              LimitsDraft* d) {
  if (cg.pids) {
    d->out.spec.cgroup.pids = n;
    d->Line("pids", std::to_string(n), CgroupName(cg.version) + " pids.max (whole sandbox)");
    return;
  }
  d->wants_rlimit_fallback = true;
  std::string why = NprocWhyNot(f, uid);
  if (!why.empty()) {
    d->Cannot("pids", std::to_string(n), why);
    return;
  }
  rlim_t v = Clamp(n, f.host_limits.nproc);
  d->out.rlimits.push_back({RLIMIT_NPROC, v, v});
  d->Line("pids", std::to_string(n),
          "RLIMIT_NPROC " + std::to_string(v) +
              " (counted in the sandbox's own user namespace: processes and threads inside)");
}

void PlanCpu(double c, const CgroupChoice& cg, const KernelFeatures& f, LimitsDraft* d) {
  if (!cg.cpu) {
    d->wants_rlimit_fallback = true;
    d->Cannot("cpu", FormatCores(c), CpuWhyNot(f));
    return;
  }
  // Rounded to the nearest microsecond (c > 0; no llround, which lives in libm).
  long long q = static_cast<long long>(c * static_cast<double>(kCpuPeriodUs) + 0.5);
  uint64_t quota = std::max<uint64_t>(q > 0 ? static_cast<uint64_t>(q) : 0, kMinCpuQuotaUs);
  d->out.spec.cgroup.cpu_quota_us = quota;
  d->out.spec.cgroup.cpu_period_us = kCpuPeriodUs;
  d->Line("cpu", FormatCores(c),
          CgroupName(cg.version) + (cg.version == 2 ? " cpu.max " : " cpu.cfs_quota_us ") +
              std::to_string(quota) + " per " + std::to_string(kCpuPeriodUs) + " us");
}

// The limits enforced the same way whatever the backend.
void PlanBackendFreeLimits(const policy::Limits& l, const HostLimits& host, LimitsDraft* d) {
  if (l.timeout_ms) {
    d->out.spec.timeout_ms = *l.timeout_ms;
    d->out.spec.grace_ms = kTimeoutGraceMs;
    d->Line("timeout", FormatMs(*l.timeout_ms),
            "supervisor timer: SIGTERM to everything inside, SIGKILL " + FormatMs(kTimeoutGraceMs) +
                " later; exit status 124");
  }
  if (l.tmp_size_bytes) {
    d->Line("tmp_size", FormatSize(*l.tmp_size_bytes),
            "tmpfs size of the private /tmp and of HOME");
  }
  if (l.file_size_bytes) {
    rlim_t v = Clamp(*l.file_size_bytes, host.fsize);
    d->out.rlimits.push_back({RLIMIT_FSIZE, v, v});
    d->Line("file_size", FormatSize(*l.file_size_bytes), "RLIMIT_FSIZE (SIGXFSZ beyond it)");
  }
}

// The limits nothing here enforces refuse the run, unless the policy allows degraded limits:
// then each is noted in `degraded`.
Status AcceptUnenforced(const policy::Policy& policy, const std::vector<std::string>& unenforced,
                        std::vector<std::string>* degraded) {
  if (unenforced.empty()) return Ok();
  if (policy.allow_degraded.count(policy::Layer::kLimits) == 0) {
    std::string msg = "cannot enforce the requested resource limit";
    msg += unenforced.size() > 1 ? "s" : "";
    msg += " on this host: ";
    for (size_t i = 0; i < unenforced.size(); ++i) msg += (i ? "; " : "") + unenforced[i];
    msg += ". Pass --allow-degraded=limits to run without ";
    msg += unenforced.size() > 1 ? "them" : "it";
    return Error(Code::kFailedPrecondition, msg);
  }
  std::string by = policy.degraded_origins.count(policy::Layer::kLimits)
                       ? policy.degraded_origins.at(policy::Layer::kLimits).ToString()
                       : "--allow-degraded=limits";
  for (const auto& u : unenforced) {
    degraded->push_back("limits: " + u + " (not enforced; allowed by " + by + ")");
  }
  return Ok();
}

// What enforces the limits: the chosen cgroup and where it is made, or rlimits alone.
void PlanBackend(const CgroupChoice& cg, const CgroupInfo& info, bool wants_rlimit_fallback,
                 LimitsSpec* spec) {
  if (cg.version == 0) {
    if (wants_rlimit_fallback) spec->backend = LimitsBackend::kRlimits;
    return;
  }
  spec->backend = cg.version == 2 ? LimitsBackend::kCgroupV2 : LimitsBackend::kCgroupV1;
  CgroupSpec& c = spec->cgroup;
  c.version = cg.version;
  if (cg.version == 2) {
    c.v2_parent = info.v2_parent;
    c.v2_parent_is_own = info.v2_parent_is_own;
    c.v2_parent_create = info.v2_parent_create;
    return;
  }
  if (cg.memory) c.v1_memory_parent = info.v1_memory_dir;
  if (cg.pids) c.v1_pids_parent = info.v1_pids_dir;
  if (cg.cpu) c.v1_cpu_parent = info.v1_cpu_dir;
  c.v1_memsw = info.v1_memsw;
}

// Every run: the sandbox's share of per-user kernel objects, as sysctls of its user namespace.
void PlanPerUserKernelObjects(const HostLimits& host, LimitsDraft* d) {
  std::vector<Sysctl>& sysctls = d->out.sysctls;
  // Nested namespaces of any kind (seccomp denies them too; this holds without it).
  for (const char* ns : {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"}) {
    sysctls.push_back({std::string("user/max_") + ns + "_namespaces", "0", false});
  }
  if (host.time_namespaces) sysctls.push_back({"user/max_time_namespaces", "0", true});
  // inotify and fanotify objects count against the caller's uid outside too: half of it.
  auto half = [&](const char* name, long host_value) {
    if (host_value <= 0) return;
    sysctls.push_back(
        {std::string("user/") + name, std::to_string(std::max(1L, host_value / 2)), true});
  };
  half("max_inotify_instances", host.inotify_instances);
  half("max_inotify_watches", host.inotify_watches);
  half("max_fanotify_groups", host.fanotify_groups);
  half("max_fanotify_marks", host.fanotify_marks);
  std::string notify = "user.max_*_namespaces 0";
  if (host.inotify_instances > 0) {
    notify += "; inotify at most " + std::to_string(std::max(1L, host.inotify_instances / 2)) +
              " instances and " + std::to_string(std::max(1L, host.inotify_watches / 2)) +
              " watches (half of the caller's)";
  }
  d->Line("kernel objects", "per user namespace", notify);
}

// Every run: the rlimits on what the kernel counts per uid, and on open files.
void PlanPerUidRlimits(const HostLimits& host, LimitsDraft* d) {
  // POSIX message queue bytes and queued signals are counted per uid outside as well.
  AddHalf(RLIMIT_MSGQUEUE, host.msgqueue, &d->out.rlimits);
  AddHalf(RLIMIT_SIGPENDING, host.sigpending, &d->out.rlimits);
  rlim_t hard = static_cast<rlim_t>(std::min<unsigned long long>(host.nofile.hard, kMaxOpenFiles));
  rlim_t soft = static_cast<rlim_t>(std::min<unsigned long long>(host.nofile.soft, hard));
  d->out.rlimits.push_back({RLIMIT_NOFILE, soft, hard});
  d->Line("open files", std::to_string(hard), "RLIMIT_NOFILE per process");
}

}  // namespace

const char* LimitsBackendName(LimitsBackend b) {
  switch (b) {
    case LimitsBackend::kNone:
      return "none";
    case LimitsBackend::kCgroupV2:
      return "cgroup v2";
    case LimitsBackend::kCgroupV1:
      return "cgroup v1";
    case LimitsBackend::kRlimits:
      return "rlimits";
  }
  return "unknown";
}

CgroupChoice ChooseCgroup(const CgroupInfo& cg, bool memory, bool pids, bool cpu) {
  CgroupChoice v2, v1;
  v2.version = 2;
  v1.version = 1;
  if (cg.v2_delegated) {
    v2.memory = memory && cg.V2Has("memory");
    v2.pids = pids && cg.V2Has("pids");
    v2.cpu = cpu && cg.V2Has("cpu");
  }
  v1.memory = memory && cg.v1_memory_writable;
  v1.pids = pids && cg.v1_pids_writable;
  v1.cpu = cpu && cg.v1_cpu_writable;
  auto count = [](const CgroupChoice& c) { return int(c.memory) + int(c.pids) + int(c.cpu); };
  int n2 = count(v2), n1 = count(v1);
  if (n2 == 0 && n1 == 0) return CgroupChoice();
  return n2 >= n1 ? v2 : v1;
}

Result<LimitsPlan> PlanLimits(const policy::Policy& policy, const KernelFeatures& f, uid_t uid) {
  const policy::Limits& l = policy.limits;
  CgroupChoice cg = ChooseCgroup(f.cgroup, l.memory_bytes.has_value(), l.pids.has_value(),
                                 l.cpu_cores.has_value());
  LimitsDraft draft(l);
  if (l.memory_bytes) PlanMemory(*l.memory_bytes, cg, f, &draft);
  if (l.pids) PlanPids(*l.pids, cg, f, uid, &draft);
  if (l.cpu_cores) PlanCpu(*l.cpu_cores, cg, f, &draft);
  PlanBackendFreeLimits(l, f.host_limits, &draft);
  WARD_TRY(AcceptUnenforced(policy, draft.unenforced, &draft.out.degraded));
  PlanBackend(cg, f.cgroup, draft.wants_rlimit_fallback, &draft.out.spec);
  PlanPerUserKernelObjects(f.host_limits, &draft);
  PlanPerUidRlimits(f.host_limits, &draft);
  return std::move(draft.out);
}

void PlanEngineCgroup(const CgroupInfo& info, const std::string& path, bool root,
                      LimitsSpec* spec) {
  if (path.empty() || !root) return;
  CgroupSpec& c = spec->cgroup;
  if (c.version == 0) {
    const CgroupChoice any = ChooseCgroup(info, true, true, true);
    if (any.version == 0) return;
    c.version = any.version;
    spec->backend = any.version == 2 ? LimitsBackend::kCgroupV2 : LimitsBackend::kCgroupV1;
  }
  c.fixed_leaf = path;
  if (c.version == 2) {
    c.v2_parent = info.v2_path;
    c.v2_parent_is_own = false;
    c.v2_parent_create = false;
  } else {
    c.v1_memory_parent = info.v1_memory_writable ? info.v1_memory_mount : "";
    c.v1_pids_parent = info.v1_pids_writable ? info.v1_pids_mount : "";
    c.v1_cpu_parent = info.v1_cpu_writable ? info.v1_cpu_mount : "";
    c.v1_memsw = info.v1_memsw;
    // Written by whoever may write the others (root).
    if (info.v1_memory_writable || info.v1_pids_writable) {
      c.v1_accounting_parents = info.v1_accounting_mounts;
    }
  }
  LimitLine line;
  line.limit = "cgroup";
  line.value = path;
  line.mechanism = CgroupName(c.version) + " at the engine's path, below its own cgroups";
  line.origin = "config.json linux.cgroupsPath";
  spec->lines.push_back(std::move(line));
}

std::string LimitsSummary(const LimitsSpec& spec) {
  std::string out = LimitsBackendName(spec.backend);
  out += ":";
  const char* sep = " ";
  for (const LimitLine& l : spec.lines) {
    out += sep + l.limit + " " + l.value + " (" + (l.enforced ? "" : "NOT ENFORCED: ") +
           l.mechanism + ")";
    sep = "; ";
  }
  return out;
}

LimitsMechanism DescribeLimitsMechanism(const KernelFeatures& f, uid_t uid) {
  LimitsMechanism m;
  CgroupChoice all = ChooseCgroup(f.cgroup, true, true, true);
  CgroupChoice def = ChooseCgroup(f.cgroup, true, true, false);
  if (def.version == 2) {
    m.backend = LimitsBackend::kCgroupV2;
  } else if (def.version == 1) {
    m.backend = LimitsBackend::kCgroupV1;
  }
  std::string where;
  if (all.version == 2) {
    where = " in " + f.cgroup.v2_parent;
  } else if (all.version == 1) {
    where = " below " + (all.memory ? f.cgroup.v1_memory_dir : f.cgroup.v1_pids_dir);
  }
  if (all.version != 0) {
    std::string ctrls;
    for (auto [on, name] :
         {std::pair{all.memory, "memory"}, {all.pids, "pids"}, {all.cpu, "cpu"}}) {
      if (on) ctrls += std::string(ctrls.empty() ? "" : ", ") + name;
    }
    m.summary = CgroupName(all.version) + " (" + ctrls + ")" + where;
  } else {
    m.summary = "rlimits and sized tmpfs (no writable cgroup" +
                (f.cgroup.v2_own_busy.empty() ? std::string(")") : ": " + V2BusyAdvice(f.cgroup) + ")");
  }
  m.memory = all.memory ? CgroupName(all.version) : "RLIMIT_DATA (per process)";
  if (all.pids) {
    m.pids = CgroupName(all.version);
  } else {
    m.pids_why_not = NprocWhyNot(f, uid);
    if (m.pids_why_not.empty()) m.pids = "RLIMIT_NPROC (per user namespace)";
  }
  if (all.cpu) {
    m.cpu = CgroupName(all.version);
  } else {
    m.cpu_why_not = CpuWhyNot(f);
  }
  if (all.version != 0 && (!all.memory || !all.pids || !all.cpu)) {
    m.summary += "; otherwise rlimits";
  }
  return m;
}

}  // namespace ward::enforce
