// Builds the sandbox's root from nothing (tmpfs, binds of allowed paths, minimal /dev, fresh
// /proc, masks, protected paths) and pivots into it. Child side: runs in sandbox init, which
// holds every capability of its new user namespace and nothing outside it.
#pragma once

#include <utility>
#include <vector>

#include "common/unique_fd.h"
#include "enforce/child_error.h"
#include "enforce/spec.h"

namespace ward::enforce {

// Mount ids and protection results, reported back for `ward explain` and tests.
struct MountReport {
  int mounts = 0;              // mount operations performed
  int masked = 0;              // deny masks applied inside visible binds
  int protected_existing = 0;  // protected paths made read-only
  int nested_repos = 0;        // nested repositories found and protected
  bool chroot = false;         // entered with chroot, the kernel having no pivot_root (gVisor)
  // Writable roots and nested repository roots below which protected names are not creatable
  // (the supervisor's creation guard compares directories by device and inode).
  static constexpr int kMaxBases = 64;
  int nbases = 0;
  unsigned long long base_dev[kMaxBases] = {};
  unsigned long long base_ino[kMaxBases] = {};
};

// The spec's sysctls, opened while /proc/sys was still writable, not yet written.
using PendingSysctls = std::vector<std::pair<UniqueFd, const Sysctl*>>;

// Returns false and fills *error on the first failure. Leaves the process in the new root with
// cwd "/". With `detached`, the detached mounts still open at the end (the templates of the
// covers) are handed over instead of closed: closing one waits for an RCU grace period, which
// the caller can pay later, off the start-up's path. With `sysctls`, the sysctls are handed
// over unwritten (init writes them once it is in its network namespace, see kNetns); without,
// they are written last.
bool ApplyMounts(const MountSpec& spec, MountReport* report, ChildError* error,
                 std::vector<UniqueFd>* detached = nullptr, PendingSysctls* sysctls = nullptr);

// Writes sysctls handed over by ApplyMounts; false and *error on the first failure.
bool WriteSysctls(PendingSysctls* sysctls, ChildError* error);

}  // namespace ward::enforce
