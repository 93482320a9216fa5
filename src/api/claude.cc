#include "api/claude.h"

#include <nlohmann/json.hpp>

#include "api/jsonrpc.h"
#include "audit/record.h"

namespace ward::api {

std::string ShellQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

std::string ShellJoin(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    out += ShellQuote(w);
  }
  return out;
}

HookOutcome BlockedHook(const std::string& why) {
  return HookOutcome{2, "", "ward hook: " + why + "; the tool call is blocked\n"};
}

Result<ClaudeToolCall> ParseClaudeToolCall(std::string_view input) {
  if (input.size() > (16u << 20)) return InvalidArgument("the hook input is too large");
  if (!audit::JsonDepthWithin(input, 64)) return InvalidArgument("the hook input nests too deeply");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(input.begin(), input.end());
  } catch (const std::exception&) {
    return InvalidArgument("the hook input is not JSON");
  }
  if (!j.is_object()) return InvalidArgument("the hook input is not a JSON object");
  ClaudeToolCall call;
  call.event = "PreToolUse";
  if (j.contains("hook_event_name")) {
    if (!j["hook_event_name"].is_string()) return InvalidArgument("hook_event_name is not a string");
    call.event = j["hook_event_name"].get<std::string>();
    if (call.event != "PreToolUse") return call;
  }
  if (!j.contains("tool_name") || !j["tool_name"].is_string()) {
    return InvalidArgument("the hook input has no tool_name");
  }
  call.tool = j["tool_name"].get<std::string>();
  call.input = j.contains("tool_input") ? j["tool_input"] : nlohmann::json::object();
  if (!call.input.is_object()) return InvalidArgument("tool_input is not an object");
  if (j.contains("cwd") && j["cwd"].is_string()) call.cwd = j["cwd"].get<std::string>();
  if (j.contains("session_id") && j["session_id"].is_string()) {
    call.session_id = j["session_id"].get<std::string>();
  }
  return call;
}

HookOutcome RewritePreToolUse(std::string_view input, const HookOptions& o) {
  Result<ClaudeToolCall> call = ParseClaudeToolCall(input);
  if (!call.ok()) {
    return BlockedHook(call.status().message());
  }
  if (call->event != "PreToolUse" || call->tool != "Bash") return HookOutcome{};  // no opinion
  return RewriteBash(*call, o);
}

HookOutcome RewriteBash(const ClaudeToolCall& call, const HookOptions& o) {
  HookOutcome r;
  nlohmann::json tool_input = call.input;
  if (!tool_input.contains("command") || !tool_input["command"].is_string()) {
    return BlockedHook("the Bash call has no command");
  }
  std::string command = tool_input["command"].get<std::string>();
  if (command.find('\0') != std::string::npos) {
    return BlockedHook("the command contains NUL");
  }
  std::vector<std::string> words = {o.ward_path, "run"};
  words.insert(words.end(), o.run_args.begin(), o.run_args.end());
  words.insert(words.end(), {"--", o.shell, "-c", command});
  tool_input["command"] = ShellJoin(words);
  nlohmann::json specific = {{"hookEventName", "PreToolUse"}, {"updatedInput", tool_input}};
  if (!o.decision.empty()) {
    specific["permissionDecision"] = o.decision;
    specific["permissionDecisionReason"] =
        "ward: the command runs in a fresh sandbox (" + ShellJoin(o.run_args) + ")";
  }
  nlohmann::json out = {{"hookSpecificOutput", specific}};
  r.out = SerializeLine(out);
  return r;
}

std::vector<std::string> ShellPrefixCommand(const std::vector<std::string>& words,
                                            const std::string& shell) {
  if (words.size() == 1) return {shell, "-c", words[0]};
  return words;
}

std::string ShellPrefixWrapper(const std::string& ward_path,
                               const std::vector<std::string>& prefix_args) {
  std::vector<std::string> cmd = {ward_path, "shell-prefix"};
  cmd.insert(cmd.end(), prefix_args.begin(), prefix_args.end());
  cmd.push_back("--");
  return "#!/bin/sh\n"
         "# Written by `ward shell-prefix --install`. Claude Code runs every shell command as\n"
         "# \"$CLAUDE_CODE_SHELL_PREFIX '<command line>'\"; this runs it in a fresh ward "
         "sandbox.\n"
         "exec " +
         ShellJoin(cmd) + " \"$@\"\n";
}

}  // namespace ward::api
