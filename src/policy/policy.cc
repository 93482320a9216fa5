#include "policy/policy.h"

#include <algorithm>

namespace ward::policy {

std::string Origin::ToString() const {
  std::string s = source.empty() ? "unknown" : source;
  if (line > 0) s += ":" + std::to_string(line);
  if (!key.empty()) s += " (" + key + ")";
  return s;
}

const char* AccessName(Access a) { return a == Access::kWrite ? "write" : "read"; }

const char* LayerName(Layer l) {
  switch (l) {
    case Layer::kLandlock:
      return "landlock";
    case Layer::kSeccomp:
      return "seccomp";
    case Layer::kLimits:
      return "limits";
  }
  return "unknown";
}

std::optional<Layer> ParseLayer(const std::string& name) {
  if (name == "landlock") return Layer::kLandlock;
  if (name == "seccomp") return Layer::kSeccomp;
  if (name == "limits") return Layer::kLimits;
  return std::nullopt;
}

bool InterceptsTls(const Policy& policy) {
  return AnyCredentialEnabled(policy) || !policy.network.rules.empty();
}

bool AnyCredentialEnabled(const Policy& policy) {
  return std::any_of(policy.credentials.begin(), policy.credentials.end(),
                     [](const auto& kv) { return kv.second.enabled; });
}

}  // namespace ward::policy
