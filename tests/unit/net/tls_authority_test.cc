// The session CA, its leaves, the TLS channel (two channels talking in memory) and the
// upstream client context: certificates that verify, names that do not, hostile bytes.
#include <gtest/gtest.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>

#include <string>

#include "credentials_test_util.h"
#include "net/tls_authority.h"
#include "net/tls_channel.h"
#include "net/tls_upstream.h"

namespace ward::net {
namespace {

using testing::TempDir;
using testing::TestPki;

Host Name(const std::string& n) { return Host{n, std::nullopt}; }

// Verifies `leaf` against `ca` alone, for `host` (an empty host: no name check).
int VerifyLeaf(X509* ca, X509* leaf, const std::string& host) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx);
  X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
  if (!host.empty()) X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
  int ok = X509_verify_cert(ctx);
  int err = ok == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  ERR_clear_error();
  return err;
}

std::string CurveOf(EVP_PKEY* key) {
  char name[64] = {0};
  size_t len = 0;
  if (EVP_PKEY_get_utf8_string_param(key, "group", name, sizeof name, &len) != 1) return "";
  return name;
}

TEST(TlsAuthorityTest, CaIsAConstrainedP256AuthorityWhoseKeyStaysInMemory) {
  TlsAuthorityOptions o;
  o.permitted_names = {"api.example.com", "example.org"};
  auto ca = TlsAuthority::Create(o);
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  X509* cert = (*ca)->ca_certificate();
  EXPECT_EQ(CurveOf(X509_get0_pubkey(cert)), "prime256v1");
  EXPECT_EQ(CurveOf((*ca)->leaf_key()), "prime256v1");
  EXPECT_EQ(X509_check_ca(cert), 1);
  // Critical basic constraints with path length 0, and critical name constraints.
  int crit = -1;
  auto* bc = static_cast<BASIC_CONSTRAINTS*>(
      X509_get_ext_d2i(cert, NID_basic_constraints, &crit, nullptr));
  ASSERT_NE(bc, nullptr);
  EXPECT_EQ(crit, 1);
  EXPECT_TRUE(bc->ca);
  ASSERT_NE(bc->pathlen, nullptr);
  EXPECT_EQ(ASN1_INTEGER_get(bc->pathlen), 0);
  BASIC_CONSTRAINTS_free(bc);
  auto* nc =
      static_cast<NAME_CONSTRAINTS*>(X509_get_ext_d2i(cert, NID_name_constraints, &crit, nullptr));
  ASSERT_NE(nc, nullptr);
  EXPECT_EQ(crit, 1);
  EXPECT_EQ(sk_GENERAL_SUBTREE_num(nc->permittedSubtrees), 2);
  NAME_CONSTRAINTS_free(nc);
  // Only the certificate is exported: PEM with no private key in it.
  const std::string& pem = (*ca)->ca_pem();
  EXPECT_NE(pem.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_EQ(pem.find("PRIVATE"), std::string::npos);
  // Two sessions never share a CA.
  auto other = TlsAuthority::Create(o);
  ASSERT_TRUE(other.ok());
  EXPECT_NE((*other)->ca_pem(), pem);
  EXPECT_NE(X509_cmp(cert, (*other)->ca_certificate()), 0);
}

TEST(TlsAuthorityTest, LeavesVerifyForTheirNameOnlyAndAreCached) {
  TlsAuthorityOptions o;
  o.permitted_names = {"api.example.com", "example.org"};
  auto ca = TlsAuthority::Create(o);
  ASSERT_TRUE(ca.ok());
  auto leaf = (*ca)->MintLeaf(Name("api.example.com"));
  ASSERT_TRUE(leaf.ok()) << leaf.status().ToString();
  X509* cacert = (*ca)->ca_certificate();
  EXPECT_EQ(VerifyLeaf(cacert, leaf->get(), "api.example.com"), X509_V_OK);
  EXPECT_EQ(VerifyLeaf(cacert, leaf->get(), "evil.example.net"), X509_V_ERR_HOSTNAME_MISMATCH);
  EXPECT_EQ(X509_check_ca(leaf->get()), 0);
  // A subdomain of a permitted name (a "*.example.org" credential host).
  auto sub = (*ca)->MintLeaf(Name("deep.sub.example.org"));
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(VerifyLeaf(cacert, sub->get(), "deep.sub.example.org"), X509_V_OK);
  // Outside the constraints: refused here, and rejected by verifiers if forged anyway.
  auto outside = (*ca)->MintLeaf(Name("example.net"));
  EXPECT_EQ(outside.status().code(), Code::kPermissionDenied);
  EXPECT_EQ((*ca)->MintLeaf(Name("notexample.org")).status().code(), Code::kPermissionDenied);

  auto c1 = (*ca)->ServerContext(Name("api.example.com"));
  auto c2 = (*ca)->ServerContext(Name("api.example.com"));
  auto c3 = (*ca)->ServerContext(Name("x.example.org"));
  ASSERT_TRUE(c1.ok() && c2.ok() && c3.ok());
  EXPECT_EQ(c1->get(), c2->get());
  EXPECT_NE(c1->get(), c3->get());
  EXPECT_EQ((*ca)->cached_leaves(), 2u);
  EXPECT_FALSE((*ca)->ServerContext(Name("example.net")).ok());
}

TEST(TlsAuthorityTest, ALeafFromAnotherSessionsCaDoesNotVerify) {
  TlsAuthorityOptions o;
  o.permitted_names = {"example.org"};
  auto ca = TlsAuthority::Create(o);
  ASSERT_TRUE(ca.ok());
  auto leaf = (*ca)->MintLeaf(Name("www.example.org"));
  ASSERT_TRUE(leaf.ok());
  EXPECT_EQ(VerifyLeaf((*ca)->ca_certificate(), leaf->get(), "www.example.org"), X509_V_OK);
  auto stranger = TlsAuthority::Create({});
  ASSERT_TRUE(stranger.ok());
  auto foreign = (*stranger)->MintLeaf(Name("www.example.org"));
  ASSERT_TRUE(foreign.ok());
  EXPECT_NE(VerifyLeaf((*ca)->ca_certificate(), foreign->get(), "www.example.org"), X509_V_OK);
}

TEST(TlsAuthorityTest, AddressHostsGetIpSans) {
  TlsAuthorityOptions o;
  o.permitted_addresses = {*IpAddress::Parse("127.0.0.1")};
  auto ca = TlsAuthority::Create(o);
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  auto leaf = (*ca)->MintLeaf(Host{"", *IpAddress::Parse("127.0.0.1")});
  ASSERT_TRUE(leaf.ok()) << leaf.status().ToString();
  EXPECT_EQ(X509_check_ip_asc(leaf->get(), "127.0.0.1", 0), 1);
  EXPECT_FALSE((*ca)->MintLeaf(Host{"", *IpAddress::Parse("127.0.0.2")}).ok());
  EXPECT_FALSE((*ca)->MintLeaf(Name("localhost")).ok());
}

TEST(TlsAuthorityTest, RejectsNamesThatWouldInjectConfiguration) {
  TlsAuthorityOptions o;
  o.permitted_names = {"a.example,permitted;DNS:evil"};
  EXPECT_FALSE(TlsAuthority::Create(o).ok());
}

// ------------------------------------------------------------------ channels in memory

// Moves bytes between a client and a server channel until both are done or stuck.
bool Pump(TlsChannel& c, TlsChannel& s) {
  for (int i = 0; i < 20; ++i) {
    TlsChannel::Io ci = c.Handshake();
    if (c.HasOutput()) s.Feed(c.TakeOutput());
    TlsChannel::Io si = s.Handshake();
    if (s.HasOutput()) c.Feed(s.TakeOutput());
    if (ci == TlsChannel::Io::kError || si == TlsChannel::Io::kError) return false;
    if (ci == TlsChannel::Io::kOk && si == TlsChannel::Io::kOk) return true;
  }
  return false;
}

struct Pair {
  std::unique_ptr<TlsAuthority> ca;
  SslCtxPtr client_ctx;
  std::shared_ptr<SSL_CTX> server_ctx;
  TempDir dir;
};

Pair MakePair(const std::string& server_name) {
  Pair p;
  p.ca = std::move(TlsAuthority::Create({}).value());
  std::string file = p.dir.Write("ca.pem", p.ca->ca_pem());
  UpstreamTlsOptions uo;
  uo.extra_ca_files = {file};
  uo.system_trust = false;
  p.client_ctx = std::move(MakeUpstreamTlsContext(uo).value());
  p.server_ctx = std::move(p.ca->ServerContext(Name(server_name)).value());
  return p;
}

TEST(TlsChannelTest, HandshakeAndDataInMemoryWithHttp11Alpn) {
  Pair p = MakePair("api.example.com");
  auto c = TlsChannel::Client(p.client_ctx.get(), "api.example.com");
  auto s = TlsChannel::Server(p.server_ctx.get());
  ASSERT_TRUE(c.ok() && s.ok());
  ASSERT_TRUE(Pump(**c, **s)) << (*c)->error() << " / " << (*s)->error();
  EXPECT_EQ((*c)->alpn(), "http/1.1");
  EXPECT_EQ((*s)->alpn(), "http/1.1");
  ASSERT_EQ((*c)->Write("GET / HTTP/1.1\r\n\r\n"), TlsChannel::Io::kOk);
  (*s)->Feed((*c)->TakeOutput());
  char buf[256];
  size_t n = 0;
  ASSERT_EQ((*s)->Read(buf, sizeof buf, &n), TlsChannel::Io::kOk);
  EXPECT_EQ(std::string(buf, n), "GET / HTTP/1.1\r\n\r\n");
  EXPECT_EQ((*s)->Read(buf, sizeof buf, &n), TlsChannel::Io::kWantRead);
  (*c)->Shutdown();
  (*s)->Feed((*c)->TakeOutput());
  EXPECT_EQ((*s)->Read(buf, sizeof buf, &n), TlsChannel::Io::kClosed);
}

TEST(TlsChannelTest, ServerOffersNoAlpnToAnH2OnlyClient) {
  Pair p = MakePair("api.example.com");
  SSL_CTX* h2 = p.client_ctx.get();
  static const unsigned char kH2[] = {2, 'h', '2'};
  SSL_CTX_set_alpn_protos(h2, kH2, sizeof kH2);
  auto c = TlsChannel::Client(h2, "api.example.com");
  auto s = TlsChannel::Server(p.server_ctx.get());
  ASSERT_TRUE(c.ok() && s.ok());
  ASSERT_TRUE(Pump(**c, **s)) << (*c)->error();
  EXPECT_EQ((*c)->alpn(), "");  // so the client speaks HTTP/1.1
}

TEST(TlsChannelTest, ClientRefusesWrongNameAndUnknownCa) {
  {
    Pair p = MakePair("other.example.com");
    auto c = TlsChannel::Client(p.client_ctx.get(), "api.example.com");
    auto s = TlsChannel::Server(p.server_ctx.get());
    ASSERT_TRUE(c.ok() && s.ok());
    EXPECT_FALSE(Pump(**c, **s));
    EXPECT_NE((*c)->error().find("certificate verification failed"), std::string::npos)
        << (*c)->error();
    EXPECT_NE((*c)->error().find("hostname mismatch"), std::string::npos) << (*c)->error();
  }
  {
    Pair p = MakePair("api.example.com");
    auto self_signed = TestPki::SelfSigned("api.example.com");
    auto c = TlsChannel::Client(p.client_ctx.get(), "api.example.com");
    auto s = TlsChannel::Server(self_signed.get());
    ASSERT_TRUE(c.ok() && s.ok());
    EXPECT_FALSE(Pump(**c, **s));
    EXPECT_NE((*c)->error().find("self-signed"), std::string::npos) << (*c)->error();
  }
}

TEST(TlsChannelTest, GarbageFromThePeerIsAnErrorNotACrash) {
  Pair p = MakePair("api.example.com");
  auto s = TlsChannel::Server(p.server_ctx.get());
  ASSERT_TRUE(s.ok());
  (*s)->Feed("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ((*s)->Handshake(), TlsChannel::Io::kError);
  EXPECT_FALSE((*s)->error().empty());
  auto s2 = TlsChannel::Server(p.server_ctx.get());
  std::string record = "\x16\x03\x01\xff\xff";  // a handshake record far too large
  record += std::string(100, '\0');
  (*s2)->Feed(record);
  TlsChannel::Io io = (*s2)->Handshake();
  EXPECT_TRUE(io == TlsChannel::Io::kError || io == TlsChannel::Io::kWantRead);
  EXPECT_FALSE(TlsChannel::Client(nullptr, "x").ok());
  EXPECT_FALSE(TlsChannel::Client(p.client_ctx.get(), "").ok());
  EXPECT_FALSE(TlsChannel::Client(p.client_ctx.get(), std::string("a\0b", 3)).ok());
}

TEST(UpstreamTlsTest, CaFilesMustExistAndHoldCertificates) {
  TempDir dir;
  UpstreamTlsOptions o;
  o.extra_ca_files = {dir.path() + "/missing.pem"};
  auto r = MakeUpstreamTlsContext(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("missing.pem"), std::string::npos);
  o.extra_ca_files = {dir.Write("junk.pem", "not a certificate\n")};
  EXPECT_FALSE(MakeUpstreamTlsContext(o).ok());
  TestPki pki;
  o.extra_ca_files = {pki.ca_file()};
  EXPECT_TRUE(MakeUpstreamTlsContext(o).ok());
  EXPECT_TRUE(MakeUpstreamTlsContext({}).ok());  // the host's trust store alone
}

// Whether `cert` verifies against the trust of an upstream context (time not checked: a
// bundle's root may have expired since it was packaged; trust is what is tested).
bool TrustedByUpstreamContext(X509* cert, bool system_trust) {
  UpstreamTlsOptions o;
  o.system_trust = system_trust;
  auto ctx = MakeUpstreamTlsContext(o);
  EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
  if (!ctx.ok()) return false;
  X509_STORE_CTX* sc = X509_STORE_CTX_new();
  X509_STORE_CTX_init(sc, SSL_CTX_get_cert_store(ctx->get()), cert, nullptr);
  X509_VERIFY_PARAM_set_flags(X509_STORE_CTX_get0_param(sc), X509_V_FLAG_NO_CHECK_TIME);
  const bool ok = X509_verify_cert(sc) == 1;
  X509_STORE_CTX_free(sc);
  return ok;
}

X509* FirstCertificateIn(const std::string& file) {
  FILE* f = std::fopen(file.c_str(), "r");
  if (f == nullptr) return nullptr;
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  return cert;
}

// The host's trust store is in use (read lazily through the hashed directory where there is
// one): a root CA of the host verifies against an upstream context with the host's trust, and
// not against one without it.
TEST(UpstreamTlsTest, TheHostsTrustAnchorsAreUsed) {
  X509* root = FirstCertificateIn(X509_get_default_cert_file());
  if (root == nullptr)
    GTEST_SKIP() << "no CA bundle on this host: " << X509_get_default_cert_file();
  EXPECT_TRUE(TrustedByUpstreamContext(root, true));
  EXPECT_FALSE(TrustedByUpstreamContext(root, false));
  X509_free(root);
}

// SSL_CERT_FILE naming another bundle is honoured (not replaced by the system's directory).
TEST(UpstreamTlsTest, SslCertFileIsHonoured) {
  TestPki pki;
  TempDir empty;
  X509* ca = FirstCertificateIn(pki.ca_file());
  ASSERT_NE(ca, nullptr);
  const char* old_file = std::getenv("SSL_CERT_FILE");
  const char* old_dir = std::getenv("SSL_CERT_DIR");
  const bool had_file = old_file != nullptr, had_dir = old_dir != nullptr;
  const std::string saved_file = had_file ? old_file : "", saved_dir = had_dir ? old_dir : "";
  setenv("SSL_CERT_FILE", pki.ca_file().c_str(), 1);
  setenv("SSL_CERT_DIR", empty.path().c_str(), 1);
  EXPECT_TRUE(TrustedByUpstreamContext(ca, true));
  X509* root = FirstCertificateIn(X509_get_default_cert_file());
  if (root != nullptr) {
    EXPECT_FALSE(TrustedByUpstreamContext(root, true));  // only the named bundle
    X509_free(root);
  }
  auto restore = [](const char* name, bool had, const std::string& value) {
    if (had) {
      setenv(name, value.c_str(), 1);
    } else {
      unsetenv(name);
    }
  };
  restore("SSL_CERT_FILE", had_file, saved_file);
  restore("SSL_CERT_DIR", had_dir, saved_dir);
  X509_free(ca);
}

}  // namespace
}  // namespace ward::net
