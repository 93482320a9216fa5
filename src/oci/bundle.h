// An OCI bundle as `ward oci create --bundle DIR` finds it: config.json read as an untrusted
// file of the caller (or root), parsed (config.h), its `run.ward/` annotations (annotations.h),
// and its root file system located. A root given relative to the bundle is resolved beneath it
// without following a symlink (a bundle whose rootfs link points out of it is refused); an
// absolute root is the engine's choice (podman and containerd mount the image elsewhere) and
// must be a directory. A bind of a host socket is refused unless an annotation names its path.
#pragma once

#include <string>

#include "common/status.h"
#include "oci/annotations.h"
#include "oci/config.h"

namespace ward::oci {

struct Bundle {
  std::string dir;     // absolute, canonical
  Config config;
  std::string rootfs;  // absolute
  WardAnnotations ward;
};

Result<Bundle> LoadBundle(const std::string& dir);

}  // namespace ward::oci
