#include "net/tls_upstream.h"

#include <openssl/err.h>

namespace ward::net {

using internal::OpenSslError;

Result<SslCtxPtr> MakeUpstreamTlsContext(const UpstreamTlsOptions& options) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return Error(Code::kInternal, OpenSslError("SSL_CTX_new"));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (options.system_trust && SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
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
