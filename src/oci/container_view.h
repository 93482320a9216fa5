// What a container sees and may do, made from its bundle: the policy (the profile and the
// run.ward/ annotations through the same loader as every run, with no host path and no
// workspace: a container sees its image) and its root (enforce::ImageRoot: the image, the
// bundle's binds and tmpfs mounts, its working directory, hostname and rlimits).
//
// What ward provides itself is not taken from the bundle: /proc, /dev (with /dev/pts, /dev/shm
// and /dev/mqueue) and /tmp are the sandbox's own, and /sys and cgroup mounts are not given (a
// container under ward has no /sys).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "enforce/plan.h"
#include "oci/bundle.h"
#include "oci/run_flags.h"
#include "policy/policy.h"

namespace ward::oci {

// The container's policy. A profile named by path must be a file of root's or the caller's.
// With a `credentials_dir` on the node, each credential the container enables takes its secret
// from the file of its name there (a Kubernetes Secret projected into a directory only the
// node's ward reads) instead of the profile's source.
Result<policy::Policy> ContainerPolicy(const ContainerChoices& choices,
                                       const std::string& credentials_dir);

// The container's root. Mount points the bundle's binds need in the image are made there,
// beneath the rootfs with no symlink followed (as runc makes them); a destination reached
// through a symlink of the image is refused.
Result<enforce::ImageRoot> ContainerRoot(const Bundle& bundle);

// Where the credential broker's CA bundle goes in the image: the first usual bundle path that
// is a regular file there (reached with no symlink), else Debian's, made in the image as a
// bind's mount point is.
Result<std::string> CaBundleInImage(const Bundle& bundle);

}  // namespace ward::oci
