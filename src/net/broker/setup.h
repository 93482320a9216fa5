// What `ward run` calls, in the supervisor, before the sandbox starts: fetch the enabled
// credentials' secrets (an error stops the run), build the broker for the proxy, and say what
// the sandbox gets: variables (phantoms, route URLs, CA bundle variables) and the merged CA
// bundle to bind over the system bundle.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "net/broker/credential_broker.h"
#include "net/broker/source.h"
#include "policy/policy.h"

namespace ward::net {

struct CredentialSetupOptions {
  // Where the proxy listens inside the sandbox: route URLs are http://HOST:PORT/ROUTE.
  std::string proxy_host = "127.0.0.1";
  uint16_t proxy_port = 0;
  std::vector<std::string> upstream_ca_files;  // --upstream-ca FILE (repeatable)
  SecretSourceOptions sources;
  bool intercept = true;
  // The host's CA bundle ("" = the first of the usual paths that exists).
  std::string system_bundle_path;
};

// The variables pointed at the merged CA bundle inside.
inline constexpr std::string_view kCaBundleVariables[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE",
                                                          "NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE",
                                                          "GIT_SSL_CAINFO"};

struct CredentialSetup {
  std::unique_ptr<CredentialBroker> broker;  // null when nothing is brokered or inspected
  // To set inside, over whatever the env rules produced: each credential's `env` = its
  // phantom, its `route_env` with {route_url} filled in, and the CA bundle variables.
  std::vector<std::pair<std::string, std::string>> env;
  // Bind `ca_bundle` (read-only) over this path inside; both empty when nothing is intercepted.
  std::string ca_bundle_path;
  std::string ca_bundle;
  // The real values: register each with audit::Redactor::AddSecret.
  std::vector<std::string> secrets;
};

// Errors name the credential and where it was defined; they never contain a secret.
Result<CredentialSetup> PrepareCredentials(const policy::Policy& policy,
                                           const CredentialSetupOptions& options);

// The usual CA bundle paths (Debian/Ubuntu, Fedora/RHEL, openSUSE, Alpine), Debian's first.
std::vector<std::string> CaBundlePaths();

// The first of CaBundlePaths() that exists here; "" when none does.
std::string FindSystemCaBundle();

// Where the merged bundle is bound inside: the given system bundle path, else the host's usual
// bundle, else the Debian path.
std::string CaBundleTarget(const std::string& system_bundle_path);

// The system bundle's text (when the path is not empty) followed by the session CA.
Result<std::string> MergedCaBundle(std::string_view ca_pem, const std::string& system_bundle_path);

// "http://127.0.0.1:PORT/ROUTE"
std::string RouteUrl(std::string_view proxy_host, uint16_t proxy_port, std::string_view route);

}  // namespace ward::net
