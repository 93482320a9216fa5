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
#include "libssl/loader.h"
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

int RunCheck(const CheckOptions& opts) {
  enforce::KernelFeatures f = enforce::ProbeKernel(true);
  // What the default profile needs: user, mount, pid, net namespaces; Landlock; seccomp.
  std::vector<std::string> missing;
  if (!f.user_ns) missing.push_back("user namespaces");
  if (!f.net_ns) missing.push_back("network namespaces");
  if (f.landlock_abi < 1) missing.push_back("landlock");
  // The rights this kernel's Landlock lacks, as the default profile plans them (every run has its
  // own network and pid namespaces; a command's stdio are not known here).
  enforce::LandlockContext landlock_ctx;
  landlock_ctx.abi = f.landlock_abi;
  const std::vector<enforce::LandlockGap> gaps = enforce::LandlockGaps(landlock_ctx);
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

  // The built-in default profile's memory and pids limits must be enforceable here.
  enforce::LimitsMechanism lm = enforce::DescribeLimitsMechanism(f, getuid());
  if (lm.pids.empty()) missing.push_back("resource limits (pids: " + lm.pids_why_not + ")");
  bool ok = missing.empty();
  const std::string& limits = lm.summary;
  // Not needed by the default profile: said, not counted in `ok`.
  const std::string& tls_error = libssl::Load();
  std::string v2_controllers;
  for (const auto& c : f.cgroup.v2_controllers)
    v2_controllers += (v2_controllers.empty() ? "" : " ") + c;

  if (opts.json) {
    nlohmann::json j = {
        {"kernel", f.kernel_release},
        {"user_namespaces", f.user_ns},
        {"network_namespaces", f.net_ns},
        {"landlock_abi", f.landlock_abi},
        {"landlock_gaps", supervisor::LandlockGapsJson(gaps)},
        {"seccomp", f.seccomp},
        {"seccomp_user_notif", f.seccomp_user_notif},
        {"seccomp_addfd_send", f.seccomp_addfd_send},
        {"pidfd", f.pidfd},
        {"openat2", f.openat2},
        {"mount_api", f.mount_api},
        {"close_range", f.close_range},
        {"cgroup",
         {{"v2_mounted", f.cgroup.v2_mounted},
          {"v2_unified", f.cgroup.v2_unified},
          {"v2_delegated", f.cgroup.v2_delegated},
          {"v2_own", f.cgroup.v2_own},
          {"v2_own_busy", f.cgroup.v2_own_busy},
          {"v2_parent", f.cgroup.v2_parent},
          {"v2_parent_create", f.cgroup.v2_parent_create},
          {"v2_controllers", f.cgroup.v2_controllers},
          {"v1_memory", f.cgroup.v1_memory},
          {"v1_pids", f.cgroup.v1_pids},
          {"v1_cpu", f.cgroup.v1_cpu},
          {"v1_writable", f.cgroup.v1_writable},
          {"v1_memory_writable", f.cgroup.v1_memory_writable},
          {"v1_pids_writable", f.cgroup.v1_pids_writable},
          {"v1_cpu_writable", f.cgroup.v1_cpu_writable},
          {"v1_memory_dir", f.cgroup.v1_memory_dir},
          {"v1_pids_dir", f.cgroup.v1_pids_dir},
          {"v1_cpu_dir", f.cgroup.v1_cpu_dir}}},
        {"limits_mechanism", limits},
        {"limits",
         {{"backend", enforce::LimitsBackendName(lm.backend)},
          {"memory", lm.memory},
          {"pids", lm.pids},
          {"cpu", lm.cpu},
          {"pids_why_not", lm.pids_why_not},
          {"cpu_why_not", lm.cpu_why_not}}},
        {"outer_wall", f.outer_wall},
        {"openssl",
         {{"library", libssl::LibraryName()}, {"loads", tls_error.empty()}, {"error", tls_error}}},
        {"default_profile_fully_enforced", ok},
        {"missing", missing},
        {"notes", f.notes},
    };
    std::printf("%s\n", j.dump(2).c_str());
    return ok ? 0 : 1;
  }
  std::printf("kernel                      %s\n", f.kernel_release.c_str());
  std::printf("user namespaces             %s\n", YesNo(f.user_ns));
  std::printf("network namespaces          %s\n", YesNo(f.net_ns));
  if (f.landlock_abi > 0) {
    std::printf("landlock                    ABI %d\n", f.landlock_abi);
    for (const enforce::LandlockGap& g : gaps) {
      std::printf("  lacks %-21s ABI %d (Linux %s): %s\n", g.feature->right, g.feature->abi,
                  g.feature->kernel, GapText(g).c_str());
    }
  } else {
    std::printf("landlock                    no\n");
  }
  std::printf("seccomp                     %s (user notification: %s, addfd-send: %s)\n",
              YesNo(f.seccomp), YesNo(f.seccomp_user_notif), YesNo(f.seccomp_addfd_send));
  std::printf("pidfd / openat2 / mount API %s / %s / %s\n", YesNo(f.pidfd), YesNo(f.openat2),
              YesNo(f.mount_api));
  std::printf("cgroup v2                   %s%s (controllers: %s)\n",
              f.cgroup.v2_mounted ? ("mounted at " + f.cgroup.v2_path).c_str() : "not mounted",
              f.cgroup.v2_delegated ? ", writable" : "",
              v2_controllers.empty() ? "none" : v2_controllers.c_str());
  std::printf("cgroup v1                   memory:%s pids:%s cpu:%s writable:%s\n",
              YesNo(f.cgroup.v1_memory), YesNo(f.cgroup.v1_pids), YesNo(f.cgroup.v1_cpu),
              YesNo(f.cgroup.v1_writable));
  std::printf("resource limits via         %s\n", limits.c_str());
  std::printf("  memory / pids / cpu       %s / %s / %s\n", lm.memory.c_str(),
              lm.pids.empty() ? "cannot be enforced" : lm.pids.c_str(),
              lm.cpu.empty() ? "cannot be enforced (--cpu refused)" : lm.cpu.c_str());
  std::printf("outer wall                  %s\n",
              f.outer_wall.empty() ? "none detected" : f.outer_wall.c_str());
  std::printf("OpenSSL                     %s (needed by credentials and webhooks)\n",
              tls_error.empty() ? (std::string(libssl::LibraryName()) + " loads").c_str()
                                : tls_error.c_str());
  for (const auto& n : f.notes) std::printf("note: %s\n", n.c_str());
  if (ok) {
    std::printf("\nThe default profile runs fully enforced here.\n");
  } else {
    std::printf("\nThe default profile cannot run fully enforced here; missing:");
    for (const auto& m : missing) std::printf(" %s;", m.c_str());
    std::printf("\n");
  }
  return ok ? 0 : 1;
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
