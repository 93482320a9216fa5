// The credential broker in real sandboxes: clients inside (curl, Python's urllib,
// Node's https) reach a test HTTPS upstream on the host's loopback through a route and through
// TLS interception; the upstream receives the real secret, the sandbox holds only the phantom,
// and the real value appears nowhere inside (environments, files, process memory) nor in the
// audit log. The upstream's name is mapped with --resolve and its CA given with --upstream-ca.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#ifdef WARD_SANITIZE
#include <sanitizer/asan_interface.h>
#endif

#include "audit/sessions.h"
#include "harness.h"
#include "tls_origin.h"
#include "net/idna.h"
#include "net/tls_authority.h"

namespace ward::test {
namespace {

std::string RandomHex(size_t n) {
  std::random_device rd;
  std::string s;
  const char* hex = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) s += hex[rd() % 16];
  return s;
}

bool Contains(const std::string& hay, const std::string& needle) {
  return !needle.empty() && hay.find(needle) != std::string::npos;
}

// In the ASan build, sandbox init is a clone of an ASan-built ward and maps ASan's shadow:
// about 14 TiB of readable anonymous memory that only describes which bytes are addressable
// and never holds the process's own data. Reading it would take far longer than the sandbox
// lives, so the scan skips it (ASan reserves one page more below the shadow's start).
bool IsAsanShadow(unsigned long lo, unsigned long hi) {
#ifdef WARD_SANITIZE
  size_t scale = 0, offset = 0;
  __asan_get_shadow_mapping(&scale, &offset);
  const unsigned long begin = offset - static_cast<unsigned long>(getpagesize());
  const unsigned long end = offset + ((1UL << 47) >> scale);  // x86-64's user space: 2^47
  return lo >= begin && hi <= end;
#else
  (void)lo, (void)hi;
  return false;
#endif
}

// The readable memory of a process, region by region (for the scans below). Exact copies of
// `blank` are blanked before the needles are looked for (one cut by the end of a read is not).
struct MemScan {
  bool readable = false;
  bool found = false;
};
MemScan ScanMemory(int pid, const std::vector<std::string>& needles, std::vector<bool>* hits,
                   const std::string& blank = "") {
  MemScan r;
  hits->assign(needles.size(), false);
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  int mem = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (!maps || mem < 0) {
    if (mem >= 0) close(mem);
    return r;
  }
  std::string line;
  size_t keep = 0;
  for (const auto& n : needles) keep = std::max(keep, n.size());
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {};
    if (sscanf(line.c_str(), "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r') continue;
    if (line.find("[vvar]") != std::string::npos || IsAsanShadow(lo, hi)) continue;
    std::string carry;
    for (unsigned long off = lo; off < hi;) {
      size_t chunk = std::min<unsigned long>(hi - off, 1 << 20);
      std::string buf(chunk, '\0');
      ssize_t n = pread(mem, buf.data(), chunk, static_cast<off_t>(off));
      if (n <= 0) break;
      r.readable = true;
      buf.resize(n);
      std::string window = carry + buf;
      for (size_t at = 0; !blank.empty() && (at = window.find(blank, at)) != std::string::npos;
           at += blank.size()) {
        std::fill_n(window.begin() + static_cast<long>(at), blank.size(), '\0');
      }
      for (size_t i = 0; i < needles.size(); ++i) {
        if (Contains(window, needles[i])) (*hits)[i] = true;
      }
      carry = window.substr(window.size() > keep ? window.size() - keep : 0);
      off += n;
    }
  }
  close(mem);
  for (bool h : *hits) r.found = r.found || h;
  return r;
}

std::string ReadLink(const std::string& p) {
  char buf[256];
  ssize_t n = readlink(p.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, n) : "";
}

class CredsTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    signal(SIGPIPE, SIG_IGN);
    state_ = root_->path() + "/state";
    secret_ = "sk-test-" + RandomHex(40);
    auto ca = net::TlsAuthority::Create({.common_name = "ward creds test upstream CA"});
    ASSERT_TRUE(ca.ok()) << ca.status().ToString();
    ca_ = std::move(ca).value();
    ca_file_ = root_->path() + "/upstream-ca.pem";
    WriteFile(ca_file_, ca_->ca_pem());
    auto ctx = ca_->ServerContext(*net::ParseHost("api.test"));
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    upstream_ = std::make_unique<Origin>(*ctx);
    profile_ = WriteProfile("creds.toml", "testapi", "env:WARD_TEST_API_SECRET", upstream_->port());
  }

  std::string WriteProfile(const std::string& file, const std::string& name,
                           const std::string& from, int port) {
    std::string path = root_->path() + "/" + file;
    WriteFile(path, "extends = \"default\"\n[credentials." + name + "]\nfrom = \"" + from +
                        "\"\nhosts = [\"api.test:" + std::to_string(port) +
                        "\"]\nenv = \"TEST_API_KEY\"\nroute = \"" + name +
                        "\"\nroute_env = { TEST_API_BASE_URL = \"{route_url}\" }\n"
                        "enabled = true\n");
    return path;
  }

  std::vector<std::string> WardOpts(int port, const std::string& profile = "") {
    return {"-p",
            profile.empty() ? profile_ : profile,
            "--resolve",
            "api.test:127.0.0.1",
            "--upstream-ca",
            ca_file_,
            "-n",
            "127.0.0.1:" + std::to_string(port)};
  }
  RunOptions WithSecret() {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = state_;
    o.env["WARD_TEST_API_SECRET"] = secret_;
    o.timeout_s = 120;
    return o;
  }
  std::string Url(const std::string& path = "/v1/models") {
    return "https://api.test:" + std::to_string(upstream_->port()) + path;
  }
  std::string AuditText() {
    std::string all;
    for (const auto& s : audit::ListSessions(state_ + "/ward")) {
      all += ReadFile(s.dir + "/events.jsonl");
    }
    return all;
  }

  std::string state_, secret_, ca_file_, profile_;
  std::unique_ptr<net::TlsAuthority> ca_;
  std::unique_ptr<Origin> upstream_;
};

TEST_F(CredsTest, CurlThroughRouteAndInterceptionSendsTheRealSecret) {
  RunResult r = Shell(
      "set -e\n"
      "curl -sS --max-time 20 -H \"Authorization: Bearer $TEST_API_KEY\" "
      "\"$TEST_API_BASE_URL/v1/route\"; echo\n"
      "curl -sS --max-time 20 -H \"Authorization: Bearer $TEST_API_KEY\" " +
          Url("/v1/intercepted") +
          "; echo\n"
          "printf 'phantom=%s\\n' \"$TEST_API_KEY\"\n",
      WardOpts(upstream_->port()), WithSecret());
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("upstream-ok GET /v1/route HTTP/1.1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("upstream-ok GET /v1/intercepted HTTP/1.1"), std::string::npos) << r.out;
  std::string heads = upstream_->AllHeads();
  ASSERT_EQ(upstream_->heads().size(), 2u) << heads;
  for (const auto& h : upstream_->heads()) {
    EXPECT_TRUE(Contains(h, "Bearer " + secret_)) << h;
  }
  // The sandbox saw a phantom of the same shape, never the secret.
  size_t at = r.out.find("phantom=");
  ASSERT_NE(at, std::string::npos);
  std::string phantom = r.out.substr(at + 8, r.out.find('\n', at) - at - 8);
  EXPECT_NE(phantom, secret_);
  EXPECT_EQ(phantom.size(), secret_.size());
  EXPECT_FALSE(Contains(r.out + r.err, secret_));
  EXPECT_FALSE(Contains(heads, phantom)) << "the phantom reached the upstream";
  std::string log = AuditText();
  EXPECT_TRUE(Contains(log, "credential.use")) << log;
  EXPECT_FALSE(Contains(log, secret_));
}

TEST_F(CredsTest, PythonAndNodeThroughInterception) {
  WriteFile(ws_ + "/client.py",
            "import os, sys, urllib.request\n"
            "req = urllib.request.Request(sys.argv[1], headers={'Authorization': 'Bearer ' + "
            "os.environ['TEST_API_KEY']})\n"
            "with urllib.request.urlopen(req, timeout=20) as r:\n"
            "    print('python', r.status, r.read().decode())\n");
  // Node 20 does not read the proxy variables itself: CONNECT by hand, then https over it,
  // trusting the session CA through NODE_EXTRA_CA_CERTS like any Node program would.
  WriteFile(ws_ + "/client.js",
            "const http = require('http'), https = require('https'), tls = require('tls');\n"
            "const [host, port, path] = process.argv.slice(2);\n"
            "const proxy = new URL(process.env.HTTPS_PROXY);\n"
            "const c = http.request({host: proxy.hostname, port: proxy.port, method: 'CONNECT',"
            " path: host + ':' + port});\n"
            "c.on('connect', (res, socket) => {\n"
            "  if (res.statusCode !== 200) { console.log('connect', res.statusCode); "
            "process.exit(2); }\n"
            "  const agent = new https.Agent({keepAlive: false});\n"
            "  agent.createConnection = () => tls.connect({socket, servername: host});\n"
            "  const r = https.request({host, port, path, agent, headers: {Authorization:"
            " 'Bearer ' + process.env.TEST_API_KEY}}, (resp) => { let b = ''; resp.on('data', d => "
            "b += d);"
            " resp.on('end', () => console.log('node', resp.statusCode, b)); });\n"
            "  r.on('error', e => { console.log('error', e.message); process.exit(3); });\n"
            "  r.end();\n"
            "});\n"
            "c.on('error', e => { console.log('proxy error', e.message); process.exit(4); });\n"
            "c.end();\n");
  bool have_node = access("/usr/bin/node", X_OK) == 0;
  std::string script = "set -e\npython3 client.py " + Url("/v1/python") + "\n";
  if (have_node) {
    script += "node client.js api.test " + std::to_string(upstream_->port()) + " /v1/node\n";
  }
  RunResult r = Shell(script, WardOpts(upstream_->port()), WithSecret());
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("python 200 upstream-ok GET /v1/python"), std::string::npos) << r.out;
  if (have_node) {
    EXPECT_NE(r.out.find("node 200 upstream-ok GET /v1/node"), std::string::npos) << r.out;
  }
  ASSERT_EQ(upstream_->heads().size(), have_node ? 2u : 1u) << upstream_->AllHeads();
  for (const auto& h : upstream_->heads()) EXPECT_TRUE(Contains(h, "Bearer " + secret_)) << h;
  if (!have_node) GTEST_SKIP() << "node is not installed: only Python was checked";
}

// Every environment, the CA bundle and every readable file of the trees that matter, dumped
// from inside: the secret is in none of them, while the phantom (a positive control that the
// dump covers the environments) and the session CA certificate are.
TEST_F(CredsTest, TheSecretIsInNoEnvironmentOrFileInside) {
  RunOptions o = WithSecret();
  o.env["SECRET_COPY"] = secret_;  // the same value under a name the env rules pass
  std::vector<std::string> opts = WardOpts(upstream_->port());
  opts.insert(opts.end(), {"-e", "SECRET_COPY"});
  RunResult r = Shell(
      "curl -sS --max-time 20 -o /dev/null \"$TEST_API_BASE_URL/warm\"\n"
      "echo \"bundle=$SSL_CERT_FILE copy=$SECRET_COPY\"\n"
      "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null\n"
      "grep -c 'PRIVATE KEY' \"$SSL_CERT_FILE\" || true\n"
      "grep -c \"this session's credential broker CA\" \"$SSL_CERT_FILE\"\n"
      "if (echo x >> \"$SSL_CERT_FILE\") 2>/dev/null; then echo bundle-writable; fi\n"
      "echo planted-file-marker > /tmp/planted\n"
      "find /etc /tmp \"$HOME\" . -xdev -type f -readable -size -4M -exec cat {} + 2>/dev/null\n"
      "true\n",
      opts, o);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(Contains(r.out, secret_)) << "the real secret is visible inside";
  EXPECT_FALSE(Contains(r.err, secret_));
  EXPECT_EQ(r.out.find("bundle-writable"), std::string::npos);
  // The copy under another name holds the phantom, and so does the credential's variable.
  size_t at = r.out.find("copy=");
  ASSERT_NE(at, std::string::npos);
  std::string phantom = r.out.substr(at + 5, r.out.find('\n', at) - at - 5);
  EXPECT_EQ(phantom.size(), secret_.size());
  EXPECT_TRUE(Contains(r.out, "TEST_API_KEY=" + phantom)) << "env dump missed the phantom";
  EXPECT_TRUE(Contains(r.out, "SECRET_COPY=" + phantom));
  EXPECT_TRUE(Contains(r.out, "bundle=/")) << r.out.substr(0, 2000);
  EXPECT_TRUE(Contains(r.out, "ward: this session's credential broker CA"));
  EXPECT_FALSE(Contains(r.out, "BEGIN EC PRIVATE KEY"));
  // Positive control for the file dump: a file written inside is in it.
  EXPECT_TRUE(Contains(r.out, "planted-file-marker\n")) << "no files read";
  EXPECT_FALSE(Contains(AuditText(), secret_));
}

// The memory of the processes inside, read from outside the sandbox: a Python client that used
// the phantom for a real request is scanned while it waits; the phantom is found (so the scan
// can see what a process holds) and the real secret is not.
TEST_F(CredsTest, TheSecretIsNotInTheMemoryOfProcessesInside) {
  std::string marker = "memscan-" + RandomHex(8);
  WriteFile(ws_ + "/" + marker + ".py",
            "import os, sys, time, urllib.request\n"
            "req = urllib.request.Request(sys.argv[1], headers={'Authorization': 'Bearer ' + "
            "os.environ['TEST_API_KEY']})\n"
            "body = urllib.request.urlopen(req, timeout=20).read()\n"
            "open('ready.tmp', 'w').write(os.environ['TEST_API_KEY'])\n"
            "os.rename('ready.tmp', 'ready')\n"
            "for _ in range(600):\n"
            "    if os.path.exists('done'): break\n"
            "    time.sleep(0.05)\n"
            "print('python done', body.decode())\n");
  RunResult r;
  std::thread runner([&] {
    r = Shell("python3 " + marker + ".py " + Url("/v1/mem"), WardOpts(upstream_->port()),
              WithSecret());
  });
  std::string phantom;
  for (int i = 0; i < 600 && phantom.empty(); ++i) {
    if (PathExists(ws_ + "/ready")) phantom = ReadFile(ws_ + "/ready");
    if (phantom.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  int python_pid = -1;
  std::string pidns;
  std::vector<int> inside;
  if (!phantom.empty()) {
    DIR* d = opendir("/proc");
    while (struct dirent* e = d ? readdir(d) : nullptr) {
      int pid = atoi(e->d_name);
      if (pid <= 0) continue;
      std::string cmd = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
      if (cmd.rfind("python3", 0) == 0 && Contains(cmd, marker)) python_pid = pid;
    }
    if (d) closedir(d);
  }
  if (python_pid > 0) {
    pidns = ReadLink("/proc/" + std::to_string(python_pid) + "/ns/pid");
    DIR* d = opendir("/proc");
    while (struct dirent* e = d ? readdir(d) : nullptr) {
      int pid = atoi(e->d_name);
      if (pid > 0 && ReadLink("/proc/" + std::to_string(pid) + "/ns/pid") == pidns) {
        inside.push_back(pid);
      }
    }
    if (d) closedir(d);
  }
  // ASan's runtime reads /proc/self/environ at start-up (to look up its options) and keeps
  // that copy for good: in the ASan build, sandbox init, a clone of ward, holds ward's initial
  // environment, secret included, in the sanitizer's own buffer. Only that exact block (the
  // environment ward was started with, as the kernel laid it out) is blanked; any other copy
  // of the secret is still found.
  std::string asan_environ;
#ifdef WARD_SANITIZE
  for (const auto& [k, v] : WithSecret().env) asan_environ += k + "=" + v + '\0';
#endif
  std::string report;
  bool python_scanned = false, init_scanned = false, phantom_seen = false, secret_seen = false;
  for (int pid : inside) {
    // Sandbox init (pid 1 inside) included: it is a copy of the supervisor's memory, made at
    // the clone, before any secret was fetched.
    std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
    size_t ns = status.find("NSpid:");
    std::string nspid =
        ns == std::string::npos ? "" : status.substr(ns, status.find('\n', ns) - ns);
    const bool is_init = nspid.size() >= 2 && nspid.substr(nspid.find_last_of(" \t") + 1) == "1";
    std::vector<bool> hits;
    MemScan m = ScanMemory(pid, {secret_, phantom}, &hits, asan_environ);
    report += std::to_string(pid) + (m.readable ? " read" : " unreadable") +
              (hits.size() == 2 && hits[0] ? " SECRET" : "") +
              (hits.size() == 2 && hits[1] ? " phantom" : "") + "\n";
    if (pid == python_pid) python_scanned = m.readable;
    // Init holds the command's environment it was sent (phantom included): the positive
    // control that the scan reads its memory.
    if (is_init) init_scanned = m.readable && hits.size() == 2 && hits[1];
    if (hits.size() == 2 && hits[1] && pid == python_pid) phantom_seen = true;
    if (hits.size() == 2 && hits[0]) secret_seen = true;
  }
  WriteFile(ws_ + "/done", "");
  runner.join();
  ASSERT_FALSE(phantom.empty()) << "the client never got ready: " << r.out << r.err;
  ASSERT_GT(python_pid, 0);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(python_scanned) << report;
  // Init is not dumpable: only root outside can read its memory.
  if (geteuid() == 0) {
    EXPECT_TRUE(init_scanned) << "sandbox init must be scanned too: " << report;
  }
  EXPECT_TRUE(phantom_seen) << "the scan must find the planted phantom: " << report;
  EXPECT_FALSE(secret_seen) << report;
  ASSERT_EQ(upstream_->heads().size(), 1u);
  EXPECT_TRUE(Contains(upstream_->heads()[0], "Bearer " + secret_));
}

// The phantom sent anywhere but the credential's hosts: another allowed host (plain HTTP on
// the host's loopback, allowed by address) and a DNS name. Refused, audited, never delivered.
TEST_F(CredsTest, ThePhantomSentElsewhereIsBlockedAndAudited) {
  Origin other(nullptr);
  std::vector<std::string> opts = WardOpts(upstream_->port());
  opts.insert(opts.end(), {"-n", "127.0.0.1:" + std::to_string(other.port())});
  std::string other_url = "http://127.0.0.1:" + std::to_string(other.port());
  RunResult r = Shell(
      "curl -sS --max-time 20 -o /dev/null -w 'header:%{http_code}\\n' -H \"Authorization: "
      "Bearer $TEST_API_KEY\" " +
          other_url +
          "/x\n"
          "curl -sS --max-time 20 -o /dev/null -w 'query:%{http_code}\\n' \"" +
          other_url +
          "/x?key=$TEST_API_KEY\"\n"
          "curl -sS --max-time 20 -o /dev/null -w 'plain:%{http_code}\\n' " +
          other_url +
          "/fine\n"
          "if getent hosts \"$TEST_API_KEY.api.test\" >/dev/null; then echo dns-answered; "
          "fi\n",
      opts, WithSecret());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("header:403"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("query:403"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("plain:200"), std::string::npos) << "control: the host is reachable";
  EXPECT_EQ(r.out.find("dns-answered"), std::string::npos);
  ASSERT_EQ(other.heads().size(), 1u) << other.AllHeads();
  EXPECT_NE(other.heads()[0].find("/fine"), std::string::npos);
  std::string log = AuditText();
  size_t leaks = 0;
  for (size_t p = 0; (p = log.find("credential.leak_attempt", p)) != std::string::npos; ++p) {
    ++leaks;
  }
  EXPECT_GE(leaks, 3u) << log;
  EXPECT_TRUE(Contains(log, "\"dns\"")) << log;
  EXPECT_TRUE(Contains(log, std::to_string(other.port()))) << "the destination is recorded";
  EXPECT_FALSE(Contains(log, secret_));
}

TEST_F(CredsTest, AMissingOrFailingSourceRefusesBeforeStart) {
  RunOptions o = WithSecret();
  RunResult r = RunWard({"run", "--credential-env", "WARD_TEST_ABSENT_TOKEN=api.test", "--", "sh",
                         "-c", "touch started"},
                        o);
  EXPECT_EQ(r.status, 125) << r.out << r.err;
  EXPECT_NE(r.err.find("WARD_TEST_ABSENT_TOKEN"), std::string::npos) << r.err;
  EXPECT_FALSE(PathExists(ws_ + "/started"));

  std::string failing =
      WriteProfile("failing.toml", "broken", "command:echo nope >&2; exit 3", upstream_->port());
  r = RunWard({"run", "-p", failing, "--", "sh", "-c", "touch started"}, o);
  EXPECT_EQ(r.status, 125) << r.out << r.err;
  EXPECT_NE(r.err.find("credential broken"), std::string::npos) << r.err;
  EXPECT_FALSE(PathExists(ws_ + "/started"));

  // Positive control: the same command runs when the source is there.
  r = RunWard({"run", "-p", profile_, "--", "sh", "-c", "touch started"}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(PathExists(ws_ + "/started"));
}

// An upstream whose certificate comes from a CA nobody gave: the broker refuses to send the
// secret there; once the CA is given with --upstream-ca, the same request goes through.
TEST_F(CredsTest, UpstreamCertificatesAreVerified) {
  auto other_ca = net::TlsAuthority::Create({.common_name = "ward creds test untrusted CA"});
  ASSERT_TRUE(other_ca.ok());
  auto ctx = (*other_ca)->ServerContext(*net::ParseHost("api.test"));
  ASSERT_TRUE(ctx.ok());
  Origin wrong(*ctx);
  std::string profile =
      WriteProfile("wrong.toml", "wrongca", "env:WARD_TEST_API_SECRET", wrong.port());
  std::string script =
      "curl -sS --max-time 20 -o /dev/null -w 'route:%{http_code}\\n' "
      "\"$TEST_API_BASE_URL/v1/x\"\n"
      "curl -sS --max-time 20 -o /dev/null -w 'intercept:%{http_code}\\n' "
      "https://api.test:" +
      std::to_string(wrong.port()) + "/v1/y\n";
  RunResult r = Shell(script, WardOpts(wrong.port(), profile), WithSecret());
  EXPECT_EQ(r.out.find("route:200"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.out.find("intercept:200"), std::string::npos) << r.out << r.err;
  EXPECT_TRUE(wrong.heads().empty()) << wrong.AllHeads();

  std::string other_file = root_->path() + "/other-ca.pem";
  WriteFile(other_file, (*other_ca)->ca_pem());
  std::vector<std::string> opts = WardOpts(wrong.port(), profile);
  opts.insert(opts.end(), {"--upstream-ca", other_file});
  r = Shell(script, opts, WithSecret());
  EXPECT_NE(r.out.find("route:200"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("intercept:200"), std::string::npos) << r.out << r.err;
  ASSERT_EQ(wrong.heads().size(), 2u);
  for (const auto& h : wrong.heads()) EXPECT_TRUE(Contains(h, "Bearer " + secret_)) << h;
}

TEST_F(CredsTest, ExplainListsCredentialsWithoutValues) {
  RunOptions o = WithSecret();
  RunResult r = RunWard({"explain", "-p", profile_, "--", "true"}, o);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("credential testapi"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("api.test:" + std::to_string(upstream_->port())), std::string::npos);
  EXPECT_FALSE(Contains(r.out, secret_));
  // And the run's session.start says the same.
  r = Shell("true", WardOpts(upstream_->port()), o);
  ASSERT_EQ(r.status, 0) << r.err;
  std::string log = AuditText();
  EXPECT_TRUE(Contains(log, "\"credentials\":[{")) << log.substr(0, 3000);
  EXPECT_TRUE(Contains(log, "\"route\":\"testapi\""));
  EXPECT_FALSE(Contains(log, secret_));
}

}  // namespace
}  // namespace ward::test
