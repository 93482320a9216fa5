// Review sessions: where a run in review mode (`ward run --workspace=overlay`) keeps what it
// wrote, and in what state that is. One directory per session in ward's state directory, which
// no sandbox may see (private_dirs.h):
//
//   <state>/review/<id>/      0700; flock on the directory: held by the run (or `ward serve`'s
//                             exec) while it writes, and by `ward diff|apply|discard` while
//                             they read or change it
//     meta.json               what the session is (below); written by ward only
//     upper/ work/            overlay mode: the overlay's upper and work directories
//     copy/ manifest          copy mode (overlayfs unavailable): the workspace's copy, bound in
//                             its place, and the NUL-separated paths it held when made
//   <state>/review/.spare/    overlay sessions whose run wrote nothing, kept for the next run
//
// The id is the run's audit session id (for `ward serve`, the sandbox's own). A run that wrote
// nothing leaves no session: its directory goes to .spare, and the next run takes it over (one
// rename each way) instead of making and removing directories at every run. Directories made
// and removed at every run cost every later file creation nearby: ext4's inode allocator skips
// recently freed inodes, reading the inode table for each.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"

namespace ward::supervisor {

enum class ReviewMode { kOverlay, kCopy };
const char* ReviewModeName(ReviewMode m);  // "overlay", "copy"

enum class ReviewState { kOpen, kApplied, kDiscarded };
const char* ReviewStateName(ReviewState s);  // "open", "applied", "discarded"

// A path `ward apply` changed on the host, and the ctime it left there: that change is ward's own,
// not a host change a later apply must not overwrite.
struct AppliedPath {
  std::string path;
  int64_t ctime_ns = 0;
};

struct ReviewSession {
  std::string id;
  std::string dir;        // <state>/review/<id>
  std::string workspace;  // the host's workspace, canonical
  ReviewMode mode = ReviewMode::kOverlay;
  ReviewState state = ReviewState::kOpen;
  // CLOCK_REALTIME_COARSE read before the sandbox could write anything. A host file whose
  // ctime is not older than this may have changed since the run began (see review_apply.h).
  int64_t started_ns = 0;
  // Copy mode: a time after the copy was complete, and older than every later change's
  // ctime. An entry of the copy whose ctime is newer was changed by a run.
  int64_t copied_ns = 0;
  uid_t uid = 0;
  std::string created_by;  // "run", "serve"
  std::string note;        // why copy mode was chosen ("" in overlay mode)
  // The protected names of the run's policy: apply refuses them wherever they are.
  std::vector<std::string> protected_relpaths;
  std::vector<AppliedPath> applied;  // what was applied so far (relative to the workspace)
  std::string ended;                 // when applied or discarded (RFC 3339), else ""

  std::string upper() const { return dir + "/upper"; }
  std::string work() const { return dir + "/work"; }
  std::string copy() const { return dir + "/copy"; }
  std::string manifest() const { return dir + "/manifest"; }
  // The tree the run's writes are in: the upper layer, or the copy.
  std::string tree() const { return mode == ReviewMode::kOverlay ? upper() : copy(); }
};

// <state_dir>/review
std::string ReviewRoot(const std::string& state_dir);

struct ReviewRequest {
  std::string state_dir;  // ward's state directory
  std::string id;         // a session id (audit::IsValidSessionId)
  std::string workspace;  // canonical
  bool force_copy = false;  // `--workspace=copy`: a copy even where overlayfs works
  std::string created_by = "run";
  std::vector<std::string> protected_relpaths;
};

// Makes the session's directory and layers: overlay where OverlayUnavailable() says nothing,
// else a copy of the workspace (review_copy.h; bounded, refused above its limits with a
// message that says what to do). On failure nothing of the session is left behind.
Result<ReviewSession> CreateReviewSession(const ReviewRequest& req);

// Why overlayfs cannot hold this session's upper layer in `dir` ("" when it can): the kernel
// (user-namespace overlayfs needs Linux >= 5.11), the file system of ward's state directory
// (it must not be an overlay itself, and, checked with `probe_xattr` on dir/upper, must take
// user.* extended attributes).
std::string OverlayUnavailable(const std::string& dir, bool probe_xattr);

// Reads <dir>/meta.json. A session whose files are missing or malformed is an error naming it.
Result<ReviewSession> LoadReviewSession(const std::string& dir);
// Writes meta.json atomically (a temporary file renamed over it); `in_place`: rewritten where it
// is (a session no one else can have read yet, under its lock).
Status SaveReviewSession(const ReviewSession& s, bool in_place = false);

// Every session under <state_dir>/review, newest first; unreadable ones are skipped.
std::vector<ReviewSession> ListReviewSessions(const std::string& state_dir);

// SESSION as the user types it: an id or a unique prefix of one, or "last" (the newest). Empty:
// the newest open session of `workspace`. Errors say what exists.
Result<ReviewSession> ResolveReviewSession(const std::string& state_dir, const std::string& name,
                                           const std::string& workspace);

// The session's lock (flock on its directory), held while the descriptor lives. Never waits: a
// session another process holds is kUnavailable naming what holds it ("a run still writes it").
Result<UniqueFd> LockReviewSession(const ReviewSession& s);

// Removes the session's layers (upper and work, or the copy and its manifest), never following
// a symlink; meta.json stays as the record of what happened.
Status RemoveReviewLayers(const ReviewSession& s);
// Removes the whole session directory (a session refused before its run began, or an empty one).
Status RemoveReviewSession(const ReviewSession& s);
// An own session whose run wrote nothing: overlay sessions go to .spare for the next run (see
// above), others are removed.
Status RetireEmptyReviewSession(const ReviewSession& s);

// Before an overlay of the session is mounted: overlayfs would empty and remove the work/work
// directory an earlier mount left, and in a user namespace that took the mount some
// milliseconds; it is renamed aside instead (overlayfs ignores other names in its work
// directory), and the ones set aside are removed together now and then.
void SetAsideOverlayWork(const ReviewSession& s);

// Whether the run left nothing in the session's tree (overlay: an empty upper directory).
bool ReviewTreeEmpty(const ReviewSession& s);

// Removes `name` in `dirfd` and everything below it, following no symlink and crossing no
// mount. Directories overlayfs left without permissions (work/work) are opened up first.
Status RemoveTreeAt(int dirfd, const std::string& name);

// CLOCK_REALTIME_COARSE in nanoseconds: the clock file timestamps are taken from.
int64_t CoarseNowNs();

}  // namespace ward::supervisor
