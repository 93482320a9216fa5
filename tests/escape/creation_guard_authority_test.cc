// Threat class I (the supervisor as a confused deputy), CD01 and CD02: the creation guard acts
// for the sandbox from outside it. Whatever path or descriptor the sandbox hands it, the guard
// resolves in the sandbox's own view and acts with at most the sandbox's authority. Each test
// plants the steering in the workspace, asks for a creation through it, and checks from outside
// (by content and by inode) that nothing outside the view was opened; each has a positive
// control that proves the same request works when it is not steered.
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "approver.h"
#include "harness.h"

namespace ward::test {
namespace {

constexpr const char* kCanary = "HOST-CANARY-d41f";

class CreationGuardAuthority : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    // A host directory beside the workspace: it exists on the host, not in the sandbox's view.
    outside_ = root_->path() + "/outside";
    MakeDirs(outside_, 0755);
    WriteFile(outside_ + "/canary", kCanary, 0644);
    struct stat st;
    ASSERT_EQ(stat((outside_ + "/canary").c_str(), &st), 0);
    canary_ino_ = "ino=" + std::to_string(st.st_ino) + " ";
  }
  void Link(const std::string& target, const std::string& name) {
    ASSERT_EQ(symlink(target.c_str(), (ws_ + "/" + name).c_str()), 0) << name;
  }
  // The outside directory holds only the canary, unchanged.
  void ExpectOutsideUntouched() {
    EXPECT_EQ(ReadFile(outside_ + "/canary"), kCanary);
    RunResult ls = RunProgram({"/bin/ls", "-A", outside_});
    EXPECT_EQ(ls.out, "canary\n");
  }

  std::string outside_, canary_ino_;
};

// The issue's own chain: a relative link whose first component is an absolute link. The guard
// used to follow `entry` itself and resolve `hop/x` from the link's directory with the host's
// root, so `hop -> /abs` reached the host.
TEST_F(CreationGuardAuthority, RelativeLinkThroughAnAbsoluteHopStaysInTheView) {
  Link(outside_, "hop");
  Link("hop/x", "entry");
  Link("hop/canary", "read-entry");
  for (const char* flags : {"wronly,creat", "wronly,creat,trunc", "wronly,creat,append"}) {
    RunResult r = Probe({"open-report", "entry", flags, "PWNED"});
    EXPECT_EQ(r.out, "err ENOENT open\n") << flags << " " << r.err;
    r = Probe({"open-report", "read-entry", flags, "PWNED"});
    EXPECT_EQ(r.out, "err ENOENT open\n") << flags << " " << r.err;
  }
  RunResult r = Probe({"open-report", "read-entry", "rdonly,creat"});
  EXPECT_EQ(r.out, "err ENOENT open\n") << r.err;
  EXPECT_EQ(r.out.find(kCanary), std::string::npos);
  ExpectOutsideUntouched();
  EXPECT_FALSE(PathExists(outside_ + "/x"));

  // Control: the same chain to a directory of the workspace creates the file there.
  MakeDirs(ws_ + "/real");
  Link(ws_ + "/real", "hop2");
  Link("hop2/x", "entry2");
  r = Probe({"open-report", "entry2", "wronly,creat", "made"});
  EXPECT_EQ(r.out.rfind("ok ", 0), 0u) << r.out << r.err;
  EXPECT_EQ(ReadFile(ws_ + "/real/x"), "made");
}

// Chains that mix relative and absolute links, `..` past the root, and links to the sandbox's
// own /proc: every one resolves inside the view or fails.
TEST_F(CreationGuardAuthority, MixedLinkChainsNeverLeaveTheView) {
  const std::string up = "../../../../../../../../..";
  Link(up + outside_, "climb");              // relative, climbing past the root
  Link("climb/canary", "via-climb");         // relative through it
  Link(outside_ + "/canary", "abs");         // absolute
  Link("abs", "via-abs");                    // relative to an absolute
  Link("/proc/1/root" + outside_, "magic");  // through init's root magic link
  Link("magic/canary", "via-magic");
  Link("/proc/self/cwd/../outside", "cwd-up");  // through our own cwd magic link
  Link("cwd-up/canary", "via-cwd");
  for (const char* name : {"via-climb", "via-abs", "via-magic", "via-cwd"}) {
    for (const char* flags : {"rdonly,creat", "rdwr,creat", "wronly,creat,trunc"}) {
      RunResult r = Probe({"open-report", name, flags, "PWNED"});
      EXPECT_EQ(r.out.find(canary_ino_), std::string::npos) << name << " " << flags << r.out;
      EXPECT_EQ(r.out.find(kCanary), std::string::npos) << name << " " << flags << r.out;
      EXPECT_EQ(r.out.rfind("err ", 0), 0u) << name << " " << flags << r.out;
    }
  }
  ExpectOutsideUntouched();
  // Control: the climb link lands in the sandbox's own root, where a creation in its private
  // /tmp works.
  Link(up + "/tmp/made-here", "climb-tmp");
  RunResult r = Probe({"open-report", "climb-tmp", "wronly,creat", "ok"});
  EXPECT_EQ(r.out.rfind("ok ", 0), 0u) << r.out << r.err;
}

// mkdir, symlink, link and rename through a planted link in the parent resolve in the view.
TEST_F(CreationGuardAuthority, EveryCreationSyscallResolvesInTheView) {
  Link(outside_, "hop");
  EXPECT_EQ(Probe({"mkdir", "hop/newdir"}).out, "err ENOENT hop/newdir\n");
  EXPECT_EQ(Probe({"symlink", "x", "hop/newlink"}).out, "err ENOENT hop/newlink\n");
  EXPECT_EQ(Probe({"mknod-fifo", "hop/fifo"}).out, "err ENOENT hop/fifo\n");
  WriteFile(ws_ + "/f", "f");
  EXPECT_EQ(Probe({"link", "f", "hop/hard"}).out, "err ENOENT hop/hard\n");
  EXPECT_EQ(Probe({"rename", "f", "hop/moved"}).out, "err ENOENT hop/moved\n");
  EXPECT_EQ(Probe({"rename", "hop/canary", "stolen"}).out, "err ENOENT stolen\n");
  ExpectOutsideUntouched();
  EXPECT_TRUE(PathExists(ws_ + "/f"));
  // Controls, in the workspace.
  EXPECT_EQ(Probe({"mkdir", "newdir"}).status, 0);
  EXPECT_EQ(Probe({"symlink", "x", "newlink"}).status, 0);
  EXPECT_EQ(Probe({"link", "f", "hard"}).status, 0);
  EXPECT_EQ(Probe({"rename", "f", "moved"}).status, 0);
  EXPECT_TRUE(PathExists(ws_ + "/moved"));
}

// CD02: /dev/stdout-style links name a descriptor the caller holds. The guard hands back that
// same open file, never a reopen with wider access, and refuses O_PATH and procfs sources.
TEST_F(CreationGuardAuthority, DescriptorLinksNeverWidenAccess) {
  WriteFile(ws_ + "/file", "content");
  // A read-only descriptor asked for writing: refused; the file is unchanged.
  RunResult r = Probe({"fd-link-open", "file", "rdonly", "rdwr,creat,trunc", "PWNED"});
  EXPECT_EQ(r.out, "err EACCES open link\n") << r.err;
  r = Probe({"fd-link-open", "file", "rdonly", "wronly,creat", "PWNED"});
  EXPECT_EQ(r.out, "err EACCES open link\n") << r.err;
  EXPECT_EQ(ReadFile(ws_ + "/file"), "content");
  // An O_PATH descriptor (no access at all) on init's memory: refused, as root too, where the
  // guard thread used to keep CAP_SYS_PTRACE and reopened it read-write.
  r = Probe({"fd-link-open", "/proc/1/mem", "path", "rdwr,creat"});
  EXPECT_EQ(r.out, "err EACCES open link\n") << r.err;
  r = Probe({"fd-link-open", "file", "path", "rdonly,creat"});
  EXPECT_EQ(r.out, "err EACCES open link\n") << r.err;
  // A procfs file the caller holds: refused.
  r = Probe({"fd-link-open", "/proc/self/status", "rdonly", "rdonly,creat"});
  EXPECT_EQ(r.out, "err EACCES open link\n") << r.err;

  // Controls: the access the descriptor has is handed back, on the same inode.
  struct stat st;
  ASSERT_EQ(stat((ws_ + "/file").c_str(), &st), 0);
  r = Probe({"fd-link-open", "file", "rdwr", "wronly,creat", "more"});
  EXPECT_EQ(r.out.rfind("ok ", 0), 0u) << r.out << r.err;
  EXPECT_NE(r.out.find("ino=" + std::to_string(st.st_ino) + " "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote=ok"), std::string::npos) << r.out;
  r = Probe({"fd-link-open", "/dev/null", "rdwr", "wronly,creat,trunc", "x"});
  EXPECT_EQ(r.out.rfind("ok ", 0), 0u) << r.out << r.err;
  // The shell's own idiom.
  r = Shell("echo via-stdout > /dev/stdout; echo via-stderr > /dev/stderr");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "via-stdout\n");
  EXPECT_NE(r.err.find("via-stderr"), std::string::npos) << r.err;
}

// CD02 with approvals: a file the human granted read-only stays read-only through a
// /proc/self/fd link (the guard used to reopen it through its own /proc with the flags asked).
TEST_F(CreationGuardAuthority, AGrantedReadOnlyFileStaysReadOnlyThroughAnFdLink) {
  if (std::string why = WhyAskIsRefusedHere(); !why.empty()) GTEST_SKIP() << why;
  const std::string runtime = root_->path() + "/run";
  MakeDirs(runtime, 0700);
  char tmpl[] = "/run/lock/ward-cg.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) GTEST_SKIP() << "no /run/lock for a host path outside the view";
  const std::string dir = tmpl;
  const std::string granted = dir + "/granted.txt";
  WriteFile(granted, "granted-content", 0644);
  Approver approver(runtime, [&](const nlohmann::json& req) -> std::optional<nlohmann::json> {
    if (req.value("subject", "") == granted && req.value("access", "") == "read") {
      return nlohmann::json{{"op", "approve"}, {"scope", "session"}};
    }
    return nlohmann::json{{"op", "deny"}};
  });
  RunOptions o;
  o.env["XDG_RUNTIME_DIR"] = runtime;
  o.timeout_s = 120;
  RunResult r =
      Probe({"fd-link-open", granted, "rdonly", "rdwr,creat,trunc", "PWNED"}, {"--ask"}, o);
  EXPECT_EQ(r.out, "err EACCES open link\n") << r.err << approver.errors();
  EXPECT_EQ(ReadFile(granted), "granted-content");
  // Control: the grant itself works, read-only.
  r = Probe({"fd-link-open", granted, "rdonly", "rdonly,creat"}, {"--ask"}, o);
  EXPECT_NE(r.out.find("data=granted-content"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(ReadFile(granted), "granted-content");
  RunProgram({"/bin/rm", "-rf", dir});
}

}  // namespace
}  // namespace ward::test
