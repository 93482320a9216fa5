// The container's rlimits (process.rlimits) as ward can set them. Engines ask for more than a
// host may grant (podman's default nofile and nproc), and raising a hard limit above the current
// one needs CAP_SYS_RESOURCE: without it, runc fails the container with "setrlimit: Operation not
// permitted". ward clamps such a limit to the hard limit it may set and says so (the runtime's
// log and the container's audit trail): a lower limit grants less, never more, so the clamp can
// only narrow what the container gets. A name the kernel does not know is refused.
#pragma once

#include <sys/resource.h>

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "oci/config.h"

namespace ward::oci {

struct PlannedRlimit {
  int resource = 0;
  std::string name;  // "RLIMIT_NOFILE"
  rlim_t soft = 0, hard = 0;
  bool clamped = false;  // the config asked for more (asked_*)
  uint64_t asked_soft = 0, asked_hard = 0;
};

// `current(resource, &limit)` reads this process's limit; `can_raise`: the caller may raise a
// hard limit (CAP_SYS_RESOURCE).
Result<std::vector<PlannedRlimit>> PlanRlimits(const std::vector<Rlimit>& asked,
                                               const std::function<bool(int, rlimit*)>& current,
                                               bool can_raise);

// This process's limits and whether it holds CAP_SYS_RESOURCE.
Result<std::vector<PlannedRlimit>> PlanRlimitsHere(const std::vector<Rlimit>& asked);

// "RLIMIT_NOFILE 1048576:1048576 clamped to 1024:524288 (the hard limit ward may set here)".
std::string DescribeClamp(const PlannedRlimit& r);

}  // namespace ward::oci
