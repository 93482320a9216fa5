// A sandbox cannot hold more connections to its egress proxy than the per-sandbox cap (128 by
// default, `limits.proxy_connections` / `--proxy-connections`): a program inside opens 400
// idle connections; after the proxy has dealt with them, at most the cap are still open, every
// one of those is really served (a request on it is answered), the rest were refused, and the
// audit trail has a net.limit record naming the cap. Below the cap every connection works and
// nothing is recorded.
#include "audit/sessions.h"
#include "harness.h"
#include "local_http.h"

namespace ward::test {
namespace {

// hold.py N WAIT URL: opens N connections to the proxy ($HTTP_PROXY), waits, counts those the
// proxy closed or answered (refused) and those still open, then sends one request for URL on
// each open one and counts the 200s.
constexpr char kHold[] = R"(import os, socket, sys, time
from urllib.parse import urlparse
proxy = urlparse(os.environ['HTTP_PROXY'])
n, wait, url = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
socks = []
for _ in range(n):
    socks.append(socket.create_connection((proxy.hostname, proxy.port), timeout=10))
time.sleep(wait)
alive = []
for s in socks:
    s.setblocking(False)
    try:
        s.recv(4096)
    except BlockingIOError:
        alive.append(s)
    except OSError:
        pass
served = 0
host = urlparse(url).netloc
for s in alive:
    s.setblocking(True)
    s.settimeout(10)
    s.sendall(('GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' % (url, host)).encode())
    if s.recv(64).startswith(b'HTTP/1.1 200'):
        served += 1
print('open=%d refused=%d served=%d' % (len(alive), n - len(alive), served))
)";

class ProxyConnectionCap : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    state_ = root_->path() + "/state";
    WriteFile(ws_ + "/hold.py", kHold);
  }
  RunResult Hold(int n, const std::vector<std::string>& extra = {}) {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = state_;
    o.timeout_s = 120;
    std::string allow = "127.0.0.1:" + std::to_string(origin_.port());
    std::vector<std::string> opts = {"-n", allow};
    opts.insert(opts.end(), extra.begin(), extra.end());
    // Over-cap connections are answered or closed within a second; 3 s is well past that and
    // well before the idle ones would time out on their own.
    return Shell("python3 hold.py " + std::to_string(n) + " 3 http://" + allow + "/x", opts, o);
  }
  std::string AuditText() {
    std::string all;
    for (const auto& s : audit::ListSessions(state_ + "/ward")) {
      all += ReadFile(s.dir + "/events.jsonl");
    }
    return all;
  }
  static size_t Count(const std::string& hay, const std::string& needle) {
    size_t n = 0;
    for (size_t p = 0; (p = hay.find(needle, p)) != std::string::npos; p += needle.size()) ++n;
    return n;
  }

  LocalHttp origin_{"origin-ok"};
  std::string state_;
};

TEST_F(ProxyConnectionCap, FourHundredIdleConnectionsStopAtTheDefaultCap) {
  RunResult r = Hold(400);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "open=128 refused=272 served=128\n") << r.err;
  std::string log = AuditText();
  EXPECT_EQ(Count(log, "\"type\":\"net.limit\""), 4u) << log;  // at 1, 10, 100, and the total
  EXPECT_NE(log.find("\"cap\":128"), std::string::npos) << log;
  EXPECT_NE(log.find("\"limit\":\"proxy_connections\""), std::string::npos);
  EXPECT_NE(log.find("\"refused\":272"), std::string::npos) << "the last count";
}

TEST_F(ProxyConnectionCap, BelowTheCapEveryConnectionWorks) {
  RunResult r = Hold(100);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "open=100 refused=0 served=100\n") << r.err;
  EXPECT_EQ(AuditText().find("net.limit"), std::string::npos);
}

TEST_F(ProxyConnectionCap, TheCapComesFromTheProfileOrTheFlag) {
  WriteFile(root_->path() + "/cap.toml",
            "extends = \"default\"\n[limits]\nproxy_connections = 10\n");
  RunResult r = Hold(25, {"-p", root_->path() + "/cap.toml"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "open=10 refused=15 served=10\n") << r.err;
  EXPECT_NE(AuditText().find("\"cap\":10"), std::string::npos);

  r = Hold(25, {"-p", root_->path() + "/cap.toml", "--proxy-connections", "20"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "open=20 refused=5 served=20\n") << r.err;

  // The workspace file may lower it, not raise it.
  WriteFile(ws_ + "/.ward.toml", "[limits]\nproxy_connections = 500\n");
  r = Hold(1);
  EXPECT_EQ(r.status, 125) << r.out;
  EXPECT_NE(r.err.find("limits.proxy_connections"), std::string::npos) << r.err;
  WriteFile(ws_ + "/.ward.toml", "[limits]\nproxy_connections = 5\n");
  r = Hold(8);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "open=5 refused=3 served=5\n") << r.err;
}

}  // namespace
}  // namespace ward::test
