#include "net/tls_upstream.h"

#include <dirent.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ward::net {

using internal::OpenSslError;

namespace {

// Whether `dir` holds certificates under their subject hash ("1a2b3c4d.0", as c_rehash and
// update-ca-certificates name them).
bool HasHashedNames(const char* dir) {
  DIR* d = opendir(dir);
  if (d == nullptr) return false;
  bool found = false;
  while (struct dirent* e = readdir(d)) {
    const char* n = e->d_name;
    if (std::strlen(n) >= 10 && std::strspn(n, "0123456789abcdef") == 8 && n[8] == '.' &&
        n[9] >= '0' && n[9] <= '9') {
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}

std::string RealPath(const char* path) {
  char buf[PATH_MAX];
  return realpath(path, buf) != nullptr ? std::string(buf) : std::string();
}

}  // namespace

bool LoadHostTrust(SSL_CTX* ctx) {
  const char* file_env = std::getenv(X509_get_default_cert_file_env());
  const char* dir_env = std::getenv(X509_get_default_cert_dir_env());
  const char* file = file_env != nullptr ? file_env : X509_get_default_cert_file();
  const char* dir = dir_env != nullptr ? dir_env : X509_get_default_cert_dir();
  const std::string default_file = RealPath(X509_get_default_cert_file());
  const std::string default_dir = RealPath(X509_get_default_cert_dir());
  if (!default_file.empty() && RealPath(file) == default_file && !default_dir.empty() &&
      RealPath(dir) == default_dir && HasHashedNames(dir)) {
    if (SSL_CTX_load_verify_dir(ctx, dir) == 1) return true;
    ERR_clear_error();  // the default paths below are the answer now
  }
  return SSL_CTX_set_default_verify_paths(ctx) == 1;
}

Result<SslCtxPtr> MakeUpstreamTlsContext(const UpstreamTlsOptions& options) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return Error(Code::kInternal, OpenSslError("SSL_CTX_new"));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (options.system_trust && !LoadHostTrust(ctx.get())) {
    return Error(Code::kInternal, OpenSslError("loading the host's trust store"));
  }
  for (const std::string& file : options.extra_ca_files) {
    if (SSL_CTX_load_verify_file(ctx.get(), file.c_str()) != 1) {
      return InvalidArgument(OpenSslError("upstream CA file " + file + ": no usable certificate"));
    }
  }
  static const unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  if (SSL_CTX_set_alpn_protos(ctx.get(), kAlpn, sizeof kAlpn) != 0) {
    return Error(Code::kInternal, OpenSslError("ALPN"));
  }
  ERR_clear_error();
  return ctx;
}

}  // namespace ward::net
