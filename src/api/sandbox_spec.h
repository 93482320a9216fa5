// What a sandbox of the agent API is (a policy plus a workspace), how its parameters are
// validated, and how one exec becomes a `ward run` command line. An exec's own `policy` may
// only narrow the sandbox's: it is checked against the sandbox's effective Policy here, before
// anything runs, and turned into narrowing flags of `ward run`.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/error.h"
#include "policy/loader.h"
#include "policy/policy.h"

namespace ward::api {

struct SandboxSpec {
  policy::RunFlags flags;  // profile, paths, env, net, credentials, limits (as `ward run` takes)
  std::string workspace;   // absolute (canonicalised by the caller before use)
  // "direct", or review mode: "overlay" (or "copy"): the execs' writes to the workspace land in
  // the sandbox's review session (supervisor/review_store.h) until review.apply.
  std::string workspace_mode = "direct";
  int64_t ttl_s = 0;       // 0: no expiry
  int64_t idle_s = 0;      // 0: no idle expiry
  std::map<std::string, std::string> labels;
};

// Parses the params of sandbox.create. Relative paths in read/write/deny are taken relative
// to the workspace; "~" and "~/..." are kept for the policy loader. `workspace` must be an
// absolute path (it is not resolved here).
Expected<SandboxSpec> ParseSandboxSpec(const nlohmann::json& params);
// The same shape as the params (so a stored spec reloads through ParseSandboxSpec).
nlohmann::json SandboxSpecToJson(const SandboxSpec& spec);

// Labels: keys [a-z0-9_.-]{1,64}, values up to 256 bytes, at most 32.
bool ValidLabelKey(const std::string& key);

// The options of `ward run` (before `--`) that reproduce these flags, as --name=value so that
// no value can be read as an option.
std::vector<std::string> RunFlagsToArgs(const policy::RunFlags& flags, const std::string& workdir);

// Applies an exec's `policy` object to the sandbox's flags. Allowed: `deny` (paths),
// `deny_net` (hosts), `write` and `read` (replace the sandbox's own lists; every path must
// already be writable, resp. visible, under `effective`), `allow_net` (replaces; each pattern
// must be one the sandbox allows, verbatim), `limits` (each at most the sandbox's). Anything
// else is invalid_request; a widening is policy_denied.
// A `write` or `read` path is in the workspace (`spec.workspace`, canonical), where it is
// resolved from the workspace's directory following no symlink (enforce/beneath.h), without
// "..", or else one of the sandbox's own entries of that list (for `read`: of either list). A
// symlink on the way, a path outside the workspace or a ".." is policy_denied naming the path;
// a missing path is not_found. `ward run` resolves it the same way again and binds what it
// opened (enforce/mount.cc), so a symlink planted between this check and the run fails it.
Expected<policy::RunFlags> NarrowFlags(const SandboxSpec& spec, const policy::Policy& effective,
                                       const nlohmann::json& exec_policy);

// The `write` and `read` paths of `flags` that lie in `workspace` (canonical; "~" expanded
// with `home`), each resolved there following no symlink: one on the way is policy_denied
// naming it. Missing paths are left to `ward run`, which names them.
Expected<Done> CheckWorkspacePaths(const policy::RunFlags& flags, const std::string& workspace,
                                   const std::string& home);

// `ward run` arguments for one exec, up to and including "--", then the command.
struct RunInvocation {
  std::vector<std::string> args;  // without argv[0]
};
struct ExecCommand {
  std::vector<std::string> argv;  // what runs inside
  std::string cwd;                // absolute, within the workspace; "" = the workspace
};
// The review session an exec's writes go to (review mode), or none (`session` empty).
struct ExecReview {
  std::string mode;     // "overlay" or "copy"
  std::string session;  // the sandbox's review session
};
// `session_id`, when not empty, becomes `--session-id` (the audit and approval session).
RunInvocation BuildRunInvocation(const policy::RunFlags& flags, const std::string& workspace,
                                 const std::vector<std::string>& labels, int json_status_fd,
                                 const ExecCommand& command, const std::string& session_id = "",
                                 const ExecReview& review = {});

// `ward run` arguments for a live sandbox of these flags (no command: its execs arrive on the
// exec channel, which LiveSandbox appends with --json-status).
RunInvocation BuildLiveInvocation(const policy::RunFlags& flags, const std::string& workspace,
                                  const std::vector<std::string>& labels,
                                  const std::string& session_id);

// An exec's `cwd`: relative to the workspace, or absolute inside it. Lexical: ".." may not
// leave the workspace. Returns the absolute path.
Expected<std::string> ResolveCwd(const std::string& workspace, const std::string& cwd);

// Environment names of exec.env: [A-Za-z_][A-Za-z0-9_]*.
bool ValidEnvName(const std::string& name);

}  // namespace ward::api
