// GCC 12 reports the class-specific operator new/delete pair of asio's coroutine frames as
// mismatched (a known false positive, see src/net/proxy_io.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include "supervisor/approvals/webhook.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <asio/awaitable.hpp>
#include <asio/co_spawn.hpp>
#include <asio/connect.hpp>
#include <asio/detached.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/redirect_error.hpp>
#include <asio/ssl.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "common/unique_fd.h"
#include "libssl/on_use.h"
#include "net/http_parser.h"
#include "net/idna.h"
#include "net/tls_upstream.h"

namespace ward::supervisor {
namespace {

using std::chrono::milliseconds;

inline auto Await(asio::error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

std::string Hex(const unsigned char* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

std::string Nonce() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) {
    // Without randomness the nonce only has to be unique within the session.
    static uint64_t counter = 0;
    uint64_t v = ++counter ^ static_cast<uint64_t>(getpid()) << 32;
    std::memcpy(b, &v, sizeof v);
    std::memset(b + sizeof v, 0, sizeof b - sizeof v);
  }
  return Hex(b, sizeof b);
}

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ChannelAnswer DenyAnswer(std::string reason) {
  ChannelAnswer a;
  a.allow = false;
  a.reason = "webhook: " + std::move(reason);
  return a;
}

bool IsEof(const asio::error_code& ec) {
  return ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
}

struct Reply {
  int status = 0;
  net::HttpHeaders headers;
  std::string body;
};

// Writes the request, reads one response (head and body, bounded).
template <typename Stream>
asio::awaitable<Result<Reply>> Exchange(Stream& s, const std::string& request, size_t max_body) {
  asio::error_code ec;
  co_await asio::async_write(s, asio::buffer(request), Await(ec));
  if (ec) co_return Result<Reply>(Error(Code::kUnavailable, "sending: " + ec.message()));
  net::HttpResponseParser parser(/*request_was_head=*/false);
  std::array<char, 8192> buf;
  std::string leftover;
  while (true) {
    size_t n = co_await s.async_read_some(asio::buffer(buf), Await(ec));
    if (ec) {
      co_return Result<Reply>(
          Error(Code::kUnavailable, "no complete reply head (" + ec.message() + ")"));
    }
    net::HttpParse p = parser.Feed(std::string_view(buf.data(), n));
    if (p.error()) co_return Result<Reply>(InvalidArgument("malformed reply: " + p.reason));
    if (p.done()) {
      leftover.assign(buf.data() + p.consumed, n - p.consumed);
      break;
    }
  }
  Reply reply;
  const net::HttpResponseHead& head = parser.head();
  reply.status = head.status;
  reply.headers = head.headers;
  if (head.status < 200 || head.status > 299) co_return reply;  // the body does not matter
  switch (head.body.kind) {
    case net::BodyKind::kNone:
      break;
    case net::BodyKind::kContentLength: {
      if (head.body.length > max_body) co_return Result<Reply>(InvalidArgument("reply too long"));
      reply.body = std::move(leftover);
      while (reply.body.size() < head.body.length) {
        size_t n = co_await s.async_read_some(asio::buffer(buf), Await(ec));
        if (ec) co_return Result<Reply>(Error(Code::kUnavailable, "reply body cut short"));
        reply.body.append(buf.data(), n);
      }
      reply.body.resize(head.body.length);
      break;
    }
    case net::BodyKind::kChunked: {
      net::ChunkedDecoder dec;
      std::string_view in = leftover;
      while (true) {
        net::HttpParse p = dec.Feed(in, &reply.body);
        if (p.error()) co_return Result<Reply>(InvalidArgument("bad chunked body: " + p.reason));
        if (reply.body.size() > max_body)
          co_return Result<Reply>(InvalidArgument("reply too long"));
        if (p.done()) break;
        size_t n = co_await s.async_read_some(asio::buffer(buf), Await(ec));
        if (ec) co_return Result<Reply>(Error(Code::kUnavailable, "reply body cut short"));
        in = std::string_view(buf.data(), n);
      }
      break;
    }
    case net::BodyKind::kUntilClose: {
      reply.body = std::move(leftover);
      while (true) {
        if (reply.body.size() > max_body)
          co_return Result<Reply>(InvalidArgument("reply too long"));
        size_t n = co_await s.async_read_some(asio::buffer(buf), Await(ec));
        if (IsEof(ec)) break;
        if (ec) co_return Result<Reply>(Error(Code::kUnavailable, "reading: " + ec.message()));
        reply.body.append(buf.data(), n);
      }
      break;
    }
  }
  co_return reply;
}

Result<ChannelAnswer> VerifyReply(const Reply& r, const WebhookOptions& o, uint64_t id,
                                  std::string_view nonce) {
  if (r.status < 200 || r.status > 299) {
    return Error(Code::kPermissionDenied, "answered HTTP " + std::to_string(r.status));
  }
  auto ts = r.headers.Get(kWebhookTimestampHeader);
  auto sig = r.headers.Get(kWebhookSignatureHeader);
  if (!ts || !sig) return Error(Code::kPermissionDenied, "unsigned reply");
  if (r.headers.Count(kWebhookTimestampHeader) != 1 ||
      r.headers.Count(kWebhookSignatureHeader) != 1) {
    return Error(Code::kPermissionDenied, "repeated signature headers");
  }
  if (ts->empty() || ts->size() > 12 || ts->find_first_not_of("0123456789") != std::string::npos) {
    return Error(Code::kPermissionDenied, "bad timestamp");
  }
  int64_t t = std::strtoll(std::string(*ts).c_str(), nullptr, 10);
  if (std::llabs(UnixSeconds() - t) > o.max_skew.count()) {
    return Error(Code::kPermissionDenied, "stale timestamp");
  }
  if (!CheckWebhookSignature(o.secret, *ts, r.body, *sig)) {
    return Error(Code::kPermissionDenied, "bad signature");
  }
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("malformed JSON");
  return ParseWebhookReply(j, id, nonce);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

Result<WebhookUrl> ParseWebhookUrl(std::string_view url) {
  WebhookUrl u;
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return InvalidArgument("webhook URL contains a space or a control character");
    }
  }
  if (url.rfind("unix:", 0) == 0) {
    u.is_unix = true;
    u.socket_path = std::string(url.substr(5));
    if (u.socket_path.empty() || u.socket_path[0] != '/') {
      return InvalidArgument("webhook unix socket path must be absolute: unix:/path/to/sock");
    }
    if (u.socket_path.size() >= 108) return InvalidArgument("webhook unix socket path too long");
    u.host_header = "localhost";
    return u;
  }
  if (url.rfind("http://", 0) == 0) {
    return InvalidArgument("webhook URL must be https:// or unix:/path (plain http is refused)");
  }
  if (url.rfind("https://", 0) != 0) {
    return InvalidArgument("webhook URL must be https://HOST[:PORT]/PATH or unix:/path");
  }
  std::string_view rest = url.substr(8);
  size_t end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  std::string_view tail = end == std::string_view::npos ? "" : rest.substr(end);
  if (size_t hash = tail.find('#'); hash != std::string_view::npos) tail = tail.substr(0, hash);
  if (authority.find('@') != std::string_view::npos) {
    return InvalidArgument("webhook URL must not carry credentials (put the secret elsewhere)");
  }
  std::string_view host_text = authority;
  std::string_view port_text;
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgument("webhook URL: unclosed '['");
    host_text = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return InvalidArgument("webhook URL: junk after ']'");
      port_text = after.substr(1);
    }
  } else if (size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host_text = authority.substr(0, colon);
    port_text = authority.substr(colon + 1);
  }
  if (host_text.empty()) return InvalidArgument("webhook URL has no host");
  if (!port_text.empty() || authority.back() == ':') {
    if (port_text.empty() || port_text.size() > 5 ||
        port_text.find_first_not_of("0123456789") != std::string_view::npos) {
      return InvalidArgument("webhook URL: bad port");
    }
    unsigned long p = std::strtoul(std::string(port_text).c_str(), nullptr, 10);
    if (p == 0 || p > 65535) return InvalidArgument("webhook URL: bad port");
    u.port = static_cast<uint16_t>(p);
  }
  Result<net::Host> host = net::ParseHost(host_text);
  if (!host.ok()) return std::move(host).take_status().With("webhook URL host");
  u.host = host->ToString();
  u.host_header = host->ToUriString() + (u.port == 443 ? "" : ":" + std::to_string(u.port));
  u.target = tail.empty() ? "/" : std::string(tail);
  if (u.target[0] == '?') u.target = "/" + u.target;
  return u;
}

std::string WebhookSignature(std::string_view secret, std::string_view timestamp,
                             std::string_view body) {
  std::string msg;
  msg.reserve(timestamp.size() + 1 + body.size());
  msg.append(timestamp).append(".").append(body);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
            reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), mac, &len)) {
    return "";
  }
  return "sha256=" + Hex(mac, len);
}

bool CheckWebhookSignature(std::string_view secret, std::string_view timestamp,
                           std::string_view body, std::string_view header_value) {
  std::string want = WebhookSignature(secret, timestamp, body);
  if (want.empty() || header_value.size() != want.size()) return false;
  return CRYPTO_memcmp(want.data(), header_value.data(), want.size()) == 0;
}

Result<std::string> LoadWebhookSecret(std::string_view source) {
  std::string secret;
  if (source.rfind("env:", 0) == 0) {
    std::string name(source.substr(4));
    const char* v = name.empty() ? nullptr : std::getenv(name.c_str());
    if (!v) return NotFound("webhook secret: the environment variable " + name + " is not set");
    secret = v;
  } else if (source.rfind("file:", 0) == 0) {
    std::string path(source.substr(5));
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
    if (fd < 0) return Errno("webhook secret file " + path);
    UniqueFd owned(fd);
    struct stat st;
    if (::fstat(fd, &st) != 0) return Errno("webhook secret file " + path);
    if (!S_ISREG(st.st_mode))
      return InvalidArgument("webhook secret file " + path + " is not a regular file");
    if (st.st_uid != ::geteuid()) {
      return Error(Code::kPermissionDenied, "webhook secret file " + path + " is not ours");
    }
    if ((st.st_mode & 077) != 0) {
      return Error(Code::kPermissionDenied,
                   "webhook secret file " + path + " is readable by others (chmod 600)");
    }
    if (st.st_size > 4096) return InvalidArgument("webhook secret file " + path + " is too long");
    char buf[4097];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) return Errno("reading webhook secret file " + path);
    secret.assign(buf, static_cast<size_t>(n));
    if (!secret.empty() && secret.back() == '\n') secret.pop_back();
    if (!secret.empty() && secret.back() == '\r') secret.pop_back();
  } else {
    return InvalidArgument("webhook secret source must be env:NAME or file:PATH");
  }
  if (secret.size() < kMinWebhookSecretBytes) {
    return InvalidArgument("webhook secret is shorter than " +
                           std::to_string(kMinWebhookSecretBytes) + " bytes");
  }
  return secret;
}

Result<ChannelAnswer> ParseWebhookReply(const nlohmann::json& body, uint64_t id,
                                        std::string_view nonce) {
  if (!body.is_object()) return InvalidArgument("the reply is not a JSON object");
  auto id_it = body.find("id");
  if (id_it == body.end() || !id_it->is_number_integer() ||
      id_it->get<int64_t>() != static_cast<int64_t>(id)) {
    return InvalidArgument("the reply is for another request (id)");
  }
  auto n_it = body.find("nonce");
  if (n_it == body.end() || !n_it->is_string() || n_it->get_ref<const std::string&>() != nonce) {
    return InvalidArgument("the reply is for another request (nonce)");
  }
  auto d_it = body.find("decision");
  if (d_it == body.end() || !d_it->is_string()) return InvalidArgument("no decision");
  const std::string& d = d_it->get_ref<const std::string&>();
  ChannelAnswer a;
  if (d == "deny") {
    a.allow = false;
  } else if (d == "allow_once") {
    a.allow = true;
  } else if (d == "allow_session") {
    a.allow = true;
    a.scope.lifetime = Lifetime::kSession;
  } else if (d == "allow_for") {
    auto s = body.find("seconds");
    if (s == body.end() || !s->is_number_integer() || s->get<int64_t>() <= 0 ||
        s->get<int64_t>() > 30LL * 24 * 3600) {
      return InvalidArgument("allow_for needs \"seconds\" between 1 and 30 days");
    }
    a.allow = true;
    a.scope.lifetime = Lifetime::kDuration;
    a.scope.duration = std::chrono::seconds(s->get<int64_t>());
  } else {
    return InvalidArgument("unknown decision \"" + d.substr(0, 32) + "\"");
  }
  std::string reason;
  if (auto r = body.find("reason"); r != body.end() && r->is_string()) {
    reason = r->get<std::string>().substr(0, 256);
  }
  a.reason = "webhook: " + d + (reason.empty() ? "" : " (" + reason + ")");
  return a;
}

// ---------------------------------------------------------------------------------------------

struct WebhookChannel::Call : std::enable_shared_from_this<Call> {
  explicit Call(asio::io_context& io) : timer(io) {}

  uint64_t id = 0;
  std::string nonce;
  AnswerFn answer;
  std::function<void(uint64_t)> on_done;
  bool finished = false;
  asio::steady_timer timer;
  std::optional<asio::local::stream_protocol::socket> unix_sock;
  std::optional<asio::ip::tcp::socket> tcp_sock;
  std::optional<asio::ssl::stream<asio::ip::tcp::socket>> tls;

  void CloseSockets() {
    asio::error_code ec;
    if (unix_sock) unix_sock->close(ec);
    if (tcp_sock) tcp_sock->close(ec);
    if (tls) tls->lowest_layer().close(ec);
  }
  // The one answer of this call (later ones are ignored).
  void Finish(ChannelAnswer a) {
    if (finished) return;
    finished = true;
    timer.cancel();
    CloseSockets();
    AnswerFn fn = std::move(answer);
    auto done = std::move(on_done);
    if (done) done(id);
    if (fn) fn(std::move(a));
  }
  // Withdrawn: no answer.
  void Abort() {
    if (finished) return;
    finished = true;
    answer = nullptr;
    on_done = nullptr;
    timer.cancel();
    CloseSockets();
  }
};

namespace {

// A TCP socket opened close-on-exec (asio's own open does not set it), connected to one of the
// endpoints.
asio::awaitable<asio::error_code> ConnectTcp(asio::ip::tcp::socket& sock,
                                             const std::vector<asio::ip::tcp::endpoint>& eps) {
  asio::error_code ec = asio::error::host_not_found;
  for (const auto& ep : eps) {
    asio::error_code close_ec;
    sock.close(close_ec);
    int fd = ::socket(ep.protocol().family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      ec = asio::error_code(errno, asio::error::get_system_category());
      continue;
    }
    sock.assign(ep.protocol(), fd, ec);
    if (ec) {
      ::close(fd);
      continue;
    }
    co_await sock.async_connect(ep, Await(ec));
    if (!ec || ec == asio::error::operation_aborted) co_return ec;  // connected, or withdrawn
  }
  co_return ec;
}

asio::awaitable<void> RunCall(std::shared_ptr<WebhookChannel::Call> call, WebhookUrl url,
                              std::shared_ptr<asio::ssl::context> tls_ctx, std::string request,
                              WebhookOptions options) {
  auto executor = co_await asio::this_coro::executor;
  Result<Reply> reply = Error(Code::kInternal, "not sent");
  asio::error_code ec;
  if (url.is_unix) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      call->Finish(DenyAnswer("socket: " + std::string(std::strerror(errno))));
      co_return;
    }
    call->unix_sock.emplace(executor);
    call->unix_sock->assign(asio::local::stream_protocol(), fd, ec);
    if (ec) {
      ::close(fd);
      call->Finish(DenyAnswer("socket: " + ec.message()));
      co_return;
    }
    co_await call->unix_sock->async_connect(asio::local::stream_protocol::endpoint(url.socket_path),
                                            Await(ec));
    if (call->finished) co_return;
    if (ec) {
      call->Finish(DenyAnswer("connecting to " + url.socket_path + ": " + ec.message()));
      co_return;
    }
    reply = co_await Exchange(*call->unix_sock, request, options.max_reply_bytes);
  } else {
    std::vector<asio::ip::tcp::endpoint> eps;
    Result<net::Host> host = net::ParseHost(url.host);
    if (host.ok() && host->is_address()) {
      asio::error_code aec;
      asio::ip::address addr = asio::ip::make_address(url.host, aec);
      if (!aec) eps.emplace_back(addr, url.port);
    } else {
      asio::ip::tcp::resolver resolver(executor);
      auto results = co_await resolver.async_resolve(url.host, std::to_string(url.port), Await(ec));
      if (call->finished) co_return;
      if (ec) {
        call->Finish(DenyAnswer("resolving " + url.host + ": " + ec.message()));
        co_return;
      }
      for (const auto& r : results) eps.push_back(r.endpoint());
    }
    call->tcp_sock.emplace(executor);
    ec = co_await ConnectTcp(*call->tcp_sock, eps);
    if (call->finished) co_return;
    if (ec) {
      call->Finish(DenyAnswer("connecting to " + url.host_header + ": " + ec.message()));
      co_return;
    }
    call->tls.emplace(std::move(*call->tcp_sock), *tls_ctx);
    call->tcp_sock.reset();
    SSL* ssl = call->tls->native_handle();
    if (host.ok() && host->is_address()) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), url.host.c_str());
    } else {
      SSL_set_tlsext_host_name(ssl, url.host.c_str());
      SSL_set1_host(ssl, url.host.c_str());
    }
    co_await call->tls->async_handshake(asio::ssl::stream_base::client, Await(ec));
    if (call->finished) co_return;
    if (ec) {
      long v = SSL_get_verify_result(ssl);
      std::string why = v != X509_V_OK ? X509_verify_cert_error_string(v) : ec.message();
      call->Finish(DenyAnswer("TLS with " + url.host_header + " failed: " + why));
      co_return;
    }
    reply = co_await Exchange(*call->tls, request, options.max_reply_bytes);
  }
  if (call->finished) co_return;
  if (!reply.ok()) {
    call->Finish(DenyAnswer(reply.status().message()));
    co_return;
  }
  Result<ChannelAnswer> a = VerifyReply(*reply, options, call->id, call->nonce);
  if (!a.ok()) {
    call->Finish(DenyAnswer(a.status().message()));
    co_return;
  }
  call->Finish(std::move(a).value());
}

}  // namespace

Result<std::unique_ptr<WebhookChannel>> WebhookChannel::Create(asio::io_context& io,
                                                               WebhookOptions options) {
  WARD_ASSIGN_OR_RETURN(WebhookUrl url, ParseWebhookUrl(options.url));
  // Signing (HMAC), nonces and HTTPS all need OpenSSL (src/libssl/on_use.h).
  if (const std::string& e = libssl::Load(); !e.empty()) {
    return Error(Code::kFailedPrecondition, "the approval webhook needs OpenSSL: " + e);
  }
  if (options.secret.size() < kMinWebhookSecretBytes) {
    return InvalidArgument("webhook secret is shorter than " +
                           std::to_string(kMinWebhookSecretBytes) + " bytes");
  }
  std::unique_ptr<WebhookChannel> ch(new WebhookChannel(io, std::move(options), std::move(url)));
  if (!ch->url_.is_unix) {
    try {
      auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
      SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
      ctx->set_verify_mode(asio::ssl::verify_peer);
      asio::error_code ec;
      if (ch->options_.system_trust && !net::LoadHostTrust(ctx->native_handle())) {
        return Error(Code::kInternal, "loading the host's trust store failed");
      }
      for (const std::string& f : ch->options_.ca_files) {
        ctx->load_verify_file(f, ec);
        if (ec) return InvalidArgument("webhook CA file " + f + ": " + ec.message());
      }
      ch->tls_ = std::move(ctx);
    } catch (const std::exception& e) {
      return Error(Code::kInternal, std::string("webhook TLS context: ") + e.what());
    }
  } else if (!ch->options_.ca_files.empty()) {
    return InvalidArgument("webhook CA files apply to https:// URLs only");
  }
  return ch;
}

WebhookChannel::WebhookChannel(asio::io_context& io, WebhookOptions options, WebhookUrl url)
    : io_(io),
      options_(std::move(options)),
      url_(std::move(url)),
      alive_(std::make_shared<bool>(true)) {}

WebhookChannel::~WebhookChannel() {
  *alive_ = false;
  for (auto& [id, call] : calls_) call->Abort();
}

void WebhookChannel::Done(uint64_t id) { calls_.erase(id); }

void WebhookChannel::Ask(const ApprovalRequest& request, milliseconds timeout, AnswerFn answer) {
  auto call = std::make_shared<Call>(io_);
  call->id = request.id;
  call->nonce = Nonce();
  call->answer = std::move(answer);
  std::weak_ptr<bool> alive = alive_;
  call->on_done = [this, alive](uint64_t id) {
    if (auto a = alive.lock(); a && *a) Done(id);
  };
  milliseconds limit = std::min(timeout, options_.timeout);
  nlohmann::json body = {{"type", "approval.request"},
                         {"version", 1},
                         {"session", options_.session},
                         {"nonce", call->nonce},
                         {"timeout_ms", limit.count()},
                         {"request", RequestToJson(request)},
                         {"decisions", {"allow_once", "allow_session", "allow_for", "deny"}}};
  std::string text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string ts = std::to_string(UnixSeconds());
  std::string http = "POST " + url_.target + " HTTP/1.1\r\nHost: " + url_.host_header +
                     "\r\nUser-Agent: ward-approvals\r\nContent-Type: application/json\r\n"
                     "Content-Length: " +
                     std::to_string(text.size()) + "\r\n" + std::string(kWebhookTimestampHeader) +
                     ": " + ts + "\r\n" + std::string(kWebhookSignatureHeader) + ": " +
                     WebhookSignature(options_.secret, ts, text) + "\r\nConnection: close\r\n\r\n" +
                     text;
  calls_[request.id] = call;
  call->timer.expires_after(limit);
  call->timer.async_wait([weak = std::weak_ptr<Call>(call), limit](const asio::error_code& ec) {
    if (ec) return;
    if (auto c = weak.lock()) {
      c->Finish(DenyAnswer("no reply within " + std::to_string(limit.count()) + " ms"));
    }
  });
  asio::co_spawn(io_, RunCall(call, url_, tls_, std::move(http), options_),
                 [call](std::exception_ptr e) {
                   if (e) call->Finish(DenyAnswer("internal error"));
                 });
}

void WebhookChannel::Cancel(uint64_t request_id) {
  auto it = calls_.find(request_id);
  if (it == calls_.end()) return;
  std::shared_ptr<Call> call = it->second;
  calls_.erase(it);
  call->Abort();
}

}  // namespace ward::supervisor
