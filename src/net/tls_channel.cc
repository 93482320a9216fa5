#include "net/tls_channel.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "net/addr.h"

namespace ward::net {

using internal::ClearOpenSslErrors;
using internal::OpenSslError;

namespace {

Result<std::unique_ptr<TlsChannel>> NoChannel(const char* what) {
  return Error(Code::kInternal, OpenSslError(what));
}

}  // namespace

TlsChannel::~TlsChannel() = default;

Result<std::unique_ptr<TlsChannel>> TlsChannel::Client(SSL_CTX* ctx, const std::string& host) {
  if (ctx == nullptr) return InvalidArgument("no TLS context");
  if (host.empty() || host.size() > 255 || host.find('\0') != std::string::npos) {
    return InvalidArgument("bad TLS peer name");
  }
  std::unique_ptr<TlsChannel> c(new TlsChannel());
  c->ssl_.reset(SSL_new(ctx));
  if (!c->ssl_) return NoChannel("SSL_new");
  c->in_ = BIO_new(BIO_s_mem());
  c->out_ = BIO_new(BIO_s_mem());
  if (c->in_ == nullptr || c->out_ == nullptr) {
    BIO_free(c->in_);
    BIO_free(c->out_);
    return NoChannel("BIO_new");
  }
  BIO_set_mem_eof_return(c->in_, -1);  // empty means "later", never end of stream
  SSL_set_bio(c->ssl_.get(), c->in_, c->out_);
  SSL_set_mode(c->ssl_.get(), SSL_MODE_RELEASE_BUFFERS);
  SSL_set_connect_state(c->ssl_.get());
  std::string bare = host;
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') {
    bare = bare.substr(1, bare.size() - 2);
  }
  if (IpAddress::Parse(bare).ok()) {
    // No SNI for addresses (RFC 6066); the certificate must name the address.
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl_.get()), bare.c_str()) != 1) {
      return NoChannel("TLS peer address");
    }
  } else {
    SSL_set_hostflags(c->ssl_.get(), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (SSL_set_tlsext_host_name(c->ssl_.get(), bare.c_str()) != 1 ||
        SSL_set1_host(c->ssl_.get(), bare.c_str()) != 1) {
      return NoChannel("TLS peer name");
    }
  }
  return c;
}

Result<std::unique_ptr<TlsChannel>> TlsChannel::Server(SSL_CTX* ctx) {
  if (ctx == nullptr) return InvalidArgument("no TLS context");
  std::unique_ptr<TlsChannel> c(new TlsChannel());
  c->ssl_.reset(SSL_new(ctx));
  if (!c->ssl_) return NoChannel("SSL_new");
  c->in_ = BIO_new(BIO_s_mem());
  c->out_ = BIO_new(BIO_s_mem());
  if (c->in_ == nullptr || c->out_ == nullptr) {
    BIO_free(c->in_);
    BIO_free(c->out_);
    return NoChannel("BIO_new");
  }
  BIO_set_mem_eof_return(c->in_, -1);
  SSL_set_bio(c->ssl_.get(), c->in_, c->out_);
  SSL_set_mode(c->ssl_.get(), SSL_MODE_RELEASE_BUFFERS);
  SSL_set_accept_state(c->ssl_.get());
  return c;
}

void TlsChannel::Feed(std::string_view ciphertext) {
  while (!ciphertext.empty()) {
    int chunk = static_cast<int>(std::min<size_t>(ciphertext.size(), 1 << 30));
    int n = BIO_write(in_, ciphertext.data(), chunk);
    if (n <= 0) break;  // allocation failure: the handshake or read then fails
    ciphertext.remove_prefix(static_cast<size_t>(n));
  }
}

std::string TlsChannel::TakeOutput() {
  std::string out;
  size_t pending = BIO_ctrl_pending(out_);
  if (pending == 0) return out;
  out.resize(pending);
  int n = BIO_read(out_, out.data(), static_cast<int>(pending));
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

bool TlsChannel::HasOutput() const { return BIO_ctrl_pending(out_) > 0; }

size_t TlsChannel::buffered_input() const { return BIO_ctrl_pending(in_); }

TlsChannel::Io TlsChannel::Fail(int ret, const char* op) {
  int err = SSL_get_error(ssl_.get(), ret);
  switch (err) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      return Io::kWantRead;
    case SSL_ERROR_ZERO_RETURN:
      ERR_clear_error();
      return Io::kClosed;
    default:
      break;
  }
  long verify = SSL_get_verify_result(ssl_.get());
  std::string what = op;
  if (verify != X509_V_OK) {
    what += ": certificate verification failed: ";
    what += X509_verify_cert_error_string(verify);
    ERR_clear_error();
    error_ = what;
  } else {
    error_ = OpenSslError(what);
  }
  return Io::kError;
}

TlsChannel::Io TlsChannel::Handshake() {
  ClearOpenSslErrors();
  int r = SSL_do_handshake(ssl_.get());
  if (r == 1) return Io::kOk;
  return Fail(r, "TLS handshake");
}

bool TlsChannel::handshake_done() const { return SSL_is_init_finished(ssl_.get()) == 1; }

TlsChannel::Io TlsChannel::Read(char* buf, size_t cap, size_t* n) {
  *n = 0;
  if (cap == 0) return Io::kOk;
  ClearOpenSslErrors();
  size_t got = 0;
  int r = SSL_read_ex(ssl_.get(), buf, cap, &got);
  if (r == 1) {
    *n = got;
    return Io::kOk;
  }
  return Fail(r, "TLS read");
}

TlsChannel::Io TlsChannel::Write(std::string_view data) {
  while (!data.empty()) {
    ClearOpenSslErrors();
    size_t written = 0;
    int r = SSL_write_ex(ssl_.get(), data.data(), data.size(), &written);
    if (r != 1) {
      Io io = Fail(r, "TLS write");
      if (io != Io::kError) {
        error_ = "TLS write: the connection cannot take data now";
        return Io::kError;
      }
      return io;
    }
    data.remove_prefix(written);
  }
  return Io::kOk;
}

void TlsChannel::Shutdown() {
  ClearOpenSslErrors();
  if (SSL_is_init_finished(ssl_.get())) SSL_shutdown(ssl_.get());
  ERR_clear_error();
}

std::string TlsChannel::alpn() const {
  const unsigned char* p = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl_.get(), &p, &len);
  return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p), len);
}

}  // namespace ward::net
