// What `ward hook claude-pretooluse` decides for Claude Code's own tools, which Claude Code runs
// in its own process on the host (not in a sandbox): its file tools (Read, Write, Edit,
// MultiEdit, NotebookEdit, NotebookRead, Glob, Grep, LS) may touch only what a sandbox of the
// same policy could, and WebFetch only the hosts it could reach. Pure: the caller resolves paths
// on the host (following every symlink, dangling ones included) and loads the policy.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/claude.h"
#include "common/status.h"
#include "policy/decide.h"
#include "policy/policy.h"

namespace ward::api {

struct FileAccess {
  enum class Op { kRead, kWrite, kList };  // kList: a directory and everything under it
  Op op = Op::kRead;
  std::string field;  // the tool_input field that named it ("file_path", "path", "pattern")
  std::string path;   // absolute (relative ones joined to the call's cwd), not yet resolved
};
const char* FileAccessOpName(FileAccess::Op op);  // "read" | "write" | "list"

// The host paths a tool call touches. Empty for tools that touch none (Bash, which runs in a
// sandbox; Task, TodoWrite, WebSearch, MCP tools, ...). "~" and "~/..." are under the call's
// home, as Claude Code expands them. A tool this hook does not know whose
// input names a path (file_path, notebook_path, path) is taken as a write there: a new file tool
// is held to the strictest rule until the hook knows it. Errors: a path field that is not a
// string, a relative path without an absolute cwd, a Glob pattern that climbs out with "..".
Result<std::vector<FileAccess>> FileAccessesOf(const ClaudeToolCall& call);

// The URL a WebFetch call fetches ("" for other tools).
std::string WebFetchUrlOf(const ClaudeToolCall& call);

// The host and port of an http(s) URL (userinfo dropped, [v6] unbracketed, the scheme's port
// by default). Errors name what is wrong.
struct FetchTarget {
  std::string host;
  uint16_t port = 443;
};
Result<FetchTarget> FetchTargetOf(std::string_view url);

struct FileVerdict {
  bool allowed = false;
  std::string why;  // one sentence for the model and the audit trail
};

// Whether an access to `resolved` (the canonical host path) is what a sandbox of this policy
// could do: reads need the host's own file to be visible there and not masked; writes need it
// writable, the host's file (not private scratch), not protected and not host-executed content
// (which a run would quarantine but a direct write would leave for the host to run); listing a
// directory also needs nothing under it hidden by a deny rule. `decision` is
// policy::DecidePath of `resolved`.
FileVerdict JudgeFileAccess(const policy::Policy& policy, const FileAccess& access,
                            const std::string& resolved, const policy::PathDecision& decision);

// The hook's answer that denies the call: Claude Code shows `reason` to the model.
std::string ClaudeDenyOutput(const std::string& reason);

}  // namespace ward::api
