#include "policy/env.h"

#include <string.h>

#include <map>
#include <set>

namespace ward::policy {
namespace {

bool Usable(const std::string& name, const std::string& value) {
  return !name.empty() && name.find('=') == std::string::npos &&
         name.find('\0') == std::string::npos && value.find('\0') == std::string::npos;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> BuildEnvironment(
    const Policy& policy, const std::vector<std::pair<std::string, std::string>>& caller_env) {
  // Names that carry a brokered secret (or point at its route): never from the caller.
  std::set<std::string> reserved;
  for (const auto& [name, c] : policy.credentials) {
    if (!c.enabled) continue;
    if (!c.env.empty()) reserved.insert(c.env);
    if (c.from.kind == CredentialSource::Kind::kEnv) reserved.insert(c.from.value);
    for (const auto& [var, value] : c.route_env) reserved.insert(var);
  }

  std::map<std::string, std::string> caller;  // the first occurrence of a name wins, like getenv
  for (const auto& [name, value] : caller_env) {
    if (Usable(name, value)) caller.emplace(name, value);
  }

  std::map<std::string, std::string> out;
  for (const EnvRule& r : policy.env) {
    if (r.value) {
      if (!reserved.count(r.name)) out[r.name] = *r.value;
      continue;
    }
    if (!r.name.empty() && r.name.back() == '*') {
      std::string prefix = r.name.substr(0, r.name.size() - 1);
      for (auto it = caller.lower_bound(prefix);
           it != caller.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
        if (!reserved.count(it->first)) out[it->first] = it->second;
      }
      continue;
    }
    auto it = caller.find(r.name);
    if (it != caller.end() && !reserved.count(r.name)) out[r.name] = it->second;
  }
  out["HOME"] = policy.home;
  if (out.find("PATH") == out.end()) out["PATH"] = kFallbackPath;
  std::vector<std::pair<std::string, std::string>> result(out.begin(), out.end());
  // The copies made here are wiped before they are freed (see WipeEnvironment).
  for (auto& [name, value] : caller) explicit_bzero(value.data(), value.size());
  for (auto& [name, value] : out) explicit_bzero(value.data(), value.size());
  return result;
}

void WipeEnvironment(std::vector<std::pair<std::string, std::string>>* env) {
  for (auto& [name, value] : *env) {
    explicit_bzero(name.data(), name.size());
    explicit_bzero(value.data(), value.size());
  }
  env->clear();
}

}  // namespace ward::policy
