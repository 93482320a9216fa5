// The effective policy as JSON, for `ward explain --json` and the audit log. Never contains a
// secret: credentials show where the secret comes from, not its value, and the values of
// env.set / --env NAME=VALUE are left out (only that a value is set).
#pragma once

#include <nlohmann/json.hpp>

#include "policy/policy.h"

namespace ward::policy {

nlohmann::json OriginToJson(const Origin& origin);  // {"source", "line", "key"}
nlohmann::json PolicyToJson(const Policy& policy);

}  // namespace ward::policy
