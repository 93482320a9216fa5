// `ward audit prune`: removes old sessions of the audit trail, by hand (--older-than, --keep)
// or by the user's retention policy (config.toml [audit]); and the automatic prune a run starts
// when it is due (StartAuditPruneIfDue). The logic lives in src/audit/retention.h.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "audit/record.h"
#include "audit/retention.h"
#include "audit/session_log.h"
#include "audit/sessions.h"
#include "cli/commands.h"
#include "cli/run_options.h"
#include "policy/loader.h"
#include "policy/user_config.h"

namespace ward::cli {
namespace audit_prune {

struct PruneOptions {
  std::string older_than;  // a duration, e.g. 30d
  std::optional<size_t> keep;
  bool dry_run = false;
  bool json = false;
  bool automatic = false;  // started by a run: the user's policy, quietly, at most one at once
};

// The user's retention policy: config.toml in the config dir, or the defaults without one.
Result<policy::AuditRetention> LoadRetention() {
  const std::string path = policy::UserConfigPath(UserConfigDir());
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT || errno == ENOTDIR) return policy::AuditRetention{};
    return ErrnoError("reading " + path, errno);
  }
  std::stringstream text;
  text << in.rdbuf();
  WARD_ASSIGN_OR_RETURN(policy::UserConfig config, policy::ParseUserConfig(text.str(), path));
  return config.audit;
}

audit::PruneLimits LimitsOf(const policy::AuditRetention& r) {
  audit::PruneLimits limits;
  if (r.keep_days > 0) limits.older_than = std::chrono::hours(24 * r.keep_days);
  if (r.keep_sessions > 0) limits.keep = r.keep_sessions;
  return limits;
}

// The limits of this prune: the flags, else the user's policy.
Result<audit::PruneLimits> ChooseLimits(const PruneOptions& o) {
  if (o.older_than.empty() && !o.keep) {
    WARD_ASSIGN_OR_RETURN(policy::AuditRetention r, LoadRetention());
    return LimitsOf(r);
  }
  audit::PruneLimits limits;
  limits.keep = o.keep;
  if (!o.older_than.empty()) {
    Result<uint64_t> ms = policy::ParseDurationMs(o.older_than);
    if (!ms.ok() || *ms < 1000) {
      return InvalidArgument("--older-than " + audit::SanitizeForTerminal(o.older_than) +
                             ": expected a duration of at least a second, such as 30d, 12h or 90m");
    }
    limits.older_than = std::chrono::seconds(*ms / 1000);
  }
  return limits;
}

void PrintReport(const PruneOptions& o, const audit::PruneLimits& limits,
                 const audit::PruneReport& r) {
  if (o.json) {
    nlohmann::json removed = nlohmann::json::array();
    for (const auto& s : r.removed) {
      removed.push_back({{"id", s.id}, {"last_write", s.last_write}, {"why", s.why}});
    }
    nlohmann::json out = {{"dry_run", o.dry_run}, {"removed", removed}, {"in_use", r.in_use},
                          {"kept", r.kept},       {"errors", r.errors}};
    std::printf("%s\n", audit::CanonicalJson(out).c_str());
    return;
  }
  const char* verb = o.dry_run ? "would remove" : "removed";
  for (const auto& s : r.removed) {
    std::printf("%s %s  last written %s  (%s)\n", verb, s.id.c_str(), s.last_write.c_str(),
                s.why.c_str());
  }
  for (const auto& id : r.in_use) std::printf("kept %s: still being written\n", id.c_str());
  for (const auto& e : r.errors) {
    std::fprintf(stderr, "ward audit: prune: %s\n", audit::SanitizeForTerminal(e).c_str());
  }
  std::string bounds;
  if (limits.older_than) bounds = "older than " + audit::FormatAge(*limits.older_than);
  if (limits.keep) {
    bounds += (bounds.empty() ? "" : ", or ") + std::string("beyond the newest ") +
              std::to_string(*limits.keep);
  }
  std::printf("%s %zu session%s (%s); %zu kept\n", verb, r.removed.size(),
              r.removed.size() == 1 ? "" : "s", bounds.empty() ? "no bound set" : bounds.c_str(),
              r.kept);
}

int RunPrune(const PruneOptions& o, const std::string& state) {
  if (state.empty()) {
    std::fprintf(stderr,
                 "ward audit: no state directory (set XDG_STATE_HOME or HOME, or pass "
                 "--state-dir)\n");
    return kExitFailed;
  }
  const auto now = std::chrono::system_clock::now();
  Result<audit::PruneLimits> limits = ChooseLimits(o);
  if (!limits.ok()) {
    if (o.automatic) {  // nobody sees a terminal: the prune log says why nothing was pruned
      audit::PruneReport none;
      none.errors.push_back(limits.status().ToString());
      (void)audit::RecordPrune(state, "automatic", {}, none, now);
      return kExitFailed;
    }
    std::fprintf(stderr, "ward audit: prune: %s\n",
                 audit::SanitizeForTerminal(limits.status().ToString()).c_str());
    return limits.status().code() == Code::kInvalidArgument && !o.older_than.empty() ? kExitUsage
                                                                                     : kExitFailed;
  }
  struct stat st {};
  if (::stat(audit::SessionsDir(state).c_str(), &st) != 0 && errno == ENOENT) {
    if (!o.automatic) {
      std::printf("no sessions in %s\n",
                  audit::SanitizeForTerminal(audit::SessionsDir(state)).c_str());
    }
    return kExitOk;
  }
  Result<UniqueFd> lock = audit::LockPrune(state, /*wait=*/!o.automatic);
  if (!lock.ok()) {
    if (!o.automatic) {
      std::fprintf(stderr, "ward audit: prune: %s\n",
                   audit::SanitizeForTerminal(lock.status().ToString()).c_str());
    }
    return kExitFailed;
  }
  if (!*lock) return kExitOk;  // another prune is running
  if (o.automatic && !limits->older_than && !limits->keep) return kExitOk;  // turned off
  audit::PruneReport report = audit::PruneSessions(state, *limits, now, o.dry_run);
  if (!o.dry_run) {
    Status recorded = audit::RecordPrune(
        state, o.automatic ? "automatic" : "ward audit prune", *limits, report, now);
    if (!recorded.ok() && !o.automatic) {
      std::fprintf(stderr, "ward audit: prune: %s\n",
                   audit::SanitizeForTerminal(recorded.ToString()).c_str());
      report.errors.push_back(recorded.ToString());
    }
  }
  if (!o.automatic) PrintReport(o, *limits, report);
  return report.errors.empty() ? kExitOk : kExitFailed;
}

// Starts `ward audit --state-dir STATE prune --automatic` in a process of its own, detached
// (its own session, stdio on /dev/null, no descriptor of this run's), and returns at once.
void SpawnAutomaticPrune(const std::string& state) {
  std::vector<std::string> args = {"ward", "audit", "--state-dir", state, "prune", "--automatic"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t child = ::fork();
  if (child < 0) return;
  if (child == 0) {
    // Async-signal-safe calls only until execve: this process may have had other threads.
    ::setsid();
    if (::fork() != 0) ::_exit(0);  // the grandchild is nobody's child once this one exits
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    ::close_range(3, ~0U, 0);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::setpriority(PRIO_PROCESS, 0, 10);
    ::execve("/proc/self/exe", argv.data(), environ);
    ::_exit(127);
  }
  while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace audit_prune

void StartAuditPruneIfDue(const std::string& state_dir) {
  if (state_dir.empty()) return;
  if (audit::CheckAutoPrune(state_dir, std::chrono::system_clock::now()) !=
      audit::AutoPrune::kDue) {
    return;
  }
  // Claimed before the prune starts: the runs that end meanwhile do not start another.
  if (!audit::MarkAutoPruneStarted(state_dir).ok()) return;
  audit_prune::SpawnAutomaticPrune(state_dir);
}

void AddAuditPruneCommand(CLI::App& audit, int* exit_code,
                          std::function<std::string()> state_dir) {
  auto o = std::make_shared<audit_prune::PruneOptions>();
  CLI::App* prune = audit.add_subcommand(
      "prune",
      "Remove old sessions (default: the retention policy of config.toml [audit]: older than "
      "30 days, beyond the newest 10000); never one still being written");
  prune->add_option("--older-than", o->older_than,
                    "Remove sessions last written longer ago than D (30d, 12h)");
  prune->add_option("--keep", o->keep, "Keep only the N most recently written sessions")
      ->check(CLI::NonNegativeNumber);
  prune->add_flag("--dry-run", o->dry_run, "Say what would be removed; remove nothing");
  prune->add_flag("--json", o->json, "One JSON object");
  prune->add_flag("--automatic", o->automatic, "What a run starts when the prune is due")
      ->group("");
  prune->callback([o, exit_code, state_dir] {
    *exit_code = audit_prune::RunPrune(*o, state_dir());
  });
}

}  // namespace ward::cli
