#include "supervisor/run_credentials.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "policy/paths.h"
#include "policy/policy_json.h"

namespace ward::supervisor {
namespace {

void SetEnv(std::vector<std::string>* env, const std::string& name, const std::string& value) {
  const std::string prefix = name + "=";
  env->erase(std::remove_if(env->begin(), env->end(),
                            [&](const std::string& e) { return e.rfind(prefix, 0) == 0; }),
             env->end());
  env->push_back(prefix + value);
}

const char* SourceKindName(policy::CredentialSource::Kind k) {
  switch (k) {
    case policy::CredentialSource::Kind::kEnv:
      return "env";
    case policy::CredentialSource::Kind::kFile:
      return "file";
    case policy::CredentialSource::Kind::kCommand:
      return "command";
  }
  return "unknown";
}

nlohmann::json InjectJson(const policy::CredentialInject& inj) {
  switch (inj.kind) {
    case policy::CredentialInject::Kind::kHeader:
      return {{"header", inj.name}, {"value", inj.template_}};
    case policy::CredentialInject::Kind::kBasic:
      return {{"basic_user", inj.template_}};
    case policy::CredentialInject::Kind::kQuery:
      return {{"query", inj.name}, {"value", inj.template_}};
  }
  return nlohmann::json::object();
}

// The merged CA bundle goes read-only over the file `path` resolves to (clients that follow a
// symlink find it too).
std::string CaBundleTarget(std::string path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) != nullptr) path = buf;
  return path;
}

std::string WithheldMarker(const std::string& credential) {
  return "\x1bward-withheld:" + credential + "\x1b";
}

// Replaces every occurrence of `from` in `*s`, wiping the old bytes when it reallocates.
bool ReplaceAllWiping(std::string* s, size_t start, std::string_view from, std::string_view to) {
  if (from.empty() || s->find(from, start) == std::string::npos) return false;
  std::string out;
  out.reserve(s->size() + to.size() * 4);
  out.append(*s, 0, start);
  size_t pos = start;
  size_t hit;
  while ((hit = s->find(from, pos)) != std::string::npos) {
    out.append(*s, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  out.append(*s, pos, std::string::npos);
  explicit_bzero(s->data(), s->size());
  *s = std::move(out);
  return true;
}

}  // namespace

Status PlanRunCredentials(const policy::Policy& policy, const RunCredentialsOptions& options,
                          enforce::LaunchPlan* plan) {
  if (!plan->net.enabled) {
    // the policy loader's credential hosts make this unreachable from the CLI; other callers get a reason.
    return Error(Code::kFailedPrecondition,
                 "credentials need egress through the proxy, and this run has none");
  }
  for (const auto& [name, c] : policy.credentials) {
    if (c.enabled && !c.route.empty() && plan->net.proxy_port == 0) {
      return InvalidArgument("credential " + name + ": a route needs the proxy's port");
    }
  }
  // Interception is always on for a run's credentials: their CA's bundle is bound inside.
  return enforce::PlanLateFile(
      options.bundle_target.empty() ? CaBundleTarget(net::CaBundleTarget(options.system_bundle_path))
                                    : options.bundle_target,
      "credential broker: system CA bundle + this session's CA (certificate only)", plan);
  return Ok();
}

void WithholdCredentialValues(const policy::Policy& policy, std::vector<std::string>* env) {
  for (const auto& [name, c] : policy.credentials) {
    if (!c.enabled || c.from.kind != policy::CredentialSource::Kind::kEnv) continue;
    const char* value = std::getenv(c.from.value.c_str());
    if (value == nullptr || *value == '\0') continue;
    const std::string marker = WithheldMarker(name);
    for (std::string& e : *env) {
      size_t eq = e.find('=');
      if (eq != std::string::npos) ReplaceAllWiping(&e, eq + 1, value, marker);
    }
  }
}

Result<net::CredentialSetup> PrepareRunCredentials(const policy::Policy& policy,
                                                   const enforce::LaunchPlan& plan,
                                                   const RunCredentialsOptions& options) {
  if (!plan.net.enabled) {
    // the policy loader's credential hosts make this unreachable from the CLI; other callers get a reason.
    return Error(Code::kFailedPrecondition,
                 "credentials need egress through the proxy, and this run has none");
  }
  net::CredentialSetupOptions o;
  o.proxy_host = "127.0.0.1";
  o.proxy_port = plan.net.proxy_port;
  o.upstream_ca_files = options.upstream_ca_files;
  o.sources = options.sources;
  o.system_bundle_path = options.system_bundle_path;
  Result<net::CredentialSetup> setup = net::PrepareCredentials(policy, o);
  if (!setup.ok()) return std::move(setup).take_status().With("credentials");
  return setup;
}

std::vector<std::string> ApplyCredentialsToPlan(const net::CredentialSetup& setup,
                                                enforce::LaunchPlan* plan) {
  std::vector<std::string> rewritten;
  if (!setup.broker) return rewritten;
  std::vector<std::string>& env = plan->process.env;
  // A real secret the env rules let through under another name (say GH_TOKEN next to a
  // brokered GITHUB_TOKEN with the same value, or an env.set line) becomes the phantom.
  for (std::string& e : env) {
    size_t eq = e.find('=');
    if (eq == std::string::npos) continue;
    bool changed = false;
    for (const net::BrokeredCredential& c : setup.broker->credentials()) {
      if (ReplaceAllWiping(&e, eq + 1, WithheldMarker(c.name), c.phantom)) changed = true;
      if (!c.secret.empty() && ReplaceAllWiping(&e, eq + 1, c.secret, c.phantom)) changed = true;
    }
    if (changed) rewritten.push_back(e.substr(0, eq));
  }
  for (const auto& [name, value] : setup.env) SetEnv(&env, name, value);
  return rewritten;
}

nlohmann::json EnabledCredentialsJson(const policy::Policy& policy) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, c] : policy.credentials) {
    if (!c.enabled) continue;
    out.push_back({{"name", name},
                   {"from", std::string(SourceKindName(c.from.kind)) +
                                (c.from.kind == policy::CredentialSource::Kind::kCommand
                                     ? " (a host command)"
                                     : ":" + c.from.value)},
                   {"hosts", c.hosts},
                   {"inject", InjectJson(c.inject)},
                   {"env", c.env.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.env)},
                   {"route", c.route.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.route)},
                   {"route_env", c.route_env},
                   {"origin", policy::OriginToJson(c.origin)}});
  }
  return out;
}

}  // namespace ward::supervisor
