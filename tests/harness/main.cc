// main() of the sandbox test binaries. WARD_TEST_AS=root runs the tests as root (skipped, or
// failed under WARD_TEST_STRICT=1, when not root); WARD_TEST_AS=user drops to the unprivileged
// test user first when started as root.
#include <grp.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "harness.h"

namespace {

class IdentityCheck : public ::testing::Environment {
 public:
  explicit IdentityCheck(std::string skip) : skip_(std::move(skip)) {}
  void SetUp() override {
    if (skip_.empty()) return;
    const char* strict = getenv("WARD_TEST_STRICT");
    if (strict && std::string(strict) == "1") {
      FAIL() << skip_ << " (WARD_TEST_STRICT=1 turns this skip into a failure)";
    }
    GTEST_SKIP() << skip_;
  }

 private:
  std::string skip_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string as = ward::test::Variant();
  std::string skip;
  bool listing = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--gtest_list_tests", 18) == 0) listing = true;
  }
  if (!listing) {
    if (as == "root" && geteuid() != 0) {
      skip = "the root variant needs to be started as root";
    } else if (as == "user" && geteuid() == 0) {
      struct passwd* pw = getpwnam(WARD_TEST_USER);
      if (pw == nullptr) {
        skip = "test user " WARD_TEST_USER " does not exist (the setup.stage fixture creates it)";
      } else if (setgroups(0, nullptr) != 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) != 0 ||
                 setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) != 0) {
        std::fprintf(stderr, "cannot drop to %s: %s\n", WARD_TEST_USER, std::strerror(errno));
        return 1;
      }
      // Dropping credentials left this process non-dumpable, which a user's own processes are
      // not: ward's sockets read a peer's /proc/<pid>/ns to tell it from a sandboxed process,
      // and refuse one they cannot read.
      prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
      // Temp dirs of the unprivileged user must be creatable in /tmp (mode 1777).
      setenv("HOME", "/tmp", 1);
      unsetenv("XDG_RUNTIME_DIR");
      unsetenv("XDG_STATE_HOME");
    }
  }
  ::testing::AddGlobalTestEnvironment(new IdentityCheck(skip));
  return RUN_ALL_TESTS();
}
