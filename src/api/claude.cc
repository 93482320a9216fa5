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

HookOutcome RewritePreToolUse(std::string_view input, const HookOptions& o) {
  HookOutcome r;
  auto block = [&](const std::string& why) {
    r.exit_code = 2;
    r.out.clear();
    r.err = "ward hook: " + why + "; the tool call is blocked\n";
    return r;
  };
  if (input.size() > (16u << 20)) return block("the hook input is too large");
  if (!audit::JsonDepthWithin(input, 64)) return block("the hook input nests too deeply");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(input.begin(), input.end());
  } catch (const std::exception&) {
    return block("the hook input is not JSON");
  }
  if (!j.is_object()) return block("the hook input is not a JSON object");
  if (j.contains("hook_event_name") &&
      (!j["hook_event_name"].is_string() || j["hook_event_name"] != "PreToolUse")) {
    return r;  // not ours: no opinion
  }
  if (!j.contains("tool_name") || !j["tool_name"].is_string()) {
    return block("the hook input has no tool_name");
  }
  if (j["tool_name"] != "Bash") return r;
  if (!j.contains("tool_input") || !j["tool_input"].is_object()) {
    return block("the Bash call has no tool_input");
  }
  nlohmann::json tool_input = j["tool_input"];
  if (!tool_input.contains("command") || !tool_input["command"].is_string()) {
    return block("the Bash call has no command");
  }
  std::string command = tool_input["command"].get<std::string>();
  if (command.find('\0') != std::string::npos) return block("the command contains NUL");
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
