// Sandbox init's own layers. Init (pid 1 inside) builds the root with every capability of its
// user namespace; nothing reachable from the command may act with more than the command could.
//
// - Landlock: before it forks the command, init enters a domain with the command's own rules
//   (launcher.cc: EnterLandlockDomain; the guard agent that init forks on demand inherits it and
//   needs exactly those rights), signals and abstract sockets scoped. The command nests a domain
//   of its own in it with the same ruleset, so init may signal the command, and the command can
//   neither trace nor (ABI >= 6) signal init or the agent.
// - Once the command has started, and before init serves anything: no capabilities,
//   no_new_privs, the caller's stdio let go, and a seccomp allow list (InitSeccompProgram):
//   what init's loop and fork need, and the directory-entry calls of the guard agent. No exec,
//   no sockets, no ioctl, no mount or namespace calls, no executable memory.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "common/status.h"
#include "enforce/child_error.h"
#include "enforce/spec.h"

namespace ward::enforce {

// The filter of sandbox init and the guard agent: the native ABI only (anything else kills),
// the allow list, and EPERM for every other syscall. Pure.
Result<std::vector<sock_filter>> InitSeccompProgram();

// Loads init's filter. The caller has dropped its capabilities and set no_new_privs. False
// with *error set.
bool LoadInitSeccomp(ChildError* error);

}  // namespace ward::enforce
