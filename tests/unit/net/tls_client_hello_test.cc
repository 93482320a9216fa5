#include "net/tls_client_hello.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include <string>
#include <vector>

namespace ward::net {
namespace {

void U8(std::string& s, size_t v) { s += static_cast<char>(v & 0xff); }
void U16(std::string& s, size_t v) {
  U8(s, v >> 8);
  U8(s, v);
}
void U24(std::string& s, size_t v) {
  U8(s, v >> 16);
  U16(s, v);
}

std::string Ext(uint16_t type, const std::string& data) {
  std::string e;
  U16(e, type);
  U16(e, data.size());
  return e + data;
}

std::string SniExt(const std::vector<std::pair<int, std::string>>& names) {
  std::string list;
  for (const auto& [type, name] : names) {
    U8(list, type);
    U16(list, name.size());
    list += name;
  }
  std::string data;
  U16(data, list.size());
  return Ext(0, data + list);
}

std::string AlpnExt(const std::vector<std::string>& protos) {
  std::string list;
  for (const auto& p : protos) {
    U8(list, p.size());
    list += p;
  }
  std::string data;
  U16(data, list.size());
  return Ext(16, data + list);
}

// A ClientHello handshake message (type, length, body) with the given extensions.
std::string HelloMessage(const std::string& extensions, bool with_extensions = true) {
  std::string body;
  U16(body, 0x0303);
  body += std::string(32, 'r');
  U8(body, 32);
  body += std::string(32, 's');
  U16(body, 4);
  U16(body, 0x1301);
  U16(body, 0xc02f);
  U8(body, 1);
  U8(body, 0);
  if (with_extensions) {
    U16(body, extensions.size());
    body += extensions;
  }
  std::string msg;
  U8(msg, 1);
  U24(msg, body.size());
  return msg + body;
}

// Wraps handshake bytes into records of at most `chunk` bytes.
std::string Records(const std::string& handshake, size_t chunk = 16384) {
  std::string out;
  for (size_t i = 0; i < handshake.size(); i += chunk) {
    std::string part = handshake.substr(i, chunk);
    U8(out, 0x16);
    U16(out, 0x0301);
    U16(out, part.size());
    out += part;
  }
  return out;
}

std::string StandardHello() {
  return Records(HelloMessage(SniExt({{0, "Example.COM"}}) + AlpnExt({"h2", "http/1.1"}) +
                              Ext(43, std::string("\x02\x03\x04", 3))));
}

TEST(ClientHelloTest, ParsesSniAndAlpn) {
  ClientHelloParse r = ParseClientHello(StandardHello());
  ASSERT_EQ(r.kind, ClientHelloParse::Kind::kHello) << r.reason;
  ASSERT_TRUE(r.hello.sni.has_value());
  EXPECT_EQ(r.hello.sni->name, "example.com");
  EXPECT_EQ(r.hello.alpn, (std::vector<std::string>{"h2", "http/1.1"}));
  EXPECT_EQ(r.hello.legacy_version, 0x0303);
  EXPECT_FALSE(r.hello.encrypted_client_hello);
}

TEST(ClientHelloTest, EveryPrefixNeedsMore) {
  std::string hello = StandardHello();
  for (size_t n = 0; n < hello.size(); ++n) {
    ClientHelloParse r = ParseClientHello(hello.substr(0, n));
    EXPECT_EQ(r.kind, ClientHelloParse::Kind::kNeedMore) << n << ": " << r.reason;
  }
  // Bytes after the ClientHello (the rest of the flight) do not matter.
  EXPECT_EQ(ParseClientHello(hello + "\x17\x03\x03garbage").kind, ClientHelloParse::Kind::kHello);
}

TEST(ClientHelloTest, SplitOverRecords) {
  std::string msg = HelloMessage(SniExt({{0, "split.example"}}));
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{50}}) {
    std::string wire = Records(msg, chunk);
    if (msg.size() / chunk + 1 > kMaxClientHelloRecords) {
      EXPECT_EQ(ParseClientHello(wire).kind, ClientHelloParse::Kind::kMalformed) << chunk;
      continue;
    }
    ClientHelloParse r = ParseClientHello(wire);
    ASSERT_EQ(r.kind, ClientHelloParse::Kind::kHello) << chunk << ": " << r.reason;
    EXPECT_EQ(r.hello.sni->name, "split.example");
    for (size_t n = 0; n < wire.size(); n += 7) {
      EXPECT_EQ(ParseClientHello(wire.substr(0, n)).kind, ClientHelloParse::Kind::kNeedMore);
    }
  }
}

TEST(ClientHelloTest, NoSniNoExtensionsEch) {
  ClientHelloParse r = ParseClientHello(Records(HelloMessage("", false)));
  ASSERT_EQ(r.kind, ClientHelloParse::Kind::kHello) << r.reason;
  EXPECT_FALSE(r.hello.sni.has_value());
  EXPECT_TRUE(r.hello.alpn.empty());
  r = ParseClientHello(Records(HelloMessage(AlpnExt({"http/1.1"}))));
  ASSERT_EQ(r.kind, ClientHelloParse::Kind::kHello) << r.reason;
  EXPECT_FALSE(r.hello.sni.has_value());
  r = ParseClientHello(
      Records(HelloMessage(SniExt({{0, "public.example"}}) + Ext(0xfe0d, "opaque"))));
  ASSERT_EQ(r.kind, ClientHelloParse::Kind::kHello) << r.reason;
  EXPECT_TRUE(r.hello.encrypted_client_hello);
}

TEST(ClientHelloTest, NotTls) {
  for (const std::string& s :
       {std::string("GET / HTTP/1.1\r\n"), std::string("SSH-2.0-OpenSSH\r\n"),
        std::string("\x80\x2e\x01\x03\x01", 5),  // SSLv2-compatible hello
        std::string("\x16\x02", 2), std::string("\x16\x03\x09", 3), std::string("\x17\x03\x03")}) {
    ClientHelloParse r = ParseClientHello(s);
    EXPECT_EQ(r.kind, ClientHelloParse::Kind::kNotTls) << s;
    EXPECT_FALSE(r.reason.empty());
  }
}

TEST(ClientHelloTest, Malformed) {
  std::string good_exts = SniExt({{0, "a.example"}});
  std::string msg = HelloMessage(good_exts);
  std::vector<std::pair<const char*, std::string>> cases = {
      {"two names", Records(HelloMessage(SniExt({{0, "a.example"}, {0, "b.example"}})))},
      {"non-host_name type", Records(HelloMessage(SniExt({{1, "a.example"}})))},
      {"empty name", Records(HelloMessage(SniExt({{0, ""}})))},
      {"empty server_name ext", Records(HelloMessage(Ext(0, "")))},
      {"bad name", Records(HelloMessage(SniExt({{0, "a..example"}})))},
      {"name with NUL", Records(HelloMessage(SniExt({{0, std::string("a\0.example", 10)}})))},
      {"IP literal", Records(HelloMessage(SniExt({{0, "127.0.0.1"}})))},
      {"disguised IP", Records(HelloMessage(SniExt({{0, "0x7f.1"}})))},
      {"duplicate ext", Records(HelloMessage(good_exts + good_exts))},
      {"empty ALPN name", Records(HelloMessage(AlpnExt({"h2", ""})))},
      {"empty ALPN list", Records(HelloMessage(Ext(16, std::string("\0\0", 2))))},
      {"truncated ext", Records(HelloMessage(good_exts + std::string("\x00\x05\x00\x09xx", 6)))},
      {"not ClientHello", Records("\x02" + msg.substr(1))},
      {"empty record", std::string("\x16\x03\x01\x00\x00", 5) + Records(msg)},
      {"oversized record", std::string("\x16\x03\x01\x40\x01", 5)},
      {"interleaved CCS", Records(msg.substr(0, 10)) + std::string("\x14\x03\x03\x00\x01\x01", 6)},
      {"bad 2nd record version", Records(msg.substr(0, 10)) + std::string("\x16\x04\x03", 3)},
  };
  for (const auto& [what, bytes] : cases) {
    ClientHelloParse r = ParseClientHello(bytes);
    EXPECT_EQ(r.kind, ClientHelloParse::Kind::kMalformed) << what << ": " << r.reason;
  }
  // Message length larger than our 16 KiB bound: refused as soon as the header shows it.
  std::string huge;
  U8(huge, 1);
  U24(huge, 20000);
  EXPECT_EQ(ParseClientHello(Records(huge)).kind, ClientHelloParse::Kind::kMalformed);
  // Inner lengths that disagree with the message length.
  std::string body_short = msg;
  body_short[3] = static_cast<char>(body_short[3] - 1);
  EXPECT_EQ(ParseClientHello(Records(body_short)).kind, ClientHelloParse::Kind::kMalformed);
}

TEST(ClientHelloTest, BoundedPeek) {
  // A ClientHello dribbled one byte per record hits the record cap, never an endless wait.
  std::string msg = HelloMessage(SniExt({{0, "a.example"}}));
  std::string wire = Records(msg, 1);
  ASSERT_GT(wire.size(), 5 * kMaxClientHelloRecords);
  EXPECT_EQ(ParseClientHello(wire).kind, ClientHelloParse::Kind::kMalformed);
  EXPECT_LE(kMaxClientHelloPeek, 16 * 1024 + 5 * kMaxClientHelloRecords);
}

// A ClientHello produced by OpenSSL itself (memory BIOs, no network).
std::string OpenSslHello(const char* sni, const std::vector<std::string>& alpn) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  BIO* rbio = BIO_new(BIO_s_mem());
  BIO* wbio = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, rbio, wbio);
  SSL_set_connect_state(ssl);
  if (sni) SSL_set_tlsext_host_name(ssl, sni);
  std::string wire_alpn;
  for (const auto& p : alpn) {
    wire_alpn += static_cast<char>(p.size());
    wire_alpn += p;
  }
  if (!alpn.empty()) {
    SSL_set_alpn_protos(ssl, reinterpret_cast<const unsigned char*>(wire_alpn.data()),
                        static_cast<unsigned>(wire_alpn.size()));
  }
  SSL_do_handshake(ssl);  // wants to read: the ClientHello is in wbio
  char* data = nullptr;
  long n = BIO_get_mem_data(wbio, &data);
  std::string out(data, static_cast<size_t>(n));
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return out;
}

TEST(ClientHelloTest, RealOpenSslClientHello) {
  std::string hello = OpenSslHello("Registry.Example.org", {"h2", "http/1.1"});
  ASSERT_GT(hello.size(), 100u);
  ClientHelloParse r = ParseClientHello(hello);
  ASSERT_EQ(r.kind, ClientHelloParse::Kind::kHello) << r.reason;
  ASSERT_TRUE(r.hello.sni.has_value());
  EXPECT_EQ(r.hello.sni->name, "registry.example.org");
  EXPECT_EQ(r.hello.alpn, (std::vector<std::string>{"h2", "http/1.1"}));
  for (size_t n = 0; n < hello.size(); ++n) {
    ASSERT_EQ(ParseClientHello(std::string_view(hello).substr(0, n)).kind,
              ClientHelloParse::Kind::kNeedMore)
        << n;
  }
  ClientHelloParse no_sni = ParseClientHello(OpenSslHello(nullptr, {}));
  ASSERT_EQ(no_sni.kind, ClientHelloParse::Kind::kHello) << no_sni.reason;
  EXPECT_FALSE(no_sni.hello.sni.has_value());
}

}  // namespace
}  // namespace ward::net
