// Review mode (`ward run --workspace=overlay`, docs/review.md): the run's writes land in an
// overlay in ward's state directory, the host's workspace is untouched until `ward apply`, and
// `ward diff`, `ward apply` and `ward discard` round-trip every kind of change: text, binary,
// deletion, rename, mode, symlink. Apply refuses host-executed content and host files that
// changed since the run began unless told otherwise. The copy fallback and `ward serve`'s
// review-mode sandboxes too.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "../../clients/cpp/ward_client.h"
#include "harness.h"
#include "serve_daemon.h"

namespace ward::test {
namespace {

using Json = nlohmann::json;

class OverlayWorkspace : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    state_ = root_->path() + "/state";
  }
  RunOptions Opts() const {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = state_;
    return o;
  }
  // A file written just before a run can share the clock tick the run's start is read in;
  // apply then cannot tell it from a change made during the run, and refuses it (the safe
  // side). The tests' own preparation is therefore a tick older than the run.
  static void SettleClock() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }
  RunResult Run(const std::string& script, const std::string& mode = "overlay") {
    return Shell(script, {"--workspace=" + mode}, Opts());
  }
  RunResult Ward(const std::vector<std::string>& args) const { return RunWard(args, Opts()); }
  // The review session a run named in its last line.
  static std::string SessionOf(const RunResult& r) {
    const std::string key = "wait in session ";
    size_t at = r.err.find(key);
    if (at == std::string::npos) return "";
    at += key.size();
    return r.err.substr(at, r.err.find(':', at) - at);
  }
  // Runs `script` in review mode and returns its session (failing the test when there is none).
  std::string Reviewed(const std::string& script, const std::string& mode = "overlay") {
    RunResult r = Run(script, mode);
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    std::string id = SessionOf(r);
    EXPECT_FALSE(id.empty()) << r.err;
    return id;
  }
  std::string ReviewDir(const std::string& id) const { return state_ + "/ward/review/" + id; }
  Json Meta(const std::string& id) const {
    return Json::parse(ReadFile(ReviewDir(id) + "/meta.json"));
  }

  std::string state_;
};

mode_t ModeOf(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 ? st.st_mode : 0;
}

TEST_F(OverlayWorkspace, TextEditRoundTripsAndTheHostIsUntouchedUntilApply) {
  WriteFile(ws_ + "/notes.txt", "one\ntwo\nthree\n");
  SettleClock();
  std::string id = Reviewed("sed -i 's/two/TWO/' notes.txt && cat notes.txt");
  EXPECT_EQ(ReadFile(ws_ + "/notes.txt"), "one\ntwo\nthree\n");  // the host's is untouched
  EXPECT_TRUE(PathExists(ReviewDir(id) + "/upper/notes.txt"));
  RunResult d = Ward({"diff", id});
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_EQ(d.out,
            "diff --git a/notes.txt b/notes.txt\n--- a/notes.txt\n+++ b/notes.txt\n"
            "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n");
  EXPECT_NE(d.err.find("diff sha256 "), std::string::npos) << d.err;
  // The newest open session of this workspace is the default.
  EXPECT_EQ(Ward({"diff"}).out, d.out);
  RunResult a = Ward({"apply"});
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, "modify notes.txt\n");
  EXPECT_EQ(ReadFile(ws_ + "/notes.txt"), "one\nTWO\nthree\n");
  Json meta = Meta(id);
  EXPECT_EQ(meta["state"], "applied");
  EXPECT_FALSE(PathExists(ReviewDir(id) + "/upper"));  // the layer goes once applied
  // Applied once: never twice.
  RunResult again = Ward({"apply", id});
  EXPECT_EQ(again.status, 1);
  EXPECT_NE(again.err.find("was applied"), std::string::npos) << again.err;
  // The audit trail has the apply: who, which session, the diff's hash, what was applied.
  RunResult audit = Ward({"audit", "show", "last", "--json"});
  EXPECT_NE(audit.out.find("\"type\":\"review.apply\""), std::string::npos) << audit.out;
  EXPECT_NE(audit.out.find(id), std::string::npos);
  EXPECT_NE(audit.out.find("\"diff_sha256\""), std::string::npos);
  EXPECT_NE(audit.out.find("\"uid\":" + std::to_string(getuid())), std::string::npos);
}

TEST_F(OverlayWorkspace, BinaryFileRoundTrips) {
  std::string id = Reviewed("printf 'a\\000b\\001\\377' > blob.bin");
  EXPECT_FALSE(PathExists(ws_ + "/blob.bin"));
  RunResult d = Ward({"diff", id});
  EXPECT_NE(d.out.find("new file mode 100644\nBinary files /dev/null and b/blob.bin differ\n"),
            std::string::npos)
      << d.out;
  ASSERT_EQ(Ward({"apply", id}).status, 0);
  EXPECT_EQ(ReadFile(ws_ + "/blob.bin"), std::string("a\0b\1\377", 5));
}

TEST_F(OverlayWorkspace, DeletionsOfAFileAndOfADirectory) {
  WriteFile(ws_ + "/gone.txt", "bye\n");
  MakeDirs(ws_ + "/dir/sub");
  WriteFile(ws_ + "/dir/sub/f", "x\n");
  WriteFile(ws_ + "/kept.txt", "stay\n");
  SettleClock();
  std::string id = Reviewed("rm gone.txt && rm -r dir");
  EXPECT_TRUE(PathExists(ws_ + "/gone.txt"));
  EXPECT_TRUE(PathExists(ws_ + "/dir/sub/f"));
  RunResult d = Ward({"diff", "--stat", id});
  EXPECT_EQ(d.out, "D\tdir\nD\tdir/sub\nD\tdir/sub/f\nD\tgone.txt\n");
  ASSERT_EQ(Ward({"apply", id}).status, 0);
  EXPECT_FALSE(PathExists(ws_ + "/gone.txt"));
  EXPECT_FALSE(PathExists(ws_ + "/dir"));
  EXPECT_EQ(ReadFile(ws_ + "/kept.txt"), "stay\n");
}

TEST_F(OverlayWorkspace, RenameIsADeletionAndAnAddition) {
  WriteFile(ws_ + "/old-name.txt", "content\n");
  MakeDirs(ws_ + "/olddir");
  WriteFile(ws_ + "/olddir/inner", "in\n");
  SettleClock();
  std::string id = Reviewed("mv old-name.txt new-name.txt && mv olddir newdir");
  RunResult d = Ward({"diff", "--stat", id});
  EXPECT_EQ(d.out,
            "A\tnew-name.txt\nA\tnewdir\nA\tnewdir/inner\nD\told-name.txt\nD\tolddir\n"
            "D\tolddir/inner\n");
  ASSERT_EQ(Ward({"apply", id}).status, 0);
  EXPECT_FALSE(PathExists(ws_ + "/old-name.txt"));
  EXPECT_EQ(ReadFile(ws_ + "/new-name.txt"), "content\n");
  EXPECT_EQ(ReadFile(ws_ + "/newdir/inner"), "in\n");
  EXPECT_FALSE(PathExists(ws_ + "/olddir"));
}

TEST_F(OverlayWorkspace, ModeChange) {
  WriteFile(ws_ + "/run.sh", "#!/bin/sh\necho hi\n", 0644);
  SettleClock();
  std::string id = Reviewed("chmod 755 run.sh");
  EXPECT_EQ(ModeOf(ws_ + "/run.sh") & 0777, 0644u);
  RunResult d = Ward({"diff", id});
  EXPECT_EQ(d.out, "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n");
  ASSERT_EQ(Ward({"apply", id}).status, 0);
  EXPECT_EQ(ModeOf(ws_ + "/run.sh") & 0777, 0755u);
  EXPECT_EQ(ReadFile(ws_ + "/run.sh"), "#!/bin/sh\necho hi\n");
}

TEST_F(OverlayWorkspace, Symlink) {
  std::string id = Reviewed("ln -s target/file link && ln -s /etc abs");
  EXPECT_FALSE(PathExists(ws_ + "/link"));
  RunResult d = Ward({"diff", id});
  EXPECT_NE(d.out.find("diff --git a/link b/link\nnew file mode 120777\n--- /dev/null\n+++ "
                       "b/link\n@@ -0,0 +1 @@\n+target/file\n\\ No newline at end of file\n"),
            std::string::npos)
      << d.out;
  ASSERT_EQ(Ward({"apply", id}).status, 0);
  char buf[64] = {};
  ASSERT_GT(readlink((ws_ + "/link").c_str(), buf, sizeof buf - 1), 0);
  EXPECT_STREQ(buf, "target/file");
  EXPECT_TRUE(S_ISLNK(ModeOf(ws_ + "/abs")));  // a link is text: where it points is the host's call
}

// A run cannot keep a file from review by making it unreadable.
TEST_F(OverlayWorkspace, AFileTheRunMadeUnreadableIsStillReviewed) {
  std::string id = Reviewed("echo hidden > h.txt && chmod 000 h.txt");
  RunResult d = Ward({"diff", id});
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_NE(d.out.find("new file mode 100000\n--- /dev/null\n+++ b/h.txt\n@@ -0,0 +1 @@\n+hidden\n"),
            std::string::npos)
      << d.out;
  EXPECT_EQ(ModeOf(ReviewDir(id) + "/upper/h.txt") & 07777, 0u);  // its mode is put back
  ASSERT_EQ(Ward({"apply", id}).status, 0);
  EXPECT_EQ(ModeOf(ws_ + "/h.txt") & 07777, 0u);
  ASSERT_EQ(chmod((ws_ + "/h.txt").c_str(), 0600), 0);
  EXPECT_EQ(ReadFile(ws_ + "/h.txt"), "hidden\n");
}

TEST_F(OverlayWorkspace, ApplyOfSomePathsLeavesTheRestForLater) {
  std::string id = Reviewed("echo a > a.txt && echo b > b.txt");
  RunResult a = Ward({"apply", id, ws_ + "/a.txt"});
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, "add a.txt\n");
  EXPECT_TRUE(PathExists(ws_ + "/a.txt"));
  EXPECT_FALSE(PathExists(ws_ + "/b.txt"));
  EXPECT_EQ(Meta(id)["state"], "open");
  EXPECT_EQ(Ward({"diff", "--stat", id}).out, "A\tb.txt\n");
  ASSERT_EQ(Ward({"apply", id}).status, 0);
  EXPECT_EQ(ReadFile(ws_ + "/b.txt"), "b\n");
  EXPECT_EQ(Meta(id)["state"], "applied");
}

// Host-executed content that the run could create (below a subdirectory, in a repository made
// during the run: the creation guard only knows the workspace's own names) is never applied
// without --include-protected naming it; a refusal applies nothing at all.
TEST_F(OverlayWorkspace, ApplyRefusesHostExecutedContentUnlessIncluded) {
  std::string id = Reviewed(
      "mkdir -p sub/.git/hooks sub/.git/objects && printf '#!/bin/sh\\necho pwned\\n' > "
      "sub/.git/hooks/pre-commit && chmod +x sub/.git/hooks/pre-commit && echo 'echo pwned' > "
      "sub/.envrc && echo ok > sub/README && echo obj > sub/.git/objects/o");
  RunResult a = Ward({"apply", id});
  EXPECT_EQ(a.status, 1);
  EXPECT_NE(a.err.find("sub/.git/hooks/pre-commit: host-executed content"), std::string::npos)
      << a.err;
  EXPECT_NE(a.err.find("sub/.envrc: host-executed content"), std::string::npos) << a.err;
  EXPECT_NE(a.err.find("nothing was applied"), std::string::npos) << a.err;
  EXPECT_FALSE(PathExists(ws_ + "/sub"));  // not even the harmless README
  // The harmless part alone applies (git's own objects are data).
  RunResult some = Ward({"apply", id, ws_ + "/sub/README", ws_ + "/sub/.git/objects"});
  ASSERT_EQ(some.status, 0) << some.err;
  EXPECT_EQ(ReadFile(ws_ + "/sub/README"), "ok\n");
  EXPECT_EQ(ReadFile(ws_ + "/sub/.git/objects/o"), "obj\n");
  EXPECT_FALSE(PathExists(ws_ + "/sub/.envrc"));
  // Named, after review: applied.
  RunResult all = Ward({"apply", id, "--include-protected", ws_ + "/sub/.envrc",
                        "--include-protected", ws_ + "/sub/.git/hooks"});
  ASSERT_EQ(all.status, 0) << all.err;
  EXPECT_EQ(ReadFile(ws_ + "/sub/.envrc"), "echo pwned\n");
  EXPECT_TRUE(PathExists(ws_ + "/sub/.git/hooks/pre-commit"));
}

TEST_F(OverlayWorkspace, ApplyRefusesSetuidFiles) {
  std::string id = Reviewed("echo x > tool && chmod 755 tool");
  // However the bit got there (a run that could set it, or the layer changed afterwards).
  ASSERT_EQ(chmod((ReviewDir(id) + "/upper/tool").c_str(), 04755), 0);
  RunResult a = Ward({"apply", id, "--force", "--include-protected", ws_ + "/tool"});
  EXPECT_EQ(a.status, 1);
  EXPECT_NE(a.err.find("tool: a setuid or setgid file is never applied"), std::string::npos)
      << a.err;
  EXPECT_FALSE(PathExists(ws_ + "/tool"));
  ASSERT_EQ(chmod((ReviewDir(id) + "/upper/tool").c_str(), 0755), 0);  // control
  ASSERT_EQ(Ward({"apply", id}).status, 0);
  EXPECT_EQ(ModeOf(ws_ + "/tool") & 07777, 0755u);
}

TEST_F(OverlayWorkspace, ApplyAfterAConcurrentHostChangeIsRefusedUnlessForced) {
  WriteFile(ws_ + "/shared.txt", "base\n");
  WriteFile(ws_ + "/doomed.txt", "base\n");
  SettleClock();
  std::string id = Reviewed("echo run >> shared.txt && echo run >> doomed.txt");
  WriteFile(ws_ + "/shared.txt", "host edit\n");  // the host changes it after the run began
  ASSERT_EQ(unlink((ws_ + "/doomed.txt").c_str()), 0);
  RunResult a = Ward({"apply", id});
  EXPECT_EQ(a.status, 1);
  EXPECT_NE(a.err.find("shared.txt: changed on the host since the run began"), std::string::npos)
      << a.err;
  EXPECT_NE(a.err.find("doomed.txt: deleted on the host since the run began"), std::string::npos)
      << a.err;
  EXPECT_EQ(ReadFile(ws_ + "/shared.txt"), "host edit\n");
  RunResult f = Ward({"apply", "--force", id});
  ASSERT_EQ(f.status, 0) << f.err;
  EXPECT_EQ(ReadFile(ws_ + "/shared.txt"), "base\nrun\n");
  EXPECT_EQ(ReadFile(ws_ + "/doomed.txt"), "base\nrun\n");
}

TEST_F(OverlayWorkspace, DiscardRemovesTheUpperLayer) {
  WriteFile(ws_ + "/keep.txt", "host\n");
  SettleClock();
  std::string id = Reviewed("echo run > keep.txt && echo new > new.txt");
  ASSERT_TRUE(PathExists(ReviewDir(id) + "/upper/new.txt"));
  RunResult d = Ward({"discard", id});
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_FALSE(PathExists(ReviewDir(id) + "/upper"));
  EXPECT_FALSE(PathExists(ReviewDir(id) + "/work"));
  EXPECT_EQ(Meta(id)["state"], "discarded");
  EXPECT_EQ(ReadFile(ws_ + "/keep.txt"), "host\n");
  EXPECT_FALSE(PathExists(ws_ + "/new.txt"));
  EXPECT_EQ(Ward({"apply", id}).status, 1);  // discarded: nothing to apply
  EXPECT_EQ(Ward({"discard", id}).status, 1);
  RunResult audit = Ward({"audit", "show", "last", "--json"});
  EXPECT_NE(audit.out.find("\"type\":\"review.discard\""), std::string::npos) << audit.out;
}

TEST_F(OverlayWorkspace, ARunThatChangesNothingLeavesNoSession) {
  WriteFile(ws_ + "/a", "a\n");
  RunResult r = Run("cat a > /dev/null");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(SessionOf(r), "");
  RunResult c = Run("cat a > /dev/null", "copy");
  EXPECT_EQ(c.status, 0) << c.err;
  EXPECT_EQ(SessionOf(c), "");
  EXPECT_EQ(Ward({"diff", "--sessions"}).err, "no review sessions\n");
}

TEST_F(OverlayWorkspace, TheRunSeesItsOwnWritesAndTheRunsAuditNamesTheSession) {
  WriteFile(ws_ + "/a", "host\n");
  RunResult r = Run("echo run >> a && cat a && ls -ld . | cut -c1-10");
  EXPECT_EQ(r.out, "host\nrun\ndrwxr-xr-x\n") << r.err;
  std::string id = SessionOf(r);
  ASSERT_FALSE(id.empty());
  RunResult audit = Ward({"audit", "show", id, "--json"});
  // session.end says where the run's changes wait.
  EXPECT_NE(audit.out.find("\"review\":{\"changes\":true,\"mode\":\"overlay\",\"note\":\"\","
                           "\"review_session\":\"" + id + "\""),
            std::string::npos)
      << audit.out;
}

TEST_F(OverlayWorkspace, CopyModeRoundTrips) {
  WriteFile(ws_ + "/a.txt", "one\n");
  WriteFile(ws_ + "/b.txt", "bee\n");
  MakeDirs(ws_ + "/d");
  WriteFile(ws_ + "/d/c", "sea\n");
  SettleClock();
  std::string id = Reviewed("echo two >> a.txt && rm b.txt && echo new > d/n && chmod 700 d/c",
                            "copy");
  EXPECT_EQ(Meta(id)["mode"], "copy");
  EXPECT_EQ(ReadFile(ws_ + "/a.txt"), "one\n");
  RunResult d = Ward({"diff", "--stat", id});
  EXPECT_EQ(d.out, "M\ta.txt\nD\tb.txt\nM\td/c\nA\td/n\n");
  ASSERT_EQ(Ward({"apply", id}).status, 0);
  EXPECT_EQ(ReadFile(ws_ + "/a.txt"), "one\ntwo\n");
  EXPECT_FALSE(PathExists(ws_ + "/b.txt"));
  EXPECT_EQ(ReadFile(ws_ + "/d/n"), "new\n");
  EXPECT_EQ(ModeOf(ws_ + "/d/c") & 0777, 0700u);
  EXPECT_FALSE(PathExists(ReviewDir(id) + "/copy"));
}

TEST_F(OverlayWorkspace, WritableRulesBelowTheWorkspaceAreRefusedInReviewMode) {
  MakeDirs(ws_ + "/ro/x");
  // A writable bind of a host directory below the workspace would go around the review (it is
  // kept apart from the workspace's own access by a read-only one in between).
  RunResult r =
      Shell("true", {"--workspace=overlay", "-r", ws_ + "/ro", "-w", ws_ + "/ro/x"}, Opts());
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("is writable below the workspace"), std::string::npos) << r.err;
  // Control: a read-only one is fine.
  EXPECT_EQ(Shell("true", {"--workspace=overlay", "-r", ws_ + "/ro"}, Opts()).status, 0);
}

class OverlayServe : public OverlayWorkspace {
 protected:
  void SetUp() override {
    OverlayWorkspace::SetUp();
    std::map<std::string, std::string> env = BaseEnv(home_);
    env["XDG_STATE_HOME"] = state_;
    env.erase("XDG_RUNTIME_DIR");
    daemon_.emplace(root_->path(), env, ws_);
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  }
  void TearDown() override {
    if (daemon_) daemon_->Stop();
  }
  std::optional<ServeDaemon> daemon_;
};

TEST_F(OverlayServe, ASandboxInReviewModeShowsItsChangesBeforeTheyLand) {
  client::Client c(daemon_->socket());
  ASSERT_TRUE(c.Connect());
  WriteFile(ws_ + "/f.txt", "host\n");
  SettleClock();
  auto sb = c.CreateSandbox(ws_, {{"read", Json::array({StageDir()})},
                                  {"workspace_mode", "overlay"}});
  ASSERT_TRUE(sb.ok()) << sb.error->message;
  EXPECT_EQ(sb.result["workspace_mode"], "overlay");
  std::string id = sb.result["sandbox_id"];
  std::string session = sb.result["review_session"];
  ASSERT_FALSE(session.empty());
  auto r = c.Run(id, {"/bin/sh", "-c", "echo tool >> f.txt && echo made > new.txt"});
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.result["exit_code"], 0) << r.result.dump();
  // A second call sees the first one's writes; the host still has neither.
  auto r2 = c.Run(id, {"/bin/cat", "f.txt", "new.txt"});
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2.result["stdout"], "host\ntool\nmade\n");
  EXPECT_EQ(ReadFile(ws_ + "/f.txt"), "host\n");
  EXPECT_FALSE(PathExists(ws_ + "/new.txt"));
  // The file methods would go around the overlay: refused.
  auto fs = c.Call("fs.read", {{"sandbox_id", id}, {"path", "f.txt"}});
  EXPECT_FALSE(fs.ok());
  auto d = c.Call("review.diff", {{"sandbox_id", id}});
  ASSERT_TRUE(d.ok()) << d.error->message;
  EXPECT_EQ(d.result["review_session"], session);
  EXPECT_EQ(d.result["files"], 2);
  EXPECT_NE(d.result["diff"].get<std::string>().find("+tool\n"), std::string::npos);
  // Applied only as reviewed: a stale hash is refused.
  auto stale = c.Call("review.apply", {{"sandbox_id", id}, {"diff_sha256", std::string(64, '0')}});
  EXPECT_FALSE(stale.ok());
  EXPECT_EQ(ReadFile(ws_ + "/f.txt"), "host\n");
  auto a = c.Call("review.apply", {{"sandbox_id", id}, {"diff_sha256", d.result["diff_sha256"]}});
  ASSERT_TRUE(a.ok()) << a.error->message;
  EXPECT_EQ(a.result["complete"], true);
  EXPECT_EQ(ReadFile(ws_ + "/f.txt"), "host\ntool\n");
  EXPECT_EQ(ReadFile(ws_ + "/new.txt"), "made\n");
  // The sandbox goes on with a fresh session; a discard drops what a later call did.
  std::string next = a.result["review_session"];
  EXPECT_NE(next, session);
  ASSERT_TRUE(c.Run(id, {"/bin/sh", "-c", "rm new.txt"}).ok());
  EXPECT_TRUE(PathExists(ws_ + "/new.txt"));
  auto x = c.Call("review.discard", {{"sandbox_id", id}});
  ASSERT_TRUE(x.ok()) << x.error->message;
  EXPECT_EQ(x.result["files"], 1);
  EXPECT_TRUE(PathExists(ws_ + "/new.txt"));
  EXPECT_EQ(Meta(next)["state"], "discarded");
  auto q = c.Call("audit.query", {{"sandbox_id", id}, {"type", "review."}, {"records", true}});
  ASSERT_TRUE(q.ok()) << q.error->message;
  const std::string dump = q.result.dump();
  EXPECT_NE(dump.find("review.apply"), std::string::npos) << dump;
  EXPECT_NE(dump.find("review.discard"), std::string::npos) << dump;
  // The user may review a sandbox's session from the command line too; the sandbox then goes on
  // with a fresh one.
  auto w = c.Run(id, {"/bin/sh", "-c", "echo cli > cli.txt"});
  ASSERT_TRUE(w.ok());
  auto now = c.Call("sandbox.get", {{"sandbox_id", id}});
  ASSERT_TRUE(now.ok());
  const std::string third = now.result["review_session"];
  RunResult a3 = Ward({"apply", third});
  ASSERT_EQ(a3.status, 0) << a3.err;
  EXPECT_EQ(ReadFile(ws_ + "/cli.txt"), "cli\n");
  auto after = c.Run(id, {"/bin/sh", "-c", "cat cli.txt && echo more > more.txt"});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after.result["exit_code"], 0) << after.result.dump();
  now = c.Call("sandbox.get", {{"sandbox_id", id}});
  EXPECT_NE(now.result["review_session"], third);
  EXPECT_FALSE(PathExists(ws_ + "/more.txt"));
}

}  // namespace
}  // namespace ward::test
