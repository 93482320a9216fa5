// ward's own directories, which no sandbox may see: the runtime directory (every run's approval
// socket, `ward serve`'s socket and state; runtime_dir.h) and the state directory (every
// session's audit trail), plus whatever a caller adds (an --audit-dir, a daemon's state or
// socket). A sandbox runs as our uid: one that saw them could answer its own approvals, drive
// the daemon, or rewrite the audit trail. One check refuses a policy whose view would include
// any of them, before anything starts: `ward run`, each `ward serve` sandbox, `ward mcp`.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "policy/policy.h"

namespace ward::supervisor {

struct PrivateDir {
  std::string what;  // "ward's runtime directory (approval sockets, ...)"
  std::string path;  // absolute; "" or relative entries are skipped
  std::string fix;   // what to change: "set XDG_RUNTIME_DIR to a directory outside the view"
  // Everything inside is ward's too, so a bind of something inside it is refused as well. False
  // for a path the user chose that holds other things (`ward serve --socket`'s directory):
  // only what shows the path itself counts.
  bool contents_too = true;
  // Only a view that can write it counts: the user's profiles and settings may be read inside a
  // run (`-r ~/.config`), but a run that could change them would widen the next one.
  bool writable_only = false;
};

// The runtime directory this process would use, /run/user/<uid>/ward (where a run with another
// environment may have its socket) and the state directory.
std::vector<PrivateDir> WardPrivateDirs();

// Ok when the sandbox of `policy` sees none of `dirs`: neither the directory (or a parent) by
// any rule, nor (contents_too) a bind of something inside it, by its path as given or with its
// symlinks resolved. Otherwise kFailedPrecondition naming the directory, the rule and the fix.
Status CheckOutOfView(const policy::Policy& policy, const std::vector<PrivateDir>& dirs);

}  // namespace ward::supervisor
