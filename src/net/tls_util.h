// Internal to src/net: owning pointers for OpenSSL objects and the error-queue reader, shared by
// the TLS pieces of the credential broker (authority, channel, upstream context).
#pragma once

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <string_view>

namespace ward::net {

struct SslCtxFree {
  void operator()(SSL_CTX* p) const { SSL_CTX_free(p); }
};
struct SslFree {
  void operator()(SSL* p) const { SSL_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct EvpPkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};

using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;
using SslPtr = std::unique_ptr<SSL, SslFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using EvpPkeyPtr = std::unique_ptr<EVP_PKEY, EvpPkeyFree>;

// Shared ownership of a context (leaf contexts live in a cache and in the connections using them).
inline std::shared_ptr<SSL_CTX> ShareSslCtx(SslCtxPtr ctx) {
  return std::shared_ptr<SSL_CTX>(ctx.release(), SslCtxFree());
}

namespace internal {

// Empties OpenSSL's per-thread error queue: "what: first reason; second reason" (what alone when
// the queue was empty). Every failing OpenSSL call site calls it, so no stale error is left for
// an unrelated call to misreport.
std::string OpenSslError(std::string_view what);

// Clears the queue without reading it (before an SSL_* call whose result is inspected with
// SSL_get_error, which requires an empty queue).
void ClearOpenSslErrors();

// A certificate as PEM text ("" on failure).
std::string CertificatePem(X509* cert);

}  // namespace internal
}  // namespace ward::net
