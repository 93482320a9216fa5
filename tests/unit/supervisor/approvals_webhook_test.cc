// The webhook approver against local test servers: over a unix socket (allow, deny, bad or
// missing signature, stale timestamp, wrong id or nonce, 500, garbage, too late, oversized,
// chunked, connection errors, withdrawal) and over TLS on 127.0.0.1 (a test CA trusted through
// a CA file; an untrusted certificate and a name mismatch deny). Nothing leaves the machine.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"  // asio coroutine frames (GCC 12)
#endif

#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <asio/awaitable.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/redirect_error.hpp>
#include <asio/ssl.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <cstdio>
#include <memory>

#include "../libssl/without_openssl.h"
#include "approvals_test_util.h"
#include "net/http_parser.h"
#include "supervisor/approvals/approval_broker.h"
#include "supervisor/approvals/webhook.h"

namespace ward::supervisor {
namespace {

using namespace std::chrono_literals;
using testing::DecisionBox;
using testing::FileRequest;
using testing::HostRequest;
using testing::RunUntil;
using testing::TempDir;

constexpr std::string_view kSecret = "test-secret-0123456789";

inline auto Await(asio::error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What the test server received.
struct Received {
  std::string method, target;
  net::HttpHeaders headers;
  std::string body;
  nlohmann::json json;
  bool signature_ok = false;
};

// A signed reply carrying `decision` for the request the server received.
std::string SignedReply(const Received& r, nlohmann::json extra, std::string_view secret = kSecret,
                        int64_t ts = 0, int status = 200) {
  nlohmann::json body = {{"id", r.json["request"]["id"]}, {"nonce", r.json["nonce"]}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  std::string text = body.dump();
  std::string t = std::to_string(ts ? ts : Now());
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(text.size()) +
         "\r\nX-Ward-Timestamp: " + t +
         "\r\nX-Ward-Signature: " + WebhookSignature(secret, t, text) +
         "\r\nConnection: close\r\n\r\n" + text;
}

struct ServerBehaviour {
  std::function<std::string(const Received&)> reply;  // raw bytes; "" closes without a reply
  std::chrono::milliseconds delay{0};
};

// Serves one request per connection on a stream, then closes.
template <typename Stream>
asio::awaitable<void> Serve(Stream& s, std::shared_ptr<ServerBehaviour> b,
                            std::shared_ptr<std::vector<Received>> log) {
  asio::error_code ec;
  net::HttpRequestParser parser;
  std::array<char, 4096> buf;
  std::string rest;
  while (true) {
    size_t n = co_await s.async_read_some(asio::buffer(buf), Await(ec));
    if (ec) co_return;
    net::HttpParse p = parser.Feed(std::string_view(buf.data(), n));
    if (p.error()) co_return;
    if (p.done()) {
      rest.assign(buf.data() + p.consumed, n - p.consumed);
      break;
    }
  }
  Received r;
  r.method = parser.head().method;
  r.target = parser.head().target;
  r.headers = parser.head().headers;
  r.body = rest;
  while (r.body.size() < parser.head().body.length) {
    size_t n = co_await s.async_read_some(asio::buffer(buf), Await(ec));
    if (ec) co_return;
    r.body.append(buf.data(), n);
  }
  r.json = nlohmann::json::parse(r.body, nullptr, false);
  auto ts = r.headers.Get("X-Ward-Timestamp");
  auto sig = r.headers.Get("X-Ward-Signature");
  r.signature_ok = ts && sig && CheckWebhookSignature(kSecret, *ts, r.body, *sig);
  log->push_back(r);
  if (b->delay.count() > 0) {
    asio::steady_timer t(co_await asio::this_coro::executor, b->delay);
    co_await t.async_wait(Await(ec));
  }
  std::string out = b->reply(r);
  if (!out.empty()) co_await asio::async_write(s, asio::buffer(out), Await(ec));
}

class UnixServer {
 public:
  UnixServer(asio::io_context& io, std::string path, ServerBehaviour b)
      : acceptor_(io, asio::local::stream_protocol::endpoint(path)),
        behaviour_(std::make_shared<ServerBehaviour>(std::move(b))),
        log_(std::make_shared<std::vector<Received>>()) {
    asio::co_spawn(io, Loop(), asio::detached);
  }
  ~UnixServer() {
    asio::error_code ec;
    acceptor_.close(ec);
  }
  const std::vector<Received>& log() const { return *log_; }

 private:
  asio::awaitable<void> Loop() {
    while (true) {
      asio::error_code ec;
      auto sock = co_await acceptor_.async_accept(Await(ec));
      if (ec) co_return;
      auto shared = std::make_shared<asio::local::stream_protocol::socket>(std::move(sock));
      asio::co_spawn(
          acceptor_.get_executor(),
          [shared, b = behaviour_, log = log_]() -> asio::awaitable<void> {
            co_await Serve(*shared, b, log);
          },
          asio::detached);
    }
  }
  asio::local::stream_protocol::acceptor acceptor_;
  std::shared_ptr<ServerBehaviour> behaviour_;
  std::shared_ptr<std::vector<Received>> log_;
};

// --- a test PKI ------------------------------------------------------------------------------

struct KeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct CertFree {
  void operator()(X509* p) const { X509_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

void AddExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  ASSERT_NE(ext, nullptr) << value;
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

Cert MakeCert(EVP_PKEY* key, EVP_PKEY* signer, X509* issuer, const char* cn, const char* san) {
  static long serial = 1;
  Cert c(X509_new());
  X509_set_version(c.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(c.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c.get()), 86400);
  X509_set_pubkey(c.get(), key);
  X509_NAME* name = X509_get_subject_name(c.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509* iss = issuer ? issuer : c.get();
  X509_set_issuer_name(c.get(), X509_get_subject_name(iss));
  if (!issuer) {
    AddExt(c.get(), iss, NID_basic_constraints, "critical,CA:TRUE");
    AddExt(c.get(), iss, NID_key_usage, "critical,keyCertSign,cRLSign");
    AddExt(c.get(), iss, NID_subject_key_identifier, "hash");
  } else {
    AddExt(c.get(), iss, NID_basic_constraints, "critical,CA:FALSE");
    AddExt(c.get(), iss, NID_ext_key_usage, "serverAuth");
    AddExt(c.get(), iss, NID_subject_alt_name, san);
    AddExt(c.get(), iss, NID_authority_key_identifier, "keyid");
  }
  EXPECT_GT(X509_sign(c.get(), signer, EVP_sha256()), 0);
  return c;
}

struct Pki {
  Key ca_key, leaf_key;
  Cert ca, leaf;
  std::string ca_file;
  explicit Pki(const std::string& dir) {
    ca_key.reset(EVP_EC_gen("P-256"));
    leaf_key.reset(EVP_EC_gen("P-256"));
    ca = MakeCert(ca_key.get(), ca_key.get(), nullptr, "ward approvals test CA", nullptr);
    leaf = MakeCert(leaf_key.get(), ca_key.get(), ca.get(), "127.0.0.1", "IP:127.0.0.1");
    ca_file = dir + "/ca.pem";
    FILE* f = std::fopen(ca_file.c_str(), "w");
    PEM_write_X509(f, ca.get());
    std::fclose(f);
  }
};

class TlsServer {
 public:
  TlsServer(asio::io_context& io, const Pki& pki, ServerBehaviour b)
      : ctx_(asio::ssl::context::tls_server),
        acceptor_(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
        behaviour_(std::make_shared<ServerBehaviour>(std::move(b))),
        log_(std::make_shared<std::vector<Received>>()) {
    SSL_CTX_use_certificate(ctx_.native_handle(), pki.leaf.get());
    SSL_CTX_use_PrivateKey(ctx_.native_handle(), pki.leaf_key.get());
    asio::co_spawn(io, Loop(), asio::detached);
  }
  ~TlsServer() {
    asio::error_code ec;
    acceptor_.close(ec);
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  const std::vector<Received>& log() const { return *log_; }
  int handshakes_failed() const { return *failed_; }

 private:
  asio::awaitable<void> Loop() {
    while (true) {
      asio::error_code ec;
      auto sock = co_await acceptor_.async_accept(Await(ec));
      if (ec) co_return;
      auto stream =
          std::make_shared<asio::ssl::stream<asio::ip::tcp::socket>>(std::move(sock), ctx_);
      asio::co_spawn(
          acceptor_.get_executor(),
          [stream, b = behaviour_, log = log_, failed = failed_]() -> asio::awaitable<void> {
            asio::error_code hec;
            co_await stream->async_handshake(asio::ssl::stream_base::server, Await(hec));
            if (hec) {
              ++*failed;
              co_return;
            }
            co_await Serve(*stream, b, log);
            co_await stream->async_shutdown(Await(hec));
          },
          asio::detached);
    }
  }
  asio::ssl::context ctx_;
  asio::ip::tcp::acceptor acceptor_;
  std::shared_ptr<ServerBehaviour> behaviour_;
  std::shared_ptr<std::vector<Received>> log_;
  std::shared_ptr<int> failed_ = std::make_shared<int>(0);
};

// --- fixture -------------------------------------------------------------------------------

class WebhookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    BrokerOptions o;
    o.policy.timeout_ms = 10000;
    broker_ = *ApprovalBroker::Create(io_, o, &events_);
    sock_ = dir_.path() + "/hook.sock";
  }
  WebhookOptions Options(std::string url) {
    WebhookOptions o;
    o.url = std::move(url);
    o.secret = std::string(kSecret);
    o.session = "S1";
    o.timeout = 5s;
    return o;
  }
  // Adds a webhook channel and asks one question through the broker.
  ApprovalDecision AskThrough(WebhookOptions o, ApprovalRequest r = FileRequest("/data/x")) {
    auto ch = WebhookChannel::Create(io_, std::move(o));
    EXPECT_TRUE(ch.ok()) << ch.status().ToString();
    if (!ch.ok()) return {};
    broker_->AddChannel(std::move(ch).value());
    DecisionBox box;
    broker_->Ask(std::move(r), box.Fn());
    EXPECT_TRUE(RunUntil(
        io_, [&] { return box.d.has_value(); }, 20s));
    return box.d.value_or(ApprovalDecision{});
  }
  ApprovalDecision AskUnix(std::function<std::string(const Received&)> reply,
                           std::chrono::milliseconds delay = 0ms) {
    server_ = std::make_unique<UnixServer>(io_, sock_, ServerBehaviour{std::move(reply), delay});
    return AskThrough(Options("unix:" + sock_));
  }

  TempDir dir_;
  asio::io_context io_;
  MemoryEventSink events_;
  std::shared_ptr<ApprovalBroker> broker_;
  std::string sock_;
  std::unique_ptr<UnixServer> server_;
};

TEST_F(WebhookTest, SignedAllowIsAnAllow) {
  ApprovalDecision d = AskUnix([](const Received& r) {
    return SignedReply(r, {{"decision", "allow_session"}});
  });
  EXPECT_TRUE(d.allow) << d.reason;
  EXPECT_EQ(d.channel, "webhook");
  ASSERT_TRUE(d.grant.has_value());
  EXPECT_EQ(d.grant->spec.scope.lifetime, Lifetime::kSession);
  // What the webhook received: a signed POST describing the request.
  ASSERT_EQ(server_->log().size(), 1u);
  const Received& r = server_->log()[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/");
  EXPECT_TRUE(r.signature_ok);
  EXPECT_EQ(r.headers.Get("Content-Type"), "application/json");
  EXPECT_EQ(r.json["type"], "approval.request");
  EXPECT_EQ(r.json["session"], "S1");
  EXPECT_EQ(r.json["request"]["subject"], "/data/x");
  EXPECT_EQ(r.json["request"]["access"], "read");
  EXPECT_EQ(r.json["request"]["pid"], 42);
  EXPECT_EQ(r.json["nonce"].get<std::string>().size(), 32u);
  // Nothing secret reaches the audit trail.
  for (const Event& e : events_.events()) {
    EXPECT_EQ(e.data.dump().find(kSecret), std::string::npos) << e.type;
  }
}

TEST_F(WebhookTest, AllowForSecondsAndDeny) {
  ApprovalDecision d = AskUnix([](const Received& r) {
    return SignedReply(r, {{"decision", "allow_for"}, {"seconds", 600}});
  });
  ASSERT_TRUE(d.allow) << d.reason;
  EXPECT_EQ(d.grant->spec.scope.lifetime, Lifetime::kDuration);
  EXPECT_EQ(d.grant->spec.scope.duration, std::chrono::minutes(10));
  server_.reset();
  ::unlink(sock_.c_str());
  SetUp();  // a fresh broker: the session grant above would answer first
  d = AskUnix([](const Received& r) {
    return SignedReply(r, {{"decision", "deny"}, {"reason", "not on a Friday"}});
  });
  EXPECT_FALSE(d.allow);
  EXPECT_EQ(d.channel, "webhook");
  EXPECT_NE(d.reason.find("not on a Friday"), std::string::npos);
}

struct DenyCase {
  const char* name;
  std::function<std::string(const Received&)> reply;
  const char* reason;  // expected in the decision's reason
};

TEST_F(WebhookTest, EveryBadReplyDenies) {
  const std::vector<DenyCase> cases = {
      {"bad signature",
       [](const Received& r) {
         return SignedReply(r, {{"decision", "allow_once"}}, "another-secret-0123456789");
       },
       "bad signature"},
      {"missing signature",
       [](const Received& r) {
         std::string body = nlohmann::json({{"id", r.json["request"]["id"]},
                                            {"nonce", r.json["nonce"]},
                                            {"decision", "allow_once"}})
                                .dump();
         return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                body;
       },
       "unsigned"},
      {"stale timestamp",
       [](const Received& r) {
         return SignedReply(r, {{"decision", "allow_once"}}, kSecret, Now() - 3600);
       },
       "stale"},
      {"future timestamp",
       [](const Received& r) {
         return SignedReply(r, {{"decision", "allow_once"}}, kSecret, Now() + 3600);
       },
       "stale"},
      {"wrong nonce",
       [](const Received& r) {
         return SignedReply(r, {{"decision", "allow_once"}, {"nonce", "00"}});
       },
       "nonce"},
      {"wrong id",
       [](const Received& r) {
         return SignedReply(r, {{"decision", "allow_once"}, {"id", 999}});
       },
       "(id)"},
      {"unknown decision",
       [](const Received& r) {
         return SignedReply(r, {{"decision", "allow_forever"}});
       },
       "unknown decision"},
      {"allow_for without seconds",
       [](const Received& r) {
         return SignedReply(r, {{"decision", "allow_for"}});
       },
       "seconds"},
      {"http 500",
       [](const Received& r) {
         return SignedReply(r, {{"decision", "allow_once"}}, kSecret, 0, 500);
       },
       "HTTP 500"},
      {"http 302",
       [](const Received& r) {
         return SignedReply(r, {{"decision", "allow_once"}}, kSecret, 0, 302);
       },
       "HTTP 302"},
      {"garbage instead of HTTP",
       [](const Received&) { return std::string("\x16\x03\x01garbage\r\n\r\n"); }, "malformed"},
      {"signed garbage body",
       [](const Received&) {
         std::string body = "{not json", t = std::to_string(Now());
         return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                "\r\nX-Ward-Timestamp: " + t +
                "\r\nX-Ward-Signature: " + WebhookSignature(kSecret, t, body) + "\r\n\r\n" + body;
       },
       "malformed JSON"},
      {"closed without a reply", [](const Received&) { return std::string(); }, "reply head"},
      {"oversized",
       [](const Received& r) {
         return SignedReply(r, {{"decision", "allow_once"}, {"pad", std::string(100000, 'p')}});
       },
       "too long"},
      {"repeated signature header",
       [](const Received& r) {
         std::string out = SignedReply(r, {{"decision", "allow_once"}});
         size_t at = out.find("X-Ward-Signature");
         return out.insert(at, "X-Ward-Signature: sha256=00\r\n");
       },
       "repeated"},
  };
  for (const DenyCase& c : cases) {
    SCOPED_TRACE(c.name);
    SetUp();
    ::unlink(sock_.c_str());
    ApprovalDecision d = AskUnix(c.reply);
    EXPECT_FALSE(d.allow);
    EXPECT_EQ(d.channel, "webhook");
    EXPECT_NE(d.reason.find(c.reason), std::string::npos) << d.reason;
    EXPECT_TRUE(broker_->Grants().empty());
    server_.reset();
  }
}

TEST_F(WebhookTest, ChunkedSignedReplyIsAccepted) {
  ApprovalDecision d = AskUnix([](const Received& r) {
    std::string full = SignedReply(r, {{"decision", "allow_once"}});
    size_t split = full.find("\r\n\r\n");
    std::string head = full.substr(0, split + 2), body = full.substr(split + 4);
    size_t cl = head.find("Content-Length");
    head.erase(cl, head.find("\r\n", cl) + 2 - cl);
    head += "Transfer-Encoding: chunked\r\n\r\n";
    std::string a = body.substr(0, 5), b = body.substr(5);
    char len_a[16], len_b[16];
    std::snprintf(len_a, sizeof len_a, "%zx", a.size());
    std::snprintf(len_b, sizeof len_b, "%zx", b.size());
    return head + len_a + "\r\n" + a + "\r\n" + len_b + "\r\n" + b + "\r\n0\r\n\r\n";
  });
  EXPECT_TRUE(d.allow) << d.reason;
}

TEST_F(WebhookTest, TooLateDenies) {
  WebhookOptions o = Options("unix:" + sock_);
  o.timeout = 200ms;
  server_ = std::make_unique<UnixServer>(
      io_, sock_,
      ServerBehaviour{[](const Received& r) {
                        return SignedReply(r, {{"decision", "allow_once"}});
                      },
                      2s});
  auto start = std::chrono::steady_clock::now();
  ApprovalDecision d = AskThrough(o);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
  EXPECT_FALSE(d.allow);
  EXPECT_NE(d.reason.find("no reply within"), std::string::npos) << d.reason;
}

TEST_F(WebhookTest, TheBrokersTimeoutBoundsTheWebhook) {
  BrokerOptions bo;
  bo.policy.timeout_ms = 150;
  broker_ = *ApprovalBroker::Create(io_, bo, &events_);
  server_ = std::make_unique<UnixServer>(
      io_, sock_,
      ServerBehaviour{[](const Received& r) {
                        return SignedReply(r, {{"decision", "allow_once"}});
                      },
                      2s});
  ApprovalDecision d = AskThrough(Options("unix:" + sock_));
  EXPECT_FALSE(d.allow);
  EXPECT_EQ(server_->log()[0].json["timeout_ms"], 150);
}

TEST_F(WebhookTest, NoServerDenies) {
  ApprovalDecision d = AskThrough(Options("unix:" + dir_.path() + "/nobody.sock"));
  EXPECT_FALSE(d.allow);
  EXPECT_EQ(d.channel, "webhook");
  EXPECT_NE(d.reason.find("connecting"), std::string::npos) << d.reason;
}

TEST_F(WebhookTest, AnswerElsewhereWithdrawsTheCall) {
  server_ = std::make_unique<UnixServer>(
      io_, sock_,
      ServerBehaviour{[](const Received& r) {
                        return SignedReply(r, {{"decision", "allow_once"}});
                      },
                      1s});
  auto ch = WebhookChannel::Create(io_, Options("unix:" + sock_));
  ASSERT_TRUE(ch.ok());
  WebhookChannel* raw = ch->get();
  broker_->AddChannel(std::move(ch).value());
  DecisionBox box;
  uint64_t id = broker_->Ask(FileRequest("/w"), box.Fn());
  ASSERT_TRUE(RunUntil(io_, [&] { return server_->log().size() == 1; }));
  ASSERT_EQ(raw->in_flight(), 1u);
  ASSERT_TRUE(broker_->Answer(id, ChannelAnswer{false}, "socket").ok());
  ASSERT_TRUE(RunUntil(io_, [&] { return box.d.has_value(); }));
  EXPECT_EQ(box.d->channel, "socket");
  RunUntil(
      io_, [] { return false; }, 1200ms);  // the server's late reply changes nothing
  EXPECT_EQ(raw->in_flight(), 0u);
  EXPECT_EQ(testing::EventsOfType(events_, "approval.answer").size(), 1u);
}

TEST_F(WebhookTest, HttpsWithATrustedCa) {
  Pki pki(dir_.path());
  TlsServer server(io_, pki,
                   {[](const Received& r) {
                      return SignedReply(r, {{"decision", "allow_once"}});
                    },
                    0ms});
  WebhookOptions o = Options("https://127.0.0.1:" + std::to_string(server.port()) + "/hook?x=1");
  o.ca_files = {pki.ca_file};
  o.system_trust = false;
  ApprovalDecision d = AskThrough(o, HostRequest("api.example.com", 443));
  EXPECT_TRUE(d.allow) << d.reason;
  ASSERT_EQ(server.log().size(), 1u);
  EXPECT_EQ(server.log()[0].target, "/hook?x=1");
  EXPECT_EQ(server.log()[0].headers.Get("Host"), "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(server.log()[0].json["request"]["port"], 443);
}

// The host's trust store (net::LoadHostTrust, shared with the credential broker) is loaded
// alongside a CA file: the context is made and the test CA still vouches for the server.
TEST_F(WebhookTest, HttpsWithTheHostsTrustAndACaFile) {
  Pki pki(dir_.path());
  TlsServer server(io_, pki,
                   {[](const Received& r) {
                      return SignedReply(r, {{"decision", "allow_once"}});
                    },
                    0ms});
  WebhookOptions o = Options("https://127.0.0.1:" + std::to_string(server.port()) + "/");
  o.ca_files = {pki.ca_file};
  ASSERT_TRUE(o.system_trust);
  ApprovalDecision d = AskThrough(o);
  EXPECT_TRUE(d.allow) << d.reason;
  EXPECT_EQ(server.log().size(), 1u);
}

TEST_F(WebhookTest, HttpsWithAnUntrustedCertificateDenies) {
  Pki pki(dir_.path());
  TlsServer server(io_, pki,
                   {[](const Received& r) {
                      return SignedReply(r, {{"decision", "allow_once"}});
                    },
                    0ms});
  WebhookOptions o = Options("https://127.0.0.1:" + std::to_string(server.port()) + "/");
  o.system_trust = false;  // and no CA file: nothing vouches for the test CA
  ApprovalDecision d = AskThrough(o);
  EXPECT_FALSE(d.allow);
  EXPECT_NE(d.reason.find("TLS"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("certificate"), std::string::npos) << d.reason;
  EXPECT_TRUE(server.log().empty());  // the question never reached it
}

TEST_F(WebhookTest, HttpsWithANameMismatchDenies) {
  Pki pki(dir_.path());  // the certificate names 127.0.0.1 only
  TlsServer server(io_, pki,
                   {[](const Received& r) {
                      return SignedReply(r, {{"decision", "allow_once"}});
                    },
                    0ms});
  WebhookOptions o = Options("https://localhost:" + std::to_string(server.port()) + "/");
  o.ca_files = {pki.ca_file};
  o.system_trust = false;
  ApprovalDecision d = AskThrough(o);
  EXPECT_FALSE(d.allow);
  EXPECT_NE(d.reason.find("TLS"), std::string::npos) << d.reason;
  EXPECT_TRUE(server.log().empty());
}

// --- pure pieces -----------------------------------------------------------------------------

TEST(WebhookPure, SignatureKnownAnswer) {
  // printf '%s' '1700000000.{}' | openssl dgst -sha256 -hmac 0123456789abcdef
  EXPECT_EQ(WebhookSignature("0123456789abcdef", "1700000000", "{}"),
            "sha256=e4f8e2ecae2295b2ddb2f0b5584c8275e226c0ebe9b3b819e70156bb67122e3e");
  std::string good = WebhookSignature(kSecret, "1700000000", "body");
  EXPECT_TRUE(CheckWebhookSignature(kSecret, "1700000000", "body", good));
  EXPECT_FALSE(CheckWebhookSignature(kSecret, "1700000001", "body", good));
  EXPECT_FALSE(CheckWebhookSignature(kSecret, "1700000000", "body ", good));
  EXPECT_FALSE(CheckWebhookSignature(kSecret, "1700000000", "body", good.substr(0, 20)));
  std::string upper = good;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_FALSE(CheckWebhookSignature(kSecret, "1700000000", "body", upper));
  EXPECT_FALSE(CheckWebhookSignature(kSecret, "1700000000", "body", ""));
}

TEST(WebhookPure, Urls) {
  auto u = ParseWebhookUrl("https://Hooks.Example.com/approve?team=a");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_FALSE(u->is_unix);
  EXPECT_EQ(u->host, "hooks.example.com");
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->target, "/approve?team=a");
  EXPECT_EQ(u->host_header, "hooks.example.com");
  u = ParseWebhookUrl("https://[::1]:8443");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 8443);
  EXPECT_EQ(u->target, "/");
  EXPECT_EQ(u->host_header, "[::1]:8443");
  u = ParseWebhookUrl("unix:/run/user/1000/approver.sock");
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->is_unix);
  EXPECT_EQ(u->socket_path, "/run/user/1000/approver.sock");
  for (const char* bad :
       {"http://example.com/", "ftp://x", "https://", "https://:443/", "https://a:0/",
        "https://a:65536/", "https://a:12x/", "https://user:pw@example.com/", "unix:relative",
        "unix:", "https://exa mple.com/", "https://example.com/\r\nX: y", "https://[::1/",
        "example.com"}) {
    EXPECT_FALSE(ParseWebhookUrl(bad).ok()) << bad;
  }
  EXPECT_FALSE(ParseWebhookUrl("unix:/" + std::string(200, 'a')).ok());
}

TEST(WebhookPure, Replies) {
  nlohmann::json ok = {{"id", 5}, {"nonce", "abc"}, {"decision", "allow_once"}};
  auto a = ParseWebhookReply(ok, 5, "abc");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->allow);
  EXPECT_EQ(a->scope.lifetime, Lifetime::kOnce);
  EXPECT_FALSE(ParseWebhookReply(ok, 6, "abc").ok());
  EXPECT_FALSE(ParseWebhookReply(ok, 5, "abd").ok());
  EXPECT_FALSE(ParseWebhookReply(nlohmann::json::array(), 5, "abc").ok());
  nlohmann::json f = ok;
  f["decision"] = "allow_for";
  for (auto s : {nlohmann::json(0), nlohmann::json(-5), nlohmann::json("60"),
                 nlohmann::json(3000000), nlohmann::json(1.5)}) {
    f["seconds"] = s;
    EXPECT_FALSE(ParseWebhookReply(f, 5, "abc").ok()) << s.dump();
  }
  f["seconds"] = 60;
  EXPECT_EQ(ParseWebhookReply(f, 5, "abc")->scope.duration, std::chrono::seconds(60));
  nlohmann::json d = ok;
  d["decision"] = "deny";
  EXPECT_FALSE(ParseWebhookReply(d, 5, "abc")->allow);
  d["decision"] = true;
  EXPECT_FALSE(ParseWebhookReply(d, 5, "abc").ok());
}

TEST(WebhookPure, Secrets) {
  ::setenv("WARD_TEST_HOOK_SECRET", "0123456789abcdef0123", 1);
  EXPECT_EQ(*LoadWebhookSecret("env:WARD_TEST_HOOK_SECRET"), "0123456789abcdef0123");
  ::setenv("WARD_TEST_HOOK_SECRET", "short", 1);
  EXPECT_FALSE(LoadWebhookSecret("env:WARD_TEST_HOOK_SECRET").ok());
  ::unsetenv("WARD_TEST_HOOK_SECRET");
  EXPECT_EQ(LoadWebhookSecret("env:WARD_TEST_HOOK_SECRET").status().code(), Code::kNotFound);
  EXPECT_FALSE(LoadWebhookSecret("WARD_TEST_HOOK_SECRET").ok());
  TempDir t;
  std::string f = t.path() + "/secret";
  int fd = ::open(f.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_EQ(::write(fd, "0123456789abcdef0123\n", 21), 21);
  ::close(fd);
  EXPECT_EQ(*LoadWebhookSecret("file:" + f), "0123456789abcdef0123");
  ASSERT_EQ(::chmod(f.c_str(), 0644), 0);
  EXPECT_EQ(LoadWebhookSecret("file:" + f).status().code(), Code::kPermissionDenied);
  ASSERT_EQ(::chmod(f.c_str(), 0600), 0);
  std::string link = t.path() + "/link";
  ASSERT_EQ(::symlink(f.c_str(), link.c_str()), 0);
  EXPECT_FALSE(LoadWebhookSecret("file:" + link).ok());  // not followed
  EXPECT_FALSE(LoadWebhookSecret("file:" + t.path()).ok());
  EXPECT_FALSE(LoadWebhookSecret("file:" + t.path() + "/missing").ok());
}

TEST(WebhookPure, CreateRefusesBadConfigurations) {
  asio::io_context io;
  WebhookOptions o;
  o.url = "unix:/tmp/x.sock";
  o.secret = "short";
  EXPECT_FALSE(WebhookChannel::Create(io, o).ok());
  o.secret = std::string(kSecret);
  EXPECT_TRUE(WebhookChannel::Create(io, o).ok());
  o.ca_files = {"/nonexistent/ca.pem"};
  EXPECT_FALSE(WebhookChannel::Create(io, o).ok());  // a CA file on a unix URL
  o.url = "https://example.com/";
  EXPECT_FALSE(WebhookChannel::Create(io, o).ok());  // the CA file does not exist
  o.url = "http://example.com/";
  o.ca_files.clear();
  EXPECT_FALSE(WebhookChannel::Create(io, o).ok());
}

// Without OpenSSL a webhook cannot sign or speak TLS: creating one is refused, naming the
// library.
TEST(WebhookPure, CreateWithoutOpenSslIsRefusedNamingTheLibrary) {
  test::ExpectRefusedWithoutOpenSsl(
      [] {
        asio::io_context io;
        WebhookOptions o;
        o.url = "unix:/tmp/x.sock";
        o.secret = std::string(kSecret);
        return WebhookChannel::Create(io, o).status();
      },
      "the approval webhook");
}

}  // namespace
}  // namespace ward::supervisor
