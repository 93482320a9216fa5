// File operations of the agent API, done by the daemon on the host side of a sandbox's
// workspace. The sandbox can write the workspace while the daemon works in it, so every path
// is resolved from the workspace's directory fd with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS): a `..` or a symlink planted in the workspace cannot make the daemon
// read or write outside it. Every operation is also checked against the sandbox's policy
// (DecidePath): hidden paths cannot be read, protected ones (.git/hooks, .envrc, ...) cannot
// be written, created, removed or renamed, including as part of a directory tree.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/error.h"
#include "common/unique_fd.h"
#include "policy/policy.h"

namespace ward::api {

inline constexpr size_t kMaxFsReadBytes = 16 << 20;
inline constexpr size_t kMaxListEntries = 10000;
inline constexpr int kMaxListDepth = 32;
// A recursive remove or a rename of a tree checks every entry first; bigger trees are refused.
inline constexpr size_t kMaxTreeEntries = 100000;

struct FileInfo {
  std::string path;  // relative to the workspace ("." for the workspace itself)
  std::string type;  // "file", "dir", "symlink", "other"
  uint64_t size = 0;
  uint32_t mode = 0;  // permission bits
  int64_t mtime_ms = 0;
  bool writable = false;  // by the policy (writable and not protected)
};

class WorkspaceFs {
 public:
  // `workspace` is canonical and absolute; `policy` (not owned) is the sandbox's effective
  // policy and outlives this object.
  static Expected<WorkspaceFs> Open(const std::string& workspace, const policy::Policy* policy);

  struct ReadResult {
    std::string data;
    uint64_t size = 0;  // of the whole file
    bool eof = false;   // the read reached the end of the file
  };
  Expected<ReadResult> Read(const std::string& path, uint64_t offset, size_t length) const;
  // `mode`: permission bits for a new file (default 0644), or to set on an existing one.
  // `atomic`: write a temporary file beside it and rename it over (the default).
  Expected<FileInfo> Write(const std::string& path, const std::string& data,
                           std::optional<uint32_t> mode, bool atomic) const;
  Expected<std::vector<FileInfo>> List(const std::string& path, int depth, size_t max_entries,
                                       bool* truncated) const;
  Expected<FileInfo> Stat(const std::string& path) const;
  Expected<FileInfo> Mkdir(const std::string& path, bool parents) const;
  Expected<Done> Remove(const std::string& path, bool recursive) const;
  Expected<Done> Rename(const std::string& from, const std::string& to, bool overwrite) const;

  const std::string& workspace() const { return workspace_; }

  // A client path (relative to the workspace, or absolute within it) as a normalised path
  // relative to the workspace ("" for the workspace itself). Lexical; a path that leaves the
  // workspace is policy_denied.
  Expected<std::string> Relative(const std::string& path) const;

 private:
  WorkspaceFs(std::string workspace, UniqueFd fd, const policy::Policy* policy)
      : workspace_(std::move(workspace)), fd_(std::move(fd)), policy_(policy) {}
  std::string Absolute(const std::string& rel) const;
  // policy_denied unless the policy lets the sandbox read (or write) `rel`.
  Expected<Done> Check(const std::string& rel, bool write) const;
  bool Writable(const std::string& rel) const;
  bool Visible(const std::string& rel) const;
  std::vector<std::string> NestedRepos(const std::string& rel) const;
  // openat2 beneath the workspace, no symlinks.
  Expected<UniqueFd> OpenBeneath(const std::string& rel, int flags, mode_t mode = 0) const;
  Expected<UniqueFd> OpenParent(const std::string& rel, std::string* name) const;
  Expected<Done> CheckTree(const std::string& rel, const std::string* new_rel, size_t* count) const;
  Expected<Done> RemoveTreeAt(int parent_fd, const std::string& name) const;
  FileInfo InfoFrom(const std::string& rel, const struct stat& st) const;

  std::string workspace_;
  UniqueFd fd_;
  const policy::Policy* policy_;
};

}  // namespace ward::api
