// Drop-in integration with Claude Code, which runs each Bash tool call through a shell:
//  - CLAUDE_CODE_SHELL_PREFIX: Claude Code runs `PREFIX '<command line>'` for every shell
//    command it spawns (Bash tool calls, hook commands, stdio MCP server start-up). The prefix
//    must be a single executable path (text after a " -" is passed as raw words), so ward
//    installs a tiny wrapper script that runs `ward shell-prefix [run options] -- "$@"`.
//  - A PreToolUse hook: JSON on stdin ({tool_name, tool_input: {command, ...}, ...}); JSON on
//    stdout ({hookSpecificOutput: {hookEventName, permissionDecision, updatedInput}}) that
//    rewrites the command to run under `ward run`. Exit status 2 blocks the call.
// Pure functions: the CLI files do the I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ward::api {

// POSIX shell quoting: 'abc', with ' written as '\''. The empty string is ''.
std::string ShellQuote(std::string_view s);
std::string ShellJoin(const std::vector<std::string>& words);

// One PreToolUse call, as Claude Code sends it on the hook's stdin.
struct ClaudeToolCall {
  std::string event;       // "PreToolUse" (other events are not the hook's)
  std::string tool;        // "Bash", "Read", ...
  nlohmann::json input;    // tool_input (an object)
  std::string cwd;         // Claude Code's current directory (absolute) or ""
  std::string session_id;  // Claude Code's session, or ""
  std::string home;        // the caller's HOME: Claude Code expands a leading "~" with it
};

// Parses the hook's input. Errors name what is missing or malformed (the hook then blocks).
Result<ClaudeToolCall> ParseClaudeToolCall(std::string_view input);

struct HookOptions {
  std::string ward_path;              // absolute path of the ward binary
  std::vector<std::string> run_args;  // `ward run` options (before "--")
  std::string shell = "/bin/bash";    // runs the original command line inside
  std::string decision = "allow";     // "allow", "ask", or "" (no permission decision)
};

struct HookOutcome {
  int exit_code = 0;  // 0: use stdout; 2: block the tool call (stderr is the reason)
  std::string out;    // JSON for stdout ("" = no opinion)
  std::string err;    // message for stderr
};

// The answer that blocks the tool call, saying why (exit 2, the reason on stderr).
HookOutcome BlockedHook(const std::string& why);

// Rewrites a PreToolUse call of the Bash tool to `ward run [opts] -- SHELL -c '<command>'`.
// Other tools and other events pass untouched (no output). Input that cannot be understood
// blocks the call (fail closed). A command that already starts with ward is wrapped again:
// the agent must not pick its own sandbox options.
HookOutcome RewritePreToolUse(std::string_view input, const HookOptions& options);
// The same for a call already parsed (its tool is Bash).
HookOutcome RewriteBash(const ClaudeToolCall& call, const HookOptions& options);

// What `ward shell-prefix` runs inside the sandbox for the words after its options: one word is
// a shell command line (SHELL -c WORD), several are an argv as is.
std::vector<std::string> ShellPrefixCommand(const std::vector<std::string>& words,
                                            const std::string& shell);

// The wrapper script for CLAUDE_CODE_SHELL_PREFIX.
std::string ShellPrefixWrapper(const std::string& ward_path,
                               const std::vector<std::string>& prefix_args);

}  // namespace ward::api
