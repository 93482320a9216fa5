// What each Landlock right newer than ABI 1 guarantees in ward, and, on a kernel whose ABI lacks
// it, which other layer gives the same guarantee. The rule: on every kernel with Landlock the
// plan runs fully enforced or is refused naming the missing right, never silently weaker.
// Pure: the planner (plan.cc), `ward explain` and `ward check` decide from the same table.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "enforce/spec.h"

namespace ward::enforce {

// What a missing right means for a run.
enum class LandlockGapDecision {
  kStricter,   // Landlock is stricter without it: the run goes on, some calls fail instead
  kCovered,    // another layer gives the same guarantee: the run goes on
  kAuditOnly,  // no guarantee depends on it (a record of denials): the run goes on
  kRefused,    // nothing else covers it here: refused unless --allow-degraded=landlock
};
const char* LandlockGapDecisionName(LandlockGapDecision d);  // "stricter", "covered", ...

// One right (or scope, or flag) of the table: fixed facts.
struct LandlockFeature {
  const char* right;      // "truncate"
  int abi;                // the first ABI that has it
  const char* kernel;     // the first Linux release with that ABI: "6.2"
  const char* guarantee;  // what ward gets from it
};
// Every right newer than ABI 1, oldest first.
std::span<const LandlockFeature> LandlockFeaturesAfterAbi1();

// What the rest of the run provides, from the plan and the command's descriptors.
struct LandlockContext {
  int abi = 0;  // the kernel's
  // The sandbox has a network namespace of its own (only lo, the proxy and the DNS stub).
  bool network_namespace = true;
  // The sandbox has a pid namespace of its own (nothing outside can be signalled).
  bool pid_namespace = true;
  // A writable mount inside without a Landlock write rule over it ("" when none): a read-only
  // Landlock path that the mounts do not make read-only (WritableMountOutsideLandlockWrites).
  std::string writable_mount_without_landlock_write;
  // Host files the command holds by descriptor, outside the view, that it may not overwrite:
  // "stdin", "stdout", "stderr" (see TruncatableStdio), and "files granted by --ask".
  std::vector<std::string> host_files_by_descriptor;
};

// A right this kernel lacks, and what that means here.
struct LandlockGap {
  const LandlockFeature* feature = nullptr;
  LandlockGapDecision decision = LandlockGapDecision::kCovered;
  std::string covered_by;  // the layer that gives the guarantee ("" when refused)
  std::string why;         // the reason for the decision, one sentence
};

// The rights of the table that ctx.abi lacks, oldest first; none for abi <= 0 (no Landlock at
// all is the planner's own refusal) or at the newest ABI.
std::vector<LandlockGap> LandlockGaps(const LandlockContext& ctx);

// The first gap that refuses the run, or nullptr.
const LandlockGap* FirstRefusedGap(const std::vector<LandlockGap>& gaps);
const LandlockGap* FirstRefusedGap(std::vector<LandlockGap>&&) = delete;  // would dangle

// The refusal: the right, the ABI and kernel that bring it, why nothing covers it, the fix.
std::string LandlockGapRefusal(const LandlockGap& gap, int abi, const std::string& kernel);

// "truncate (ABI 3: covered by read-only mounts)" for `ward explain`'s landlock line.
std::string LandlockGapShort(const LandlockGap& gap);

// The target of a writable mount in `plan` with no Landlock write rule at or above it, or "".
// The private /dev (device nodes on read-only binds, no regular file) and /proc (Landlock
// lets it be written; procfs ignores truncation) are the sandbox's own and not counted.
std::string WritableMountOutsideLandlockWrites(const MountSpec& mount,
                                               const LandlockSpec& landlock);

// Pure: whether a descriptor with this st_mode and these open flags, writable by the caller
// (`writable`: faccessat W_OK), is a host object the command could truncate by
// /proc/self/fd/N without the truncate right while it may not overwrite it: a directory (any
// file below), or a regular file opened read-only or append-only.
bool TruncatableHostObject(unsigned st_mode, int open_flags, bool writable);

// Whether a kernel of this ABI has Landlock but not its truncate right (then the caller's stdio
// matter: TruncatableStdio).
inline bool LandlockLacksTruncate(int abi) { return abi >= 1 && abi < 3; }

// The names ("stdin", "stdout", "stderr") of the caller's fds 0..2 that are not terminals
// (`tty`) and are TruncatableHostObject: the command inherits them as they are.
std::vector<std::string> TruncatableStdio(const bool tty[3]);

}  // namespace ward::enforce
