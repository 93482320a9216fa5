// DropBoundingSet in forked children that own a new user namespace, where they hold every
// capability, as sandbox init does: it empties the bounding set, and a call that finds it empty
// only reads (so it succeeds without CAP_SETPCAP), which is what lets init drop the set early
// and the command's DropAllCapabilities still check it.
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "enforce/caps.h"

namespace ward::enforce {
namespace {

constexpr int kNoUserNs = 77;

// CapBnd from /proc/self/status, or ~0 when it cannot be read.
unsigned long long BoundingSet() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return ~0ull;
  char line[256];
  unsigned long long v = ~0ull;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "CapBnd: %llx", &v) == 1) break;
  }
  std::fclose(f);
  return v;
}

// Effective, permitted and inheritable sets emptied: CAP_SETPCAP is gone.
bool ClearCapabilities() {
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2] = {};
  return syscall(SYS_capset, &hdr, data) == 0;
}

// Runs `body` in a child in a new user namespace; returns its exit code (kNoUserNs: none; -1:
// no child).
template <typename Body>
int InUserNamespace(Body body) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (unshare(CLONE_NEWUSER) != 0) _exit(kNoUserNs);
    _exit(body());
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(CapsTest, DropBoundingSetEmptiesItAndACallThatFindsItEmptyOnlyReads) {
  int rc = InUserNamespace([] {
    if (BoundingSet() == 0) return 10;  // nothing to drop: the test would prove nothing
    if (DropBoundingSet() != 0) return 11;
    if (BoundingSet() != 0) return 12;
    if (!ClearCapabilities()) return 13;
    // Without CAP_SETPCAP a drop fails with EPERM; a call that only reads succeeds.
    if (DropBoundingSet() != 0) return 14;
    return BoundingSet() == 0 ? 0 : 15;
  });
  if (rc == kNoUserNs) GTEST_SKIP() << "no user namespaces here";
  EXPECT_EQ(rc, 0) << "step " << rc << " failed";
}

TEST(CapsTest, DropBoundingSetWithoutSetpcapFailsWithEperm) {
  // Positive control of the test above: a non-empty set and no CAP_SETPCAP.
  int rc = InUserNamespace([] {
    if (!ClearCapabilities()) return 13;
    const int r = DropBoundingSet();
    return r == -EPERM ? 0 : 20;
  });
  if (rc == kNoUserNs) GTEST_SKIP() << "no user namespaces here";
  EXPECT_EQ(rc, 0) << "step " << rc << " failed";
}

}  // namespace
}  // namespace ward::enforce
