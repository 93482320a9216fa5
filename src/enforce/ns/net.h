// Network namespace setup inside the sandbox: only `lo` exists, and it is brought up.
#pragma once

namespace ward::enforce {

// Child side. Returns 0 or -errno.
int BringUpLoopback();

}  // namespace ward::enforce
