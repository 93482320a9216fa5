// A credential's real secret does not come back to the sandbox in disguise. The credential's
// host here is an HTTPS echo on the host's loopback that reflects every request (head and body)
// in a form the path asks for: gzip (curl asks for compression), deflate, base64 at the three
// alignments, hex, percent-escaped, or re-encoded as Basic credentials; or with an encoding the
// broker cannot read (br). curl inside `ward run`, through interception and through the route,
// gets none of the secret's forms; decoded, each answer holds the phantom where the echo saw the
// secret (so the forms were really there), and a non-secret marker sent along comes back
// unchanged. The br answer is refused (502) and audited.
#include <openssl/ssl.h>
#include <unistd.h>
#include <zlib.h>

#include <random>

#include "audit/sessions.h"
#include "harness.h"
#include "net/broker/credential_broker.h"
#include "net/broker/masker.h"
#include "net/http_parser.h"
#include "net/tls_authority.h"
#include "tls_origin.h"

namespace ward::test {
namespace {

std::string Gzip(std::string_view data) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, MAX_WBITS + 16, 8, Z_DEFAULT_STRATEGY);
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

std::string PercentAll(std::string_view s) {
  std::string out;
  for (char c : s) {
    char b[4];
    snprintf(b, sizeof b, "%%%02X", static_cast<unsigned char>(c));
    out += b;
  }
  return out;
}

// The reflection in the form /MODE asks for, as a whole response.
std::string EchoResponse(const std::string& target, const std::string& head) {
  const std::string mode = target.substr(target.rfind('/') + 1);
  std::string ctype = "Content-Type: text/plain\r\n";
  std::string body = head, extra;
  if (mode == "gzip") {
    body = Gzip(head);
    extra = "Content-Encoding: gzip\r\n";
  } else if (mode == "chunked-gzip") {
    std::string g = Gzip(head), chunks;
    for (size_t i = 0; i < g.size(); i += 11) chunks += net::EncodeChunk(g.substr(i, 11));
    return "HTTP/1.1 200 OK\r\n" + ctype +
           "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
           chunks + std::string(net::kLastChunk);
  } else if (mode.starts_with("base64-")) {
    body = net::Base64EncodeWith(std::string(static_cast<size_t>(mode.back() - '0'), 'p') + head,
                                 mode == "base64-1" ? 1 : 0, true);
  } else if (mode == "hex") {
    body = net::HexEncode(head, false);
  } else if (mode == "percent") {
    body = PercentAll(head);
  } else if (mode == "basic") {
    // The bearer token re-encoded as the credentials of Basic auth.
    size_t at = head.find("Bearer ");
    std::string token =
        at == std::string::npos ? "" : head.substr(at + 7, head.find("\r\n", at) - at - 7);
    body = "Basic " + net::Base64EncodeWith("user:" + token, 0, true) + "\n";
    extra = "WWW-Authenticate: Basic " + net::Base64EncodeWith(":" + token, 0, true) + "\r\n";
  } else if (mode == "br") {
    body = "\x1b\x05\x00not really brotli";
    extra = "Content-Encoding: br\r\n";
  }
  return "HTTP/1.1 200 OK\r\n" + ctype + extra + "Content-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// EchoResponse for the target on the request's first line: the origin's answer.
std::string Echo(const std::string& head) {
  const std::string line = head.substr(0, head.find("\r\n"));
  const std::string target = line.substr(line.find(' ') + 1);
  return EchoResponse(target.substr(0, target.find(' ')), head);
}

std::string RandomHex(size_t n) {
  std::random_device rd;
  std::string s;
  for (size_t i = 0; i < n; ++i) s += "0123456789abcdef"[rd() % 16];
  return s;
}

bool Contains(const std::string& hay, const std::string& needle) {
  return !needle.empty() && hay.find(needle) != std::string::npos;
}

// What curl printed for one mode (between "==MODE==" markers): the last response's body.
std::string BodyOf(const std::string& out, const std::string& mode) {
  size_t at = out.find("==" + mode + "==\n");
  if (at == std::string::npos) return "";
  size_t end = out.find("\n==end==", at);
  std::string part = out.substr(at, end == std::string::npos ? std::string::npos : end - at);
  // The last status line (after the proxy's "200 Connection established", if any); the body
  // follows its head. Reflected request heads have "HTTP/1.1" at the end of a line only.
  size_t status = std::string::npos;
  for (size_t p = part.find("HTTP/1.1 "); p != std::string::npos;
       p = part.find("HTTP/1.1 ", p + 1)) {
    if ((p == 0 || part[p - 1] == '\n') && p + 9 < part.size() && isdigit(part[p + 9])) status = p;
  }
  size_t body = status == std::string::npos ? status : part.find("\r\n\r\n", status);
  return body == std::string::npos ? "" : part.substr(body + 4);
}

class CredentialDisguise : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    state_ = root_->path() + "/state";
    secret_ = "sk-test-" + RandomHex(40);
    marker_ = "marker-" + RandomHex(24);
    auto ca = net::TlsAuthority::Create({.common_name = "ward disguise test upstream CA"});
    ASSERT_TRUE(ca.ok()) << ca.status().ToString();
    ca_ = std::move(ca).value();
    ca_file_ = root_->path() + "/upstream-ca.pem";
    WriteFile(ca_file_, ca_->ca_pem());
    auto ctx = ca_->ServerContext(*net::ParseHost("api.test"));
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    echo_ = std::make_unique<Origin>(*ctx, Echo);
    profile_ = root_->path() + "/creds.toml";
    WriteFile(profile_,
              "extends = \"default\"\n[credentials.echo]\nfrom = \"env:WARD_TEST_ECHO_SECRET\"\n"
              "hosts = [\"api.test:" +
                  std::to_string(echo_->port()) +
                  "\"]\nenv = \"TEST_API_KEY\"\nroute = \"echo\"\n"
                  "route_env = { TEST_API_BASE_URL = \"{route_url}\" }\nenabled = true\n");
  }

  RunResult Run(const std::string& script) {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = state_;
    o.env["WARD_TEST_ECHO_SECRET"] = secret_;
    o.timeout_s = 180;
    return Shell(script,
                 {"-p", profile_, "--resolve", "api.test:127.0.0.1", "--upstream-ca", ca_file_,
                  "-n", "127.0.0.1:" + std::to_string(echo_->port())},
                 o);
  }

  // curl for each mode: MODE via interception (and route/MODE via the route), asking for
  // compression like browsers and most HTTP libraries do.
  std::string Script(const std::vector<std::string>& modes) {
    std::string s;
    for (const std::string& m : modes) {
      for (const std::string& via : {std::string("intercept"), std::string("route")}) {
        std::string url = via == "intercept"
                              ? "https://api.test:" + std::to_string(echo_->port()) + "/" + m
                              : "\"$TEST_API_BASE_URL/" + m + "\"";
        s += "echo '==" + via + "-" + m +
             "=='\n"
             "curl -sS -i --compressed --max-time 20 -H \"Authorization: Bearer $TEST_API_KEY\" "
             "-H 'X-Marker: " +
             marker_ + "' " + url + "\necho; echo '==end=='\n";
      }
    }
    return s + "printf 'phantom=%s\\n' \"$TEST_API_KEY\"\n";
  }

  std::string Phantom(const std::string& out) {
    size_t at = out.find("phantom=");
    return at == std::string::npos ? "" : out.substr(at + 8, out.find('\n', at) - at - 8);
  }

  // Not the secret, nor any form of it the broker knows; checked on everything curl printed.
  void ExpectNoSecret(const std::string& out, const std::string& phantom) {
    EXPECT_FALSE(Contains(out, secret_)) << out;
    for (const net::SecretForm& f : net::SecretForms(secret_, phantom)) {
      EXPECT_FALSE(Contains(out, f.text)) << f.form << " came back:\n" << out;
    }
  }

  std::string AuditText() {
    std::string all;
    for (const auto& s : audit::ListSessions(state_ + "/ward"))
      all += ReadFile(s.dir + "/events.jsonl");
    return all;
  }

  std::string state_, secret_, marker_, ca_file_, profile_;
  std::unique_ptr<net::TlsAuthority> ca_;
  std::unique_ptr<Origin> echo_;
};

TEST_F(CredentialDisguise, CompressedEchoesComeBackDecodedAndMasked) {
  RunResult r = Run(Script({"plain", "gzip", "chunked-gzip"}));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::string phantom = Phantom(r.out);
  ASSERT_EQ(phantom.size(), secret_.size()) << r.out;
  ExpectNoSecret(r.out + r.err, phantom);
  for (const char* mode : {"plain", "gzip", "chunked-gzip"}) {
    for (const char* via : {"intercept-", "route-"}) {
      SCOPED_TRACE(std::string(via) + mode);
      std::string body = BodyOf(r.out, std::string(via) + mode);
      EXPECT_TRUE(Contains(body, "Bearer " + phantom)) << body;  // the secret was echoed
      EXPECT_TRUE(Contains(body, "X-Marker: " + marker_)) << body;
    }
  }
  // The echo received the real secret each time, and was asked for no compression.
  ASSERT_EQ(echo_->heads().size(), 6u);
  for (const std::string& h : echo_->heads()) {
    EXPECT_TRUE(Contains(h, "Bearer " + secret_)) << h;
    EXPECT_TRUE(Contains(h, "Accept-Encoding: identity")) << h;
  }
  EXPECT_FALSE(Contains(AuditText(), secret_));
}

TEST_F(CredentialDisguise, EncodedEchoesComeBackWithThePhantomInside) {
  RunResult r = Run(Script({"base64-0", "base64-1", "base64-2", "hex", "percent", "basic"}));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::string phantom = Phantom(r.out);
  ASSERT_EQ(phantom.size(), secret_.size()) << r.out;
  ExpectNoSecret(r.out + r.err, phantom);
  for (const char* via : {"intercept-", "route-"}) {
    SCOPED_TRACE(via);
    const std::string v = via;
    for (const char* m : {"base64-0", "base64-1", "base64-2"}) {
      std::string body = BodyOf(r.out, v + m);
      while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
      std::optional<std::string> decoded = net::Base64Decode(body);
      ASSERT_TRUE(decoded.has_value()) << m << ": " << body;
      EXPECT_TRUE(Contains(*decoded, "Bearer " + phantom)) << m << ": " << *decoded;
      EXPECT_TRUE(Contains(*decoded, "X-Marker: " + marker_)) << m;
    }
    EXPECT_TRUE(Contains(BodyOf(r.out, v + "hex"), net::HexEncode("Bearer " + phantom, false)));
    EXPECT_TRUE(Contains(BodyOf(r.out, v + "hex"), net::HexEncode("X-Marker: " + marker_, false)));
    EXPECT_TRUE(Contains(BodyOf(r.out, v + "percent"), PercentAll("Bearer " + phantom)));
    EXPECT_TRUE(Contains(BodyOf(r.out, v + "basic"),
                         "Basic " + net::Base64EncodeWith("user:" + phantom, 0, true)))
        << BodyOf(r.out, v + "basic");
    EXPECT_TRUE(Contains(
        r.out, "WWW-Authenticate: Basic " + net::Base64EncodeWith(":" + phantom, 0, true)));
  }
  for (const std::string& h : echo_->heads()) EXPECT_TRUE(Contains(h, "Bearer " + secret_)) << h;
}

TEST_F(CredentialDisguise, AnEncodingTheBrokerCannotReadIsRefusedAndAudited) {
  RunResult r =
      Run("curl -sS -o /dev/null -w 'br:%{http_code}\\n' --max-time 20 -H \"Authorization: Bearer "
          "$TEST_API_KEY\" https://api.test:" +
          std::to_string(echo_->port()) +
          "/br\n"
          "curl -sS -o /dev/null -w 'plain:%{http_code}\\n' --max-time 20 -H \"Authorization: "
          "Bearer $TEST_API_KEY\" https://api.test:" +
          std::to_string(echo_->port()) + "/plain\n");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "br:502")) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "plain:200")) << "control: the host answers otherwise";
  std::string log = AuditText();
  EXPECT_TRUE(Contains(log, "credential.response_refused")) << log;
  EXPECT_TRUE(Contains(log, "content_coding")) << log;
  EXPECT_FALSE(Contains(log, secret_));
}

}  // namespace
}  // namespace ward::test
