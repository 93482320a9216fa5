// `ward check`: which kernel features exist and whether the default profile can run fully
// enforced here. Exit 0 if yes, 1 if not.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "enforce/landlock_coverage.h"
#include "enforce/limits.h"
#include "enforce/probe.h"
#include "libssl/on_use.h"
#include "supervisor/explain.h"

namespace ward::cli {
namespace {

struct CheckOptions {
  bool json = false;
};

const char* YesNo(bool b) { return b ? "yes" : "no"; }

// What a Landlock right this kernel lacks means for the default profile, for the text report.
std::string GapText(const enforce::LandlockGap& g) {
  switch (g.decision) {
    case enforce::LandlockGapDecision::kStricter:
      return "stricter without it: " + g.why;
    case enforce::LandlockGapDecision::kCovered:
      return "covered by " + g.covered_by;
    case enforce::LandlockGapDecision::kAuditOnly:
      return "audit only, no guarantee depends on it";
    case enforce::LandlockGapDecision::kRefused:
      return "NOT covered: " + g.why;
  }
  return "";
}

// What `ward check` found: the kernel's features, the Landlock rights it lacks, how limits are
// enforced, whether OpenSSL loads, and what the default profile misses (none: fully enforced).
struct CheckReport {
  enforce::KernelFeatures f;
  std::vector<enforce::LandlockGap> gaps;
  enforce::LimitsMechanism lm;
  std::string tls_error;
  std::vector<std::string> missing;
};

// What the default profile needs and this kernel lacks: user, mount, pid, net namespaces;
// Landlock (and the rights it cannot do without); seccomp.
std::vector<std::string> MissingFeatures(const enforce::KernelFeatures& f,
                                         const std::vector<enforce::LandlockGap>& gaps) {
  std::vector<std::string> missing;
  if (!f.user_ns) missing.push_back("user namespaces");
  if (!f.net_ns) missing.push_back("network namespaces");
  if (f.landlock_abi < 1) missing.push_back("landlock");
  for (const enforce::LandlockGap& g : gaps) {
    if (g.decision == enforce::LandlockGapDecision::kRefused) {
      missing.push_back(std::string("landlock ") + g.feature->right + " (ABI " +
                        std::to_string(g.feature->abi) + ", Linux " + g.feature->kernel + ")");
    }
  }
  if (!f.seccomp) missing.push_back("seccomp");
  if (!f.seccomp_user_notif) missing.push_back("seccomp user notification");
  if (!f.mount_api) missing.push_back("mount API (open_tree/move_mount)");
  if (!f.openat2) missing.push_back("openat2");
  if (!f.pidfd) missing.push_back("pidfd");
  return missing;
}

void PrintCheckJson(const CheckReport& r) {
  nlohmann::json j = {
      {"kernel", r.f.kernel_release},
      {"user_namespaces", r.f.user_ns},
      {"network_namespaces", r.f.net_ns},
      {"landlock_abi", r.f.landlock_abi},
      {"landlock_gaps", supervisor::LandlockGapsJson(r.gaps)},
      {"seccomp", r.f.seccomp},
      {"seccomp_user_notif", r.f.seccomp_user_notif},
      {"seccomp_addfd_send", r.f.seccomp_addfd_send},
      {"pidfd", r.f.pidfd},
      {"openat2", r.f.openat2},
      {"mount_api", r.f.mount_api},
      {"close_range", r.f.close_range},
      {"cgroup",
       {{"v2_mounted", r.f.cgroup.v2_mounted},
        {"v2_unified", r.f.cgroup.v2_unified},
        {"v2_delegated", r.f.cgroup.v2_delegated},
        {"v2_own", r.f.cgroup.v2_own},
        {"v2_own_busy", r.f.cgroup.v2_own_busy},
        {"v2_parent", r.f.cgroup.v2_parent},
        {"v2_parent_create", r.f.cgroup.v2_parent_create},
        {"v2_controllers", r.f.cgroup.v2_controllers},
        {"v1_memory", r.f.cgroup.v1_memory},
        {"v1_pids", r.f.cgroup.v1_pids},
        {"v1_cpu", r.f.cgroup.v1_cpu},
        {"v1_writable", r.f.cgroup.v1_writable},
        {"v1_memory_writable", r.f.cgroup.v1_memory_writable},
        {"v1_pids_writable", r.f.cgroup.v1_pids_writable},
        {"v1_cpu_writable", r.f.cgroup.v1_cpu_writable},
        {"v1_memory_dir", r.f.cgroup.v1_memory_dir},
        {"v1_pids_dir", r.f.cgroup.v1_pids_dir},
        {"v1_cpu_dir", r.f.cgroup.v1_cpu_dir}}},
      {"limits_mechanism", r.lm.summary},
      {"limits",
       {{"backend", enforce::LimitsBackendName(r.lm.backend)},
        {"memory", r.lm.memory},
        {"pids", r.lm.pids},
        {"cpu", r.lm.cpu},
        {"pids_why_not", r.lm.pids_why_not},
        {"cpu_why_not", r.lm.cpu_why_not}}},
      {"outer_wall", r.f.outer_wall},
      {"openssl",
       {{"library", libssl::LibraryName()},
        {"loads", r.tls_error.empty()},
        {"error", r.tls_error}}},
      {"default_profile_fully_enforced", r.missing.empty()},
      {"missing", r.missing},
      {"notes", r.f.notes},
  };
  std::printf("%s\n", j.dump(2).c_str());
}

void PrintCheckText(const CheckReport& r) {
  std::string v2_controllers;
  for (const auto& c : r.f.cgroup.v2_controllers)
    v2_controllers += (v2_controllers.empty() ? "" : " ") + c;
  std::printf("kernel                      %s\n", r.f.kernel_release.c_str());
  std::printf("user namespaces             %s\n", YesNo(r.f.user_ns));
  std::printf("network namespaces          %s\n", YesNo(r.f.net_ns));
  if (r.f.landlock_abi > 0) {
    std::printf("landlock                    ABI %d\n", r.f.landlock_abi);
    for (const enforce::LandlockGap& g : r.gaps) {
      std::printf("  lacks %-21s ABI %d (Linux %s): %s\n", g.feature->right, g.feature->abi,
                  g.feature->kernel, GapText(g).c_str());
    }
  } else {
    std::printf("landlock                    no\n");
  }
  std::printf("seccomp                     %s (user notification: %s, addfd-send: %s)\n",
              YesNo(r.f.seccomp), YesNo(r.f.seccomp_user_notif), YesNo(r.f.seccomp_addfd_send));
  std::printf("pidfd / openat2 / mount API %s / %s / %s\n", YesNo(r.f.pidfd), YesNo(r.f.openat2),
              YesNo(r.f.mount_api));
  std::printf("cgroup v2                   %s%s (controllers: %s)\n",
              r.f.cgroup.v2_mounted ? ("mounted at " + r.f.cgroup.v2_path).c_str() : "not mounted",
              r.f.cgroup.v2_delegated ? ", writable" : "",
              v2_controllers.empty() ? "none" : v2_controllers.c_str());
  std::printf("cgroup v1                   memory:%s pids:%s cpu:%s writable:%s\n",
              YesNo(r.f.cgroup.v1_memory), YesNo(r.f.cgroup.v1_pids), YesNo(r.f.cgroup.v1_cpu),
              YesNo(r.f.cgroup.v1_writable));
  std::printf("resource limits via         %s\n", r.lm.summary.c_str());
  std::printf("  memory / pids / cpu       %s / %s / %s\n", r.lm.memory.c_str(),
              r.lm.pids.empty() ? "cannot be enforced" : r.lm.pids.c_str(),
              r.lm.cpu.empty() ? "cannot be enforced (--cpu refused)" : r.lm.cpu.c_str());
  std::printf("outer wall                  %s\n",
              r.f.outer_wall.empty() ? "none detected" : r.f.outer_wall.c_str());
  std::printf("OpenSSL                     %s (needed by credentials and webhooks)\n",
              r.tls_error.empty() ? (std::string(libssl::LibraryName()) + " loads").c_str()
                                  : r.tls_error.c_str());
  for (const auto& n : r.f.notes) std::printf("note: %s\n", n.c_str());
  if (r.missing.empty()) {
    std::printf("\nThe default profile runs fully enforced here.\n");
  } else {
    std::printf("\nThe default profile cannot run fully enforced here; missing:");
    for (const auto& m : r.missing) std::printf(" %s;", m.c_str());
    std::printf("\n");
  }
}

int RunCheck(const CheckOptions& opts) {
  CheckReport r;
  r.f = enforce::ProbeKernel(true);
  // The rights this kernel's Landlock lacks, as the default profile plans them (every run has its
  // own network and pid namespaces; a command's stdio are not known here).
  enforce::LandlockContext landlock_ctx;
  landlock_ctx.abi = r.f.landlock_abi;
  r.gaps = enforce::LandlockGaps(landlock_ctx);
  r.missing = MissingFeatures(r.f, r.gaps);
  // The built-in default profile's memory and pids limits must be enforceable here.
  r.lm = enforce::DescribeLimitsMechanism(r.f, getuid());
  if (r.lm.pids.empty()) r.missing.push_back("resource limits (pids: " + r.lm.pids_why_not + ")");
  // Not needed by the default profile: said, not counted.
  r.tls_error = libssl::Load();
  if (opts.json) {
    PrintCheckJson(r);
  } else {
    PrintCheckText(r);
  }
  return r.missing.empty() ? 0 : 1;
}

}  // namespace

void AddCheckCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<CheckOptions>();
  CLI::App* sub = app.add_subcommand("check",
                                     "Report kernel features and whether ward can run "
                                     "fully enforced here (exit 0 if yes, 1 if not)");
  sub->add_flag("--json", opts->json, "Machine-readable output");
  sub->callback([opts, exit_code] { *exit_code = RunCheck(*opts); });
}

}  // namespace ward::cli
