// `ward oci` with the bundle's own seccomp filter (linux.seccomp, oci/seccomp_filter.h): loaded
// on the container's command after ward's, so it refuses more and never allows more.
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "harness.h"
#include "oci_container.h"

namespace ward::test {
namespace {

class OciSeccompTest : public OciContainerTest {
 protected:
  // mkdir refused with EACCES, kill with SIGUSR1 refused (other signals not), and mount
  // "allowed" by the profile.
  static Json Profile() {
    return {{"defaultAction", "SCMP_ACT_ALLOW"},
            {"architectures", {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_AARCH64"}},
            {"syscalls",
             {{{"names", {"mkdir", "mkdirat"}}, {"action", "SCMP_ACT_ERRNO"}, {"errnoRet", 13}},
              {{"names", {"kill"}},
               {"action", "SCMP_ACT_ERRNO"},
               {"args", {{{"index", 1}, {"value", SIGUSR1}, {"op", "SCMP_CMP_EQ"}}}}},
              {{"names", {"mount", "umount2"}}, {"action", "SCMP_ACT_ALLOW"}}}}};
  }

  static constexpr const char* kScript =
      "busybox mkdir /tmp/d 2>&1 || true; kill -USR1 $$ 2>/dev/null || echo usr1 refused; "
      "kill -0 $$ && echo kill0 ok; busybox mount -t tmpfs none /tmp 2>/dev/null || "
      "echo mount refused; ";
};

// The container's filter refuses what it names, as it names it, in the command and in an exec;
// what it allows that ward refuses (mount) stays refused.
TEST_F(OciSeccompTest, TheBundlesFilterRefusesMoreAndNeverAllowsMore) {
  Config(std::string(kScript) + "echo done; exec busybox sleep 1000",
         {{"linux", {{"seccomp", Profile()}}}});
  const pid_t pid = Create("s1");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "s1"}), 0) << Err();
  for (int i = 0; i < 300 && Out().find("done") == std::string::npos; ++i) usleep(10000);
  const std::string out = Out();
  EXPECT_NE(out.find("mkdir: can't create directory '/tmp/d': Permission denied"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("usr1 refused\nkill0 ok\nmount refused\ndone\n"), std::string::npos) << out;
  ClearOut();
  // An exec is under the same filter.
  EXPECT_NE(Oci({"exec", "s1", "busybox", "mkdir", "/tmp/e"}), 0);
  EXPECT_NE(Err().find("Permission denied"), std::string::npos) << Err();
  EXPECT_EQ(Oci({"kill", "s1", "KILL"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 128 + SIGKILL);
  EXPECT_EQ(Oci({"delete", "s1"}), 0) << Err();
}

// Positive control: without the bundle's filter the same script makes its directory and sends
// its signal (and mount stays refused by ward's own filter).
TEST_F(OciSeccompTest, WithoutTheBundlesFilterTheSameCallsWork) {
  Config(std::string("trap 'echo got usr1' USR1; ") + kScript + "busybox ls -d /tmp/d");
  const pid_t pid = Create("s2");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "s2"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 0);
  EXPECT_EQ(Out(), "got usr1\nkill0 ok\nmount refused\n/tmp/d\n") << Err();
  EXPECT_EQ(Oci({"delete", "s2"}), 0) << Err();
}

// A profile ward cannot apply is refused at create with its field, nothing left behind.
TEST_F(OciSeccompTest, AProfileWardCannotApplyIsRefused) {
  Config("true", {{"linux", {{"seccomp", {{"defaultAction", "SCMP_ACT_NOTIFY"}}}}}});
  EXPECT_EQ(Create("s3"), -1);
  EXPECT_NE(Err().find("linux.seccomp.defaultAction: SCMP_ACT_NOTIFY is not supported"),
            std::string::npos)
      << Err();
  EXPECT_FALSE(StateDirExists("s3"));
}

}  // namespace
}  // namespace ward::test
