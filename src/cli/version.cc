// `ward --version`: the version, the commit it was built from, and what of the kernel this build
// knows how to use. Built only when asked for, so no other start-up pays for it.
#include "cli/version.h"

#include <string>

#include "enforce/landlock.h"

namespace ward::cli {

extern const char kBuildCommit[];  // generated at build time (cmake/build_info.cmake)

namespace {

std::string BuildLine() {
  std::string line = std::string("build: ") + WARD_BUILD_TYPE;
#if defined(__SANITIZE_ADDRESS__)
  line += ", AddressSanitizer";
#endif
#if defined(WARD_LAZY_LIBSSL)
  line += "; libssl loaded at the first TLS use (credentials, webhooks)";
#else
  line += "; OpenSSL linked in";
#endif
  return line;
}

}  // namespace

std::string VersionText() {
  std::string text = std::string("ward ") + WARD_VERSION + "\ncommit: " + kBuildCommit + "\n" +
                     BuildLine() + "\n";
  text +=
      "kernel features this build uses where the running kernel has them (`ward check` says "
      "which it has):\n";
  text += "  landlock ABI 1-" + std::to_string(enforce::kNewestLandlockAbiUsed) +
          ": files; TCP bind/connect (ABI 4); scoped signals and abstract sockets (ABI 6)\n";
  text +=
      "  seccomp: filters, user notification (NEW_LISTENER, WAIT_KILLABLE_RECV, ADDFD_FLAG_SEND)\n"
      "  namespaces: user, mount, pid, net, ipc, uts, cgroup\n"
      "  mount API (open_tree, move_mount, mount_setattr), openat2, pidfd, close_range\n"
      "  resource limits: cgroup v2, else cgroup v1, else rlimits";
  return text;
}

}  // namespace ward::cli
