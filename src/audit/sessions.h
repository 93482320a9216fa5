// Reading sessions back: listing, name resolution, incremental tailing and one-line
// summaries. The library half of `ward audit`, kept here so it is unit-tested.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ward::audit {

struct SessionSummary {
  std::string id;
  std::string dir;
  std::string start;    // ts of the first record, else the log's mtime; "" when unknown
  std::string command;  // session.start data.command (array joined with spaces, or string)
  bool ended = false;   // a session.end record exists
  std::optional<int64_t> exit_code;  // session.end data.exit_code
  std::string signal;                // session.end data.signal (number or name), "" if none
  bool setup_error = false;          // a setup.error record exists
  int64_t denials = 0;               // records whose type IsDenialType()
  int64_t records = 0;               // lines that parse as records
};

// Newest first (by start, then id). Entries of <state_dir>/sessions that are not valid
// session directories are skipped. With `brief`, only the first record is read (id, start,
// command); the counts stay zero.
std::vector<SessionSummary> ListSessions(const std::string& state_dir, bool brief = false);

// SESSION as the user types it: "last" (the newest), an exact id, or a unique prefix of one.
// Errors: no sessions, unknown name, ambiguous prefix (naming the candidates).
Result<SessionSummary> ResolveSession(const std::string& state_dir, std::string_view name);

// Incremental reader of one session's events.jsonl: each Poll returns the complete lines
// appended since the previous one (a partial last line waits for its newline).
class LogTail {
 public:
  explicit LogTail(std::string session_dir);
  // Lines without '\n'. A missing file yields no lines (the session may be starting).
  Result<std::vector<std::string>> Poll();
  const std::string& session_dir() const { return dir_; }

 private:
  std::string dir_;
  off_t offset_ = 0;
  std::string partial_;
};

// Exact type, or a prefix ending in '.' ("net." matches "net.deny"); empty matches all.
bool TypeMatches(std::string_view filter, std::string_view type);

// Makes text safe for a terminal: control characters, DEL, C1 controls and bidi overrides
// become visible escapes (\x1b, \u202e); invalid UTF-8 becomes \xNN.
std::string SanitizeForTerminal(std::string_view s);

// One line describing a record's data: key=value pairs (well-known keys first, then
// sorted), strings unquoted when plain, nested values as compact JSON; sanitised; cut to
// max_width characters with "…".
std::string SummarizeData(const nlohmann::json& data, size_t max_width = 160);

}  // namespace ward::audit
