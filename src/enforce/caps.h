// Capabilities: the command runs with none (effective, permitted, inheritable, ambient and
// bounding sets empty) and with securebits locked so that uid 0 (root invoking ward) regains
// nothing at execve. Child side, async-signal-safe.
#pragma once

namespace ward::enforce {

// Empties the bounding set (needs CAP_SETPCAP): each capability still in it is dropped, so a
// second call costs only the reads. Returns 0 or -errno.
int DropBoundingSet();

// Returns 0 or -errno.
int DropAllCapabilities();

}  // namespace ward::enforce
