// Lexical path helpers shared by the loader and DecidePath. Pure string work: nothing here
// touches the filesystem, so symlinks are never resolved (callers pass canonical paths).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ward::policy {

// "/a//b/./c/../d/" -> "/a/b/d". ".." at the root stays at the root. The input must be
// absolute; the result always is, and never ends in '/' unless it is "/".
std::string NormalizePath(std::string_view abs_path);

// True when `path` is `prefix` or lies below it (both normalised, absolute).
bool PathIsWithin(std::string_view path, std::string_view prefix);

// The number of components of `path` below `prefix` (0 when equal); -1 when not within.
int PathDepthBelow(std::string_view path, std::string_view prefix);

// "/a/b" + "c/d" -> "/a/b/c/d"; handles the root.
std::string JoinPath(std::string_view base, std::string_view rel);

// The components of a path, as written: "/a//b/./c/" -> {"a", "b", ".", "c"} (no
// normalisation: "." and ".." are kept).
std::vector<std::string> PathComponents(std::string_view path);

// Whether the ".." components of a relative path take it above where it starts: "a/../../x"
// does, "a/../x" does not ("." and empty components count for nothing).
bool ClimbsOut(std::string_view rel);

// The parent of a normalised absolute path ("/" for "/x" and for "/").
std::string ParentPath(std::string_view path);

// Whether `s` contains a glob character of fnmatch(3) ('*', '?' or '[').
bool HasGlob(std::string_view s);

// fnmatch(3) of one path component with FNM_PERIOD (a leading '.' must be matched
// literally), the way the mount planner masks deny globs.
bool MatchComponent(const std::string& pattern, const std::string& name);

}  // namespace ward::policy
