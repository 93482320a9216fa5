// `ward init`: writes a starter .ward.toml for the workspace, every line commented. It only
// narrows (the keys a workspace file accepts, docs/profiles.md); one rule is on: the cloud
// metadata address is denied.
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "audit/sessions.h"
#include "cli/commands.h"
#include "cli/run_options.h"
#include "policy/loader.h"
#include "policy/workspace_choice.h"

namespace ward::cli {
namespace init_cmd {

struct InitOptions {
  std::string workdir;  // -C
  bool force = false;
};

// The starter file for the workspace `ws` (its absolute path, for the deny examples).
std::string StarterText(const std::string& ws) {
  return R"(# ward's policy for this workspace. A workspace file can only take away: the command in
# the sandbox can write this workspace, so nothing written here may give it more. ward accepts
# filesystem.deny, filesystem.protected, network.deny, lower limits and a narrower
# workspace.access here, and refuses anything else. `ward explain` shows each rule with this
# file's name and line. Uncomment a line to use it; every key is in ward's docs/profiles.md.

[workspace]
# "read": the command may read this workspace but not change it; "none": not even see it.
# access = "read"

[filesystem]
# Never visible inside, even in the workspace (absolute paths or ~/...; the last component may
# be a glob such as "*.pem").
# deny = [")" + ws + R"(/.env", ")" + ws + R"(/secrets"]
# Relative to the workspace (and every writable root): read-only, and not creatable when
# absent. For files that run code or steer tools on your machine later. The profile's own
# list (.git/hooks, .envrc, .vscode, this file, ...) stays; these are added to it.
# protected = ["Makefile", ".github/workflows"]

[network]
# Never reachable, even when a profile or -n allows it: deny wins over allow.
deny = [
  "169.254.169.254",  # the cloud metadata service: it hands credentials to whoever asks
]

[limits]
# Lower than the profile's, never higher (the built-in default: memory 8G, pids 1024).
# memory = "4G"     # all processes of the sandbox together
# pids = 512        # processes and threads
# timeout = "30m"   # then everything inside is stopped
# file_size = "1G"  # the largest file the command may write
)";
}

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The text must load as this workspace's file under the user's default profile: a starter
// that ward itself refuses would be worse than none.
Status CheckLoads(const std::string& ws, const std::string& text) {
  policy::RunFlags flags;
  policy::Context ctx;
  const char* home = getenv("HOME");
  ctx.home = home && *home == '/' ? home : "/";
  ctx.cwd = ws;
  ctx.workspace = ws;
  ctx.config_dir = UserConfigDir();
  const std::string file = policy::WorkspaceFilePath(ws);
  Result<policy::Policy> pol =
      policy::LoadPolicy(flags, ctx, [&](const std::string& path) -> Result<std::string> {
        if (path == file) return text;
        return NotFound(path);  // the built-in profiles only
      });
  return pol.ok() ? Ok() : pol.status();
}

// Writes `text` to `path`: only when nothing is there, or (force) in place of what is there,
// through a new file renamed over it (a symlink there is replaced, not followed).
Status WriteStarter(const std::string& path, const std::string& text, bool force) {
  const std::string target = force ? path + ".ward-init-" + std::to_string(getpid()) : path;
  int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST && !force) {
      return Error(Code::kFailedPrecondition,
                   path + " exists; edit it, or replace it with ward init --force");
    }
    return Errno("cannot create " + target);
  }
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int err = errno;
  ok = ::close(fd) == 0 && ok;
  if (ok && force && ::rename(target.c_str(), path.c_str()) != 0) {
    err = errno;
    ok = false;
  }
  if (!ok) {
    ::unlink(target.c_str());
    return ErrnoError("cannot write " + path, err);
  }
  return Ok();
}

std::string CanonicalPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : path;
}

// A directory `ward run` refuses as a workspace (policy/workspace_choice.h) gets no workspace
// file either: why, and what to do instead.
std::optional<std::string> RefusedWorkspace(const std::string& ws) {
  const char* home = getenv("HOME");
  std::optional<policy::WorkspaceRefusal> refused = policy::RefuseWorkspace(
      ws, home && *home == '/' ? CanonicalPath(home) : "", CanonicalPath);
  if (!refused) return std::nullopt;
  return refused->why + "; " + refused->advice;
}

int RunInit(const InitOptions& o) {
  char buf[PATH_MAX];
  const std::string dir = o.workdir.empty() ? "." : o.workdir;
  if (realpath(dir.c_str(), buf) == nullptr) {
    std::fprintf(stderr, "ward init: %s: %s\n", audit::SanitizeForTerminal(dir).c_str(),
                 std::strerror(errno));
    return kExitFailed;
  }
  const std::string ws = buf;
  if (std::optional<std::string> refused = RefusedWorkspace(ws)) {
    std::fprintf(stderr, "ward init: %s\n", audit::SanitizeForTerminal(*refused).c_str());
    return kExitFailed;
  }
  const std::string path = policy::WorkspaceFilePath(ws);
  const std::string text = StarterText(ws);
  if (Status loads = CheckLoads(ws, text); !loads.ok()) {
    std::fprintf(stderr, "ward init: the starter file would not load here: %s\n",
                 audit::SanitizeForTerminal(loads.ToString()).c_str());
    return kExitFailed;
  }
  if (Status wrote = WriteStarter(path, text, o.force); !wrote.ok()) {
    std::fprintf(stderr, "ward init: %s\n", audit::SanitizeForTerminal(wrote.ToString()).c_str());
    return kExitFailed;
  }
  std::printf("wrote %s (it only narrows; see its rules with: ward explain -C %s)\n",
              audit::SanitizeForTerminal(path).c_str(),
              audit::SanitizeForTerminal(ShellQuote(ws)).c_str());
  return kExitOk;
}

}  // namespace init_cmd

void AddInitCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<init_cmd::InitOptions>();
  CLI::App* init = app.add_subcommand(
      "init", "Write a commented starter .ward.toml for the workspace (it only narrows)");
  init->add_option("-C,--workdir", o->workdir, "The workspace (default: the current directory)");
  init->add_flag("--force", o->force, "Replace an existing .ward.toml");
  init->callback([o, exit_code] { *exit_code = init_cmd::RunInit(*o); });
}

}  // namespace ward::cli
