// The TLS client side of the credential broker: how the supervisor talks to the real upstream
// when it carries a real secret. The certificate is always verified (chain and name): against
// the host's trust store plus the CA files given with `--upstream-ca` (corporate or test CAs).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "net/tls_util.h"

namespace ward::net {

struct UpstreamTlsOptions {
  std::vector<std::string> extra_ca_files;  // PEM files, each with at least one certificate
  // The host's default trust store (OpenSSL's default paths, SSL_CERT_FILE / SSL_CERT_DIR of
  // the supervisor). Tests turn it off to show that only the given CA is trusted.
  bool system_trust = true;
};

// Loads the host's trust anchors into `ctx` (the broker's upstream context, the approval
// webhook's): OpenSSL's default paths (SSL_CERT_FILE / SSL_CERT_DIR, else the system's bundle
// and directory), except that where both are the system's defaults and the directory has
// hashed names, the directory alone is loaded, a CA when a chain first needs it, instead of
// parsing the whole bundle (~45 ms here). False when OpenSSL refuses (its error queue says why).
bool LoadHostTrust(SSL_CTX* ctx);

// A client context: TLS 1.2+, peer verification required, ALPN offering only http/1.1.
// A missing or unusable CA file is an error naming it.
Result<SslCtxPtr> MakeUpstreamTlsContext(const UpstreamTlsOptions& options);

}  // namespace ward::net
