// Drop-in agent integration: a command run through `ward shell-prefix` (as Claude Code's
// CLAUDE_CODE_SHELL_PREFIX runs it) or rewritten by `ward hook claude-pretooluse` cannot read
// the canary secrets in HOME. Each denial has a positive control: the same command line run
// without ward reads them.
#include <nlohmann/json.hpp>

#include "harness.h"

namespace ward::test {
namespace {

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool Leaks(const RunResult& r) {
  std::string all = r.out + r.err;
  return all.find(kCanarySecret) != std::string::npos ||
         all.find(kCanaryApiKey) != std::string::npos;
}

class AgentTest : public SandboxTest {};

// What an agent would try: secrets in files and in the environment.
const char* kSnoop = "cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.netrc; env; echo SNOOP-DONE";

TEST_F(AgentTest, ShellPrefixRunsTheCommandLineInASandbox) {
  RunResult plain = RunProgram({"/bin/sh", "-c", kSnoop}, Defaults());
  ASSERT_TRUE(Leaks(plain)) << "positive control: the canary is readable without ward";
  RunResult r = RunWard({"shell-prefix", "-r", StageDir(), "--", kSnoop}, Defaults());
  EXPECT_NE(r.out.find("SNOOP-DONE"), std::string::npos) << r.out << r.err;
  EXPECT_FALSE(Leaks(r)) << r.out << r.err;
  // Several words are an argv, run as is.
  r = RunWard({"shell-prefix", "--", "/bin/echo", "a b", "c"}, Defaults());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "a b c\n");
  // The exit status is the command's.
  r = RunWard({"shell-prefix", "--", "exit 7"}, Defaults());
  EXPECT_EQ(r.status, 7) << r.err;
}

TEST_F(AgentTest, ShellPrefixWrapperInvokedTheWayClaudeCodeDoes) {
  std::string wrapper = root_->path() + "/ward-claude-prefix";
  RunResult inst = RunWard({"shell-prefix", "--install", wrapper, "-r", StageDir()}, Defaults());
  ASSERT_EQ(inst.status, 0) << inst.err;
  EXPECT_NE(inst.out.find("CLAUDE_CODE_SHELL_PREFIX"), std::string::npos) << inst.out;
  // Claude Code builds one command string (snapshot, eval of the tool's command, cwd capture)
  // and runs `PREFIX '<that string>'` through the shell.
  std::string claude = std::string("source /nonexistent/snapshot.sh 2>/dev/null || true && eval ") +
                       Quote(kSnoop) + " < /dev/null && pwd -P >| /tmp/claude-ward-agent-test-cwd";
  RunResult plain = RunProgram({"/bin/bash", "-c", claude}, Defaults());
  ASSERT_TRUE(Leaks(plain)) << "positive control";
  RunResult r = RunProgram({"/bin/bash", "-c", Quote(wrapper) + " " + Quote(claude)}, Defaults());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("SNOOP-DONE"), std::string::npos) << r.out << r.err;
  EXPECT_FALSE(Leaks(r)) << r.out << r.err;
}

TEST_F(AgentTest, PreToolUseHookRewritesBashCallsIntoASandbox) {
  nlohmann::json in = {{"session_id", "test-session"},
                       {"transcript_path", root_->path() + "/t.jsonl"},
                       {"cwd", ws_},
                       {"permission_mode", "default"},
                       {"hook_event_name", "PreToolUse"},
                       {"tool_name", "Bash"},
                       {"tool_use_id", "toolu_test"},
                       {"tool_input", {{"command", kSnoop}, {"description", "look around"}}}};
  RunOptions o = Defaults();
  o.stdin_data = in.dump();
  // No Claude Code runs this hook: any version is trusted here (claude_hook_test.cc tests the
  // version check).
  RunResult h = RunWard({"hook", "claude-pretooluse", "--trust-agent-version", "any", "-r",
                         StageDir()}, o);
  ASSERT_EQ(h.status, 0) << h.err;
  auto out = nlohmann::json::parse(h.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << h.out;
  auto& spec = out["hookSpecificOutput"];
  EXPECT_EQ(spec["hookEventName"], "PreToolUse");
  EXPECT_EQ(spec["updatedInput"]["description"], "look around");
  std::string cmd = spec["updatedInput"]["command"];
  // Claude Code runs the rewritten command line in its shell.
  RunResult plain = RunProgram({"/bin/bash", "-c", kSnoop}, Defaults());
  ASSERT_TRUE(Leaks(plain)) << "positive control";
  RunResult r = RunProgram({"/bin/bash", "-c", cmd}, Defaults());
  EXPECT_NE(r.out.find("SNOOP-DONE"), std::string::npos) << cmd << "\n" << r.out << r.err;
  EXPECT_FALSE(Leaks(r)) << r.out << r.err;

  // Tools that touch no host path pass untouched; input it cannot read blocks the call, and so
  // does a file tool without its path.
  o.stdin_data = R"({"hook_event_name":"PreToolUse","tool_name":"TodoWrite","tool_input":{}})";
  h = RunWard({"hook", "claude-pretooluse"}, o);
  EXPECT_EQ(h.status, 0) << h.err;
  EXPECT_EQ(h.out, "");
  o.stdin_data = R"({"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{}})";
  h = RunWard({"hook", "claude-pretooluse"}, o);
  EXPECT_EQ(h.status, 2) << h.out;
  o.stdin_data = "{\"tool_name\":\"Bash\",";
  h = RunWard({"hook", "claude-pretooluse"}, o);
  EXPECT_EQ(h.status, 2);
  EXPECT_NE(h.err.find("blocked"), std::string::npos) << h.err;
}

// The docs' example installs into ~/.local/bin, which a fresh account does not have.
TEST_F(AgentTest, ShellPrefixInstallMakesTheDirectoriesItNeeds) {
  std::string wrapper = root_->path() + "/fresh/.local/bin/ward-claude-prefix";
  ASSERT_FALSE(PathExists(root_->path() + "/fresh"));
  RunResult inst = RunWard({"shell-prefix", "--install", wrapper}, Defaults());
  ASSERT_EQ(inst.status, 0) << inst.err;
  EXPECT_TRUE(PathExists(wrapper));
  RunResult r = RunProgram({wrapper, "echo from-the-wrapper"}, Defaults());
  EXPECT_EQ(r.out, "from-the-wrapper\n") << r.err;
}

// The approver options are part of the run: the hook's rewritten command and the shell
// prefix's wrapper carry them (they were once dropped silently, leaving the run without its
// approver).
TEST_F(AgentTest, TheApproverOptionsReachTheRunsTheyStart) {
  const std::vector<std::string> approver = {"--approver", "unix:/nonexistent/approver.sock",
                                             "--approver-secret-env", "WARD_TEST_APPROVER_KEY"};
  nlohmann::json in = {{"hook_event_name", "PreToolUse"},
                       {"tool_name", "Bash"},
                       {"tool_input", {{"command", "true"}}}};
  RunOptions o = Defaults();
  o.stdin_data = in.dump();
  std::vector<std::string> hook = {"hook", "claude-pretooluse", "--trust-agent-version", "any"};
  hook.insert(hook.end(), approver.begin(), approver.end());
  RunResult h = RunWard(hook, o);
  ASSERT_EQ(h.status, 0) << h.err;
  auto out = nlohmann::json::parse(h.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << h.out;
  std::string cmd = out["hookSpecificOutput"]["updatedInput"]["command"];
  EXPECT_NE(cmd.find("--approver=unix:/nonexistent/approver.sock"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--approver-secret-env=WARD_TEST_APPROVER_KEY"), std::string::npos) << cmd;
  // Control: without them, the rewritten command names no approver.
  RunResult plain = RunWard({"hook", "claude-pretooluse", "--trust-agent-version", "any"}, o);
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(plain.out.find("--approver"), std::string::npos) << plain.out;

  std::string wrapper = root_->path() + "/ward-claude-prefix";
  std::vector<std::string> install = {"shell-prefix", "--install", wrapper};
  install.insert(install.end(), approver.begin(), approver.end());
  ASSERT_EQ(RunWard(install, Defaults()).status, 0);
  std::string script = ReadFile(wrapper);
  EXPECT_NE(script.find("--approver=unix:/nonexistent/approver.sock"), std::string::npos)
      << script;
  EXPECT_NE(script.find("--approver-secret-env=WARD_TEST_APPROVER_KEY"), std::string::npos)
      << script;
}

}  // namespace
}  // namespace ward::test
