#include "enforce/caps.h"

#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace ward::enforce {

int DropBoundingSet() {
  for (int cap = 0; cap < 64; ++cap) {
    const int held = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
    if (held < 0) {
      if (errno == EINVAL) break;  // past the last capability this kernel knows
      return -errno;
    }
    // Each drop commits new credentials; a capability already gone costs only the read.
    if (held == 1 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) return -errno;
  }
  return 0;
}

int DropAllCapabilities() {
  // Needs CAP_SETPCAP (held in the sandbox's user namespace until the capset below).
  const unsigned long kBits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                              SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                              SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  // gVisor has no securebits at all (both calls EINVAL): there the empty bounding set below is
  // what keeps a uid 0 execve from regaining capabilities.
  if (prctl(PR_SET_SECUREBITS, kBits, 0, 0, 0) != 0 &&
      !(errno == EINVAL && prctl(PR_GET_SECUREBITS, 0, 0, 0, 0) < 0 && errno == EINVAL)) {
    return -errno;
  }
  if (int rc = DropBoundingSet(); rc != 0) return rc;
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return -errno;
  }
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &hdr, data) != 0) return -errno;
  return 0;
}

}  // namespace ward::enforce
