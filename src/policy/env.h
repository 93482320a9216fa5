// The sandbox's environment: built from the policy's allow list, never inherited.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "policy/policy.h"

namespace ward::policy {

inline constexpr const char* kFallbackPath = "/usr/local/bin:/usr/bin:/bin";

// Applies the env rules in order (a later rule for the same name wins): a pass rule copies the
// caller's value (exact name, or every name with a "PREFIX*" prefix), a set rule sets a value.
// HOME is always the policy's home; PATH falls back to kFallbackPath when nothing provided it.
// Nothing else is passed. The variables of enabled credentials (their `env`, an `env:` source,
// and route_env) are never copied from the caller: the supervisor adds phantom values and
// route URLs itself. Caller entries with an empty or malformed name are ignored.
// The result is sorted by name.
std::vector<std::pair<std::string, std::string>> BuildEnvironment(
    const Policy& policy, const std::vector<std::pair<std::string, std::string>>& caller_env);

// Overwrites every name and value with zero bytes (before the memory is freed), then clears.
void WipeEnvironment(std::vector<std::pair<std::string, std::string>>* env);

}  // namespace ward::policy
