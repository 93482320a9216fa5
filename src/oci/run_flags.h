// What a container asks of ward, as the flags of `ward run` say it: the profile, the egress
// allow and deny lists and the credentials from its `run.ward/` annotations, and the memory,
// pids and CPU limits from linux.resources. The policy loader then merges them over the profile
// as it merges the command line's (policy/loader.h), so a container's policy is checked like any
// run's. (The bundle's mounts, which bind at other paths than their source's, are not flags.)
#pragma once

#include "oci/bundle.h"
#include "policy/loader.h"

namespace ward::oci {

// `node_profile`: the profile when the container names none (the node's default).
policy::RunFlags RunFlagsFor(const Bundle& bundle, const std::string& node_profile);

}  // namespace ward::oci
