// The launch plan as sandbox init receives it: sandbox init may be cloned before the plan exists
// (`ward run` clones it first thing, so that the clone and init's first wakeup overlap with
// parsing and planning), so it does not inherit the plan with the supervisor's memory but reads
// it from the go message (launcher.cc). Only what init and the command use is carried; the
// supervisor keeps the rest (limits, egress, the seccomp spec).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "enforce/spec.h"

namespace ward::enforce {

// What init is told with its plan, about the launch rather than the policy.
struct InitLaunch {
  // Init was moved into the run's cgroup after the clone (not born in it): it enters a new
  // cgroup namespace first, so that the namespace is rooted at the run's cgroup, as when cloned
  // into it.
  bool unshare_cgroup_ns = false;
};

// The encoding is little more than lengths and bytes; both sides are the same binary.
std::string EncodeInitPlan(const LaunchPlan& plan, const InitLaunch& launch);

// Decodes what EncodeInitPlan made. Anything else (short, oversized counts, an unknown mount
// kind, trailing bytes) is an error naming the field; *plan and *launch are then unspecified.
Status DecodeInitPlan(std::string_view bytes, LaunchPlan* plan, InitLaunch* launch);

// Bound on an encoded plan (the go message refuses a larger one).
inline constexpr size_t kMaxInitPlanBytes = 64u << 20;

}  // namespace ward::enforce
