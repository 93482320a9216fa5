// Method and path rules end to end: a local smart-HTTP git server (git http-backend behind a
// small HTTPS server on the host's loopback, its certificate given with --upstream-ca) reached
// by name through the proxy, whose session CA intercepts the rule hosts' TLS so that each
// request is checked. Clone and fetch work and push is refused; without the rules the same push
// lands (the control); a PUT to a GET-only host is refused with its reason.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit/sessions.h"
#include "harness.h"

namespace ward::test {
namespace {

// git http-backend as CGI over HTTPS (HTTP/1.1, keep-alive): `serve.py ROOT CERT KEY LOG`
// prints its port; every request's method and target go to LOG.
constexpr const char* kGitServer = R"PY(
import http.server, os, ssl, subprocess, sys
root, cert, key, log = sys.argv[1:5]

def read_chunked(f):
    body = b""
    while True:
        size = int(f.readline().split(b";")[0], 16)
        if size == 0:
            f.readline()
            return body
        body += f.read(size)
        f.readline()

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def do_GET(self):
        self.cgi()
    def do_POST(self):
        self.cgi()
    def do_PUT(self):
        self.cgi()
    def cgi(self):
        with open(log, "a") as f:
            f.write(self.command + " " + self.path + "\n")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = read_chunked(self.rfile)
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path, _, query = self.path.partition("?")
        env = dict(os.environ, GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL="1", PATH_INFO=path,
                   QUERY_STRING=query, REQUEST_METHOD=self.command, REMOTE_USER="t",
                   REMOTE_ADDR="127.0.0.1", CONTENT_LENGTH=str(len(body)),
                   CONTENT_TYPE=self.headers.get("Content-Type", ""),
                   HTTP_CONTENT_ENCODING=self.headers.get("Content-Encoding", ""),
                   GIT_PROTOCOL=self.headers.get("Git-Protocol", ""))
        out = subprocess.run(["git", "http-backend"], input=body, env=env,
                             capture_output=True).stdout
        sep = b"\r\n\r\n" if b"\r\n\r\n" in out else b"\n\n"
        head, _, content = out.partition(sep)
        status, headers = 200, []
        for line in head.replace(b"\r\n", b"\n").split(b"\n"):
            k, _, v = line.decode().partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                headers.append((k, v.strip()))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
)PY";

class RequestRulesTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    signal(SIGPIPE, SIG_IGN);
    state_ = root_->path() + "/state";
    srv_ = root_->path() + "/srv";
    MakeDirs(srv_);
    RunResult r = RunProgram(
        {"/bin/sh", "-c",
         "set -e; cd " + srv_ +
             "; git init -q --bare repo.git; git -C repo.git config http.receivepack true;"
             " git init -q src; cd src;"
             " git -c user.email=t@t -c user.name=t commit -q --allow-empty -m first;"
             " git push -q ../repo.git HEAD:refs/heads/main;"
             " git -C ../repo.git symbolic-ref HEAD refs/heads/main; cd ..;"
             " openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1"
             " -subj /CN=git.test -addext subjectAltName=DNS:git.test -keyout key.pem"
             " -out cert.pem 2>/dev/null; chmod -R a+rX " +
             srv_});
    ASSERT_EQ(r.status, 0) << r.err;
    WriteFile(srv_ + "/serve.py", kGitServer);
    const PrintedPort served = StartServerPrintingItsPort(
        {"/usr/bin/python3", srv_ + "/serve.py", srv_, srv_ + "/cert.pem", srv_ + "/key.pem",
         srv_ + "/log"});
    pid_ = served.pid;
    ASSERT_GT(served.port, 0);
    port_ = std::to_string(served.port);
    url_ = "https://git.test:" + port_ + "/repo.git";
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    SandboxTest::TearDown();
  }
  // The origin by name: resolved to the host's loopback (allowed by address) and trusted by the
  // proxy; `extra` allows the name itself (a plain -n, or rules).
  std::vector<std::string> Opts(std::vector<std::string> extra) {
    std::vector<std::string> o = {"-n", "127.0.0.1:" + port_, "--resolve", "git.test:127.0.0.1",
                                  "--upstream-ca", srv_ + "/cert.pem"};
    o.insert(o.end(), extra.begin(), extra.end());
    return o;
  }
  // A profile that allows clone and fetch from git.test and refuses push.
  std::string NoPushProfile() {
    const std::string host = "git.test:" + port_;
    const std::string path = root_->path() + "/no-push.toml";
    WriteFile(path, "extends = \"default\"\n"
                    "[[network.rules]]\n"
                    "host = \"" + host + "\"\n"
                    "paths = [\"*/git-receive-pack\", \"*/info/refs?service=git-receive-pack\"]\n"
                    "action = \"deny\"\n"
                    "[[network.rules]]\n"
                    "host = \"" + host + "\"\n"
                    "action = \"allow\"\n");
    chmod(path.c_str(), 0644);
    return path;
  }
  RunOptions WithState() {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = state_;
    o.timeout_s = 120;
    return o;
  }
  static constexpr const char* kPush =
      "cd clone && git -c user.email=t@t -c user.name=t commit -q --allow-empty -m pushed && "
      "git push -q origin HEAD:refs/heads/main 2>&1";

  std::string state_, srv_, port_, url_;
  pid_t pid_ = -1;
};

TEST_F(RequestRulesTest, CloneAndFetchWorkAndPushIsRefused) {
  RunResult r = Shell("git clone -q " + url_ + " clone 2>&1 && git -C clone fetch -q 2>&1 && "
                      "git -C clone log --format=%s",
                      Opts({"-p", NoPushProfile()}), WithState());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("first"), std::string::npos) << r.out;
  r = Shell(kPush, Opts({"-p", NoPushProfile()}), WithState());
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("403"), std::string::npos) << r.out;
  const std::string log = ReadFile(srv_ + "/log");
  EXPECT_NE(log.find("git-upload-pack"), std::string::npos) << log;
  EXPECT_EQ(log.find("git-receive-pack"), std::string::npos) << log;  // never reached
  RunResult head = RunProgram({"/usr/bin/git", "-C", srv_ + "/repo.git", "log", "--format=%s", "main"});
  EXPECT_EQ(head.out, "first\n");
  std::string events;
  for (const auto& s : audit::ListSessions(state_ + "/ward")) {
    events += ReadFile(s.dir + "/events.jsonl");
  }
  EXPECT_NE(events.find("\"reason\":\"request_rule\""), std::string::npos);
  EXPECT_NE(events.find("git-receive-pack"), std::string::npos);
}

TEST_F(RequestRulesTest, WithoutRulesTheSamePushLands) {
  // Not intercepted: git trusts the origin's certificate itself.
  std::vector<std::string> opts = Opts({"-n", "git.test:" + port_, "-r", srv_});
  const std::string trust = "export GIT_SSL_CAINFO=" + srv_ + "/cert.pem; ";
  RunResult r = Shell(trust + "git clone -q " + url_ + " clone 2>&1", opts, WithState());
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = Shell(trust + kPush, opts, WithState());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  RunResult head = RunProgram({"/usr/bin/git", "-C", srv_ + "/repo.git", "log", "--format=%s", "main"});
  EXPECT_EQ(head.out, "pushed\nfirst\n");
}

TEST_F(RequestRulesTest, APutToAGetOnlyHostIsRefusedWithItsReason) {
  const std::string base = "https://git.test:" + port_;
  std::vector<std::string> opts = Opts({"-n", "GET,HEAD git.test:" + port_});
  RunResult r = Shell("curl -sS -o /dev/null -w '%{http_code}' " + base +
                          "/repo.git/info/refs?service=git-upload-pack",
                      opts, WithState());
  EXPECT_EQ(r.out, "200") << r.err;
  r = Shell("curl -sS -X PUT --data-binary @/etc/hostname " + base + "/upload", opts,
            WithState());
  EXPECT_NE(r.out.find("PUT git.test:" + port_ + "/upload"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no network.rules rule"), std::string::npos) << r.out;
  EXPECT_EQ(ReadFile(srv_ + "/log").find("PUT"), std::string::npos);
}

}  // namespace
}  // namespace ward::test
