// Capabilities: the command runs with none (effective, permitted, inheritable, ambient and
// bounding sets empty) and with securebits locked so that uid 0 (root invoking ward) regains
// nothing at execve. Child side, async-signal-safe.
#pragma once

namespace ward::enforce {

// Returns 0 or -errno.
int DropAllCapabilities();

}  // namespace ward::enforce
