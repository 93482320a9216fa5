// Retention of the audit trail: which sessions go, removing them without touching one still
// being written, recording each prune, and when the automatic prune is due. The policy (how
// many days, how many sessions) comes from the caller; docs/audit.md, "Retention".
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"

namespace ward::audit {

// In the state directory, beside sessions/ (never inside it: `ward audit list` and `verify`
// read only sessions/). The log: one JSON line per prune. The stamp: its mtime is when the
// automatic prune last started; it is also the lock that keeps two prunes apart.
inline constexpr std::string_view kPruneLogFile = "audit-prune.jsonl";
inline constexpr std::string_view kPruneStampFile = "audit-prune.stamp";
// The automatic prune runs at most this often.
inline constexpr std::chrono::hours kAutoPruneInterval{24};

// A session goes when its last write is older than `older_than`, or when it is not among the
// `keep` most recently written. An unset bound removes nothing.
struct PruneLimits {
  std::optional<std::chrono::seconds> older_than;
  std::optional<size_t> keep;
};

struct PrunedSession {
  std::string id;
  std::string last_write;  // the log's mtime, as a record timestamp
  std::string why;         // "older than 30d", "beyond the newest 10000"
};

struct PruneReport {
  std::vector<PrunedSession> removed;  // removed, or with dry_run those that would be
  std::vector<std::string> in_use;     // ids the limits named that are still being written
  size_t kept = 0;                     // sessions left, those in use included
  std::vector<std::string> errors;     // "ID: what failed"
};

// Removes what `limits` names from <state_dir>/sessions, newest kept first. A session whose log
// its writer still holds locked (a running `ward run`, a `ward serve` daemon's or sandbox's
// session) is never removed, nor one whose log is not created yet. Review sessions
// (<state_dir>/review) and the quarantine are not sessions and are not looked at.
PruneReport PruneSessions(const std::string& state_dir, const PruneLimits& limits,
                          std::chrono::system_clock::time_point now, bool dry_run);

// Appends one record of the prune to <state_dir>/audit-prune.jsonl.
Status RecordPrune(const std::string& state_dir, std::string_view trigger,
                   const PruneLimits& limits, const PruneReport& report,
                   std::chrono::system_clock::time_point now);

// "30d", "12h", "90s": the shortest exact unit.
std::string FormatAge(std::chrono::seconds age);

// The automatic prune: due when the stamp is older than kAutoPruneInterval. One stat. Without
// a stamp (a new state directory, or one of a ward from before retention) the stamp is made and
// the prune is due a day later: a run that has just made the state directory has nothing to
// prune, and one of an older ward gets its first prune a day later, not in its first run.
enum class AutoPrune { kNotDue, kDue };
AutoPrune CheckAutoPrune(const std::string& state_dir, std::chrono::system_clock::time_point now);
// Sets the stamp to now (creating it), so that the runs that follow do not start another.
Status MarkAutoPruneStarted(const std::string& state_dir);
// The prune lock (a flock on the stamp). With `wait` false, an empty fd when another prune
// holds it.
Result<UniqueFd> LockPrune(const std::string& state_dir, bool wait);

}  // namespace ward::audit
