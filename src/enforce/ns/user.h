// User namespace id maps: written by the parent for the child it cloned, or by an unprivileged
// child for itself.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "common/status.h"

namespace ward::enforce {

// Maps uid -> uid and gid -> gid (the caller's ids map to themselves inside). When
// `allow_setgroups` (the parent is privileged), the child may then drop its supplementary
// groups with setgroups(0, NULL); otherwise setgroups is denied, as the kernel requires for an
// unprivileged single-id map.
Status WriteIdMaps(pid_t pid, uid_t uid, gid_t gid, bool allow_setgroups);

// The same maps written by the child itself, unprivileged (setgroups denied): a process may map
// its own ids in a user namespace it owns. Child side, no allocation. Returns 0, or -errno with
// `failed` naming the file.
int WriteOwnIdMaps(uid_t uid, gid_t gid, char* failed, size_t failed_size);

}  // namespace ward::enforce
