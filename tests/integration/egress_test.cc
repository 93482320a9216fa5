// Egress through the supervisor's proxy and DNS stub: the only way out of the sandbox.
// The allowed real host is the npm registry this machine is configured with (derived at run
// time, never written here); local servers on the host's loopback stand in for everything else.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <random>
#include <thread>

#include "audit/sessions.h"
#include "harness.h"
#include "local_http.h"

namespace ward::test {
namespace {

std::string RegistryHost() {
  RunResult r = RunProgram({"/bin/sh", "-c", "npm config get registry 2>/dev/null"});
  std::string url = r.out;
  size_t s = url.find("://");
  if (s == std::string::npos) return "";
  url = url.substr(s + 3);
  size_t end = url.find_first_of("/:\n");
  return url.substr(0, end);
}

class EgressTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    state_ = root_->path() + "/state";
  }
  RunOptions WithState() {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = state_;
    o.timeout_s = 120;
    return o;
  }
  std::string state_;
};

TEST_F(EgressTest, CurlReachesAnAllowedHostOnly) {
  std::string host = RegistryHost();
  if (host.empty()) GTEST_SKIP() << "npm has no registry configured";
  RunResult r = Shell("curl -sS -o /dev/null -w '%{http_code}' --max-time 30 https://" + host + "/",
                      {"-n", host}, WithState());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out, "000");
  EXPECT_NE(r.out, "403");
  // Not allowed: the proxy answers 403 naming the rule.
  r = Shell("curl -sS -o /dev/null -w '%{http_code}' --max-time 10 https://example.com/",
            {"-n", host}, WithState());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("403"), std::string::npos) << r.err;
  // Around the proxy: the name still reaches it, by transparent capture (the same rules).
  r = Shell("curl -sS --noproxy '*' --max-time 30 -o /dev/null -w '%{http_code}' https://" + host +
                "/",
            {"-n", host}, WithState());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out, "000");
  // Without capture: no route, no TCP rights.
  WriteFile(ws_ + "/.ward.toml", "[network]\ntransparent = false\n");
  r = Shell("curl -sS --noproxy '*' --max-time 5 -o /dev/null https://" + host + "/", {"-n", host},
            WithState());
  EXPECT_NE(r.status, 0);
}

TEST_F(EgressTest, NpmInstallWorksWithOnlyTheRegistryAllowed) {
  std::string host = RegistryHost();
  if (host.empty()) GTEST_SKIP() << "npm has no registry configured";
  WriteFile(ws_ + "/package.json", "{\"name\":\"t\",\"version\":\"1.0.0\"}");
  RunResult r = Shell("npm install --no-audit --no-fund --loglevel=error is-number@7.0.0 2>&1",
                      {"-n", host}, WithState());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(PathExists(ws_ + "/node_modules/is-number/package.json")) << r.out;
  // Without the host: refused.
  std::string ws2 = root_->path() + "/ws2";
  MakeDirs(ws2);
  WriteFile(ws2 + "/package.json", "{\"name\":\"t\",\"version\":\"1.0.0\"}");
  RunOptions o = WithState();
  o.cwd = ws2;
  r = RunWard({"run", "--", "npm", "install", "--no-audit", "--no-fund", "--fetch-retries=0",
               "--loglevel=error", "is-number@7.0.0"},
              o);
  EXPECT_NE(r.status, 0);
  EXPECT_FALSE(PathExists(ws2 + "/node_modules/is-number"));
}

TEST_F(EgressTest, HostLoopbackNeedsAnAddressRule) {
  LocalHttp server("local-dev-server");
  std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/";
  std::string any_host = "localhost.example";  // any allowed name, to switch the proxy on
  RunResult r = Shell("curl -sSf --max-time 10 " + url, {"-n", any_host}, WithState());
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(server.hits(), 0);
  r = Shell("curl -sSf --max-time 10 " + url, {"-n", "127.0.0.1:" + std::to_string(server.port())},
            WithState());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "local-dev-server");
  EXPECT_EQ(server.hits(), 1);
}

TEST_F(EgressTest, DnsAnswersAllowedNamesOnly) {
  std::string host = RegistryHost();
  if (host.empty()) GTEST_SKIP() << "npm has no registry configured";
  std::mt19937_64 rng(std::random_device{}());
  std::string canary = "canary-" + std::to_string(rng()) + ".exfil.example";
  RunResult r =
      Shell("getent hosts " + host + " && ! getent hosts " + canary + " && cat /etc/resolv.conf",
            {"-n", host}, WithState());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("127.0.0.1"), std::string::npos) << r.out;
  // The canary shows up only as a dns.deny event, never as a lookup.
  auto sessions = audit::ListSessions(state_ + "/ward");
  ASSERT_FALSE(sessions.empty());
  std::string log = ReadFile(sessions[0].dir + "/events.jsonl");
  EXPECT_NE(log.find("\"dns.deny\""), std::string::npos);
  EXPECT_NE(log.find(canary), std::string::npos);
}

TEST_F(EgressTest, GitCloneOverHttpsThroughTheProxy) {
  // A local HTTPS git server (dumb protocol) on the host's loopback, allowed by address.
  std::string srv = root_->path() + "/srv";
  MakeDirs(srv);
  std::string setup =
      "set -e; cd " + srv +
      "; git init -q --bare repo.git; git init -q src; cd src;"
      " git -c user.email=t@t -c user.name=t commit -q --allow-empty -m first;"
      " git push -q ../repo.git HEAD:refs/heads/main; cd ../repo.git;"
      " git symbolic-ref HEAD refs/heads/main; git update-server-info; cd ..;"
      " openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1"
      " -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout key.pem -out cert.pem"
      " 2>/dev/null";
  RunResult r = RunProgram({"/bin/sh", "-c", setup});
  ASSERT_EQ(r.status, 0) << r.err;
  // The server prints its port, then serves until killed.
  std::string server =
      "import http.server, ssl, os, sys\n"
      "os.chdir(sys.argv[1])\n"
      "h = http.server.ThreadingHTTPServer(('127.0.0.1', 0), "
      "http.server.SimpleHTTPRequestHandler)\n"
      "c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain('cert.pem', 'key.pem')\n"
      "h.socket = c.wrap_socket(h.socket, server_side=True)\n"
      "print(h.server_address[1], flush=True)\n"
      "h.serve_forever()\n";
  WriteFile(srv + "/serve.py", server);
  const PrintedPort served =
      StartServerPrintingItsPort({"/usr/bin/python3", srv + "/serve.py", srv});
  const pid_t pid = served.pid;
  ASSERT_GT(served.port, 0);
  std::string port = std::to_string(served.port);
  std::string url = "https://127.0.0.1:" + port + "/repo.git";
  r = Shell("git -c http.sslCAInfo=" + srv + "/cert.pem clone -q " + url +
                " clone && "
                "git -C clone log --format=%s",
            {"-n", "127.0.0.1:" + port, "-r", srv}, WithState());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "first\n");
  // Without the address rule the same clone is refused.
  r = Shell("git -c http.sslCAInfo=" + srv + "/cert.pem clone -q " + url + " clone2",
            {"-n", "other.example", "-r", srv}, WithState());
  EXPECT_NE(r.status, 0);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

TEST_F(EgressTest, DirectRoutesStayClosed) {
  std::string host = "allowed.example";
  EXPECT_EQ(Probe({"connect", "192.0.2.1", "8443"}, {"-n", host}).out, TcpConnectRefusal());
  EXPECT_EQ(Probe({"udp", "192.0.2.53", "53"}, {"-n", host}).out, "err ENETUNREACH sendto\n");
  EXPECT_EQ(Probe({"connect", "2001:db8::1", "8443"}, {"-n", host}).out, TcpConnectRefusal());
  // The ports an allowed name has are open to Landlock (transparent capture reaches names on
  // them); a real address there still has no route.
  EXPECT_EQ(Probe({"connect", "192.0.2.1", "443"}, {"-n", host}).out, "err ENETUNREACH connect\n");
  EXPECT_EQ(Probe({"connect", "2001:db8::1", "443"}, {"-n", host}).out,
            "err ENETUNREACH connect\n");
  EXPECT_EQ(Probe({"raw"}, {"-n", host}).out, "err EPERM socket\n");
  // Control: the proxy port itself is reachable.
  RunResult r = Probe({"getenv", "HTTPS_PROXY"}, {"-n", host});
  ASSERT_EQ(r.status, 0);
  std::string port = r.out.substr(r.out.rfind(':') + 1);
  port.pop_back();
  EXPECT_EQ(Probe({"connect", "127.0.0.1", port}, {"-n", host}).out, "ok connected\n");
}

TEST_F(EgressTest, ProxyVariablesForCommonTools) {
  RunResult r = Shell("env | sort", {"-n", "allowed.example"}, WithState());
  for (const char* v :
       {"HTTP_PROXY=", "HTTPS_PROXY=", "ALL_PROXY=", "NO_PROXY=", "http_proxy=", "https_proxy=",
        "all_proxy=", "no_proxy=", "npm_config_proxy=", "npm_config_https_proxy=",
        "NODE_USE_ENV_PROXY=1", "JAVA_TOOL_OPTIONS=", "YARN_HTTP_PROXY=", "PIP_PROXY="}) {
    EXPECT_NE(r.out.find(v), std::string::npos) << v;
  }
  // No host allowed: the proxy is there all the same (to refuse, saying why), and so are the
  // variables that lead to it.
  r = Shell("env | sort", {}, WithState());
  EXPECT_NE(r.out.find("HTTPS_PROXY=http://127.0.0.1:"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ward::test
