// The root built with mount(2) by path, for kernels without the mount API (gVisor, Linux < 5.2);
// MountSpec::by_path. Same result as mount.cc where the kernel allows it, checked mount by mount:
//
// - Nothing is captured detached: every mount names its source and target by path, so each one
//   is checked afterwards against what was resolved before it (device and inode, reached from a
//   descriptor without following any symlink); a path swapped meanwhile fails the run.
// - Read-only binds come from read-only views. A bind is made read-only by a remount where the
//   kernel has one; gVisor ignores MS_RDONLY on a bind and has no remount, but a bind keeps the
//   flags of the mount it is made from, and a read-only overlay of a directory (with an empty
//   second lower layer, no upper) is read-only: the view is that overlay. Each read-only mount is
//   checked to refuse writes (EROFS) before the run goes on.
// - The root's own tmpfs is made read-only the same way, once every entry it needs exists.
// - The root is entered with pivot_root, or with chroot where the kernel has no pivot_root
//   (gVisor): the host's tree then stays in the sandbox's mount namespace, out of reach of a
//   process without CAP_SYS_CHROOT (none inside has it) (MountReport::chroot).
// - Where a kernel lacks devpts instances (gVisor), /dev/pts is absent: a run with a terminal
//   fails at its pty.
#pragma once

#include "enforce/child_error.h"
#include "enforce/mount.h"
#include "enforce/spec.h"

namespace ward::enforce {

// As ApplyMounts (mount.h), for a spec with by_path; the sysctls are handed over unwritten.
bool ApplyMountsByPath(const MountSpec& spec, MountReport* report, ChildError* error,
                       PendingSysctls* sysctls);

}  // namespace ward::enforce
