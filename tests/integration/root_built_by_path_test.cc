// The root built by path with mount(2), as on kernels without the mount API (Linux < 5.12) or
// gVisor, gives the view the mount API gives. The kernel matrix reaches this path on 5.10 only;
// here the harness hides the mount API from ward (a seccomp filter answering ENOSYS), so every
// host run of the suite checks it too, as root and unprivileged.
#include "enforce/probe.h"
#include "harness.h"

namespace ward::test {
namespace {

constexpr const char* kByPath = "the root is built with mount(2) by path";

class RootBuiltByPathTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (!enforce::ProbeKernel(false).mount_api) {
      GTEST_SKIP() << "this kernel has no mount API: every run builds its root by path";
    }
    MakeDirs(ws_ + "/.git/hooks", 0755);
    WriteFile(ws_ + "/.git/config", "[core]\n");
  }
  // What the sandbox can do, one "NAME yes|no" line per check.
  RunResult Checks(bool without_mount_api) {
    const std::string script =
        "t() { if eval \"$2\" >/dev/null 2>&1; then echo \"$1 yes\"; else echo \"$1 no\"; fi; }\n"
        "t workspace-write 'echo w > f && test \"$(cat f)\" = w'\n"
        "t usr-write 'touch /usr/ward-by-path'\n"
        "t etc-read 'cat /etc/passwd'\n"
        "t home-secret-read 'cat " + home_ + "/.ssh/id_ed25519'\n"
        "t proc-sys-read 'cat /proc/sys/kernel/ostype'\n"
        "t proc-sys-write 'echo ward > /proc/sys/kernel/domainname'\n"
        "t proc-kcore-read 'head -c1 /proc/kcore'\n"
        "t git-hook-write 'echo x > .git/hooks/post-checkout'\n"
        "t git-config-write 'echo x >> .git/config'\n"
        "t dev-null-write 'echo x > /dev/null'\n"
        "t dev-sda-visible 'test -e /dev/sda'\n";
    RunOptions o;
    o.without_mount_api = without_mount_api;
    return Shell(script, {}, o);
  }
};

TEST_F(RootBuiltByPathTest, GivesTheViewTheMountApiGives) {
  RunResult by_path = Checks(true);
  RunResult api = Checks(false);
  // Each run took the path it was meant to take.
  EXPECT_NE(by_path.err.find(kByPath), std::string::npos) << by_path.err;
  EXPECT_EQ(api.err.find(kByPath), std::string::npos) << api.err;
  EXPECT_EQ(by_path.status, 0) << by_path.err;
  EXPECT_EQ(by_path.out,
            "workspace-write yes\n"
            "usr-write no\n"
            "etc-read yes\n"
            "home-secret-read no\n"
            "proc-sys-read yes\n"
            "proc-sys-write no\n"
            "proc-kcore-read no\n"
            "git-hook-write no\n"
            "git-config-write no\n"
            "dev-null-write yes\n"
            "dev-sda-visible no\n")
      << by_path.err;
  EXPECT_EQ(by_path.out, api.out) << api.err;
  EXPECT_NE(ReadFile(ws_ + "/.git/config"), "[core]\nx\n");
}

// `ward explain` says which way the root is built.
TEST_F(RootBuiltByPathTest, ExplainSaysSo) {
  RunOptions o = Defaults();
  o.without_mount_api = true;
  RunResult r = RunWard({"explain", "--", "true"}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find(kByPath), std::string::npos) << r.out;
  o.without_mount_api = false;
  RunResult control = RunWard({"explain", "--", "true"}, o);
  EXPECT_EQ(control.out.find(kByPath), std::string::npos) << control.out;
}

}  // namespace
}  // namespace ward::test
