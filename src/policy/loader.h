// Builds the effective Policy of one run from profiles (TOML, with `extends`), the workspace's
// .ward.toml (narrowing only) and command-line flags. Pure: file contents arrive through a
// FileReader, so every rule and error is unit-testable without a filesystem.
// The schema and the precedence rules are documented in docs/profiles.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "policy/policy.h"
#include "policy/units.h"  // ParseSize, ParseDurationMs: used with the loader by its callers

namespace ward::policy {

// Returns the contents of a file, or a Status with Code::kNotFound when it does not exist
// (any other error is reported as is: the loader fails closed).
using FileReader = std::function<Result<std::string>(const std::string& path)>;

// What `ward run/explain/why` accept that shapes the policy (raw strings; validated here).
struct RunFlags {
  std::string profile = "default";  // NAME, builtin:NAME, or FILE if it has a '/' or ends in .toml
  std::vector<std::string> read, write, deny;    // -r -w --deny: absolute, ~/..., or cwd-relative
  std::vector<std::string> env;                  // -e NAME (pass from caller) or NAME=VALUE (set)
  std::vector<std::string> allow_net, deny_net;  // -n/--allow-net, --deny-net
  std::vector<std::string> allow_degraded;       // --allow-degraded LAYER[,LAYER]
  std::vector<std::string> credentials;          // --credential NAME (defined by the profile)
  std::vector<std::string> credential_env;       // --credential-env VAR=HOST[,HOST...]
  std::optional<std::string> memory, pids, cpu, timeout, tmp_size, file_size;  // raw CLI strings
  std::optional<std::string> proxy_connections;                                // raw CLI string
  std::optional<bool> approvals;                                               // --ask
  bool no_audit = false;                                                       // --no-audit
  // --allow-net-anything: accept allow rules that match every host ("*", "*.com", "0.0.0.0/0").
  bool allow_net_anything = false;
  // --workspace-anyway: accept a workspace policy/workspace_choice.h refuses. Not read by the
  // loader: the CLI checks the workspace before loading (a refused one is not read at all).
  bool workspace_anyway = false;
};

// Facts about the caller, gathered by the CLI.
struct Context {
  std::string home;        // caller's HOME, absolute
  std::string cwd;         // absolute
  std::string workspace;   // absolute and canonical (the CLI resolved -C DIR / cwd and symlinks)
  std::string config_dir;  // $XDG_CONFIG_HOME/ward or ~/.config/ward ("" = no user profiles)
};

// The workspace file: `.ward.toml` at the workspace's root. The sandbox can write the workspace,
// so the file is read as untrusted: a regular file of at most kWorkspaceFileMaxBytes (the CLI's
// reader refuses anything else, see docs/profiles.md).
inline constexpr const char* kWorkspaceFileName = ".ward.toml";
inline constexpr size_t kWorkspaceFileMaxBytes = 64 * 1024;
std::string WorkspaceFilePath(const std::string& workspace);

// Loads, merges and validates. Every error is kInvalidArgument (or the reader's own error) with
// a message "FILE:LINE: KEY: what is wrong" whenever a file is involved.
Result<Policy> LoadPolicy(const RunFlags& flags, const Context& ctx, const FileReader& reader);

}  // namespace ward::policy
