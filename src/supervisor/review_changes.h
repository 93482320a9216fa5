// What a run in review mode changed: its tree (the overlay's upper layer, or the copy) against
// the host's workspace as it is now. Read only; nothing here follows a symlink on either side
// (every directory is opened from its parent with O_NOFOLLOW), and everything the run left is
// data: names, link targets and contents are never interpreted.
//
// Overlay: an entry of the upper layer is a change; a character device 0/0 is a whiteout (the
// entry was deleted); a directory with user.overlay.opaque=y replaced the host's directory as a
// whole (what the host has there and it lacks was deleted); user.overlay.origin marks an entry
// copied up from the host (it existed there when the run touched it).
// Copy: an entry whose ctime is newer than the copy (ReviewSession::copied_ns) or that the
// manifest does not list is a change; what the manifest lists and the copy lacks was deleted.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"
#include "supervisor/review_store.h"

namespace ward::supervisor {

enum class EntryType { kNone, kFile, kDir, kSymlink, kOther };
const char* EntryTypeName(EntryType t);  // "absent", "file", "directory", "symlink", "special file"

struct ReviewChange {
  enum class Kind {
    kAdd,     // absent on the host
    kModify,  // present on both sides: content, link target, type or mode differ
    kDelete,  // present on the host, removed by the run
  };
  Kind kind = Kind::kModify;
  std::string path;  // relative to the workspace, '/'-separated; never empty, "." or ".."
  // The host's entry now (kNone when absent) and the run's (kNone for kDelete).
  EntryType old_type = EntryType::kNone;
  EntryType new_type = EntryType::kNone;
  mode_t old_mode = 0;  // permission bits and setuid/setgid/sticky (07777)
  mode_t new_mode = 0;
  uint64_t old_size = 0;
  uint64_t new_size = 0;
  std::string old_link, new_link;  // symlink targets
  bool content_changed = false;    // file contents or link target differ (or the type)
  // kAdd: the entry may be one the run found on the host and the host deleted since (copy: the
  // copy had it there; overlay: it was copied up from the host, and the host's directory
  // changed since the run began). Apply refuses it unless forced.
  bool host_deleted_since = false;
  uid_t old_uid = 0;
  gid_t old_gid = 0;
  int64_t old_ctime_ns = 0;  // the host entry's ctime (0 when absent)
};

// Every change, sorted by path (a directory before what is below it). A directory the run
// deleted or replaced comes with a kDelete for each entry the host has below it.
Result<std::vector<ReviewChange>> CollectChanges(const ReviewSession& s);

// Whether the session's tree holds anything a run left: an overlay's upper directory holds what
// it wrote; a copy has to be compared (its cost is the copy's order, which this mode pays
// anyway). A copy that cannot be compared counts as changed.
bool TreeHoldsChanges(const ReviewSession& s);

// The changes selected by `paths` (relative to the workspace; each selects itself and what is
// below it), with the directories the run made above them. Empty `paths`: all. Unmatched paths
// are returned in *unmatched.
std::vector<ReviewChange> SelectChanges(const std::vector<ReviewChange>& all,
                                        const std::vector<std::string>& paths,
                                        std::vector<std::string>* unmatched);

// Opens `rel` below `root_fd` in the run's tree, following no symlink (openat2 RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS), with `flags`. A file the run left unreadable to its owner (chmod 000,
// which would otherwise keep it from review) is opened by lending the owner read permission for
// the open only: the tree is ours, and its mode is put back. (A directory left without search
// permission stops an unprivileged review with an error naming it: discard the session, or
// chmod it in the session's tree.)
UniqueFd OpenTreeEntry(int root_fd, const std::string& rel, int flags);

// Splits a relative path into components; false for "", ".", "..", absolute or empty
// components.
bool SplitRelative(const std::string& rel, std::vector<std::string>* out);

}  // namespace ward::supervisor
