// `ward hook claude-pretooluse [run options]`: a Claude Code PreToolUse hook. It reads the
// hook's JSON on stdin and, for a Bash tool call, prints JSON that rewrites the command to run
// in a fresh sandbox under these options (updatedInput). Unreadable input blocks the call
// (exit 2): the hook fails closed.
#include <limits.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "api/claude.h"
#include "api/spec.h"
#include "cli/commands.h"
#include "cli/run_options.h"

namespace ward::cli {
namespace {

struct HookOptions {
  RunOptions run;
  std::string shell;
  std::string decision = "allow";
};

int RunClaudePreToolUse(const HookOptions& o) {
  std::string input;
  char buf[65536];
  while (input.size() <= (16u << 20)) {
    ssize_t n = read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    input.append(buf, static_cast<size_t>(n));
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    std::fprintf(stderr, "ward hook: cannot tell where the ward binary is; blocking the call\n");
    return 2;
  }
  api::HookOptions h;
  h.ward_path.assign(self, static_cast<size_t>(n));
  h.run_args = RunOptionsToArgs(o.run);
  h.shell = !o.shell.empty() ? o.shell : (access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh");
  h.decision = o.decision == "none" ? "" : o.decision;
  api::HookOutcome r = api::RewritePreToolUse(input, h);
  if (!r.out.empty()) std::fwrite(r.out.data(), 1, r.out.size(), stdout);
  if (!r.err.empty()) std::fwrite(r.err.data(), 1, r.err.size(), stderr);
  return r.exit_code;
}

}  // namespace

void AddHookCommand(CLI::App& app, int* exit_code) {
  CLI::App* hook = app.add_subcommand("hook", "Hooks for coding agents");
  hook->require_subcommand(1);
  auto o = std::make_shared<HookOptions>();
  CLI::App* pre = hook->add_subcommand(
      "claude-pretooluse",
      "Claude Code PreToolUse hook: rewrite Bash tool calls to run in a fresh sandbox");
  AddRunOptions(pre, &o->run);
  pre->add_option("--shell", o->shell, "Shell that runs the command line (default: /bin/bash)");
  pre->add_option("--decision", o->decision,
                  "Permission decision for the rewritten call: allow (default: it runs sandboxed; "
                  "deny and ask rules still apply), ask (confirm each), none (Claude Code decides)")
      ->check(CLI::IsMember({"allow", "ask", "none"}));
  pre->callback([o, exit_code] { *exit_code = RunClaudePreToolUse(*o); });
}

}  // namespace ward::cli
