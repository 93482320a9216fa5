// `ward hook claude-pretooluse [run options]`: a Claude Code PreToolUse hook. It reads the
// hook's JSON on stdin and:
//  - a Bash tool call: prints JSON that rewrites the command to run in a fresh sandbox under
//    these options (updatedInput), but only for a Claude Code version known to apply the
//    rewrite: one that honoured "allow" and ignored the rewritten input would run the original
//    command on the host;
//  - Claude Code's own file tools and WebFetch, which it runs in its own process on the host:
//    denies what a sandbox of the same policy could not do, and records each decision in the
//    audit trail.
// Unreadable input blocks the call (exit 2): the hook fails closed.
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include "api/claude.h"
#include "api/claude_file_tools.h"
#include "api/sandbox_spec.h"
#include "audit/session_log.h"
#include "cli/commands.h"
#include "cli/host_paths.h"
#include "cli/run_options.h"
#include "net/egress_rules.h"
#include "policy/decide.h"

#ifndef WARD_CLAUDE_CODE_TESTED
#define WARD_CLAUDE_CODE_TESTED ""
#endif

namespace ward::cli {
namespace {

struct HookOptions {
  RunOptions run;
  std::string shell;
  std::string decision = "allow";
  std::vector<std::string> trusted_versions;  // --trust-agent-version
};

// Claude Code blocks the tool call and shows stderr to the model.
int Block(const std::string& why) {
  api::HookOutcome blocked = api::BlockedHook(why);
  std::fputs(blocked.err.c_str(), stderr);
  return blocked.exit_code;
}

std::string ReadHookInput() {
  std::string input;
  char buf[65536];
  while (input.size() <= (16u << 20)) {
    ssize_t n = read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    input.append(buf, static_cast<size_t>(n));
  }
  return input;
}

// ---- Which Claude Code runs this hook

struct ClaudeProcess {
  pid_t pid = 0;
  std::string exe;
  std::string version;  // "" when the process is Claude Code but its version is unreadable
};

std::string ReadLink(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

std::string Dirname(const std::string& p) {
  size_t slash = p.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? "/" : p.substr(0, slash);
}

// The "version" of the package.json at `path` when it is Claude Code's.
std::string ClaudePackageVersion(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    if (j.value("name", "") != "@anthropic-ai/claude-code") return "";
    return j.value("version", "");
  } catch (const std::exception&) {
    return "";
  }
}

// Claude Code installs as a native binary (the installer's .../claude/versions/X.Y.Z, or npm's
// .../@anthropic-ai/claude-code/bin/claude.exe) or, in older releases, as node running cli.js.
std::optional<ClaudeProcess> ClaudeProcessAt(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::string exe = ReadLink(proc + "/exe");
  const std::string deleted = " (deleted)";
  if (exe.size() > deleted.size() && exe.ends_with(deleted)) exe.resize(exe.size() - deleted.size());
  if (exe.empty()) return std::nullopt;
  size_t v = exe.find("/claude/versions/");
  if (v != std::string::npos && exe.find('/', v + 17) == std::string::npos) {
    return ClaudeProcess{pid, exe, exe.substr(v + 17)};
  }
  if (exe.ends_with("/@anthropic-ai/claude-code/bin/claude.exe")) {
    return ClaudeProcess{pid, exe, ClaudePackageVersion(Dirname(Dirname(exe)) + "/package.json")};
  }
  std::ifstream cmdline(proc + "/cmdline");
  std::string arg;
  while (std::getline(cmdline, arg, '\0')) {
    if (arg.ends_with("/@anthropic-ai/claude-code/cli.js") ||
        arg.ends_with("/@anthropic-ai/claude-code/cli.mjs")) {
      return ClaudeProcess{pid, exe, ClaudePackageVersion(Dirname(arg) + "/package.json")};
    }
  }
  return std::nullopt;
}

pid_t ParentOf(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("PPid:", 0) == 0) return static_cast<pid_t>(std::atoi(line.c_str() + 5));
  }
  return 0;
}

// The nearest ancestor that is Claude Code (it runs hooks through a shell).
std::optional<ClaudeProcess> FindCallingClaudeCode() {
  pid_t pid = getppid();
  for (int depth = 0; depth < 16 && pid > 1; ++depth) {
    if (std::optional<ClaudeProcess> c = ClaudeProcessAt(pid)) return c;
    pid = ParentOf(pid);
  }
  return std::nullopt;
}

// "" when the rewrite may be answered; else why not, with the fixes.
std::string RefuseUnknownClaudeCode(const HookOptions& o) {
  for (const std::string& t : o.trusted_versions) {
    if (t == "any") return "";
  }
  std::optional<ClaudeProcess> claude = FindCallingClaudeCode();
  const std::string tested = WARD_CLAUDE_CODE_TESTED;
  const std::string fixes =
      ". A version that ignored the rewritten command would run it on the host, unsandboxed. "
      "Use the shell prefix instead (ward shell-prefix --install; it does not depend on the "
      "rewrite), or, once you have checked that this version runs the rewritten command, add "
      "--trust-agent-version VERSION to the hook's command (ward was tested with Claude Code " +
      tested + ")";
  if (!claude) return "the hook cannot tell which Claude Code runs it (no Claude Code process "
                      "among its ancestors)" + fixes;
  if (claude->version.empty()) {
    return "the hook cannot read the version of the Claude Code that runs it (" + claude->exe +
           ")" + fixes;
  }
  if (claude->version == tested) return "";
  for (const std::string& t : o.trusted_versions) {
    if (t == claude->version) return "";
  }
  return "Claude Code " + claude->version + " is not a version the hook knows to apply its "
         "rewritten command" + fixes;
}

// ---- The Bash tool: rewritten to run in a fresh sandbox

int AnswerBash(const HookOptions& o, const api::ClaudeToolCall& call) {
  if (std::string refused = RefuseUnknownClaudeCode(o); !refused.empty()) return Block(refused);
  std::string self = ReadLink("/proc/self/exe");
  if (self.empty()) return Block("cannot tell where the ward binary is");
  api::HookOptions h;
  h.ward_path = self;
  h.run_args = RunOptionsToArgs(o.run);
  h.shell = !o.shell.empty() ? o.shell : (access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh");
  h.decision = o.decision == "none" ? "" : o.decision;
  api::HookOutcome r = api::RewriteBash(call, h);
  if (!r.out.empty()) std::fwrite(r.out.data(), 1, r.out.size(), stdout);
  if (!r.err.empty()) std::fwrite(r.err.data(), 1, r.err.size(), stderr);
  return r.exit_code;
}

// ---- Claude Code's own tools: judged against the policy

struct Judged {
  nlohmann::json record;  // the hook.decision record
  bool allowed = false;
  std::string why;
};

// The policy a sandbox started for this call would have: Claude Code's cwd is the workspace
// unless the hook's options name one.
Result<policy::Policy> PolicyForCall(const HookOptions& o, const api::ClaudeToolCall& call) {
  if (o.run.workdir.empty() && !call.cwd.empty()) {
    if (call.cwd[0] != '/' || chdir(call.cwd.c_str()) != 0) {
      return InvalidArgument("Claude Code's cwd " + call.cwd + " cannot be entered");
    }
  }
  return LoadEffectivePolicy(o.run);
}

Judged JudgeFile(const policy::Policy& pol, const api::ClaudeToolCall& call,
                 const api::FileAccess& a) {
  Judged j;
  Result<std::string> resolved = ResolveOnHost(a.path);
  if (!resolved.ok()) {
    j.why = "ward: " + a.path + " cannot be resolved: " + resolved.status().message();
  } else {
    policy::PathDecision d =
        policy::DecidePath(pol, *resolved, NestedRepoRootsOnHost(pol, *resolved));
    api::FileVerdict v = api::JudgeFileAccess(pol, a, *resolved, d);
    j.allowed = v.allowed;
    j.why = v.why;
    // The policy decides by names; on the host the structure on disk decides what git runs.
    if (j.allowed && a.op == api::FileAccess::Op::kWrite) {
      if (std::string why = HostExecutedWriteWhy(pol, *resolved); !why.empty()) {
        j.allowed = false;
        j.why = "ward: " + a.path + " is host-executed content: " + why;
      }
    }
  }
  j.record = {{"tool", call.tool},
              {"op", api::FileAccessOpName(a.op)},
              {"field", a.field},
              {"path", a.path},
              {"resolved", resolved.ok() ? *resolved : ""},
              {"decision", j.allowed ? "allow" : "deny"},
              {"why", j.why}};
  return j;
}

Judged JudgeFetch(const policy::Policy& pol, const api::ClaudeToolCall& call,
                  const std::string& url) {
  Judged j;
  j.record = {{"tool", call.tool}, {"op", "fetch"}, {"url", url}};
  Result<api::FetchTarget> u = api::FetchTargetOf(url);
  Result<net::EgressRules> rules = net::EgressRules::Compile(pol.network);
  if (!u.ok()) {
    j.why = "ward: the WebFetch URL cannot be read: " + u.status().message();
  } else if (!rules.ok()) {
    j.why = "ward: the policy's network rules do not compile: " + rules.status().message();
  } else {
    net::EgressRules::Decision d = rules->CheckName(u->host, u->port);
    j.allowed = d.allowed;
    j.why = "ward: " + d.reason;
    j.record["host"] = u->host;
    j.record["port"] = u->port;
  }
  j.record["decision"] = j.allowed ? "allow" : "deny";
  j.record["why"] = j.why;
  return j;
}

// One short audit session per judged call: the agent's session and what was decided.
void RecordDecisions(const api::ClaudeToolCall& call, const std::vector<Judged>& judged,
                     bool allowed) {
  char cwd[PATH_MAX];
  std::vector<std::pair<std::string, nlohmann::json>> records;
  for (const Judged& j : judged) records.emplace_back("hook.decision", j.record);
  Status st = audit::WriteShortSession(
      audit::DefaultStateDir(),
      {{"command", {"ward", "hook", "claude-pretooluse", call.tool}},
       {"cwd", getcwd(cwd, sizeof cwd) ? cwd : ""},
       {"uid", getuid()},
       {"labels", {{"agent", "claude-code"}, {"agent_session", call.session_id}}}},
      std::move(records), allowed ? 0 : 1);
  if (!st.ok()) {
    std::fprintf(stderr, "ward hook: the audit trail could not be written: %s\n",
                 st.ToString().c_str());
  }
}

int AnswerOwnTool(const HookOptions& o, const api::ClaudeToolCall& call) {
  Result<std::vector<api::FileAccess>> accesses = api::FileAccessesOf(call);
  if (!accesses.ok()) return Block(accesses.status().message());
  const std::string url = api::WebFetchUrlOf(call);
  if (accesses->empty() && url.empty()) return 0;  // touches nothing of the host's: no opinion
  Result<policy::Policy> pol = PolicyForCall(o, call);
  if (!pol.ok()) return Block("the policy cannot be loaded: " + pol.status().ToString());
  std::vector<Judged> judged;
  for (const api::FileAccess& a : *accesses) judged.push_back(JudgeFile(*pol, call, a));
  if (!url.empty()) judged.push_back(JudgeFetch(*pol, call, url));
  std::string denied;
  for (const Judged& j : judged) {
    if (!j.allowed) denied += (denied.empty() ? "" : "; ") + j.why;
  }
  if (pol->audit) RecordDecisions(call, judged, denied.empty());
  if (denied.empty()) return 0;  // allowed by the policy: Claude Code's own rules decide
  const std::string out = api::ClaudeDenyOutput(denied);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int RunClaudePreToolUse(const HookOptions& o) {
  const std::string input = ReadHookInput();
  Result<api::ClaudeToolCall> call = api::ParseClaudeToolCall(input);
  if (!call.ok()) return Block(call.status().message());
  if (call->event != "PreToolUse") return 0;  // not ours: no opinion
  if (call->tool == "Bash") return AnswerBash(o, *call);
  call->home = CallerHome();
  return AnswerOwnTool(o, *call);
}

}  // namespace

void AddHookCommand(CLI::App& app, int* exit_code) {
  CLI::App* hook = app.add_subcommand("hook", "Hooks for coding agents");
  hook->require_subcommand(1);
  auto o = std::make_shared<HookOptions>();
  CLI::App* pre = hook->add_subcommand(
      "claude-pretooluse",
      "Claude Code PreToolUse hook: run Bash tool calls in a fresh sandbox, and hold Claude "
      "Code's own file tools and WebFetch to the same policy");
  AddRunOptions(pre, &o->run);
  pre->add_option("--shell", o->shell, "Shell that runs the command line (default: /bin/bash)");
  pre->add_option("--decision", o->decision,
                  "Permission decision for the rewritten call: allow (default: it runs sandboxed; "
                  "deny and ask rules still apply), ask (confirm each), none (Claude Code decides)")
      ->check(CLI::IsMember({"allow", "ask", "none"}));
  pre->add_option("--trust-agent-version", o->trusted_versions,
                  "A Claude Code version (or \"any\") to rewrite Bash calls for besides the one "
                  "ward was tested with; only after checking that it runs the rewritten command")
      ->type_name("VERSION");
  pre->callback([o, exit_code] { *exit_code = RunClaudePreToolUse(*o); });
}

}  // namespace ward::cli
