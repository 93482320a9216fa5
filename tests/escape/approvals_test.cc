// Approvals, threat class G (TOCTOU) and A (read secrets): with `ward run --ask` every
// open is trapped and decided by the supervisor. A second thread that rewrites the path buffer
// while the supervisor decides, or a symlink planted where a grant points, must never yield a
// denied file. Each denial has a positive control (the granted file is read).
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "approver.h"
#include "harness.h"

namespace ward::test {
namespace {

using nlohmann::json;

constexpr const char* kSecret = "SECRET-NEVER-OUT-5e21";

class ApprovalsEscapeTest : public SandboxTest {
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
    secret_ = outside_ + "/secret.txt";
    granted_ = outside_ + "/granted.txt";
    WriteFile(secret_, kSecret, 0600);
    WriteFile(granted_, "granted-ok", 0600);
    WriteFile(ws_ + "/harmless.txt", "harmless-ok");
  }
  void TearDown() override {
    if (!outside_.empty()) RunProgram({"/bin/rm", "-rf", outside_});
  }
  RunOptions Opts() const {
    RunOptions o;
    o.env["XDG_RUNTIME_DIR"] = runtime_;
    o.timeout_s = 120;
    return o;
  }
  std::string Profile(const std::string& approvals_toml) {
    std::string p = root_->path() + "/ask.toml";
    WriteFile(p, "extends = \"default\"\n[approvals]\n" + approvals_toml);
    return p;
  }
  // Approves the granted file for the session, denies everything else.
  static std::optional<json> GrantOnlyGranted(const std::string& granted, const json& req) {
    if (req.value("subject", "") == granted && req.value("access", "") == "read") {
      return json{{"op", "approve"}, {"scope", "session"}};
    }
    return json{{"op", "deny"}};
  }

  std::string runtime_, outside_, secret_, granted_;
};

// The buffer flips between a path the view allows (the open continues in the kernel) and the
// secret (asked, denied by a deny rule): the kernel's own lookup never finds the secret. A read
// of the buffer mid-flip names neither path (on an emulated machine, often); where that is a host
// path it is asked about, and the approver denies it.
TEST_F(ApprovalsEscapeTest, RaceAllowedPathAgainstDeniedSecret) {
  Approver approver(runtime_, [](const json&) { return json{{"op", "deny"}}; });
  RunResult r = Probe({"race-open", ws_ + "/harmless.txt", secret_, "3000"},
                      {"--ask", "--deny", secret_}, Opts());
  EXPECT_EQ(r.out.find(kSecret), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("err EACCES"), std::string::npos) << r.out << r.err;  // different=0
  EXPECT_EQ(r.out.find("same=0 "), std::string::npos) << r.out;  // the control: opens worked
}

// The buffer flips between a granted host file (opened by the supervisor) and the secret
// (denied by the approver's standing answer): the supervisor opens the path it read and
// checked, never the one a second thread wrote afterwards.
TEST_F(ApprovalsEscapeTest, RaceGrantedPathAgainstDeniedSecret) {
  std::string profile = Profile("auto_deny = [\"" + secret_ + "\"]\n");
  std::string granted = granted_;
  Approver approver(runtime_,
                    [granted](const json& req) { return GrantOnlyGranted(granted, req); });
  RunResult r = Probe({"race-open", granted_, secret_, "3000"}, {"-p", profile, "--ask"}, Opts());
  EXPECT_EQ(r.out.find(kSecret), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("err EACCES"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.out.find("same=0 "), std::string::npos) << r.out;
}

// Same race, every secret question answered "deny" by the approver over the socket.
TEST_F(ApprovalsEscapeTest, RaceWithTheApproverDenying) {
  std::string granted = granted_;
  Approver approver(runtime_,
                    [granted](const json& req) { return GrantOnlyGranted(granted, req); });
  // The positive control (the approver was asked about the secret at least once) needs the
  // flipper to win a narrow window; a loaded machine may need a few runs for that. Every run
  // must keep the secret out.
  bool asked_secret = false;
  for (int attempt = 0; attempt < 5 && !asked_secret; ++attempt) {
    RunResult r = Probe({"race-open", granted_, secret_, "300"}, {"--ask"}, Opts());
    EXPECT_EQ(r.out.find(kSecret), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("err EACCES"), std::string::npos) << r.out << r.err;
    for (const json& s : approver.seen()) asked_secret |= s.value("subject", "") == secret_;
  }
  EXPECT_TRUE(asked_secret);
}

// A link planted in the workspace (writable by the sandbox) that points at the secret: the open
// is in the view, continues in the kernel, and the target does not exist inside. Even an
// approver that allows everything is never asked for the secret through the link.
TEST_F(ApprovalsEscapeTest, WorkspaceSymlinkToSecret) {
  Approver approver(runtime_, [](const json&) {
    return json{{"op", "approve"}, {"scope", "session"}};
  });
  ASSERT_EQ(symlink(secret_.c_str(), (ws_ + "/planted").c_str()), 0);
  RunResult r = Probe({"read", ws_ + "/planted"}, {"--ask"}, Opts());
  EXPECT_EQ(r.out.find(kSecret), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("err ENOENT"), std::string::npos) << r.out;
  // Planted from inside, too.
  RunResult s = Shell("ln -s " + secret_ + " inside-link && cat inside-link", {"--ask"}, Opts());
  EXPECT_EQ(s.out.find(kSecret), std::string::npos) << s.out;
  for (const json& q : approver.seen()) EXPECT_NE(q.value("subject", ""), secret_);
}

// A prefix grant on a host directory in which a file is replaced by a symlink to the secret
// after the first read (and a directory by a symlink to the secret's directory): the
// supervisor's open refuses every symlink on the way.
TEST_F(ApprovalsEscapeTest, SymlinkSwappedIntoGrantedPrefix) {
  std::string dir = outside_ + "/granted-dir";
  MakeDirs(dir, 0700);
  WriteFile(dir + "/file.txt", "prefix-ok", 0600);
  std::atomic<bool> swapped{false};
  std::optional<std::chrono::steady_clock::time_point> granted_at;
  std::string secret = secret_;
  Approver approver(
      runtime_,
      [dir](const json& req) -> std::optional<json> {
        if (req.value("subject", "") == dir + "/file.txt") {
          return json{{"op", "approve"}, {"scope", "session"}, {"prefix", dir}};
        }
        return json{{"op", "deny"}};
      },
      [&, dir, secret](const std::string& socket) {
        if (swapped) return;
        json g = Approver::Call(socket, {{"op", "grants"}});
        if (!g.is_object() || !g.contains("grants") || g["grants"].empty()) return;
        // The grant exists; the first read follows within milliseconds (the next one 300 ms
        // later): swap the file for a link in between.
        if (!granted_at) granted_at = std::chrono::steady_clock::now();
        if (std::chrono::steady_clock::now() - *granted_at < std::chrono::milliseconds(120)) return;
        std::string f = dir + "/file.txt";
        unlink(f.c_str());
        if (symlink(secret.c_str(), f.c_str()) == 0 &&
            symlink(outside_.c_str(), (dir + "/sub").c_str()) == 0) {
          swapped = true;
        }
      });
  RunResult r = Probe({"read-each", dir + "/file.txt", "4", "300"}, {"--ask"}, Opts());
  EXPECT_TRUE(swapped);
  EXPECT_NE(r.out.find("1:prefix-ok"), std::string::npos) << r.out << r.err;  // the control
  EXPECT_EQ(r.out.find(kSecret), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4:ELOOP"), std::string::npos) << r.out;
  // Through a directory link inside the granted prefix.
  RunResult d = Probe({"read", dir + "/sub/secret.txt"}, {"--ask"}, Opts());
  EXPECT_EQ(d.out.find(kSecret), std::string::npos) << d.out;
  EXPECT_EQ(d.status, 1) << d.out;
}

// Nothing from inside reaches the approval socket: not by path (not in the view), not as an
// abstract socket (own network namespace), not by asking to open it.
TEST_F(ApprovalsEscapeTest, SandboxCannotReachTheApprovalSocket) {
  Approver approver(runtime_, [](const json&) { return json{{"op", "deny"}}; });
  RunResult r = Shell("for s in " + runtime_ + "/ward/*.sock; do echo \"found $s\"; done; echo end",
                      {"--ask"}, Opts());
  EXPECT_EQ(r.out.find("found " + runtime_ + "/ward/approvals-"), std::string::npos) << r.out;
  RunResult u = Probe({"unix-connect", runtime_ + "/ward"}, {"--ask"}, Opts());
  EXPECT_NE(u.out.find("err ENOENT"), std::string::npos) << u.out;
  RunResult a = Probe({"abstract-connect", "ward"}, {"--ask"}, Opts());
  EXPECT_EQ(a.status, 1) << a.out;
  EXPECT_TRUE(approver.seen().empty());
}

}  // namespace
}  // namespace ward::test
