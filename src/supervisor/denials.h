// Every denial ward observes during a run, gathered into distinct entries with counts: what
// was refused, by which rule, and the flag that would allow it (docs/denials.md). The same
// mapping serves a live run (DenialTee, in front of the audit sink, also with --no-audit) and a
// trail read back (`ward audit show SESSION --denials`). Memory is bounded whatever the sandbox
// does: a cap on distinct targets (the rest are counted in one "other" entry) and on the length
// of what is kept of each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/events.h"

namespace ward::supervisor {

struct Denial {
  std::string kind;        // network, dns, file.write, file.read, protected, command,
                           // credential, limit, syscall, terminal; "other" for the overflow
  std::string target;      // what was refused (host:port, name, path, argv0, ...)
  uint64_t count = 0;      // how many times
  std::string rule;        // the deciding rule, in human words
  std::string allow_with;  // the flag(s) that would allow it; "" when ward will not suggest one
  bool on_purpose = false;  // refused by the deny list, protected paths or the leak rule
};

nlohmann::json DenialToJson(const Denial& d);
nlohmann::json DenialsToJson(const std::vector<Denial>& ds);

// What one event (or record read back from a trail) says was denied, with count 1; nullopt for
// anything that is not a denial. Pure: the same record always gives the same entry.
std::optional<Denial> DenialOf(std::string_view type, const nlohmann::json& data);

// Distinct denials with their counts, bounded. Not thread-safe (DenialTee locks around it).
class DenialTally {
 public:
  static constexpr size_t kMaxDistinct = 1024;  // distinct (kind, target) entries kept
  static constexpr size_t kMaxText = 512;       // bytes kept of a target, rule or flag

  void Add(Denial d);
  void AddRecord(std::string_view type, const nlohmann::json& data);
  // Most frequent first (ties: by kind, then target); a DNS name that the proxy also refused
  // shows under "network" only; the overflow last, as one entry of kind "other", which also
  // counts the entries beyond the first `max_entries`.
  std::vector<Denial> Sorted(size_t max_entries = kMaxDistinct) const;
  bool empty() const { return entries_.empty() && other_ == 0; }

 private:
  std::unordered_map<std::string, Denial> entries_;  // by kind '\0' target
  uint64_t other_ = 0;
};

// The tee: every event is tallied and passed on to `next` (the audit sink; null with
// --no-audit). Records of a kind a sandbox can produce in bulk (file.deny) reach `next` at most
// kMaxRecordsPerType times; Finish() records how many were not, so the trail stays bounded.
class DenialTee final : public EventSink {
 public:
  static constexpr uint64_t kMaxRecordsPerType = 1000;
  explicit DenialTee(EventSink* next) : next_(next) {}
  // What the policy says of a refused write's path (file.deny), recorded with it: "protected"
  // (refused on purpose; no -w is suggested), "writable" (the policy allows the write: the
  // file's own permissions refused it, not ward; not a denial), or "". Set before the first
  // event.
  void ClassifyWrites(std::function<std::string(const std::string&)> classify) {
    classify_ = std::move(classify);
  }
  void Emit(std::string_view type, nlohmann::json data) override;
  // Emits `denials.unrecorded` for the records held back; returns the run's denials.
  std::vector<Denial> Finish();
  // A window gathers the denials observed from its opening to its closing, as well as the
  // run's (an exec of a live sandbox: what was refused while it ran, whichever of the sandbox's
  // processes asked). Closing returns them, at most `max_entries` and the rest as "other"
  // (empty for a window that is not open).
  void OpenWindow(uint64_t id);
  std::vector<Denial> CloseWindow(uint64_t id, size_t max_entries);

 private:
  EventSink* next_;
  std::function<std::string(const std::string&)> classify_;
  std::mutex mu_;
  DenialTally tally_;
  std::map<uint64_t, DenialTally> windows_;
  std::map<std::string, uint64_t, std::less<>> bulk_seen_;  // file.deny records seen
};

// The end-of-run summary: one line per distinct target, at most `max_lines`, each sanitised for
// the terminal, then "and N more: HINT" when there were more. Limits are left out (the run
// prints its own `ward: limit:` line for each).
std::vector<std::string> SummaryLines(const std::vector<Denial>& ds, size_t max_lines,
                                      const std::string& more_hint);

}  // namespace ward::supervisor
