// The container's own seccomp filter (config.json's linux.seccomp), compiled to classic BPF and
// loaded on the container's command after ward's own filter, never instead of it: the kernel
// runs both and the stricter verdict wins, so a profile can refuse more than ward does and
// never allow what ward refuses.
//
// The rules are tried in the profile's order, the first that matches the syscall and all of its
// argument comparisons deciding (the engines' profiles list one action per syscall and
// argument set, so their meaning does not depend on the order). As runc reads a rule, two
// comparisons of the same argument make one rule each. Names this architecture does
// not have are skipped, as runc skips them. Only the native ABI is filtered here: ward's own
// filter refuses every other. `flags` are accepted and not applied (the filter is loaded by one
// thread, and ward's own filter sets the process's speculation mitigations first).
#pragma once

#include <linux/filter.h>

#include <vector>

#include "common/status.h"
#include "oci/config.h"

namespace ward::oci {

// The program, checked as the kernel would check it; an error names the field of config.json
// (a profile too long for one program).
Result<std::vector<sock_filter>> CompileContainerSeccomp(const Seccomp& profile);

}  // namespace ward::oci
