// Transparent capture: a client that ignores the proxy variables (a plain Python socket client)
// reaches an allowed name through the supervisor, by the synthetic address the DNS stub gave
// it, and nothing else. Local servers on the host's loopback stand in for the world, allowed by
// address as the other egress tests do, and named with --resolve.
#include <signal.h>

#include <chrono>

#include "audit/sessions.h"
#include "harness.h"
#include "local_http.h"
#include "net/idna.h"
#include "net/tls_authority.h"
#include "tls_origin.h"

namespace ward::test {
namespace {

// The client: `resolve`, `raw` (an HTTP/1.0 request over a plain TCP connection), `addr` (the
// same to an address literal), `tls SNI CAFILE` (a request over TLS naming SNI), and `quic
// TCP_PORT` (a datagram first, as a QUIC client does, then TCP on refusal). It never looks at
// a proxy variable.
constexpr const char* kClient = R"PY(
import socket, ssl, sys, time
mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])

def request(s):
    s.sendall(b"GET /t HTTP/1.0\r\nHost: " + host.encode() + b"\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    body = data.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")
    print("body", body)

if mode == "addr":
    try:
        request(socket.create_connection((host, port), timeout=10))
    except OSError as e:
        print("failed", type(e).__name__)
    sys.exit(0)
try:
    infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
except socket.gaierror:
    print("resolve-failed")
    sys.exit(0)
print("addrs", " ".join(sorted({i[4][0] for i in infos})))
if mode == "raw":
    try:
        request(socket.create_connection((host, port), timeout=10))
    except OSError as e:
        print("failed", type(e).__name__)
elif mode == "tls":
    ctx = ssl.create_default_context(cafile=sys.argv[5])
    ctx.check_hostname = False
    try:
        raw = socket.create_connection((host, port), timeout=10)
        request(ctx.wrap_socket(raw, server_hostname=sys.argv[4]))
    except (OSError, ssl.SSLError) as e:
        print("failed", type(e).__name__)
elif mode == "quic":
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(5)
    u.connect((host, port))
    start = time.monotonic()
    try:
        u.send(b"\xc0\x00\x00\x00\x01quic-initial")
        u.recv(100)
        print("udp answered")
    except ConnectionRefusedError:
        print("udp refused within %d s" % int(time.monotonic() - start))
    except socket.timeout:
        print("udp timed out")
    request(socket.create_connection((host, int(sys.argv[4])), timeout=10))
)PY";

class TransparentEgressTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    signal(SIGPIPE, SIG_IGN);
    state_ = root_->path() + "/state";
    WriteFile(ws_ + "/client.py", kClient);
  }
  RunOptions WithState() {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = state_;
    o.timeout_s = 60;
    return o;
  }
  // `name` allowed on `port` and resolved to the host's loopback, which is allowed there too.
  static std::vector<std::string> Allow(const std::string& name, int port) {
    return {"-n", name + ":" + std::to_string(port), "-n", "127.0.0.1:" + std::to_string(port),
            "--resolve", name + ":127.0.0.1"};
  }
  RunResult Client(const std::string& args, const std::vector<std::string>& opts) {
    return Shell("python3 client.py " + args, opts, WithState());
  }
  std::string Events() {
    std::string all;
    for (const auto& s : audit::ListSessions(state_ + "/ward")) {
      all += ReadFile(s.dir + "/events.jsonl");
    }
    return all;
  }
  std::string state_;
};

TEST_F(TransparentEgressTest, APlainClientReachesAnAllowedNameAndNoOther) {
  LocalHttp server("reached-by-name");
  const std::string port = std::to_string(server.port());
  RunResult r = Client("raw app.test " + port, Allow("app.test", server.port()));
  EXPECT_EQ(r.status, 0) << r.err;
  // The name's address is synthetic: the real one (127.0.0.1) never reaches the sandbox.
  EXPECT_NE(r.out.find("addrs 198.18."), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("127.0.0.1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("body reached-by-name"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(server.hits(), 1);
  const std::string events = Events();
  EXPECT_NE(events.find("\"via\":\"transparent\""), std::string::npos) << events;
  // Another name: no address at all, and nothing reached.
  r = Client("raw other.test " + port, Allow("app.test", server.port()));
  EXPECT_NE(r.out.find("resolve-failed"), std::string::npos) << r.out;
  EXPECT_EQ(server.hits(), 1);
}

TEST_F(TransparentEgressTest, AnAddressInTheRangeThatNoNameWasGivenIsRefused) {
  LocalHttp server("must-not-be-reached");
  const std::string port = std::to_string(server.port());
  RunResult r = Client("addr 198.18.200.7 " + port, Allow("app.test", server.port()));
  EXPECT_EQ(r.out.find("body must-not-be-reached"), std::string::npos) << r.out;
  EXPECT_EQ(server.hits(), 0);
  EXPECT_NE(Events().find("unknown_address"), std::string::npos);
  // Control: the same run's name reaches the server.
  r = Client("raw app.test " + port, Allow("app.test", server.port()));
  EXPECT_NE(r.out.find("body must-not-be-reached"), std::string::npos) << r.out << r.err;
}

TEST_F(TransparentEgressTest, ANameReachesOnlyThePortsItIsAllowedOn) {
  LocalHttp allowed("allowed-port"), other("other-port");
  std::vector<std::string> opts = Allow("app.test", allowed.port());
  opts.insert(opts.end(), {"-n", "127.0.0.1:" + std::to_string(other.port())});
  // Refused by Landlock's connect rule where the kernel has it, by the proxy's rules otherwise.
  RunResult r = Client("raw app.test " + std::to_string(other.port()), opts);
  EXPECT_EQ(r.out.find("body other-port"), std::string::npos) << r.out;
  EXPECT_EQ(other.hits(), 0);
  r = Client("raw app.test " + std::to_string(allowed.port()), opts);
  EXPECT_NE(r.out.find("body allowed-port"), std::string::npos) << r.out << r.err;
}

TEST_F(TransparentEgressTest, ATlsServerNameMustNameTheHost) {
  auto ca = net::TlsAuthority::Create({.common_name = "ward transparent test CA"});
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  const std::string ca_file = root_->path() + "/ca.pem";
  WriteFile(ca_file, (*ca)->ca_pem());
  chmod(root_->path().c_str(), 0755);
  chmod(ca_file.c_str(), 0644);
  auto ctx = (*ca)->ServerContext(*net::ParseHost("api.test"));
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  Origin origin(*ctx);
  const std::string port = std::to_string(origin.port());
  std::vector<std::string> opts = Allow("api.test", origin.port());
  opts.insert(opts.end(), {"-r", ca_file});
  RunResult r = Client("tls api.test " + port + " api.test " + ca_file, opts);
  EXPECT_NE(r.out.find("body upstream-ok GET /t"), std::string::npos) << r.out << r.err;
  r = Client("tls api.test " + port + " evil.test " + ca_file, opts);
  EXPECT_NE(r.out.find("failed"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("upstream-ok"), std::string::npos) << r.out;
  EXPECT_NE(Events().find("sni_mismatch"), std::string::npos);
}

TEST_F(TransparentEgressTest, UdpIsRefusedAtOnceSoAQuicClientFallsBackToTcp) {
  LocalHttp server("after-fallback");
  std::vector<std::string> opts = Allow("app.test", server.port());
  opts.insert(opts.end(), {"-n", "app.test"});  // 443 too, where a QUIC client tries first
  RunResult r = Client("quic app.test 443 " + std::to_string(server.port()), opts);
  EXPECT_NE(r.out.find("udp refused within 0 s"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("body after-fallback"), std::string::npos) << r.out << r.err;
}

TEST_F(TransparentEgressTest, TransparentFalseLeavesTheProxyVariablesOnly) {
  LocalHttp server("not-captured");
  WriteFile(ws_ + "/.ward.toml", "[network]\ntransparent = false\n");
  RunResult r = Client("raw app.test " + std::to_string(server.port()),
                       Allow("app.test", server.port()));
  // The stub answers as without capture, and the connect has no way out.
  EXPECT_NE(r.out.find("addrs 127.0.0.1"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("failed"), std::string::npos) << r.out;
  EXPECT_EQ(server.hits(), 0);
  // The proxy still reaches it.
  r = Shell("curl -sS --max-time 10 http://app.test:" + std::to_string(server.port()) + "/",
            Allow("app.test", server.port()), WithState());
  EXPECT_EQ(r.out, "not-captured") << r.err;
  // A workspace file may only turn it off.
  WriteFile(ws_ + "/.ward.toml", "[network]\ntransparent = true\n");
  r = Client("resolve app.test 80", {"-n", "app.test"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("network.transparent"), std::string::npos) << r.err;
}

TEST_F(TransparentEgressTest, ExplainSaysWhetherCaptureIsOn) {
  RunResult r = RunWard({"explain", "-n", "app.test", "--", "true"}, WithState());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("transparent by name"), std::string::npos) << r.out;
  WriteFile(ws_ + "/.ward.toml", "[network]\ntransparent = false\n");
  r = RunWard({"explain", "-n", "app.test", "--", "true"}, WithState());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("transparent by name"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ward::test
