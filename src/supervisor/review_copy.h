// Review mode without overlayfs: a copy of the workspace in the session's directory, bound in
// the workspace's place, so that what the run writes still lands outside the host's tree. Only
// where overlayfs cannot be had (review_store.h: OverlayUnavailable), and bounded: a workspace
// above the limits is refused with a message that says what to do instead.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "common/status.h"
#include "supervisor/review_store.h"

namespace ward::supervisor {

struct CopyLimits {
  uint64_t max_bytes = uint64_t{2} << 30;
  uint64_t max_entries = 200000;
};

// Copies `s.workspace` into s.copy() (reflinked where the file system can, else with
// copy_file_range), following no symlink and leaving out what is neither a regular file, a
// directory nor a symlink, and setuid/setgid bits. Writes s.manifest() (the relative paths
// copied, NUL-separated) and sets *copied_ns (see ReviewSession::copied_ns).
Status CopyWorkspace(const ReviewSession& s, const CopyLimits& limits, int64_t* copied_ns);

// The paths s.manifest() lists.
Result<std::set<std::string>> ReadManifest(const ReviewSession& s);

}  // namespace ward::supervisor
