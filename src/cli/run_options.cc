#include "cli/run_options.h"

#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstring>
#include <fstream>
#include <sstream>

#include "supervisor/credentials.h"

namespace ward::cli {

void AddRunOptions(CLI::App* app, RunOptions* o) {
  auto& f = o->flags;
  app->add_option("-p,--profile", f.profile, "Profile NAME or FILE (default: default)");
  app->add_option("-w,--write", f.write, "Make PATH visible read-write (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("-r,--read", f.read, "Make PATH visible read-only (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("--deny", f.deny, "Never show PATH, even inside a visible tree (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("-e,--env", f.env, "Pass NAME from the environment, or set NAME=VALUE")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("-C,--workdir", o->workdir,
                  "The workspace and working directory (default: the current directory)");
  app->add_option("-n,--allow-net", f.allow_net, "Allow egress to HOST[:PORT] (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("--deny-net", f.deny_net, "Deny egress to HOST (repeatable; deny wins)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("--allow-degraded", f.allow_degraded,
                  "Accept running without LAYER (landlock, seccomp, limits)")
      ->delimiter(',');
  app->add_option("--credential", f.credentials, "Enable the profile's credential NAME")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("--credential-env", f.credential_env,
                  "VAR=HOST[,HOST...]: phantom inside, real $VAR injected for those hosts")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("--memory", f.memory, "Memory limit (e.g. 2G)");
  app->add_option("--pids", f.pids, "Maximum number of processes");
  app->add_option("--cpu", f.cpu, "CPU limit in cores (fractional)");
  app->add_option("--timeout", f.timeout, "Wall-clock limit (e.g. 30s, 10m)");
  app->add_option("--tmp-size", f.tmp_size, "Size of the private /tmp and HOME");
  app->add_option("--file-size", f.file_size, "Largest file the command may write");
  app->add_option("--proxy-connections", f.proxy_connections,
                  "Concurrent connections to the egress proxy (default 128)");
  app->add_flag(
      "--ask", [o](int64_t) { o->flags.approvals = true; },
      "Ask for approval when the command opens a path the policy does not allow");
  app->add_option("--approver", o->approver,
                  "URL of a webhook approver (https://... or unix:/path); signed requests");
  app->add_option("--approver-secret-env", o->approver_secret_env,
                  "VAR: the environment variable holding the approver's HMAC secret");
  app->add_option("--approver-secret-file", o->approver_secret_file,
                  "FILE: a file (ours, mode 0600) holding the approver's HMAC secret");
  app->add_flag("--no-audit", f.no_audit, "Run without writing an audit trail (explicit)");
}

void AddTerminalOptions(CLI::App* app, RunOptions* o) {
  app->add_flag("--raw-terminal", o->raw_terminal,
                "Relay the command's terminal output unfiltered (report requests, clipboard "
                "writes and the like reach your terminal; see docs/terminal.md)");
}

std::vector<std::pair<std::string, std::string>> CallerEnvironment() {
  std::vector<std::pair<std::string, std::string>> env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    env.emplace_back(std::string(*e, eq - *e), std::string(eq + 1));
  }
  return env;
}

namespace {

std::string CallerHome() {
  const char* h = getenv("HOME");
  if (h && *h == '/') return h;
  struct passwd* pw = getpwuid(getuid());
  return pw && pw->pw_dir ? pw->pw_dir : "/";
}

Result<std::string> ReadHostFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFound(path + ": no such file");
    return ErrnoError("reading " + path, errno);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return ErrnoError("reading " + path, errno);
  return ss.str();
}

}  // namespace

Result<policy::Policy> LoadEffectivePolicy(const RunOptions& opts) {
  policy::Context ctx;
  ctx.home = CallerHome();
  char buf[PATH_MAX];
  if (getcwd(buf, sizeof buf) == nullptr) return Errno("getcwd");
  ctx.cwd = buf;
  std::string ws = opts.workdir.empty() ? ctx.cwd : opts.workdir;
  if (ws[0] != '/') ws = ctx.cwd + "/" + ws;
  if (realpath(ws.c_str(), buf) == nullptr) return ErrnoError("workspace " + ws, errno);
  ctx.workspace = buf;
  const char* xdg = getenv("XDG_CONFIG_HOME");
  ctx.config_dir = (xdg && *xdg == '/') ? std::string(xdg) + "/ward" : ctx.home + "/.config/ward";
  Result<policy::Policy> pol = policy::LoadPolicy(opts.flags, ctx, ReadHostFile);
  // Credentials need egress: their hosts join the allow list (supervisor/credentials.h).
  if (pol.ok()) supervisor::AllowCredentialHosts(&pol.value());
  return pol;
}

}  // namespace ward::cli
