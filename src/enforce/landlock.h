// Landlock: the second layer behind the mount view. File rights mirror the mount view, TCP
// rights allow only the listed ports, and (ABI >= 6) abstract unix sockets and signals are
// scoped to the sandbox. Child side, applied after pivot_root, in the view's own paths.
#pragma once

#include "enforce/child_error.h"
#include "enforce/spec.h"

namespace ward::enforce {

int LandlockAbi();  // 0 when Landlock is unavailable

// The newest Landlock ABI whose rights and scopes BuildLandlockRuleset handles (`ward --version`);
// a newer kernel is used at this ABI.
inline constexpr int kNewestLandlockAbiUsed = 6;

// The ruleset of `spec` (a close-on-exec fd), or -1 with *error filled when a rule cannot be
// added. Paths of the spec that do not exist inside are skipped (the mount view decides what
// exists).
int BuildLandlockRuleset(const LandlockSpec& spec, ChildError* error);
// landlock_restrict_self with `ruleset`: a new domain, nested in the caller's. The caller has
// set no_new_privs or holds CAP_SYS_ADMIN. False with *error filled.
bool RestrictLandlock(int ruleset, ChildError* error);
// Both at once.
bool ApplyLandlock(const LandlockSpec& spec, ChildError* error);

// The access masks for an ABI, exposed for tests and explain.
uint64_t LandlockFsRights(int abi);
uint64_t LandlockReadRights(int abi);

}  // namespace ward::enforce
