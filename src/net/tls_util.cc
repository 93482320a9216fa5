#include "net/tls_util.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>

namespace ward::net::internal {

std::string OpenSslError(std::string_view what) {
  std::string out(what);
  bool first = true;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    // Keep the message short: the reason is the last ':'-separated field of the long form.
    std::string_view s(buf);
    if (const char* r = ERR_reason_error_string(e)) s = r;
    out += first ? ": " : "; ";
    out += s;
    first = false;
  }
  return out;
}

void ClearOpenSslErrors() { ERR_clear_error(); }

std::string CertificatePem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "";
  std::string out;
  if (PEM_write_bio_X509(bio, cert) == 1) {
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    if (n > 0) out.assign(data, static_cast<size_t>(n));
  }
  BIO_free(bio);
  ERR_clear_error();
  return out;
}

}  // namespace ward::net::internal
