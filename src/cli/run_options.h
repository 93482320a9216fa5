// The options shared by `ward run`, `ward explain` and `ward why`: everything that shapes the
// policy of a run, and how the CLI turns them into an effective Policy.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "policy/loader.h"
#include "policy/policy.h"

namespace CLI {
class App;
}

namespace ward::cli {

struct RunOptions {
  policy::RunFlags flags;
  std::string workdir;               // -C
  std::string approver;              // --approver URL (webhook approvals)
  std::string approver_secret_env;   // --approver-secret-env VAR
  std::string approver_secret_file;  // --approver-secret-file FILE
  bool raw_terminal = false;         // --raw-terminal: the command's output unfiltered
  bool create_missing = false;       // --create (ward run): make a missing -w directory
  // How to accept a refused workspace, in its refusal ("" = "add --workspace-anyway ...").
  std::string workspace_anyway_hint;
};

// How a subcommand shows the run options in its --help (each accepts them all, so that a run's
// own command line can be pasted): as its own options (run, and the commands that start runs),
// or in a group of their own, only those that change what `explain` or `why` answer.
enum class RunOptionHelp { kOwn, kExplain, kWhy };
void AddRunOptions(CLI::App* app, RunOptions* opts, RunOptionHelp help = RunOptionHelp::kOwn);
// --create: `ward run` only (the others never make anything).
void AddCreateOption(CLI::App* app, RunOptions* opts);
// The options about the user's terminal: `ward run` and `ward explain` only.
void AddTerminalOptions(CLI::App* app, RunOptions* opts);

// These options as `ward run` arguments (before "--"), for a command that starts runs later
// (the Claude Code hook and shell prefix, `ward learn`): every option that changes the run,
// the approver's included. A relative --approver-secret-file is made absolute.
std::vector<std::string> RunOptionsToArgs(const RunOptions& opts);

// The caller's HOME: $HOME when absolute, else the password database's, else "/".
std::string CallerHome();

// The caller's environment as (name, value) pairs.
std::vector<std::pair<std::string, std::string>> CallerEnvironment();

// Where the user's own profiles (profiles/NAME.toml) and config.toml live: $XDG_CONFIG_HOME/ward
// when XDG_CONFIG_HOME is absolute, else $HOME/.config/ward.
std::string UserConfigDir();

// Loads the effective policy for these options (profiles, .ward.toml, flags), resolving the
// workspace and the caller's HOME. Errors name the file, line and key. A -w or -r path that does
// not exist is refused with the fix, or (-w with --create) made.
Result<policy::Policy> LoadEffectivePolicy(const RunOptions& opts);

}  // namespace ward::cli
