// Sandbox init's own layers. Init (pid 1 inside) builds the root with every capability of its
// user namespace; once the command runs it needs almost none of that, and nothing reachable
// from the command may act with more than the command could. So, after the command started and
// before init serves anything else, init drops its capabilities, sets no_new_privs, lets go of
// the caller's stdio, and confines itself:
//
// - Landlock: the command's own rules (the guard agent that init forks on demand inherits this
//   domain and needs exactly those rights), without signal scoping (init signals the command,
//   whose domain is not inside its own). The command's domain is a sibling, so the command can
//   neither ptrace nor (ABI >= 6) signal init or the agent.
// - seccomp: a short allow list (InitSeccompProgram): what init's loop and fork need, and the
//   directory-entry calls of the guard agent. No exec, no sockets, no ioctl, no mount or
//   namespace calls, no executable memory.
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

// Applies init's Landlock domain (when `landlock.enabled`) and, when `seccomp` is set, its
// filter. The caller has dropped its capabilities and set no_new_privs. False with *error set.
bool ConfineInit(const LandlockSpec& landlock, bool seccomp, ChildError* error);

}  // namespace ward::enforce
