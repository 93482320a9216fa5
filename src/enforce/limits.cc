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
  const HostLimits& host = f.host_limits;
  LimitsPlan out;
  LimitsSpec& spec = out.spec;
  CgroupChoice cg = ChooseCgroup(f.cgroup, l.memory_bytes.has_value(), l.pids.has_value(),
                                 l.cpu_cores.has_value());
  bool allow_degraded = policy.allow_degraded.count(policy::Layer::kLimits) > 0;
  std::vector<std::string> unenforced;  // "cpu 0.5 cores (cli (--cpu)): why"
  bool wants_rlimit_fallback = false;

  auto line = [&](const std::string& key, std::string value, std::string mechanism,
                  bool enforced = true) {
    spec.lines.push_back({key, std::move(value), std::move(mechanism), enforced, OriginOf(l, key)});
  };
  auto cannot = [&](const std::string& key, const std::string& value, const std::string& why) {
    std::string origin = OriginOf(l, key);
    unenforced.push_back(key + " " + value + (origin.empty() ? "" : " (" + origin + ")") + ": " +
                         why);
    line(key, value, "not enforced: " + why, false);
  };

  // --- memory --------------------------------------------------------------------------------
  if (l.memory_bytes) {
    uint64_t m = *l.memory_bytes;
    if (cg.memory) {
      spec.cgroup.memory_bytes = m;
      line("memory", FormatSize(m),
           cg.version == 2
               ? "cgroup v2 memory.max (whole sandbox), memory.swap.max 0, memory.oom.group"
               : std::string("cgroup v1 memory.limit_in_bytes (whole sandbox)") +
                     (f.cgroup.v1_memsw ? " and memory.memsw.limit_in_bytes (no swap)" : ""));
    } else {
      // RLIMIT_DATA, not RLIMIT_AS: JIT runtimes reserve large PROT_NONE regions.
      wants_rlimit_fallback = true;
      rlim_t v = Clamp(m, host.data);
      out.rlimits.push_back({RLIMIT_DATA, v, v});
      line("memory", FormatSize(m),
           "RLIMIT_DATA " + FormatSize(v) +
               " per process (no cgroup here: shared memory, tmpfs and the sum over processes "
               "are not counted)");
    }
  }

  // --- pids ----------------------------------------------------------------------------------
  if (l.pids) {
    uint64_t n = *l.pids;
    if (cg.pids) {
      spec.cgroup.pids = n;
      line("pids", std::to_string(n), CgroupName(cg.version) + " pids.max (whole sandbox)");
    } else {
      wants_rlimit_fallback = true;
      std::string why = NprocWhyNot(f, uid);
      if (why.empty()) {
        rlim_t v = Clamp(n, host.nproc);
        out.rlimits.push_back({RLIMIT_NPROC, v, v});
        line("pids", std::to_string(n),
             "RLIMIT_NPROC " + std::to_string(v) +
                 " (counted in the sandbox's own user namespace: processes and threads inside)");
      } else {
        cannot("pids", std::to_string(n), why);
      }
    }
  }

  // --- cpu -----------------------------------------------------------------------------------
  if (l.cpu_cores) {
    double c = *l.cpu_cores;
    if (cg.cpu) {
      // Rounded to the nearest microsecond (c > 0; no llround, which lives in libm).
      long long q = static_cast<long long>(c * static_cast<double>(kCpuPeriodUs) + 0.5);
      uint64_t quota = std::max<uint64_t>(q > 0 ? static_cast<uint64_t>(q) : 0, kMinCpuQuotaUs);
      spec.cgroup.cpu_quota_us = quota;
      spec.cgroup.cpu_period_us = kCpuPeriodUs;
      line("cpu", FormatCores(c),
           CgroupName(cg.version) + (cg.version == 2 ? " cpu.max " : " cpu.cfs_quota_us ") +
               std::to_string(quota) + " per " + std::to_string(kCpuPeriodUs) + " us");
    } else {
      wants_rlimit_fallback = true;
      cannot("cpu", FormatCores(c), CpuWhyNot(f));
    }
  }

  // --- the rest: independent of the backend --------------------------------------------------
  if (l.timeout_ms) {
    spec.timeout_ms = *l.timeout_ms;
    spec.grace_ms = kTimeoutGraceMs;
    line("timeout", FormatMs(*l.timeout_ms),
         "supervisor timer: SIGTERM to everything inside, SIGKILL " +
             FormatMs(kTimeoutGraceMs) + " later; exit status 124");
  }
  if (l.tmp_size_bytes) {
    line("tmp_size", FormatSize(*l.tmp_size_bytes), "tmpfs size of the private /tmp and of HOME");
  }
  if (l.file_size_bytes) {
    rlim_t v = Clamp(*l.file_size_bytes, host.fsize);
    out.rlimits.push_back({RLIMIT_FSIZE, v, v});
    line("file_size", FormatSize(*l.file_size_bytes), "RLIMIT_FSIZE (SIGXFSZ beyond it)");
  }

  if (!unenforced.empty()) {
    if (!allow_degraded) {
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
      out.degraded.push_back("limits: " + u + " (not enforced; allowed by " + by + ")");
    }
  }

  if (cg.version != 0) {
    spec.backend = cg.version == 2 ? LimitsBackend::kCgroupV2 : LimitsBackend::kCgroupV1;
    CgroupSpec& c = spec.cgroup;
    c.version = cg.version;
    if (cg.version == 2) {
      c.v2_parent = f.cgroup.v2_parent;
      c.v2_parent_is_own = f.cgroup.v2_parent_is_own;
      c.v2_parent_create = f.cgroup.v2_parent_create;
    } else {
      if (cg.memory) c.v1_memory_parent = f.cgroup.v1_memory_dir;
      if (cg.pids) c.v1_pids_parent = f.cgroup.v1_pids_dir;
      if (cg.cpu) c.v1_cpu_parent = f.cgroup.v1_cpu_dir;
      c.v1_memsw = f.cgroup.v1_memsw;
    }
  } else if (wants_rlimit_fallback) {
    spec.backend = LimitsBackend::kRlimits;
  }

  // --- every run: the sandbox's share of per-user kernel objects -----------------------------
  // Nested namespaces of any kind (seccomp denies them too; this holds without it).
  for (const char* ns : {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"}) {
    out.sysctls.push_back({std::string("user/max_") + ns + "_namespaces", "0", false});
  }
  if (host.time_namespaces) out.sysctls.push_back({"user/max_time_namespaces", "0", true});
  // inotify and fanotify objects count against the caller's uid outside too: half of it.
  auto half = [&](const char* name, long host_value) {
    if (host_value <= 0) return;
    out.sysctls.push_back(
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
  line("kernel objects", "per user namespace", notify);
  // POSIX message queue bytes and queued signals are counted per uid outside as well.
  AddHalf(RLIMIT_MSGQUEUE, host.msgqueue, &out.rlimits);
  AddHalf(RLIMIT_SIGPENDING, host.sigpending, &out.rlimits);
  {
    rlim_t hard =
        static_cast<rlim_t>(std::min<unsigned long long>(host.nofile.hard, kMaxOpenFiles));
    rlim_t soft = static_cast<rlim_t>(std::min<unsigned long long>(host.nofile.soft, hard));
    out.rlimits.push_back({RLIMIT_NOFILE, soft, hard});
    line("open files", std::to_string(hard), "RLIMIT_NOFILE per process");
  }
  return out;
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
