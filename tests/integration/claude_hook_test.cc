// `ward hook claude-pretooluse` for Claude Code's own tools (Read, Write, Edit, MultiEdit,
// NotebookEdit, Glob, Grep, LS, WebFetch), which Claude Code runs in its own process on the
// host: each may touch only what a sandbox of the same policy could, steering included
// (symlink chains mixing relative and absolute links, dangling links, /proc magic links), with
// an allowed control for each tool; each decision is in the audit trail. And the hook's answer
// for Bash only goes to a Claude Code version known to apply the rewrite.
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace ward::test {
namespace {

class ClaudeHookTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    outside_ = root_->path() + "/outside";
    MakeDirs(outside_, 0755);
    WriteFile(ws_ + "/README.md", "# readme\n", 0644);
    WriteFile(ws_ + "/nb.ipynb", "{}", 0644);
    MakeDirs(ws_ + "/.git/hooks", 0755);
    MakeDirs(ws_ + "/.git/objects", 0755);
    MakeDirs(ws_ + "/.git/refs", 0755);
    WriteFile(ws_ + "/.git/HEAD", "ref: refs/heads/main\n", 0644);
    bashrc_ = home_ + "/.bashrc";
    WriteFile(bashrc_, "# bashrc\n", 0644);
  }

  struct Answer {
    int status = -1;
    std::string decision;  // "deny", or "" for no opinion
    std::string reason;
    std::string err;
  };

  Answer Ask(const std::string& tool, const nlohmann::json& input,
             const std::vector<std::string>& extra = {}) {
    nlohmann::json in = {{"session_id", "hook-test"},
                         {"cwd", ws_},
                         {"hook_event_name", "PreToolUse"},
                         {"tool_name", tool},
                         {"tool_input", input}};
    RunOptions o = Defaults();
    o.stdin_data = in.dump();
    std::vector<std::string> args = {"hook", "claude-pretooluse"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = RunWard(args, o);
    Answer a;
    a.status = r.status;
    a.err = r.err;
    if (!r.out.empty()) {
      auto j = nlohmann::json::parse(r.out, nullptr, false);
      if (!j.is_discarded()) {
        a.decision = j["hookSpecificOutput"].value("permissionDecision", "");
        a.reason = j["hookSpecificOutput"].value("permissionDecisionReason", "");
      }
    }
    return a;
  }

  void ExpectDenied(const std::string& tool, const nlohmann::json& input) {
    Answer a = Ask(tool, input);
    EXPECT_EQ(a.status, 0) << tool << " " << input.dump() << ": " << a.err;
    EXPECT_EQ(a.decision, "deny") << tool << " " << input.dump() << ": " << a.err;
    EXPECT_NE(a.reason.find("ward: "), std::string::npos) << a.reason;
  }
  void ExpectAllowed(const std::string& tool, const nlohmann::json& input) {
    Answer a = Ask(tool, input);
    EXPECT_EQ(a.status, 0) << tool << " " << input.dump() << ": " << a.err;
    EXPECT_EQ(a.decision, "") << tool << " " << input.dump() << ": " << a.reason;
  }

  std::string outside_;
  std::string bashrc_;
};

TEST_F(ClaudeHookTest, EachFileToolIsHeldToThePolicy) {
  const std::string key = home_ + "/.ssh/id_ed25519";
  ASSERT_TRUE(PathExists(key));
  // Reads: the workspace is the host's file; ~/.ssh is denied, HOME is private scratch.
  ExpectAllowed("Read", {{"file_path", ws_ + "/README.md"}});
  ExpectAllowed("Read", {{"file_path", "README.md"}});  // relative to the call's cwd
  ExpectAllowed("Read", {{"file_path", "/usr/bin/env"}});
  ExpectDenied("Read", {{"file_path", key}});
  ExpectDenied("Read", {{"file_path", "~/.ssh/id_ed25519"}});  // Claude Code expands ~
  ExpectDenied("Read", {{"file_path", bashrc_}});
  ExpectAllowed("NotebookRead", {{"notebook_path", ws_ + "/nb.ipynb"}});
  ExpectDenied("NotebookRead", {{"notebook_path", home_ + "/nb.ipynb"}});
  // Writes: the workspace, not outside it, not protected or host-executed content.
  for (const char* tool : {"Write", "Edit", "MultiEdit"}) {
    ExpectAllowed(tool, {{"file_path", ws_ + "/new.txt"}});
    ExpectDenied(tool, {{"file_path", bashrc_}});
    ExpectDenied(tool, {{"file_path", outside_ + "/x"}});
    ExpectDenied(tool, {{"file_path", "/usr/local/bin/x"}});  // read-only in the sandbox
    ExpectDenied(tool, {{"file_path", ws_ + "/.git/hooks/pre-commit"}});
    ExpectDenied(tool, {{"file_path", ws_ + "/.git/config"}});
  }
  ExpectAllowed("NotebookEdit", {{"notebook_path", ws_ + "/nb.ipynb"}});
  ExpectDenied("NotebookEdit", {{"notebook_path", outside_ + "/nb.ipynb"}});
  // Directory walks: the workspace, not HOME or ~/.ssh, nor a Glob that reaches out.
  ExpectAllowed("Grep", {{"pattern", "x"}});  // no path: the cwd
  ExpectAllowed("Grep", {{"pattern", "x"}, {"path", ws_}});
  ExpectDenied("Grep", {{"pattern", "PRIVATE KEY"}, {"path", home_ + "/.ssh"}});
  ExpectAllowed("Glob", {{"pattern", "**/*.md"}});
  ExpectDenied("Glob", {{"pattern", home_ + "/.ssh/*"}});
  Answer climbs = Ask("Glob", {{"pattern", "../home/.ssh/*"}});
  EXPECT_EQ(climbs.status, 2) << climbs.reason;  // a pattern with ".." is not judged: blocked
  EXPECT_NE(climbs.err.find("climbs out"), std::string::npos) << climbs.err;
  ExpectAllowed("LS", {{"path", ws_}});
  ExpectDenied("LS", {{"path", home_}});
  // A directory with a path under it that a deny rule hides cannot be walked.
  Answer a = Ask("Grep", {{"pattern", "x"}, {"path", ws_}}, {"--deny", ws_ + "/secret"});
  EXPECT_EQ(a.decision, "deny") << a.err;
  // Tools that touch no host path get no opinion; one the hook does not know is held to the
  // write rule where it names a path.
  ExpectAllowed("TodoWrite", {{"todos", nlohmann::json::array()}});
  ExpectAllowed("FutureFileTool", {{"file_path", ws_ + "/y"}});
  ExpectDenied("FutureFileTool", {{"file_path", bashrc_}});
  // WebFetch: only hosts the policy allows.
  ExpectDenied("WebFetch", {{"url", "https://exfil.example/?k=1"}, {"prompt", "p"}});
  // A URL a fetcher reads differently (WHATWG: "\\" is "/", tabs dropped) is refused.
  for (const char* url : {"https://exfil.example\\@docs.example/", "https://exfil.example:80\\@docs.example/",
                          "https://exfil.exa\tmple/", "https://docs.example:1:2/"}) {
    a = Ask("WebFetch", {{"url", url}, {"prompt", "p"}}, {"-n", "docs.example"});
    EXPECT_EQ(a.decision, "deny") << url << " " << a.err;
  }
  a = Ask("WebFetch", {{"url", "https://docs.example:443/x"}, {"prompt", "p"}},
          {"-n", "docs.example"});
  EXPECT_EQ(a.decision, "") << a.reason << a.err;
}

TEST_F(ClaudeHookTest, SteeredPathsAreResolvedOnTheHost) {
  const std::string key = home_ + "/.ssh/id_ed25519";
  // A chain in the workspace: relative link -> absolute link -> ~/.ssh.
  ASSERT_EQ(symlink((home_ + "/.ssh").c_str(), (ws_ + "/abs").c_str()), 0);
  ASSERT_EQ(symlink("abs", (ws_ + "/rel").c_str()), 0);
  ExpectDenied("Read", {{"file_path", ws_ + "/rel/id_ed25519"}});
  ExpectDenied("Grep", {{"pattern", "KEY"}, {"path", ws_ + "/rel"}});
  // A dangling link: a write through it would create the host's file it names.
  ASSERT_EQ(symlink((home_ + "/.profile").c_str(), (ws_ + "/dangling").c_str()), 0);
  ASSERT_EQ(symlink("../outside/made-by-write", (ws_ + "/dangling-rel").c_str()), 0);
  ExpectDenied("Write", {{"file_path", ws_ + "/dangling"}});
  ExpectDenied("Write", {{"file_path", ws_ + "/dangling-rel"}});
  // A link's own target may climb with "..": the kernel takes that from where the link is.
  MakeDirs(ws_ + "/sub", 0755);
  ASSERT_EQ(symlink("../../home/.ssh", (ws_ + "/sub/up").c_str()), 0);
  ExpectDenied("Read", {{"file_path", ws_ + "/sub/up/id_ed25519"}});
  // /proc magic links name another process's objects (the hook's /proc/self is not Claude
  // Code's): refused even where the text would lead somewhere allowed.
  ExpectDenied("Read", {{"file_path", "/proc/self/root" + key}});
  ExpectDenied("Read", {{"file_path", "/proc/self/cwd/README.md"}});
  ExpectDenied("Read", {{"file_path", "/proc/" + std::to_string(getpid()) + "/cwd/x"}});
  ExpectDenied("Write", {{"file_path", "/dev/fd/1"}});
  // A loop is refused, not followed forever.
  ASSERT_EQ(symlink("loop-b", (ws_ + "/loop-a").c_str()), 0);
  ASSERT_EQ(symlink("loop-a", (ws_ + "/loop-b").c_str()), 0);
  ExpectDenied("Read", {{"file_path", ws_ + "/loop-a"}});
  // Controls: links that stay inside the workspace are followed and allowed.
  ASSERT_EQ(symlink("README.md", (ws_ + "/readme-link").c_str()), 0);
  ASSERT_EQ(symlink((ws_ + "/sub").c_str(), (ws_ + "/sub-link").c_str()), 0);
  ExpectAllowed("Read", {{"file_path", ws_ + "/readme-link"}});
  ExpectAllowed("Write", {{"file_path", ws_ + "/sub-link/new.txt"}});
}

// Claude Code's file tools normalise a path as text (trim, "~", "..") before they open it, and
// skip that before the hook for paths past PATH_MAX: the hook reads each path the same way or
// refuses it.
TEST_F(ClaudeHookTest, PathsAreReadAsClaudeCodeReadsThem) {
  const std::string ssh = home_ + "/.ssh";
  MakeDirs(ws_ + "/d1/d2", 0755);
  ASSERT_EQ(symlink("d1/d2", (ws_ + "/a").c_str()), 0);
  // ".." is taken as text before any symlink: a/../../home is HOME's, not d1's.
  ExpectDenied("Grep", {{"pattern", "."}, {"path", ws_ + "/a/../../home/.ssh"}});
  ExpectDenied("Read", {{"file_path", ws_ + "/a/../../home/.ssh/id_ed25519"}});
  ExpectDenied("Write", {{"file_path", ws_ + "/a/../../outside/x"}});
  // Whitespace Claude Code trims, and "~" it expands.
  for (const std::string& p : {" " + ssh, ssh + " ", ssh + "\n", "\xef\xbb\xbf" + ssh, std::string("~/.ssh"),
                               std::string(" ~/.ssh")}) {
    Answer a = Ask("Grep", {{"pattern", "."}, {"path", p}});
    EXPECT_TRUE(a.decision == "deny" || a.status == 2) << "[" << p << "] " << a.err;
  }
  Answer g = Ask("Glob", {{"pattern", home_ + "/.ssh /*"}});
  EXPECT_TRUE(g.decision == "deny" || g.status == 2) << g.err;
  // Past PATH_MAX Claude Code does not normalise before the hook; the hook refuses.
  Answer longer = Ask("Read", {{"file_path", std::string(5000, ' ') + ssh + "/id_ed25519"}});
  EXPECT_EQ(longer.status, 2) << longer.reason;
  // Controls: plain paths, relative ones, a "~" that stays allowed, a link inside.
  ExpectAllowed("Grep", {{"pattern", "."}, {"path", ws_ + "/a"}});
  ExpectAllowed("Read", {{"file_path", ws_ + "/d1/../README.md"}});
  ExpectAllowed("Write", {{"file_path", "d1/new file.txt"}});
}

// A git directory is one by its structure, whatever its name: its config and hooks are what
// the host's git runs, and a .git file points git at one.
TEST_F(ClaudeHookTest, GitDirectoriesAreKnownByTheirStructure) {
  const std::string gd = ws_ + "/gd";
  MakeDirs(gd + "/objects", 0755);
  MakeDirs(gd + "/refs", 0755);
  WriteFile(gd + "/HEAD", "ref: refs/heads/main\n", 0644);
  ExpectDenied("Write", {{"file_path", gd + "/config"}});
  ExpectDenied("Edit", {{"file_path", gd + "/hooks/pre-commit"}});
  ExpectDenied("Write", {{"file_path", ws_ + "/sub/.git"}});
  ExpectAllowed("Write", {{"file_path", gd + "/description"}});  // inert
  // A directory that lacks only HEAD, with a config that runs a program: writing HEAD would
  // make it a git directory around that config.
  const std::string half = ws_ + "/half";
  MakeDirs(half + "/objects", 0755);
  MakeDirs(half + "/refs", 0755);
  WriteFile(half + "/config", "[core]\n\tfsmonitor = touch /tmp/pwned\n", 0644);
  ExpectDenied("Write", {{"file_path", half + "/HEAD"}});
  // Controls: the same names outside any git directory.
  ExpectAllowed("Write", {{"file_path", ws_ + "/src/config"}});
  ExpectAllowed("Write", {{"file_path", ws_ + "/src/hooks/useThing.js"}});
  MakeDirs(ws_ + "/plain/objects", 0755);
  ExpectAllowed("Write", {{"file_path", ws_ + "/plain/HEAD"}});
}

TEST_F(ClaudeHookTest, DecisionsAreInTheAuditTrail) {
  ExpectDenied("Read", {{"file_path", home_ + "/.ssh/id_ed25519"}});
  ExpectAllowed("Write", {{"file_path", ws_ + "/ok.txt"}});
  // Each judged call is a small session of its own; read them all.
  RunOptions o = Defaults();
  const std::string sessions = home_ + "/.local/state/ward/sessions";
  const std::string all =
      RunProgram({"/bin/sh", "-c", "cat " + sessions + "/*/events.jsonl"}, o).out;
  EXPECT_NE(all.find("\"hook.decision\""), std::string::npos) << all;
  EXPECT_NE(all.find("\"decision\":\"deny\""), std::string::npos) << all;
  EXPECT_NE(all.find("\"decision\":\"allow\""), std::string::npos) << all;
  EXPECT_NE(all.find("id_ed25519"), std::string::npos) << all;
  RunResult verify = RunWard({"audit", "verify", "last"}, o);
  EXPECT_EQ(verify.status, 0) << verify.out << verify.err;
}

TEST_F(ClaudeHookTest, BashIsRewrittenOnlyForAClaudeCodeKnownToApplyTheRewrite) {
  const std::string tested = WARD_CLAUDE_CODE_TESTED;
  ASSERT_FALSE(tested.empty());
  // A stand-in for Claude Code: a shell installed where npm puts Claude Code's binary, with its
  // package.json. It runs the hook as Claude Code does (through a shell).
  auto fake_claude = [&](const std::string& version) {
    std::string pkg = root_->path() + "/claude-" + version + "/node_modules/@anthropic-ai/claude-code";
    MakeDirs(pkg + "/bin", 0755);
    WriteFile(pkg + "/package.json",
              "{\"name\":\"@anthropic-ai/claude-code\",\"version\":\"" + version + "\"}", 0644);
    RunResult cp = RunProgram({"/bin/cp", "/bin/sh", pkg + "/bin/claude.exe"}, Defaults());
    EXPECT_EQ(cp.status, 0) << cp.err;
    return pkg + "/bin/claude.exe";
  };
  nlohmann::json in = {{"hook_event_name", "PreToolUse"},
                       {"cwd", ws_},
                       {"tool_name", "Bash"},
                       {"tool_input", {{"command", "echo hi"}}}};
  auto hook_under = [&](const std::string& claude, const std::string& extra) {
    RunOptions o = Defaults();
    o.stdin_data = in.dump();
    return RunProgram({claude, "-c", WardBin() + " hook claude-pretooluse " + extra + "; :"}, o);
  };
  RunResult known = hook_under(fake_claude(tested), "");
  EXPECT_NE(known.out.find("updatedInput"), std::string::npos) << known.out << known.err;
  RunResult unknown = hook_under(fake_claude("0.0.1"), "");
  EXPECT_EQ(unknown.out.find("updatedInput"), std::string::npos) << unknown.out;
  EXPECT_NE(unknown.err.find("Claude Code 0.0.1 is not a version"), std::string::npos)
      << unknown.err;
  EXPECT_NE(unknown.err.find("shell-prefix"), std::string::npos) << unknown.err;
  RunResult trusted = hook_under(fake_claude("0.0.1"), "--trust-agent-version 0.0.1");
  EXPECT_NE(trusted.out.find("updatedInput"), std::string::npos) << trusted.out << trusted.err;
  // No Claude Code among the ancestors: blocked (exit 2), unless any version is trusted.
  RunOptions o = Defaults();
  o.stdin_data = in.dump();
  RunResult none = RunWard({"hook", "claude-pretooluse"}, o);
  EXPECT_EQ(none.status, 2) << none.out;
  EXPECT_NE(none.err.find("cannot tell which Claude Code"), std::string::npos) << none.err;
  RunResult any = RunWard({"hook", "claude-pretooluse", "--trust-agent-version", "any"}, o);
  EXPECT_EQ(any.status, 0) << any.err;
  EXPECT_NE(any.out.find("updatedInput"), std::string::npos) << any.out;
}

}  // namespace
}  // namespace ward::test
