#include "net/tls_authority.h"

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cstring>

namespace ward::net {

namespace {

using internal::OpenSslError;
using SysClock = std::chrono::system_clock;

constexpr auto kBackdate = std::chrono::hours(1);  // tolerate a client clock slightly behind
// A cached leaf this close to its end is minted again.
constexpr auto kRenewBefore = std::chrono::hours(24);
constexpr unsigned char kAlpnHttp11[] = {'h', 't', 't', 'p', '/', '1', '.', '1'};

Status SetRandomSerial(X509* x) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return Error(Code::kInternal, OpenSslError("RAND"));
  bytes[0] &= 0x7f;  // positive
  bytes[0] |= 0x01;  // and never zero
  BIGNUM* bn = BN_bin2bn(bytes, sizeof bytes, nullptr);
  if (bn == nullptr || BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) == nullptr) {
    BN_free(bn);
    return Error(Code::kInternal, OpenSslError("certificate serial"));
  }
  BN_free(bn);
  return Ok();
}

Status SetValidity(X509* x, SysClock::time_point not_before, SysClock::time_point not_after) {
  time_t nb = SysClock::to_time_t(not_before);
  time_t na = SysClock::to_time_t(not_after);
  if (X509_time_adj_ex(X509_getm_notBefore(x), 0, 0, &nb) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(x), 0, 0, &na) == nullptr) {
    return Error(Code::kInternal, OpenSslError("certificate validity"));
  }
  return Ok();
}

Status AddExtension(X509* x, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, x, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) {
    return Error(Code::kInternal, OpenSslError(std::string("certificate extension ") +
                                               OBJ_nid2sn(nid) + " = " + value));
  }
  int ok = X509_add_ext(x, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) return Error(Code::kInternal, OpenSslError("adding a certificate extension"));
  return Ok();
}

Status SetCommonName(X509_NAME* name, const std::string& cn) {
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                 0) != 1) {
    return Error(Code::kInternal, OpenSslError("certificate name"));
  }
  return Ok();
}

// "IP:a.b.c.d/255.255.255.255" style, as OpenSSL's configuration syntax wants it.
std::string IpConf(const IpAddress& a, bool with_mask) {
  std::string s = "IP:" + a.ToString();
  if (with_mask) {
    s += a.is_v4() ? "/255.255.255.255" : "/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
  }
  return s;
}

int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void*) {
  // Only HTTP/1.1 is parsed inside; a client that cannot speak it gets no ALPN answer.
  unsigned int i = 0;
  while (i < inlen) {
    unsigned int len = in[i];
    if (i + 1 + len > inlen) break;
    if (len == sizeof kAlpnHttp11 && std::memcmp(in + i + 1, kAlpnHttp11, len) == 0) {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

}  // namespace

Result<EvpPkeyPtr> GenerateP256Key() {
  EvpPkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return Error(Code::kInternal, OpenSslError("generating a P-256 key"));
  return key;
}

TlsAuthority::~TlsAuthority() = default;

Result<std::unique_ptr<TlsAuthority>> TlsAuthority::Create(TlsAuthorityOptions options) {
  std::unique_ptr<TlsAuthority> a(new TlsAuthority());
  a->options_ = std::move(options);
  WARD_ASSIGN_OR_RETURN(a->ca_key_, GenerateP256Key());
  WARD_ASSIGN_OR_RETURN(a->leaf_key_, GenerateP256Key());

  X509Ptr ca(X509_new());
  if (!ca || X509_set_version(ca.get(), 2) != 1) {
    return Error(Code::kInternal, OpenSslError("X509_new"));
  }
  WARD_TRY(SetRandomSerial(ca.get()));
  SysClock::time_point now = SysClock::now();
  a->ca_not_after_ = now + a->options_.ca_lifetime;
  WARD_TRY(SetValidity(ca.get(), now - kBackdate, a->ca_not_after_));
  WARD_TRY(SetCommonName(X509_get_subject_name(ca.get()), a->options_.common_name));
  if (X509_set_issuer_name(ca.get(), X509_get_subject_name(ca.get())) != 1 ||
      X509_set_pubkey(ca.get(), a->ca_key_.get()) != 1) {
    return Error(Code::kInternal, OpenSslError("CA certificate"));
  }
  WARD_TRY(AddExtension(ca.get(), ca.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  WARD_TRY(AddExtension(ca.get(), ca.get(), NID_key_usage, "critical,keyCertSign,cRLSign"));
  WARD_TRY(AddExtension(ca.get(), ca.get(), NID_subject_key_identifier, "hash"));
  WARD_TRY(AddExtension(ca.get(), ca.get(), NID_authority_key_identifier, "keyid:always"));
  if (!a->options_.permitted_names.empty() || !a->options_.permitted_addresses.empty()) {
    std::string nc = "critical";
    for (const std::string& n : a->options_.permitted_names) {
      if (n.empty() || n.find_first_of(",:;= \t\r\n") != std::string::npos) {
        return InvalidArgument("name constraint " + n + ": not a host name");
      }
      nc += ",permitted;DNS:" + n;
    }
    for (const IpAddress& ip : a->options_.permitted_addresses) {
      nc += ",permitted;" + IpConf(ip, /*with_mask=*/true);
    }
    WARD_TRY(AddExtension(ca.get(), ca.get(), NID_name_constraints, nc));
  }
  if (X509_sign(ca.get(), a->ca_key_.get(), EVP_sha256()) <= 0) {
    return Error(Code::kInternal, OpenSslError("signing the CA certificate"));
  }
  a->ca_pem_ = internal::CertificatePem(ca.get());
  if (a->ca_pem_.empty()) return Error(Code::kInternal, "encoding the CA certificate");
  a->ca_cert_ = std::move(ca);
  return a;
}

bool TlsAuthority::Permits(const Host& host) const {
  if (options_.permitted_names.empty() && options_.permitted_addresses.empty()) return true;
  if (host.is_address()) {
    return std::find(options_.permitted_addresses.begin(), options_.permitted_addresses.end(),
                     *host.address) != options_.permitted_addresses.end();
  }
  for (const std::string& n : options_.permitted_names) {
    if (host.name == n) return true;
    if (host.name.size() > n.size() && host.name.ends_with(n) &&
        host.name[host.name.size() - n.size() - 1] == '.') {
      return true;
    }
  }
  return false;
}

Result<X509Ptr> TlsAuthority::MintLeaf(const Host& host) const {
  if (!host.is_address() && host.name.empty()) return InvalidArgument("no host name");
  if (!Permits(host)) {
    return Error(Code::kPermissionDenied, "the session CA does not vouch for " + host.ToString() +
                                              " (not a credential host)");
  }
  X509Ptr leaf(X509_new());
  if (!leaf || X509_set_version(leaf.get(), 2) != 1) {
    return Error(Code::kInternal, OpenSslError("X509_new"));
  }
  WARD_TRY(SetRandomSerial(leaf.get()));
  SysClock::time_point now = SysClock::now();
  WARD_TRY(SetValidity(leaf.get(), now - kBackdate,
                       std::min(now + options_.leaf_lifetime, ca_not_after_)));
  WARD_TRY(SetCommonName(X509_get_subject_name(leaf.get()), host.ToString()));
  if (X509_set_issuer_name(leaf.get(), X509_get_subject_name(ca_cert_.get())) != 1 ||
      X509_set_pubkey(leaf.get(), leaf_key_.get()) != 1) {
    return Error(Code::kInternal, OpenSslError("leaf certificate"));
  }
  X509* ca = ca_cert_.get();
  WARD_TRY(AddExtension(leaf.get(), ca, NID_basic_constraints, "critical,CA:FALSE"));
  WARD_TRY(AddExtension(leaf.get(), ca, NID_key_usage, "critical,digitalSignature"));
  WARD_TRY(AddExtension(leaf.get(), ca, NID_ext_key_usage, "serverAuth"));
  WARD_TRY(AddExtension(leaf.get(), ca, NID_subject_key_identifier, "hash"));
  WARD_TRY(AddExtension(leaf.get(), ca, NID_authority_key_identifier, "keyid:always"));
  std::string san =
      host.is_address() ? IpConf(*host.address, /*with_mask=*/false) : "DNS:" + host.name;
  WARD_TRY(AddExtension(leaf.get(), ca, NID_subject_alt_name, san));
  if (X509_sign(leaf.get(), ca_key_.get(), EVP_sha256()) <= 0) {
    return Error(Code::kInternal, OpenSslError("signing a leaf certificate"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  minted_++;
  return leaf;
}

Result<std::shared_ptr<SSL_CTX>> TlsAuthority::ServerContext(const Host& host) {
  const std::string key = host.ToString();
  SysClock::time_point now = SysClock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end() && it->second.not_after - kRenewBefore > now) return it->second.ctx;
  }
  WARD_ASSIGN_OR_RETURN(X509Ptr leaf, MintLeaf(host));
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return Error(Code::kInternal, OpenSslError("SSL_CTX_new"));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_use_certificate(ctx.get(), leaf.get()) != 1 ||
      SSL_CTX_use_PrivateKey(ctx.get(), leaf_key_.get()) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    return Error(Code::kInternal, OpenSslError("server context for " + key));
  }
  SSL_CTX_set_alpn_select_cb(ctx.get(), SelectAlpn, nullptr);
  std::shared_ptr<SSL_CTX> shared = ShareSslCtx(std::move(ctx));
  const ASN1_TIME* na = X509_get0_notAfter(leaf.get());
  SysClock::time_point not_after = now + options_.leaf_lifetime;
  struct tm tm {};
  if (ASN1_TIME_to_tm(na, &tm) == 1) not_after = SysClock::from_time_t(timegm(&tm));
  std::lock_guard<std::mutex> lock(mu_);
  if (cache_.size() >= options_.max_cached_leaves && cache_.find(key) == cache_.end()) {
    // Bounded: drop the entry closest to expiry (the oldest); connections keep their contexts.
    auto oldest = std::min_element(cache_.begin(), cache_.end(), [](const auto& a, const auto& b) {
      return a.second.not_after < b.second.not_after;
    });
    if (oldest != cache_.end()) cache_.erase(oldest);
  }
  cache_[key] = Cached{shared, not_after};
  return shared;
}

size_t TlsAuthority::cached_leaves() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

uint64_t TlsAuthority::minted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return minted_;
}

}  // namespace ward::net
