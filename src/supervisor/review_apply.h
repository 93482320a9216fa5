// `ward apply` and `ward discard`: a review session's changes reach the host's workspace, or
// are dropped. The caller holds the session's lock (review_store.h), so no run writes the tree
// meanwhile.
//
// What apply refuses (all before it changes anything; a refusal applies nothing):
//  - host-executed content (IsHostExecutedPath) unless --include-protected names the path or a
//    directory above it;
//  - a file with a setuid or setgid bit, always (directories get neither bit from a run);
//  - a change over a host entry that changed since the run began, unless --force: the host
//    entry's ctime is not older than the session's start (ctime cannot be set by anyone: only
//    a change to the entry moves it), or the run saw an entry the host has deleted since;
//  - a session already applied or discarded.
// How it writes: each path's parent is opened from the workspace with RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS (enforce/beneath.h), so no symlink on the host is followed, and a file or
// symlink is written to a temporary name in that directory and renamed over the old one
// (atomic per file). Directories are made, deleted (when empty) or have their mode changed.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "supervisor/review_changes.h"
#include "supervisor/review_store.h"

namespace ward::supervisor {

struct ApplyOptions {
  std::vector<std::string> paths;              // relative to the workspace; empty: every change
  std::vector<std::string> include_protected;  // relative paths the user names
  bool force = false;
  std::string expect_sha256;  // non-empty: refuse unless the session's whole diff has this hash
};

struct AppliedItem {
  std::string path;
  std::string change;  // "add", "modify", "delete"
  std::string type;    // EntryTypeName of the result ("absent" for a deletion)
  std::string sha256;  // of the new content (file) or target (symlink); "" otherwise
};

struct ApplyReport {
  std::string diff_sha256;  // the session's whole diff before anything was applied
  std::vector<AppliedItem> applied;
  std::vector<std::string> refused;  // one line each, with the way on; nothing was applied
  std::vector<std::string> skipped;  // special files, which are never applied
  bool complete = false;             // the session is applied as a whole now
  Status failed;                     // a write that failed half-way (what came before stays)
};

// Applies `o.paths` (or everything) of `s` and records it in s's meta.json.
Result<ApplyReport> ApplyReview(ReviewSession* s, const ApplyOptions& o);

struct DiscardReport {
  std::string diff_sha256;
  size_t files = 0;
};
// Drops the session's layers; the session stays as a record, discarded.
Result<DiscardReport> DiscardReview(ReviewSession* s);

// Whether the entry at `components` (a path relative to the workspace) is host-executed
// content: one of `protected_relpaths` at any depth (".envrc", ".vscode", ".git/hooks", ...),
// a ".git" that is not a directory (it redirects git elsewhere), or anything inside a git
// directory (`git_dir_at`: the index of its last component, -1 when none) other than what git
// needs to work. *rule says which. The local form of the rule the policy module defines (to be
// replaced by policy/host_executed.h).
bool IsHostExecutedPath(const std::vector<std::string>& components, EntryType type,
                        int git_dir_at, const std::vector<std::string>& protected_relpaths,
                        std::string* rule);

}  // namespace ward::supervisor
