// Landlock: the second layer behind the mount view. File rights mirror the mount view, TCP
// rights allow only the listed ports, and (ABI >= 6) abstract unix sockets and signals are
// scoped to the sandbox. Child side, applied after pivot_root, in the view's own paths.
#pragma once

#include "enforce/child_error.h"
#include "enforce/spec.h"

namespace ward::enforce {

int LandlockAbi();  // 0 when Landlock is unavailable

// Returns false and fills *error when a rule cannot be applied. Paths of the spec that do not
// exist inside are skipped (the mount view decides what exists). `scope_signals` false: the
// domain does not scope signals (sandbox init's own domain: init signals the command, whose
// domain is not inside init's).
bool ApplyLandlock(const LandlockSpec& spec, ChildError* error, bool scope_signals = true);

// The access masks for an ABI, exposed for tests and explain.
uint64_t LandlockFsRights(int abi);
uint64_t LandlockReadRights(int abi);

}  // namespace ward::enforce
