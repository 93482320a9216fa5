// File approvals end to end: `ward run --ask` traps opens the policy does not allow
// and asks through the per-session socket; the test plays the approver with the CLI's client.
// The asked-for files live under /run/lock (world-writable on the host, outside the sandbox's
// view and outside ward's own trees, which are never asked about).
#include <arpa/inet.h>
#include <fcntl.h>
#include <glob.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "approver.h"
#include "harness.h"
#include "local_http.h"

namespace ward::test {
namespace {

using nlohmann::json;

class ApprovalsTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (std::string why = WhyAskIsRefusedHere(); !why.empty()) GTEST_SKIP() << why;
    runtime_ = root_->path() + "/run";
    MakeDirs(runtime_, 0700);
    char tmpl[] = "/run/lock/ward-ap.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      GTEST_SKIP() << "cannot create a directory under /run/lock (" << strerror(errno)
                   << "): no host path outside the sandbox's view to ask about";
    }
    outside_ = tmpl;
    data_ = outside_ + "/data.txt";
    WriteFile(data_, "approved-content-31", 0600);
  }
  void TearDown() override {
    if (!outside_.empty()) RunProgram({"/bin/rm", "-rf", outside_});
  }

  RunOptions Opts(int timeout_s = 60) const {
    RunOptions o;
    o.env["XDG_RUNTIME_DIR"] = runtime_;
    o.timeout_s = timeout_s;
    return o;
  }
  // A profile file with approvals settings on top of the default profile.
  std::string Profile(const std::string& approvals_toml) {
    std::string p = root_->path() + "/ask.toml";
    WriteFile(p, "extends = \"default\"\n[approvals]\n" + approvals_toml);
    return p;
  }

  std::string runtime_, outside_, data_;
};

std::optional<json> ApproveOnce(const json&) { return json{{"op", "approve"}, {"scope", "once"}}; }

TEST_F(ApprovalsTest, OpenInTheViewIsNotAsked) {
  WriteFile(ws_ + "/here.txt", "in-view-77");
  Approver approver(runtime_, [](const json&) { return json{{"op", "deny"}}; });
  RunResult r = Probe({"read", ws_ + "/here.txt"}, {"--ask"}, Opts());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("in-view-77"), std::string::npos);
  EXPECT_TRUE(approver.seen().empty());
  EXPECT_NE(r.err.find("approvals on"), std::string::npos) << r.err;
}

TEST_F(ApprovalsTest, WithoutAskTheFileDoesNotExistInside) {
  RunResult r = Probe({"read", data_}, {}, Opts());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("err ENOENT"), std::string::npos) << r.out;
}

TEST_F(ApprovalsTest, ApproveOnceThenAskedAgain) {
  int n = 0;
  Approver approver(runtime_, [&](const json&) -> std::optional<json> {
    return ++n == 1 ? json{{"op", "approve"}, {"scope", "once"}} : json{{"op", "deny"}};
  });
  RunResult r = Probe({"read-each", data_, "2", "0"}, {"--ask"}, Opts());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("1:approved-content-31,2:EACCES"), std::string::npos) << r.out;
  std::vector<json> seen = approver.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0]["subject"], data_);
  EXPECT_EQ(seen[0]["access"], "read");
}

TEST_F(ApprovalsTest, SessionGrantCoversLaterOpens) {
  Approver approver(runtime_, [](const json&) {
    return json{{"op", "approve"}, {"scope", "session"}};
  });
  RunResult r = Probe({"read-each", data_, "3", "0"}, {"--ask"}, Opts());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("1:approved-content-31,2:approved-content-31,3:approved-content-31"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(approver.seen().size(), 1u);
}

TEST_F(ApprovalsTest, RevokedGrantStopsWorking) {
  std::atomic<bool> revoked{false};
  Approver approver(
      runtime_,
      [&](const json&) -> std::optional<json> {
        if (revoked) return json{{"op", "deny"}};
        return json{{"op", "approve"}, {"scope", "session"}};
      },
      [&](const std::string& socket) {
        if (revoked) return;
        json g = Approver::Call(socket, {{"op", "grants"}});
        if (!g.is_object() || !g.contains("grants")) return;
        for (const json& grant : g["grants"]) {
          // Revoke once the grant has been used by a later open too.
          if (grant.value("state", "") == "live" && grant.value("uses", 0) >= 1) {
            json rv = Approver::Call(socket, {{"op", "revoke"}, {"grant", grant["id"]}});
            if (rv.value("ok", false)) revoked = true;
          }
        }
      });
  RunResult r = Probe({"read-each", data_, "6", "300"}, {"--ask"}, Opts());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(revoked);
  EXPECT_NE(r.out.find("1:approved-content-31"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("6:EACCES"), std::string::npos) << r.out;
  EXPECT_GE(approver.seen().size(), 2u);  // asked again after the revocation
}

TEST_F(ApprovalsTest, DenyIsEacces) {
  Approver approver(runtime_, [](const json&) { return json{{"op", "deny"}}; });
  RunResult r = Probe({"read", data_}, {"--ask"}, Opts());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("err EACCES"), std::string::npos) << r.out;
  EXPECT_EQ(approver.seen().size(), 1u);
}

TEST_F(ApprovalsTest, NoAnswerWithinTheTimeoutIsEacces) {
  std::string profile = Profile("timeout = \"1s\"\n");
  Approver approver(runtime_, [](const json&) { return std::nullopt; });  // never answers
  auto t0 = std::chrono::steady_clock::now();
  RunResult r = Probe({"read", data_}, {"-p", profile, "--ask"}, Opts());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("err EACCES"), std::string::npos) << r.out;
  EXPECT_EQ(approver.seen().size(), 1u);
  EXPECT_LT(s, 20.0);
}

TEST_F(ApprovalsTest, ExplicitDenyIsRefusedWithoutAsking) {
  Approver approver(runtime_, ApproveOnce);
  RunResult r = Probe({"read", data_}, {"--ask", "--deny", data_}, Opts());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("err EACCES"), std::string::npos) << r.out;
  EXPECT_TRUE(approver.seen().empty());
}

TEST_F(ApprovalsTest, StandingAnswersApplyBeforeAsking) {
  std::string profile = Profile("auto_allow_once = [\"" + outside_ + "/*.txt\"]\n");
  Approver approver(runtime_, [](const json&) { return json{{"op", "deny"}}; });
  RunResult r = Probe({"read", data_}, {"-p", profile, "--ask"}, Opts());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("approved-content-31"), std::string::npos);
  EXPECT_TRUE(approver.seen().empty());
}

TEST_F(ApprovalsTest, ReadGrantNeverGivesWriteAccess) {
  Approver approver(runtime_, [](const json& req) -> std::optional<json> {
    if (req.value("access", "") == "read") return json{{"op", "approve"}, {"scope", "session"}};
    return json{{"op", "deny"}};
  });
  RunResult r = Probe({"read-widen", data_}, {"--ask"}, Opts());
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("read=approved-content-31"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("write=EBADF"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reopen_rw=EACCES"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reopen_wo=EACCES"), std::string::npos) << r.out;
  // A write open of the same path is a new question (denied here).
  RunResult w = Probe({"open-mode", data_, "w"}, {"--ask"}, Opts());
  EXPECT_NE(w.out.find("err EACCES"), std::string::npos) << w.out;
  EXPECT_EQ(ReadFile(data_), "approved-content-31");
}

TEST_F(ApprovalsTest, WriteGrantAllowsWriting) {
  Approver approver(runtime_, ApproveOnce);
  RunResult r = Probe({"append", data_}, {"--ask"}, Opts());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(ReadFile(data_), "approved-content-31x");
  ASSERT_EQ(approver.seen().size(), 1u);
  EXPECT_EQ(approver.seen()[0]["access"], "write");
}

TEST_F(ApprovalsTest, CreateGrantCreatesTheFile) {
  Approver approver(runtime_, ApproveOnce);
  RunResult r = Probe({"write", outside_ + "/new.txt", "made"}, {"--ask"}, Opts());
  EXPECT_EQ(r.status, 0) << r.out << r.err << approver.errors();
  EXPECT_EQ(ReadFile(outside_ + "/new.txt"), "made");
  ASSERT_EQ(approver.seen().size(), 1u);
  EXPECT_EQ(approver.seen()[0]["access"], "create");
}

TEST_F(ApprovalsTest, ApprovalSocketIsNotInTheView) {
  Approver approver(runtime_, [](const json&) { return json{{"op", "deny"}}; });
  RunResult r = Probe({"ls", runtime_ + "/ward"}, {"--ask"}, Opts());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("err ENOENT"), std::string::npos) << r.out;
  RunResult s = Shell("ls " + runtime_ + "/ward/*.sock 2>&1; echo done", {"--ask"}, Opts());
  EXPECT_EQ(s.out.find(".sock\n"), std::string::npos) << s.out;
  EXPECT_TRUE(approver.seen().empty());
}

TEST_F(ApprovalsTest, RunIsRefusedWhenTheSocketWouldBeVisible) {
  RunOptions o = Opts();
  o.env["XDG_RUNTIME_DIR"] = ws_ + "/run";
  MakeDirs(ws_ + "/run", 0700);
  RunResult r = Probe({"read", data_}, {"--ask"}, o);
  EXPECT_EQ(r.status, 125) << r.out << r.err;
  EXPECT_NE(r.err.find("approval socket"), std::string::npos) << r.err;
}

// A host without an allow rule is held while the approver is asked, then forwarded. The name
// resolves to the host's loopback (--resolve); the address rule lets that address through
// once the name is approved.
TEST_F(ApprovalsTest, HostApprovalHoldsThenForwards) {
  LocalHttp up("upstream-ok");
  Approver approver(runtime_, [](const json& req) -> std::optional<json> {
    if (req.value("kind", "") == "host") return json{{"op", "approve"}, {"scope", "once"}};
    return json{{"op", "deny"}};
  });
  std::string url = "http://approved.test:" + std::to_string(up.port()) + "/";
  RunResult r = Shell("curl -sS --max-time 20 " + url,
                      {"--ask", "-n", "127.0.0.1:" + std::to_string(up.port()), "--resolve",
                       "approved.test:127.0.0.1"},
                      Opts());
  EXPECT_EQ(r.status, 0) << r.out << r.err << approver.errors();
  EXPECT_NE(r.out.find("upstream-ok"), std::string::npos) << r.out;
  // curl may also ask for files (its config under the real HOME): only the host counts here.
  std::vector<json> hosts;
  for (const json& q : approver.seen()) {
    if (q.value("kind", "") == "host") hosts.push_back(q);
  }
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0]["subject"], "approved.test");
  EXPECT_EQ(hosts[0]["port"], up.port());
}

TEST_F(ApprovalsTest, HostDeniedIsRefusedAndNeverReached) {
  LocalHttp up("upstream-ok");
  Approver approver(runtime_, [](const json&) { return json{{"op", "deny"}}; });
  std::string url = "http://denied.test:" + std::to_string(up.port()) + "/";
  RunResult r = Shell("curl -sS --max-time 20 -o /dev/null -w '%{http_code}' " + url,
                      {"--ask", "-n", "127.0.0.1:" + std::to_string(up.port()), "--resolve",
                       "denied.test:127.0.0.1"},
                      Opts());
  EXPECT_NE(r.out.find("403"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(up.hits(), 0);
  int hosts = 0;
  for (const json& q : approver.seen()) hosts += q.value("kind", "") == "host";
  EXPECT_EQ(hosts, 1);
}

// A request an "ask" method and path rule matches is held while the approver is asked, with
// its method and path; an approval scoped to the path's directory covers the next request
// there, and a request elsewhere is asked again (here denied, and never sent).
TEST_F(ApprovalsTest, AnAskRuleAsksForTheRequestAndGrantsItsPathPrefix) {
  LocalHttp up("deleted");
  const std::string host = "api.test:" + std::to_string(up.port());
  const std::string profile = root_->path() + "/ask-rules.toml";
  WriteFile(profile, "extends = \"default\"\n"
                     "[[network.rules]]\nhost = \"" + host + "\"\nmethods = [\"DELETE\"]\n"
                     "action = \"ask\"\n"
                     "[[network.rules]]\nhost = \"" + host + "\"\naction = \"allow\"\n");
  chmod(profile.c_str(), 0644);
  Approver approver(runtime_, [](const json& req) -> std::optional<json> {
    if (req.value("kind", "") != "request") return json{{"op", "deny"}};
    if (req.value("path", "").rfind("/repos/acme/", 0) == 0) {
      return json{{"op", "approve"}, {"scope", "session"}, {"prefix", true}};
    }
    return json{{"op", "deny"}};
  });
  const std::string base = "http://" + host;
  RunResult r = Shell("for p in /repos/acme/a /repos/acme/b /other/x; do curl -sS --max-time 20 "
                      "-o /dev/null -w '%{http_code} ' -X DELETE " + base + "$p; done",
                      {"--ask", "-p", profile, "-n", "127.0.0.1:" + std::to_string(up.port()),
                       "--resolve", "api.test:127.0.0.1"},
                      Opts());
  EXPECT_EQ(r.out, "200 200 403 ") << r.out << r.err << approver.errors();
  EXPECT_EQ(up.hits(), 2);
  std::vector<json> asked;
  for (const json& q : approver.seen()) {
    if (q.value("kind", "") == "request") asked.push_back(q);
  }
  ASSERT_EQ(asked.size(), 2u);  // /repos/acme/b rode on the first grant
  EXPECT_EQ(asked[0]["method"], "DELETE");
  EXPECT_EQ(asked[0]["path"], "/repos/acme/a");
  EXPECT_EQ(asked[0]["subject"], "api.test");
  EXPECT_EQ(asked[1]["path"], "/other/x");
}

// The audit trail has the question, the answer and the refused open.
TEST_F(ApprovalsTest, DenialsAreAudited) {
  Approver approver(runtime_, [](const json&) { return json{{"op", "deny"}}; });
  RunOptions o = Opts();
  o.env["XDG_STATE_HOME"] = root_->path() + "/state";
  RunResult r = Probe({"read", data_}, {"--ask"}, o);
  EXPECT_NE(r.out.find("err EACCES"), std::string::npos) << r.out;
  glob_t g = {};
  std::string pattern = root_->path() + "/state/ward/sessions/*/events.jsonl";
  ASSERT_EQ(glob(pattern.c_str(), 0, nullptr, &g), 0);
  ASSERT_EQ(g.gl_pathc, 1u);
  std::ifstream in(g.gl_pathv[0]);
  globfree(&g);
  bool deny = false, asked = false;
  std::string line;
  while (std::getline(in, line)) {
    json e = json::parse(line, nullptr, false);
    if (!e.is_object()) continue;
    std::string type = e.value("type", "");
    const json& d = e.contains("data") ? e["data"] : e;
    if (type == "syscall.deny" && d.value("path", "") == data_ &&
        d.value("rule", "") == "approvals") {
      deny = true;
    }
    if (type.rfind("approval.", 0) == 0) asked = true;
  }
  EXPECT_TRUE(deny);
  EXPECT_TRUE(asked);
}

// On a terminal (the supervisor owns the real one; the command has its own pty) the question is
// shown there and the typed answer (the code shown with it allows) never reaches the command.
class ApprovalsPtyTest : public ApprovalsTest {
 protected:
  // Types `answer` once the question is shown; "{code}" in it stands for the question's code.
  std::string RunOnPty(const std::vector<std::string>& cmd, std::string answer, int* status) {
    int master = -1, slave = -1;
    struct winsize ws = {40, 120, 0, 0};
    if (openpty(&master, &slave, nullptr, nullptr, &ws) != 0) {
      ADD_FAILURE() << "openpty";
      return "";
    }
    RunOptions o = Defaults();
    o.env["XDG_RUNTIME_DIR"] = runtime_;
    std::vector<std::string> argv = {WardBin(), "run", "--ask", "-r", StageDir(), "--"};
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    pid_t pid = SpawnOnTerminal(argv, o, master, slave);
    close(slave);
    std::string out;
    bool sent = false;
    auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
      struct pollfd p = {master, POLLIN, 0};
      if (poll(&p, 1, 100) > 0) {
        char buf[4096];
        ssize_t got = read(master, buf, sizeof buf);
        if (got <= 0) break;
        out.append(buf, static_cast<size_t>(got));
      }
      if (!sent && out.find("[ward] answer: ") != std::string::npos) {
        size_t code = out.find("[ward] type ");
        size_t at = answer.find("{code}");
        if (at != std::string::npos && code != std::string::npos) {
          answer.replace(at, 6, out.substr(code + 12, 4));
        }
        ssize_t w = write(master, answer.data(), answer.size());
        (void)w;
        sent = true;
      }
    }
    close(master);
    waitpid(pid, status, 0);
    return out;
  }
};

TEST_F(ApprovalsPtyTest, TerminalPromptAllowsOnce) {
  int status = 0;
  std::string out = RunOnPty({ProbeBin(), "read", data_}, "{code}\r", &status);
  EXPECT_NE(out.find("[ward]"), std::string::npos) << out;
  EXPECT_NE(out.find(data_), std::string::npos) << out;
  EXPECT_NE(out.find("ok approved-content-31"), std::string::npos) << out;
}

TEST_F(ApprovalsPtyTest, TerminalPromptDenies) {
  int status = 0;
  std::string out = RunOnPty({ProbeBin(), "read", data_}, "n", &status);
  EXPECT_NE(out.find("[ward]"), std::string::npos) << out;
  EXPECT_NE(out.find("err EACCES"), std::string::npos) << out;
  EXPECT_EQ(out.find("approved-content-31"), std::string::npos) << out;
}

}  // namespace
}  // namespace ward::test
