// ward's runtime directory: where its sockets and scratch directories live on the host (every
// run's approval socket, `ward serve`'s default socket and state, `ward mcp`'s exec records).
// One place decides it, for the servers and for their clients alike, and it is never a shared
// directory such as /tmp:
//   1. $XDG_RUNTIME_DIR/ward, when XDG_RUNTIME_DIR is absolute;
//   2. /run/user/<euid>/ward, when /run/user/<euid> is a directory of ours that no one else
//      may write;
//   3. <ward's state directory>/run ($XDG_STATE_HOME/ward/run, else ~/.local/state/ward/run).
// Servers create it 0700; clients check it before they trust a socket in it. No sandbox may see
// it (private_dirs.h).
#pragma once

#include <sys/types.h>

#include <string>

#include "common/status.h"

namespace ward::supervisor {

struct RuntimeDirInputs {
  std::string xdg_runtime_dir;         // $XDG_RUNTIME_DIR ("" when unset)
  std::string run_user = "/run/user";  // where the system keeps per-user runtime directories
  uid_t uid = 0;                       // our euid
  std::string state_dir;               // ward's state directory ("" when unknown)
};

enum class RuntimeDirSource { kXdgRuntimeDir, kRunUser, kStateDir, kNone };

struct RuntimeDir {
  std::string path;  // "" with kNone
  RuntimeDirSource source = RuntimeDirSource::kNone;
};

// The choice above. Only reads (one lstat of run_user/<uid>).
RuntimeDir ChooseRuntimeDir(const RuntimeDirInputs& in);
// The inputs of this process: its environment, its euid, audit::DefaultStateDir().
RuntimeDirInputs RuntimeDirInputsNow();
// ChooseRuntimeDir(RuntimeDirInputsNow()).path: "" when none can be told.
std::string WardRuntimeDir();
// /run/user/<uid>/ward for this process, whether or not it is the one chosen (a run started with
// another environment would use it).
std::string RunUserWardDir();

// Chooses the runtime directory and makes sure it exists as a private directory (under the
// state directory its missing parents are made 0700 too). An error says what to set.
Result<std::string> MakeWardRuntimeDir();

// Creates `dir` 0700 when missing (its parent must exist). An existing one must be a directory
// (a symlink is refused, not followed), ours, and not writable by others; one readable by others
// is tightened to 0700.
Status PreparePrivateDir(const std::string& dir);
// A client's check before it trusts a socket in `dir`: a directory (not a symlink), ours, not
// writable by others.
Status CheckPrivateDir(const std::string& dir);

}  // namespace ward::supervisor
