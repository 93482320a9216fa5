#include "enforce/landlock_coverage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstring>

#include "policy/paths.h"

namespace ward::enforce {
namespace {

// Oldest first; LandlockGaps walks it in this order.
constexpr std::array<LandlockFeature, 6> kFeatures = {{
    {"refer", 2, "5.19",
     "links and renames across directories inside the writable roots (the destination must "
     "grant every right of the source)"},
    {"truncate", 3, "6.2",
     "truncate(2) and O_TRUNC only below the writable roots and on the sandbox's devices"},
    {"tcp", 4, "6.7", "TCP connect only to the ports of the proxy and the DNS stub, no TCP bind"},
    {"ioctl_dev", 5, "6.10", "ioctl on device files only on the sandbox's own device nodes"},
    {"scope", 6, "6.12",
     "signals and abstract unix sockets only within the command's own Landlock domain: the "
     "command cannot signal sandbox init or the guard agent"},
    {"log", 7, "6.15", "the kernel's audit log records what Landlock denied"},
}};

// One decision per right: what covers it given `ctx`.
LandlockGap Decide(const LandlockFeature& f, const LandlockContext& ctx) {
  LandlockGap g;
  g.feature = &f;
  const std::string name = f.right;
  if (name == "refer") {
    // Without the right in the ruleset (and always on ABI 1) Landlock refuses every link or
    // rename that changes a file's parent directory.
    g.decision = LandlockGapDecision::kStricter;
    g.covered_by = "landlock itself";
    g.why =
        "every link and rename across directories fails with EXDEV (mv copies instead); nothing "
        "is allowed that ABI 2 would refuse";
  } else if (name == "truncate") {
    if (!ctx.writable_mount_without_landlock_write.empty()) {
      g.decision = LandlockGapDecision::kRefused;
      g.why = "the mount at " + ctx.writable_mount_without_landlock_write +
              " is writable while Landlock gives it read rights only, so only Landlock's "
              "truncate right would keep its files from being truncated";
    } else if (!ctx.host_files_by_descriptor.empty()) {
      std::string which;
      for (const std::string& d : ctx.host_files_by_descriptor) {
        which += (which.empty() ? "" : ", ") + d;
      }
      g.decision = LandlockGapDecision::kRefused;
      g.why = "the command holds host files outside its view by descriptor (" + which +
              "), which it could truncate through /proc/self/fd/N; the read-only mounts cover "
              "only the view (hand such a file through a pipe instead: cat FILE | ward run ...)";
    } else {
      g.decision = LandlockGapDecision::kCovered;
      g.covered_by = "read-only mounts";
      g.why =
          "every file outside the writable roots is on a read-only mount (truncate fails with "
          "EROFS); the private /dev holds no regular file and procfs ignores truncation (a host "
          "file handed to the command by descriptor, such as a stdin read from a file, refuses "
          "the run)";
    }
  } else if (name == "tcp") {
    if (ctx.network_namespace) {
      g.decision = LandlockGapDecision::kCovered;
      g.covered_by = "the network namespace";
      g.why =
          "the sandbox's namespace has only lo, where nothing but the proxy and the DNS stub "
          "listen; a port the command binds is reachable only from inside";
    } else {
      g.decision = LandlockGapDecision::kRefused;
      g.why =
          "this run has no network namespace of its own, so only Landlock's TCP rules would "
          "keep the command's connections to the proxy and the DNS stub";
    }
  } else if (name == "ioctl_dev") {
    g.decision = LandlockGapDecision::kCovered;
    g.covered_by = "the minimal /dev and seccomp";
    g.why =
        "the only devices the command can open are the private /dev's nodes (every other mount "
        "is nodev), which Landlock lets it use on any ABI; seccomp denies the dangerous ioctls "
        "(TIOCSTI, TIOCLINUX, ...) on every descriptor";
  } else if (name == "scope") {
    if (ctx.pid_namespace && ctx.network_namespace) {
      g.decision = LandlockGapDecision::kCovered;
      g.covered_by = "the pid and network namespaces";
      g.why =
          "no process outside is visible and abstract sockets are per network namespace; "
          "inside, a signal to sandbox init comes back to the command (pid 1 ignores the "
          "rest), and a guard agent killed or stopped by the command only makes creations fail "
          "closed (EACCES: the agent never restarts) or wait";
    } else {
      g.decision = LandlockGapDecision::kRefused;
      g.why =
          "this run shares a pid or network namespace with processes outside the sandbox, "
          "so only Landlock's scoping would keep its signals and abstract sockets inside";
    }
  } else {  // log
    g.decision = LandlockGapDecision::kAuditOnly;
    g.covered_by = "nothing needed (audit only)";
    g.why =
        "no guarantee depends on it: the kernel's audit log has no record of Landlock's "
        "denials (ward's own trail never had them)";
  }
  return g;
}

}  // namespace

const char* LandlockGapDecisionName(LandlockGapDecision d) {
  switch (d) {
    case LandlockGapDecision::kStricter:
      return "stricter";
    case LandlockGapDecision::kCovered:
      return "covered";
    case LandlockGapDecision::kAuditOnly:
      return "audit only";
    case LandlockGapDecision::kRefused:
      return "refused";
  }
  return "?";
}

std::span<const LandlockFeature> LandlockFeaturesAfterAbi1() { return kFeatures; }

std::vector<LandlockGap> LandlockGaps(const LandlockContext& ctx) {
  std::vector<LandlockGap> gaps;
  if (ctx.abi <= 0) return gaps;
  for (const LandlockFeature& f : kFeatures) {
    if (ctx.abi < f.abi) gaps.push_back(Decide(f, ctx));
  }
  return gaps;
}

const LandlockGap* FirstRefusedGap(const std::vector<LandlockGap>& gaps) {
  for (const LandlockGap& g : gaps) {
    if (g.decision == LandlockGapDecision::kRefused) return &g;
  }
  return nullptr;
}

std::string LandlockGapRefusal(const LandlockGap& gap, int abi, const std::string& kernel) {
  const LandlockFeature& f = *gap.feature;
  return "Landlock ABI " + std::to_string(abi) + " (Linux " + kernel + ") lacks the " + f.right +
         " right of ABI " + std::to_string(f.abi) + " (Linux " + f.kernel + "), which guarantees " +
         f.guarantee + ": " + gap.why + ". Run on Linux " + f.kernel +
         " or newer, or pass --allow-degraded=landlock to accept the run without this guarantee";
}

std::string LandlockGapShort(const LandlockGap& gap) {
  const LandlockFeature& f = *gap.feature;
  std::string s = std::string(f.right) + " (ABI " + std::to_string(f.abi) + ": ";
  switch (gap.decision) {
    case LandlockGapDecision::kStricter:
      s += "stricter without it, cross-directory links and renames fail with EXDEV";
      break;
    case LandlockGapDecision::kCovered:
      s += "covered by " + gap.covered_by;
      break;
    case LandlockGapDecision::kAuditOnly:
      s += "audit only";
      break;
    case LandlockGapDecision::kRefused:
      s += "NOT covered";
      break;
  }
  return s + ")";
}

std::string WritableMountOutsideLandlockWrites(const MountSpec& mount,
                                               const LandlockSpec& landlock) {
  auto landlock_writes = [&](const std::string& target) {
    for (const LandlockPath& p : landlock.paths) {
      if ((p.writable || p.device || p.proc) && policy::PathIsWithin(target, p.path)) return true;
    }
    return false;
  };
  for (const MountOp& op : mount.ops) {
    const bool writable =
        op.kind == MountOp::Kind::kTmpfs || (op.kind == MountOp::Kind::kBind && op.writable);
    if (writable && !landlock_writes(op.target)) return op.target;
  }
  return "";
}

bool TruncatableHostObject(unsigned st_mode, int open_flags, bool writable) {
  if (S_ISDIR(st_mode)) return true;
  if (!S_ISREG(st_mode) || !writable) return false;
  const int acc = open_flags & O_ACCMODE;
  return acc == O_RDONLY || (open_flags & O_APPEND) != 0;
}

std::vector<std::string> TruncatableStdio(const bool tty[3]) {
  static const char* const kNames[3] = {"stdin", "stdout", "stderr"};
  std::vector<std::string> out;
  for (int fd = 0; fd < 3; ++fd) {
    if (tty[fd]) continue;  // replaced by the sandbox's own pty
    struct stat st;
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fstat(fd, &st) != 0) continue;
    char path[32];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    const bool writable = faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0;
    if (TruncatableHostObject(st.st_mode, flags, writable)) out.push_back(kNames[fd]);
  }
  return out;
}

}  // namespace ward::enforce
