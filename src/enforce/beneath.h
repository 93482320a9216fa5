// Paths inside the workspace, resolved there without following a symlink. The workspace is
// written by the sandboxes that run in it, so any symlink in it may be one a sandbox planted:
// a path that names something in the workspace (a rule of the policy, a path an agent API
// client sends) is resolved from the workspace's directory with RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS, and a symlink anywhere on the way, or a ".." out of it, is an error that
// names the path and says why. The daemon checks a client's paths with OpenBeneath, the planner
// resolves rules with RealPathNotFollowingBelow, and sandbox init binds the object it opened
// from the workspace with the same flags (mount.cc), so what was checked is what is bound.
#pragma once

#include <linux/openat2.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "common/unique_fd.h"

namespace ward::enforce {

inline constexpr uint64_t kResolveBeneath =
    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

// Opens the single component `name` of `dir_fd` (never "." or "..") without following a
// symlink: with openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, or with
// O_NOFOLLOW where openat2 is missing, which for one such component is the same. O_NOFOLLOW and
// O_CLOEXEC are added to `flags`; with O_PATH a symlink is opened itself. -1 and errno.
int OpenComponentNoFollow(int dir_fd, const char* name, int flags);

// `path` relative to `dir` (both absolute and normalised): "" for `dir` itself, nullopt when
// `path` is not at or below `dir`. Lexical.
std::optional<std::string> RelativeBeneath(const std::string& dir, const std::string& path);

// Opens `rel` (relative and normalised: no "." or ".." components; "" for the directory itself)
// below `dir_fd` as an O_PATH descriptor, one component at a time, following no symlink.
// `shown` is how the directory is named in errors (the workspace's path). A symlink on the way
// is kPermissionDenied naming it; a missing or unreachable component is the errno's error
// (ENOENT: kNotFound) naming the path.
Result<UniqueFd> OpenBeneath(int dir_fd, const std::string& shown, const std::string& rel);

// realpath(3) of `path` (absolute, normalised), except that a symlink at or below `dir` (the
// canonical workspace) is never followed: it is kPermissionDenied naming it. Symlinks outside
// `dir` are followed as realpath does, also into `dir`; the result is then at or below `dir`
// with no symlink below it. Errors carry the errno (ENOENT for a missing path).
Result<std::string> RealPathNotFollowingBelow(const std::string& path, const std::string& dir);

}  // namespace ward::enforce
