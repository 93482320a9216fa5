// Transparent capture's part of a run's plan: whether TCP to allowed names is captured inside
// the sandbox (enforce/ns/capture.h, served by the proxy), and which ports Landlock must then
// let the command connect to.
#pragma once

#include <string>

#include "enforce/spec.h"
#include "net/egress_rules.h"
#include "policy/policy.h"

namespace ward::supervisor {

// The listener's port inside, beside the proxy's.
inline constexpr uint16_t kCapturePort = 3129;

// On when the plan has egress, some rule allows a name and network.transparent is not false:
// sets plan->net's capture fields and adds the names' ports to Landlock's connect rules (every
// port, when a rule allows "host:*"). Returns why capture is off ("" when on).
std::string PlanTransparentCapture(const policy::Policy& policy, const net::EgressRules& rules,
                                   enforce::LaunchPlan* plan);

}  // namespace ward::supervisor
