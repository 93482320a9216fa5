// `ward why PATH`: which rule decides what the sandbox sees at a path. Pure and lexical: callers
// pass canonical paths (symlinks resolved on the host); nothing here touches the filesystem.
// The precedence is written down in docs/profiles.md ("How a path is decided"); the mount
// planner implements the same order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "policy/policy.h"

namespace ward::policy {

struct PathDecision {
  enum class Visibility { kHidden, kRead, kWrite };
  // What the sandbox can do at this path. kRead includes execute.
  Visibility visibility = Visibility::kHidden;
  // True when the sandbox sees the host's own file there (a bind); false for what ward creates
  // (the tmpfs root and its parent directories, private /tmp and HOME, /proc, /dev/pts, /dev/shm).
  // A writable path with host_file == false is private scratch: the host's file is not visible
  // and nothing written there survives the run.
  bool host_file = false;
  bool is_protected = false;  // inside a writable root but read-only (a protected path)
  // Writable during a run, but host-executed content (host_executed.h): what a run makes or
  // changes there goes to the quarantine when the run ends.
  bool host_executed = false;
  bool masked = false;        // under a visible bind of the host but covered by a deny rule
  // What provides it: "bind /usr (read)", "workspace", "private tmpfs /tmp",
  // "private HOME (tmpfs)", "minimal /dev", "fresh /proc", "read-only tmpfs root",
  // "not in the sandbox's view".
  std::string via;
  std::optional<Origin> rule;  // the rule that decided (none for built-in mounts)
  std::string reason;          // one human line naming the rule (file:line)
};

const char* VisibilityName(PathDecision::Visibility v);  // "hidden" | "read" | "write"

// Decides `abs_path` (absolute; normalised lexically here). Nested repositories are inferred
// from the path itself (a path inside D/.git makes D a repository root).
PathDecision DecidePath(const Policy& policy, const std::string& abs_path);

// Same, with the nested repository roots the caller found on disk (absolute paths; only those
// within nested_repo_depth of a writable root count, as in the mount planner). Without
// `infer_nested_repos` only those count, as for a run: a repository it makes is judged after it.
PathDecision DecidePath(const Policy& policy, const std::string& abs_path,
                        const std::vector<std::string>& nested_repo_roots,
                        bool infer_nested_repos = true);

}  // namespace ward::policy
