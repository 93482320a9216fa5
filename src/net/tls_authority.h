// The credential broker's ephemeral certificate authority: a P-256 key made per session that
// lives only in the supervisor's memory (never written anywhere), its self-signed certificate
// (the only thing that enters the sandbox, in its trust bundle), and leaf certificates minted on
// the fly for the hosts whose TLS the broker intercepts, cached with their server contexts.
//
// Defence in depth: the CA certificate carries critical name constraints listing the hosts it
// was made for, so even a leaked key could not vouch for any other name in clients that honour
// them (OpenSSL, and so curl, Python and Node, do).
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "net/idna.h"
#include "net/tls_util.h"

namespace ward::net {

struct TlsAuthorityOptions {
  std::string common_name = "ward ephemeral session CA";
  // The names and addresses the CA may vouch for (name constraints): a name covers itself and
  // its subdomains ("example.com" for a "*.example.com" credential host). Empty: unconstrained.
  std::vector<std::string> permitted_names;
  std::vector<IpAddress> permitted_addresses;
  std::chrono::hours ca_lifetime{24 * 365};
  std::chrono::hours leaf_lifetime{24 * 30};
  size_t max_cached_leaves = 256;
};

class TlsAuthority {
 public:
  static Result<std::unique_ptr<TlsAuthority>> Create(TlsAuthorityOptions options = {});
  ~TlsAuthority();
  TlsAuthority(const TlsAuthority&) = delete;
  TlsAuthority& operator=(const TlsAuthority&) = delete;

  // The CA certificate, PEM: what clients inside must trust.
  const std::string& ca_pem() const { return ca_pem_; }
  X509* ca_certificate() const { return ca_cert_.get(); }

  // A new leaf certificate for `host` (SAN = the name or address, serverAuth), signed by the CA.
  // Outside the name constraints: kPermissionDenied (clients would refuse it anyway).
  Result<X509Ptr> MintLeaf(const Host& host) const;
  // The leaves' private key (one per authority; leaves differ only in their names).
  EVP_PKEY* leaf_key() const { return leaf_key_.get(); }

  // A TLS server context presenting a cached (or newly minted) leaf for `host`, TLS 1.2+, that
  // negotiates only http/1.1 by ALPN (a client offering only h2 gets no ALPN and so speaks
  // HTTP/1.1). Thread-safe.
  Result<std::shared_ptr<SSL_CTX>> ServerContext(const Host& host);

  size_t cached_leaves() const;
  uint64_t minted() const;

 private:
  TlsAuthority() = default;
  bool Permits(const Host& host) const;

  TlsAuthorityOptions options_;
  EvpPkeyPtr ca_key_;
  X509Ptr ca_cert_;
  std::string ca_pem_;
  EvpPkeyPtr leaf_key_;
  std::chrono::system_clock::time_point ca_not_after_;

  struct Cached {
    std::shared_ptr<SSL_CTX> ctx;
    std::chrono::system_clock::time_point not_after;
  };
  mutable std::mutex mu_;
  std::map<std::string, Cached> cache_;  // Host::ToString() -> context
  mutable uint64_t minted_ = 0;
};

// A new P-256 key.
Result<EvpPkeyPtr> GenerateP256Key();

}  // namespace ward::net
