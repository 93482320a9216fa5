// A review session's changes as a git-style diff: "diff --git" blocks with unified hunks for
// text, a line for binaries, new/deleted file and mode lines, symlinks as their target.
// Everything in it came from the sandbox, and it is printed on the user's terminal: paths are
// quoted as git quotes them (control characters and non-ASCII bytes as escapes), and in text
// every control character other than a tab (and a carriage return before a newline) and every
// bidirectional override is shown as an escape, so no content can hide itself or another
// line, or talk to the terminal.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "supervisor/review_changes.h"
#include "supervisor/review_store.h"

namespace ward::supervisor {

struct RenderedDiff {
  std::string text;
  std::string sha256;  // of `text`: what the audit trail records
  size_t files = 0;    // blocks
};

Result<RenderedDiff> RenderDiff(const ReviewSession& s, const std::vector<ReviewChange>& changes);

// A path as git quotes it in headers: as is when plain, else in double quotes with C escapes
// and octal for bytes outside printable ASCII.
std::string QuotePath(const std::string& path);

// SHA-256 of what the run left at `path` (a file's content, a symlink's target), "" for other
// types. For the audit record of what was applied.
std::string NewContentSha256(const ReviewSession& s, const ReviewChange& c);

}  // namespace ward::supervisor
