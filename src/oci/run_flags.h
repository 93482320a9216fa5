// What a container asks of ward, as the flags of `ward run` say it: the profile, the egress
// allow and deny lists and the credentials from its `run.ward/` annotations, and the memory,
// pids and CPU limits from linux.resources. The policy loader then merges them over the profile
// as it merges the command line's (policy/loader.h), so a container's policy is checked like any
// run's. (The bundle's mounts, which bind at other paths than their source's, are not flags.)
#pragma once

#include <string>

#include "oci/bundle.h"
#include "policy/loader.h"
#include "policy/user_config.h"

namespace ward::oci {

// What the container's annotations say, and the node's defaults ([oci]) where they say nothing.
struct ContainerChoices {
  policy::RunFlags flags;
  std::string approver;   // a webhook URL, "" for none
  std::string audit_dir;  // "" for ward's state directory
};
ContainerChoices ChoicesFor(const Bundle& bundle, const policy::OciDefaults& node);

}  // namespace ward::oci
