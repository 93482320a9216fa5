// A credential host that echoes its request returns the real secret the broker sent: as is,
// compressed (clients ask for gzip), base64'd at any offset, hex, percent-escaped, or inside a
// re-encoded Basic header. An echoing HTTPS upstream reflects each request (head and body) in
// one of those forms; through the broker (a route, and real clients through interception) the
// client must get none of the secret's forms, and must get the phantom in the secret's place
// with everything else intact (the positive control: a non-secret marker value passes
// unchanged in the same form). Encodings the broker cannot read, corrupt bodies and
// decompression bombs are withheld, never passed unscanned, and recorded.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "credentials_test_util.h"
#include "net/broker/credential_broker.h"
#include "net/broker/masker.h"
#include "net/broker/setup.h"
#include "proxy_test_util.h"

namespace ward::net {
namespace {

using policy::CredentialInject;
using testing::ConnectTo;
using testing::EventsText;
using testing::HaveProgram;
using testing::Hosts;
using testing::HttpsUpstream;
using testing::Ip;
using testing::MakeRules;
using testing::ProxyHarness;
using testing::RecvUntil;
using testing::RunWithEnv;
using testing::SendAll;
using testing::TempDir;
using testing::TestPki;
using testing::UpstreamRequest;

constexpr char kSecret[] = "sk-ant-api03-REALsecretREALsecretREALsecretREALsecret-0123456789";
constexpr char kMarker[] = "marker-NOTsecretNOTsecretNOTsecret-0123456789";

// ------------------------------------------------------------------ encodings for the upstream

std::string Deflate(std::string_view data, int window_bits, int level = Z_BEST_SPEED) {
  z_stream z{};
  deflateInit2(&z, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}
std::string Gzip(std::string_view data) { return Deflate(data, MAX_WBITS + 16); }

std::string Percent(std::string_view s) {
  std::string out;
  for (char c : s) {
    char b[4];
    snprintf(b, sizeof b, "%%%02X", static_cast<unsigned char>(c));
    out += b;
  }
  return out;
}

// ------------------------------------------------------------------ decoders for the client

std::string Unhex(std::string_view s) {
  std::string out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(s.substr(i, 2)), nullptr, 16));
  }
  return out;
}

// The reflection: what the upstream received, as one text.
std::string Reflection(const UpstreamRequest& r) { return r.head + r.body; }

std::string Response(const std::string& extra_headers, const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string Chunked(const std::string& extra_headers, const std::string& body, size_t piece) {
  std::string out = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + extra_headers +
                    "Transfer-Encoding: chunked\r\n\r\n";
  for (size_t i = 0; i < body.size(); i += piece) out += EncodeChunk(body.substr(i, piece));
  return out + std::string(kLastChunk);
}

// The echo: /echo/MODE reflects the request in that form. Every response also echoes the
// x-api-key value (the secret, as the upstream received it) in a header.
std::string Echo(const UpstreamRequest& r) {
  const std::string mode = r.target.substr(r.target.rfind('/') + 1);
  const std::string text = Reflection(r);
  const std::string key(r.headers.Get("x-api-key").value_or(""));
  const std::string h = "X-Echo-Key: " + key + "\r\n";
  if (mode == "plain") return Response(h, text);
  if (mode == "gzip") return Response(h + "Content-Encoding: gzip\r\n", Gzip(text));
  if (mode == "deflate") return Response(h + "Content-Encoding: deflate\r\n", Deflate(text, 15));
  if (mode == "deflate-raw") {
    return Response(h + "Content-Encoding: deflate\r\n", Deflate(text, -15));
  }
  if (mode == "chunked-gzip") return Chunked(h + "Content-Encoding: gzip\r\n", Gzip(text), 7);
  if (mode == "gzip-twice") {
    return Response(h + "Content-Encoding: gzip\r\nContent-Encoding: gzip\r\n", Gzip(Gzip(text)));
  }
  if (mode == "until-close-gzip") {
    return "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Encoding: gzip\r\n" + h + "\r\n" +
           Gzip(text);
  }
  if (mode.starts_with("base64url-") || mode.starts_with("base64-")) {
    const int alphabet = mode.starts_with("base64url-") ? 1 : 0;
    const size_t pad = static_cast<size_t>(mode.back() - '0');  // shifts the secret's alignment
    std::string blob = Base64EncodeWith(std::string(pad, 'p') + text, alphabet, alphabet == 0);
    return Response("X-Echo-Blob: " + blob + "\r\n", blob);
  }
  if (mode == "hex")
    return Response("X-Echo-Hex: " + HexEncode(key, false) + "\r\n", HexEncode(text, false));
  if (mode == "HEX") return Response("", HexEncode(text, true));
  if (mode == "percent")
    return Response("Location: /next?k=" + Percent(key) + "\r\n", Percent(text));
  if (mode == "basic") {
    // The credentials re-encoded as clients send them: user:secret, :secret and secret:.
    std::string body;
    for (const std::string& pair : {"user:" + key, ":" + key, key + ":", "ab:" + key + ":cd"}) {
      body += "Basic " + Base64EncodeWith(pair, 0, true) + "\n";
    }
    return Response("WWW-Authenticate: Basic " + Base64EncodeWith("user:" + key, 0, true) + "\r\n",
                    body);
  }
  if (mode == "br") return Response("Content-Encoding: br\r\n", "\x1b\x03\x00secretish");
  if (mode == "zstd") return Response("Content-Encoding: zstd\r\n", text);
  if (mode == "bomb") {
    std::string zeros(64 << 20, '\0');
    return Chunked("Content-Encoding: gzip\r\n", Deflate(zeros, MAX_WBITS + 16, 9), 16384);
  }
  if (mode == "corrupt") {
    std::string g = Gzip(text);
    for (size_t i = 20; i < g.size(); i += 3) g[i] = static_cast<char>(g[i] ^ 0x5a);
    return Response("Content-Encoding: gzip\r\n", g);
  }
  return Response("", "unknown mode " + mode);
}

// ------------------------------------------------------------------ what the client got

struct Received {
  std::string raw;   // every byte, head and body
  std::string head;  // up to the empty line
  std::string body;  // de-chunked
  int status = 0;
  bool complete = false;  // a whole body (the last chunk, or all of Content-Length)
};

Received Receive(int fd) {
  Received r;
  r.raw = RecvUntil(
      fd, [](const std::string&) { return false; }, 10000);  // to EOF
  size_t end = r.raw.find("\r\n\r\n");
  if (end == std::string::npos) return r;
  r.head = r.raw.substr(0, end + 4);
  r.status = std::atoi(r.raw.substr(9, 3).c_str());
  std::string rest = r.raw.substr(end + 4);
  if (r.head.find("Transfer-Encoding: chunked") != std::string::npos) {
    ChunkedDecoder d;
    HttpParse p = d.Feed(rest, &r.body);
    r.complete = p.done();
  } else {
    r.body = rest;
    size_t cl = r.head.find("Content-Length: ");
    r.complete = cl == std::string::npos || std::stoul(r.head.substr(cl + 16)) == r.body.size();
  }
  return r;
}

class CredentialsEchoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_ = std::make_unique<HttpsUpstream>(pki_.ServerFor("api.test"), Echo);
    CredentialSpec a;
    a.name = "anthropic";
    a.secret = kSecret;
    a.hosts = Hosts({"api.test:" + std::to_string(api_->port())});
    a.inject = {CredentialInject::Kind::kHeader, "x-api-key", "{secret}"};
    a.route = "anthropic";
    BrokerOptions o;
    o.upstream.extra_ca_files = {pki_.ca_file()};
    auto b = CredentialBroker::Create({a}, o);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    broker_ = std::move(b).value();
    phantom_ = broker_->credentials()[0].phantom;
    ASSERT_EQ(phantom_.size(), std::string(kSecret).size());
    ProxyOptions po;
    po.credentials = broker_.get();
    proxy_ = std::make_unique<ProxyHarness>(
        MakeRules({"api.test:*", "127.0.0.1:*"}), po,
        std::map<std::string, std::vector<IpAddress>>{{"api.test", {Ip("127.0.0.1")}}});
  }

  void TearDown() override {
    std::string text = EventsText(proxy_->events());
    EXPECT_EQ(text.find(kSecret), std::string::npos) << text;
    proxy_->StopAndJoin();
  }

  // A route request for /echo/MODE, as a client that accepts every compression would send it.
  Received Get(const std::string& mode, int minor = 1) {
    UniqueFd fd = ConnectTo(proxy_->port());
    SendAll(fd.get(),
            "GET /anthropic/echo/" + mode + " HTTP/1." + std::to_string(minor) +
                "\r\nHost: 127.0.0.1\r\nx-api-key: " + phantom_ + "\r\nX-Marker: " + kMarker +
                "\r\nAccept-Encoding: gzip, deflate, br, zstd\r\nConnection: close\r\n\r\n");
    return Receive(fd.get());
  }

  // None of the secret's forms in anything the client got; and, independently of how the
  // broker derives them, not in the literal text nor in the base64, hex or percent decodings.
  void ExpectNoSecret(const Received& r) {
    EXPECT_EQ(r.raw.find(kSecret), std::string::npos) << r.raw;
    for (const SecretForm& f : SecretForms(kSecret, phantom_)) {
      EXPECT_EQ(r.raw.find(f.text), std::string::npos) << f.form << " in\n" << r.raw;
    }
  }

  TestPki pki_;
  std::unique_ptr<HttpsUpstream> api_;
  std::unique_ptr<CredentialBroker> broker_;
  std::unique_ptr<ProxyHarness> proxy_;
  std::string phantom_;
};

// The reflected request as the client sees it: the phantom where the upstream saw the secret,
// the marker where it was.
void ExpectReflection(const std::string& text, const std::string& phantom) {
  EXPECT_NE(text.find(std::string("x-api-key: ") + phantom), std::string::npos) << text;
  EXPECT_NE(text.find(std::string("X-Marker: ") + kMarker), std::string::npos) << text;
  EXPECT_EQ(text.find(kSecret), std::string::npos) << text;
}

TEST_F(CredentialsEchoTest, PlainEchoIsMasked) {
  Received r = Get("plain");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_TRUE(r.complete);
  ExpectNoSecret(r);
  ExpectReflection(r.body, phantom_);
  EXPECT_NE(r.head.find("X-Echo-Key: " + phantom_), std::string::npos) << r.head;
  // The upstream was asked for an unencoded answer, and did get the real secret.
  auto reqs = api_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].headers.Get("x-api-key"), kSecret);
  EXPECT_EQ(reqs[0].headers.Get("Accept-Encoding"), "identity");
  EXPECT_EQ(reqs[0].headers.Count("Accept-Encoding"), 1u);
}

TEST_F(CredentialsEchoTest, CompressedEchoesAreDecodedThenMasked) {
  for (const char* mode :
       {"gzip", "deflate", "deflate-raw", "chunked-gzip", "gzip-twice", "until-close-gzip"}) {
    SCOPED_TRACE(mode);
    Received r = Get(mode);
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_TRUE(r.complete) << r.raw;
    ExpectNoSecret(r);
    // The client gets the body unencoded, framed anew.
    EXPECT_EQ(r.head.find("Content-Encoding"), std::string::npos) << r.head;
    if (std::string(mode) != "until-close-gzip") {
      EXPECT_NE(r.head.find("Transfer-Encoding: chunked"), std::string::npos) << r.head;
    }
    ExpectReflection(r.body, phantom_);
  }
  EXPECT_TRUE(proxy_->events("credential.response_refused").empty());
}

TEST_F(CredentialsEchoTest, HttpOneZeroClientsGetTheDecodedBodyUntilClose) {
  Received r = Get("gzip", /*minor=*/0);
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.head.find("Transfer-Encoding"), std::string::npos) << r.head;
  EXPECT_NE(r.head.find("Connection: close"), std::string::npos) << r.head;
  ExpectNoSecret(r);
  ExpectReflection(r.body, phantom_);
}

TEST_F(CredentialsEchoTest, Base64AtEveryAlignmentIsMaskedToThePhantom) {
  for (const char* mode :
       {"base64-0", "base64-1", "base64-2", "base64url-0", "base64url-1", "base64url-2"}) {
    SCOPED_TRACE(mode);
    Received r = Get(mode);
    ASSERT_EQ(r.status, 200) << r.raw;
    ExpectNoSecret(r);
    // Decoded, the blob is the reflection with the phantom in the secret's place: the
    // characters that straddle the secret's edges were rewritten, not only its middle.
    std::optional<std::string> decoded = Base64Decode(r.body);
    ASSERT_TRUE(decoded.has_value()) << r.body;
    const size_t pad = static_cast<size_t>(mode[std::string(mode).size() - 1] - '0');
    EXPECT_EQ(decoded->substr(0, pad), std::string(pad, 'p'));
    ExpectReflection(*decoded, phantom_);
    EXPECT_NE(r.head.find("X-Echo-Blob: " + r.body), std::string::npos) << "head and body agree";
  }
}

TEST_F(CredentialsEchoTest, HexAndPercentEchoesAreMasked) {
  Received r = Get("hex");
  ASSERT_EQ(r.status, 200) << r.raw;
  ExpectNoSecret(r);
  ExpectReflection(Unhex(r.body), phantom_);
  EXPECT_NE(r.head.find("X-Echo-Hex: " + HexEncode(phantom_, false)), std::string::npos);

  r = Get("HEX");
  ExpectNoSecret(r);
  ExpectReflection(Unhex(r.body), phantom_);

  r = Get("percent");
  ExpectNoSecret(r);
  ExpectReflection(PercentDecode(r.body), phantom_);
  EXPECT_NE(r.head.find("Location: /next?k=" + Percent(phantom_)), std::string::npos) << r.head;
}

TEST_F(CredentialsEchoTest, ReencodedBasicCredentialsAreMasked) {
  Received r = Get("basic");
  ASSERT_EQ(r.status, 200) << r.raw;
  ExpectNoSecret(r);
  std::vector<std::string> want = {"user:" + phantom_, ":" + phantom_, phantom_ + ":",
                                   "ab:" + phantom_ + ":cd"};
  size_t pos = 0;
  for (const std::string& w : want) {
    size_t at = r.body.find("Basic ", pos);
    ASSERT_NE(at, std::string::npos) << r.body;
    size_t end = r.body.find('\n', at);
    EXPECT_EQ(Base64Decode(r.body.substr(at + 6, end - at - 6)), w);
    pos = end;
  }
  size_t h = r.head.find("WWW-Authenticate: Basic ");
  ASSERT_NE(h, std::string::npos);
  std::string value = r.head.substr(h + 24, r.head.find("\r\n", h) - h - 24);
  EXPECT_EQ(Base64Decode(value), "user:" + phantom_);
}

TEST_F(CredentialsEchoTest, EncodingsTheBrokerCannotReadAreRefused) {
  for (const char* mode : {"br", "zstd"}) {
    SCOPED_TRACE(mode);
    Received r = Get(mode);
    EXPECT_EQ(r.status, 502) << r.raw;
    EXPECT_NE(r.body.find("cannot be checked for the credential"), std::string::npos) << r.body;
    ExpectNoSecret(r);
  }
  ASSERT_TRUE(proxy_->WaitForEvents("credential.response_refused", 2));
  auto events = proxy_->events("credential.response_refused");
  EXPECT_EQ(events[0].data["reason"], "content_coding");
  EXPECT_NE(events[0].data["detail"].get<std::string>().find("br"), std::string::npos);
  EXPECT_EQ(events[0].data["via"], "route");
  // Control: the same proxy still serves a readable answer.
  EXPECT_EQ(Get("plain").status, 200);
}

TEST_F(CredentialsEchoTest, CorruptBodiesAndBombsAreWithheldAndRecorded) {
  Received bomb = Get("bomb");
  EXPECT_EQ(bomb.status, 200);
  EXPECT_FALSE(bomb.complete) << "the client must see the body cut off";
  EXPECT_LT(bomb.body.size(), size_t{64} << 20);
  Received corrupt = Get("corrupt");
  EXPECT_FALSE(corrupt.complete);
  ExpectNoSecret(corrupt);
  ASSERT_TRUE(proxy_->WaitForEvents("credential.response_refused", 2));
  auto events = proxy_->events("credential.response_refused");
  EXPECT_EQ(events[0].data["reason"], "decode_limit") << EventsText(events);
  EXPECT_EQ(events[1].data["reason"], "decode_error") << EventsText(events);
}

// Real clients through interception, asking for compression as they do by default.
TEST_F(CredentialsEchoTest, CurlWithCompressionThroughInterception) {
  if (!HaveProgram("curl")) GTEST_SKIP() << "no curl";
  TempDir dir;
  auto bundle = MergedCaBundle(broker_->ca_pem(), FindSystemCaBundle());
  ASSERT_TRUE(bundle.ok());
  std::string bundle_file = dir.Write("bundle.pem", *bundle);
  std::string proxy = "http://127.0.0.1:" + std::to_string(proxy_->port());
  for (const char* mode : {"gzip", "chunked-gzip", "base64-1", "basic"}) {
    SCOPED_TRACE(mode);
    auto r = RunWithEnv(
        {"curl", "-sS", "--compressed", "-i", "--max-time", "20", "--proxy", proxy, "--cacert",
         bundle_file, "-H", "x-api-key: " + phantom_, "-H", std::string("X-Marker: ") + kMarker,
         "https://api.test:" + std::to_string(api_->port()) + "/echo/" + mode},
        {});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find(kSecret), std::string::npos) << r.out;
    for (const SecretForm& f : SecretForms(kSecret, phantom_)) {
      EXPECT_EQ(r.out.find(f.text), std::string::npos) << f.form;
    }
    if (std::string(mode).find("gzip") != std::string::npos) {
      EXPECT_NE(r.out.find(std::string("X-Marker: ") + kMarker), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("x-api-key: " + phantom_), std::string::npos) << r.out;
    }
  }
  for (const UpstreamRequest& req : api_->requests()) {
    EXPECT_EQ(req.headers.Get("x-api-key"), kSecret);
    EXPECT_EQ(req.headers.Get("Accept-Encoding"), "identity");
  }
}

}  // namespace
}  // namespace ward::net
