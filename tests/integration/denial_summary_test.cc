// What a run was refused reaches the user: the end-of-run summary on ward's stderr (one line per
// distinct target, counted, with the flag that would allow it), --json-status's `denials`, and
// `ward audit show SESSION --denials` from the trail. Each is asserted as a user would see it.
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "harness.h"

namespace ward::test {
namespace {

class DenialSummary : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    state_ = root_->path() + "/state";
  }
  RunOptions WithState() {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = state_;
    return o;
  }
  // `ward run --json-status FD [opts] -- sh -c SCRIPT`: the result and the status object.
  RunResult ShellWithStatus(const std::string& script, const std::vector<std::string>& ward_opts,
                            nlohmann::json* status) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    RunOptions o = WithState();
    o.pass_fds = {fds[1]};
    std::vector<std::string> opts = {"--json-status", std::to_string(fds[1])};
    opts.insert(opts.end(), ward_opts.begin(), ward_opts.end());
    RunResult r = Shell(script, opts, o);
    close(fds[1]);
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, n);
    close(fds[0]);
    *status = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(status->is_discarded()) << "no --json-status: " << text << r.err;
    return r;
  }
  // The lines of `text` that start with "ward: blocked" or "ward: and".
  static std::vector<std::string> SummaryLines(const std::string& text) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(start, end - start);
      if (line.starts_with("ward: blocked") || line.starts_with("ward: and ")) {
        lines.push_back(line);
      }
      start = end + 1;
    }
    return lines;
  }
  // An executable script at `path` (made with its directories).
  void Tool(const std::string& path, const std::string& says) {
    MakeDirs(path.substr(0, path.rfind('/')));
    WriteFile(path, "#!/bin/sh\necho " + says + "\n", 0755);
  }
  static bool HasCurl() { return PathExists("/usr/bin/curl"); }

  std::string state_;
};

// Connections the proxy refused: one line per host:port, counted, with the -n that allows it.
// (-n allowed.test makes the proxy exist; nothing leaves the machine: refused.test is refused
// before any name is resolved.)
TEST_F(DenialSummary, BlockedProxyConnectionsNameTheFlagThatAllowsThem) {
  if (!HasCurl()) GTEST_SKIP() << "no curl on this machine";
  RunResult r = Shell(
      "for i in 1 2 3; do curl -s --max-time 10 -o /dev/null https://refused.test/; done; "
      "echo done",
      {"-n", "allowed.test"}, WithState());
  EXPECT_EQ(r.out, "done\n") << r.err;
  EXPECT_EQ(SummaryLines(r.err),
            std::vector<std::string>{
                "ward: blocked 3 connections to refused.test:443 — allow with: -n refused.test"})
      << r.err;
}

// A protected name: refused on purpose, counted, and pointed at `ward why` (no flag offered);
// the summary comes after the command's own output, on stderr only.
TEST_F(DenialSummary, ProtectedWritesPointAtWardWhy) {
  RunResult r = Shell("echo x > .envrc; echo x > .envrc; echo out; echo err >&2", {}, WithState());
  EXPECT_EQ(r.out, "out\n");
  const std::string line = "ward: blocked 2 writes to " + ws_ +
                           "/.envrc (protected) — see: ward why " + ws_ + "/.envrc";
  EXPECT_EQ(SummaryLines(r.err), std::vector<std::string>{line}) << r.err;
  EXPECT_LT(r.err.find("err\n"), r.err.find(line)) << r.err;
  EXPECT_EQ(r.out.find("ward:"), std::string::npos);
}

// A creation the guard performed and the view refused (read-only bind): a file.write denial,
// with the -w of its directory, in the summary and in the trail.
TEST_F(DenialSummary, RefusedCreationIsAFileWriteDenial) {
  RunResult r = Shell("touch /usr/ward-denial-probe 2>/dev/null; echo rc=$?", {}, WithState());
  EXPECT_EQ(r.out, "rc=1\n") << r.err;
  EXPECT_EQ(SummaryLines(r.err),
            std::vector<std::string>{"ward: blocked 1 write to /usr/ward-denial-probe (read-only "
                                     "here) — allow with: -w /usr"})
      << r.err;
  RunResult shown = RunWard({"audit", "show", "last", "--type", "file.deny", "--json"}, WithState());
  EXPECT_NE(shown.out.find(R"("errno":"EROFS")"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find(R"("path":"/usr/ward-denial-probe")"), std::string::npos) << shown.out;
}

// A write the policy allows but the directory's own mode refuses is not ward's refusal: no line.
TEST_F(DenialSummary, APermissionErrorWhereThePolicyAllowsWritesIsNotWards) {
  RunResult r = Shell("mkdir ro && chmod 555 ro && touch ro/x 2>/dev/null; echo rc=$?; "
                      "chmod 755 ro",
                      {}, WithState());
  EXPECT_TRUE(r.out == "rc=1\n" || r.out == "rc=0\n") << r.out << r.err;
  EXPECT_EQ(r.err.find("ward: blocked"), std::string::npos) << r.err;
}

// --quiet: nothing of the summary (the trail still has the denial).
TEST_F(DenialSummary, QuietPrintsNoSummary) {
  RunResult r = Shell("touch /usr/ward-denial-probe 2>/dev/null; echo x > .envrc; echo ok",
                      {"--quiet"}, WithState());
  EXPECT_EQ(r.out, "ok\n");
  EXPECT_EQ(r.err.find("ward:"), std::string::npos) << r.err;
  RunResult shown = RunWard({"audit", "show", "last", "--denials", "--json"}, WithState());
  nlohmann::json j = nlohmann::json::parse(shown.out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << shown.out << shown.err;
  EXPECT_EQ(j.size(), 2u) << j.dump();
}

// Nothing refused, nothing said.
TEST_F(DenialSummary, NothingDeniedPrintsNothing) {
  RunResult r = Shell("echo ok > made-here", {}, WithState());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

// At most ten lines, then where the rest are: the trail of this very session, whose --denials
// lists all of them (human table and JSON), most frequent first.
TEST_F(DenialSummary, TenLinesThenTheRestInTheTrail) {
  std::string script = "touch /usr/w-00 /usr/w-00 /usr/w-00";
  for (int i = 1; i <= 12; ++i) script += " /usr/w-" + std::string(i < 10 ? "0" : "") + std::to_string(i);
  RunResult r = Shell(script + " 2>/dev/null; true", {}, WithState());
  std::vector<std::string> lines = SummaryLines(r.err);
  ASSERT_EQ(lines.size(), 11u) << r.err;
  EXPECT_EQ(lines[0], "ward: blocked 3 writes to /usr/w-00 (read-only here) — allow with: -w /usr");
  EXPECT_EQ(lines[1], "ward: blocked 1 write to /usr/w-01 (read-only here) — allow with: -w /usr");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(lines[10], m,
                               std::regex("ward: and 3 more: ward audit show (\\S+) --denials")))
      << lines[10];
  const std::string session = m[1];
  RunResult human = RunWard({"audit", "show", session, "--denials"}, WithState());
  EXPECT_EQ(human.status, 0) << human.err;
  EXPECT_NE(human.out.find("/usr/w-12"), std::string::npos) << human.out;
  EXPECT_EQ(human.out.substr(0, human.out.find('\n')).find("COUNT"), 2u) << human.out;
  RunResult last = RunWard({"audit", "show", "last", "--denials", "--json"}, WithState());
  nlohmann::json j = nlohmann::json::parse(last.out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << last.out << last.err;
  ASSERT_EQ(j.size(), 13u);
  EXPECT_EQ(j[0], nlohmann::json({{"kind", "file.write"},
                                  {"target", "/usr/w-00"},
                                  {"count", 3},
                                  {"rule", "read-only here"},
                                  {"allow_with", "-w /usr"},
                                  {"on_purpose", false}}));
}

// --json-status carries the same entries, each with kind, target, count, rule, allow_with and
// on_purpose.
TEST_F(DenialSummary, JsonStatusListsTheDenials) {
  nlohmann::json status;
  RunResult r = ShellWithStatus(
      "touch /usr/ward-denial-probe 2>/dev/null; echo x > .envrc; echo x > .envrc; true", {},
      &status);
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(status["denials"].is_array()) << status.dump();
  EXPECT_EQ(status["denials"],
            nlohmann::json::parse(R"([
      {"kind":"protected","target":")" + ws_ + R"(/.envrc","count":2,
       "rule":"protected: host tools read or run it","allow_with":"","on_purpose":true},
      {"kind":"file.write","target":"/usr/ward-denial-probe","count":1,"rule":"read-only here",
       "allow_with":"-w /usr","on_purpose":false}])"));
}

// A command that the host's PATH finds in a directory the sandbox does not show: where it is,
// and the -r that shows it; recorded for `ward audit show --denials`.
TEST_F(DenialSummary, CommandNotFoundNamesTheHostPathAndTheFlag) {
  Tool(home_ + "/.mytool/bin/ward-mytool", "hello");
  RunOptions o = WithState();
  o.env["PATH"] = home_ + "/.mytool/bin:" + o.env["PATH"];
  RunResult r = RunWard({"run", "--", "ward-mytool"}, o);
  EXPECT_EQ(r.status, 127) << r.err;
  EXPECT_NE(r.err.find("ward: 'ward-mytool' is " + home_ +
                       "/.mytool/bin/ward-mytool on the host, hidden here — add: -r ~/.mytool\n"),
            std::string::npos)
      << r.err;
  RunResult shown = RunWard({"audit", "show", "last", "--denials", "--json"}, o);
  EXPECT_NE(shown.out.find(R"("allow_with":"-r ~/.mytool")"), std::string::npos) << shown.out;
  // And with the flag it says, the command runs.
  r = RunWard({"run", "-r", home_ + "/.mytool", "--", "ward-mytool"}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "hello\n");
}

// A command that is a symlink, in a directory the sandbox does not show, to a binary it does
// show (/bin/sh): the kernel never reaches the link inside, so it is hidden there all the same.
TEST_F(DenialSummary, ASymlinkInAHiddenDirectoryIsHiddenEvenToAShownBinary) {
  MakeDirs(home_ + "/.links/bin");
  ASSERT_EQ(symlink("/bin/sh", (home_ + "/.links/bin/ward-linked-sh").c_str()), 0);
  RunOptions o = WithState();
  o.env["PATH"] = home_ + "/.links/bin:" + o.env["PATH"];
  RunResult r = RunWard({"run", "--", "ward-linked-sh", "-c", "echo ran"}, o);
  EXPECT_EQ(r.status, 127) << r.err;
  EXPECT_NE(r.err.find("ward: 'ward-linked-sh' is " + home_ +
                       "/.links/bin/ward-linked-sh on the host, hidden here — add: -r ~/.links\n"),
            std::string::npos)
      << r.err;
  // The control: with the flag it names, the link is shown and followed.
  r = RunWard({"run", "-r", home_ + "/.links", "--", "ward-linked-sh", "-c", "echo ran"}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "ran\n");
}

// A shim on the host's PATH that the sandbox does not see: the run finds another binary, and
// says so once per pair, not at every run.
TEST_F(DenialSummary, DifferentBinaryInsideIsSaidOnce) {
  Tool(home_ + "/.shims/true", "shim");
  RunOptions o = WithState();
  o.env["PATH"] = home_ + "/.shims:" + o.env["PATH"];
  RunResult first = RunWard({"run", "--", "true"}, o);
  EXPECT_EQ(first.status, 0) << first.err;
  EXPECT_EQ(first.out, "");  // /usr/bin/true ran, not the shim
  EXPECT_NE(first.err.find("ward: 'true' here is /usr/bin/true; on the host it is " + home_ +
                           "/.shims/true (hidden here) — add: -r ~/.shims (said once)\n"),
            std::string::npos)
      << first.err;
  RunResult second = RunWard({"run", "--", "true"}, o);
  EXPECT_EQ(second.status, 0) << second.err;
  EXPECT_EQ(second.err, "");
}

}  // namespace
}  // namespace ward::test
