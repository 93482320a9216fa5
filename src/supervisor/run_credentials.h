// The credential broker in `ward run` (supervisor side; the policy loader has put the enabled
// credentials' hosts on the egress allow list): their secrets are fetched after sandbox init is
// cloned but before it builds the root (an error refuses the run, nothing has run yet), and the
// sandbox gets what it may see of them: phantom values, route URLs, the CA bundle variables and the merged CA
// bundle, bound read-only over the system one. The real secrets and the session CA's key stay
// in the supervisor; init, a copy of the supervisor's memory, is made before they exist.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "enforce/plan.h"
#include "enforce/spec.h"
#include "net/broker/setup.h"
#include "policy/policy.h"

namespace ward::supervisor {

struct RunCredentialsOptions {
  std::vector<std::string> upstream_ca_files;  // --upstream-ca FILE
  std::string system_bundle_path;              // "" = the host's usual bundle
  // Where the merged bundle goes inside: "" = where the system bundle is; a container's is
  // the path in its image (enforce::ImageRoot::ca_bundle).
  std::string bundle_target;
  net::SecretSourceOptions sources;            // tests replace getenv
};

// Before the clone, without touching a secret: checks that the plan has egress, and plans the
// CA bundle as the plan's late file (enforce::PlanLateFile), over the system bundle's path, so
// that sandbox init - a copy of the supervisor's memory - is made before any secret is read.
Status PlanRunCredentials(const policy::Policy& policy, const RunCredentialsOptions& options,
                          enforce::LaunchPlan* plan);

// The caller's values of `env:` credential sources, wherever the environment rules let them
// through under another name, are replaced by a marker (and the old bytes wiped) before the
// clone; ApplyCredentialsToPlan turns each marker into that credential's phantom.
void WithholdCredentialValues(const policy::Policy& policy, std::vector<std::string>* env);

// Fetches the secrets and builds the broker for a plan that has egress. Errors name the
// credential (never its value) and are meant to refuse the run.
Result<net::CredentialSetup> PrepareRunCredentials(const policy::Policy& policy,
                                                   const enforce::LaunchPlan& plan,
                                                   const RunCredentialsOptions& options);

// The command's environment: `setup.env` replaces same-named entries (phantoms, route URLs, CA
// bundle variables); a caller variable that holds a real secret under another name gets the
// phantom instead. Returns the names of variables whose values were rewritten. (The merged
// bundle, `setup.ca_bundle`, is the late file's content: it lives in the sandbox's own root
// tmpfs, so nothing on the host is shared or left behind.)
std::vector<std::string> ApplyCredentialsToPlan(const net::CredentialSetup& setup,
                                                enforce::LaunchPlan* plan);

// The enabled credentials for `ward explain` and session.start: name, hosts, env, route,
// route_env, how the secret is injected and where it comes from - never a value.
nlohmann::json EnabledCredentialsJson(const policy::Policy& policy);

}  // namespace ward::supervisor
