// Paths as the host resolves them, for commands that judge a path with the policy before
// something on the host acts on it (`ward why`, `ward hook claude-pretooluse`).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "policy/policy.h"

namespace ward::cli {

// Where an absolute path leads on the host: every symlink followed, relative and absolute ones,
// a dangling one too (its target is what a create through it would make), ".." taken after the
// prefix before it is resolved; from the first component that does not exist the rest is
// lexical. An ELOOP-long chain is an error, and so is a /proc magic link that leads out of
// /proc (a process's cwd, root, exe or open files): the process that acts on the path is not
// the one that resolved it.
Result<std::string> ResolveOnHost(const std::string& abs_path);

// The nested repository roots between a writable root of the policy and `path` (within its
// nested_repo_depth), found on disk, as policy::DecidePath takes them.
std::vector<std::string> NestedRepoRootsOnHost(const policy::Policy& pol, const std::string& path);

// Why a write made directly on the host at `path` (resolved; inside a writable root) would be
// content the host's git runs, judged by the structure on disk as the write would leave it
// (policy/host_executed.h): a ".git" file (it redirects git), or inside a directory that is a
// git directory (by its shape, whatever its name) anything but git's inert data, or the write
// that completes a git directory's shape around a config or hooks that are not inert. "" when
// none of these.
std::string HostExecutedWriteWhy(const policy::Policy& pol, const std::string& path);

}  // namespace ward::cli
