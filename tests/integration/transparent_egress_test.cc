// Transparent capture: a client that ignores the proxy variables (a plain Python socket client)
// reaches an allowed name through the supervisor, by the synthetic address the DNS stub gave
// it, and nothing else. Local servers on the host's loopback stand in for the world, allowed by
// address as the other egress tests do, and named with --resolve.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

// A small SSH server (paramiko, Debian's python3-paramiko) on the host's loopback: accepts any
// user without authentication, runs the git command each session asks for (logged to
// LOG) in the repository's directory, and prints its port.
constexpr const char* kSshServer = R"PY(
import paramiko, shlex, socket, subprocess, sys, threading
log = open(sys.argv[1], "a", buffering=1)
key = paramiko.ECDSAKey.generate()

class Server(paramiko.ServerInterface):
    def __init__(self):
        self.command, self.ready = None, threading.Event()
    def get_allowed_auths(self, username):
        return "none"
    def check_auth_none(self, username):
        return paramiko.AUTH_SUCCESSFUL
    def check_channel_request(self, kind, chanid):
        return paramiko.OPEN_SUCCEEDED
    def check_channel_exec_request(self, channel, command):
        self.command = command.decode()
        self.ready.set()
        return True

def serve(conn):
    t = paramiko.Transport(conn)
    t.add_server_key(key)
    srv = Server()
    t.start_server(server=srv)
    chan = t.accept(20)
    if chan is None or not srv.ready.wait(20):
        return
    log.write(srv.command + "\n")
    argv = shlex.split(srv.command)
    if argv[0] not in ("git-upload-pack", "git-receive-pack"):
        chan.send_exit_status(1); chan.close(); return
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    def up():
        while True:
            d = chan.recv(65536)
            if not d:
                break
            p.stdin.write(d); p.stdin.flush()
        p.stdin.close()
    threading.Thread(target=up, daemon=True).start()
    while True:
        d = p.stdout.read1(65536)
        if not d:
            break
        chan.sendall(d)
    chan.send_exit_status(p.wait())
    chan.close()

s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
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

TEST_F(TransparentEgressTest, GitOverSshReachesAnAllowedNameByItsNameRule) {
  if (!PathExists("/usr/bin/python3") ||
      RunProgram({"/usr/bin/python3", "-c", "import paramiko"}).status != 0) {
    GTEST_SKIP() << "python3-paramiko is not installed (scripts/deps.sh installs it)";
  }
  // A repository with one commit, served over SSH.
  const std::string srv = root_->path() + "/srv";
  MakeDirs(srv);
  RunResult r = RunProgram(
      {"/bin/sh", "-c",
       "set -e; cd " + srv +
           "; git init -q --bare repo.git; git init -q src; cd src;"
           " git -c user.email=t@t -c user.name=t commit -q --allow-empty -m over-ssh;"
           " git push -q ../repo.git HEAD:refs/heads/main; git -C ../repo.git symbolic-ref HEAD"
           " refs/heads/main"});
  ASSERT_EQ(r.status, 0) << r.err;
  WriteFile(srv + "/server.py", kSshServer);
  const PrintedPort served =
      StartServerPrintingItsPort({"/usr/bin/python3", srv + "/server.py", srv + "/log"});
  const pid_t pid = served.pid;
  ASSERT_GT(served.port, 0);
  const int port = served.port;
  const std::string ssh =
      "GIT_SSH_COMMAND='ssh -F /dev/null -o StrictHostKeyChecking=no "
      "-o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 -o BatchMode=yes' ";
  const std::string url = "ssh://git@repo.test:" + std::to_string(port) + srv + "/repo.git";
  r = Shell(ssh + "git clone -q " + url + " clone 2>&1 && git -C clone log --format=%s",
            Allow("repo.test", port), WithState());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("over-ssh"), std::string::npos) << r.out << r.err;
  EXPECT_NE(ReadFile(srv + "/log").find("git-upload-pack"), std::string::npos);
  // Another name: no address, no connection.
  const std::string log_before = ReadFile(srv + "/log");
  r = Shell(ssh + "git clone -q ssh://git@other.test:" + std::to_string(port) + srv +
                "/repo.git clone2 2>&1",
            Allow("repo.test", port), WithState());
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_EQ(ReadFile(srv + "/log"), log_before);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

TEST_F(TransparentEgressTest, OnlyCapturedConnectionsAreTracked) {
  // The namespace's nat rule turns connection tracking on; the sandbox's other packets must not
  // fill the kernel's shared table. Control: a captured connection is tracked while it lasts.
  LocalHttp server("tracked");
  const std::string script =
      "python3 -c \"import socket\n"
      "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
      "for p in range(20000, 20300): s.sendto(b'x', ('127.0.0.1', p))\n"
      "c = socket.create_connection(('app.test', " + std::to_string(server.port()) + "))\n"
      "print(open('/proc/sys/net/netfilter/nf_conntrack_count').read().strip())\"";
  RunResult r = Shell(script, Allow("app.test", server.port()), WithState());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
}

TEST_F(TransparentEgressTest, ExplainSaysWhetherCaptureIsOn) {
  RunResult r = RunWard({"explain", "-n", "app.test", "--", "true"}, WithState());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("transparent by name"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("method and path rules"), std::string::npos) << r.out;
  r = RunWard({"explain", "-n", "GET app.test", "--", "true"}, WithState());
  EXPECT_NE(r.out.find("1 method and path rules"), std::string::npos) << r.out;
  WriteFile(ws_ + "/.ward.toml", "[network]\ntransparent = false\n");
  r = RunWard({"explain", "-n", "app.test", "--", "true"}, WithState());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("transparent by name"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ward::test
