// A pod's network: a container whose config.json names a network namespace by path (how
// Kubernetes and podman pods share one). The container keeps a namespace of its own, which
// reaches nothing but ward's proxy and DNS stub; its supervisor moves into the pod's, so every
// connection it opens for the container leaves with the pod's address and under the pod's
// NetworkPolicy, and names resolve as the pod resolves them: with the resolv.conf and hosts the
// engine gave the container, read at create (before any of the container runs, so nothing it
// writes to them later changes what its supervisor resolves).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"
#include "oci/config.h"

namespace ward::oci {

struct PodNetwork {
  UniqueFd netns;    // the pod's network namespace; empty when config.json names none
  std::string path;  // as config.json names it
  std::optional<std::string> resolv_conf, hosts;  // the engine's files, when it binds them
};

// Opens the network namespace config.json names by path and reads the engine's resolv.conf and
// hosts binds. Errors name the field: a path that is not a network namespace, a file that is not
// the engine's small regular file.
Result<PodNetwork> OpenPodNetwork(const Config& config);

// Moves the calling process (the container's supervisor, before it starts any thread) into the
// pod's network namespace, and into a mount namespace of its own where /etc/resolv.conf and
// /etc/hosts are the pod's and host names resolve from files and DNS only (the node's
// nsswitch.conf may name a resolver that answers from the node's network). Nothing when
// `pod.netns` is empty. The files are made unnamed in `dir` (the container's state directory).
Status EnterPodNetwork(const PodNetwork& pod, const std::string& dir);

// Listening sockets for the container's exposed ports (run.ward/expose) in the calling process's
// network (the pod's, after EnterPodNetwork): each port on the pod's IPv4 addresses, and on its
// IPv6 ones where the pod has IPv6. A port something of the pod already has is an error naming it.
Result<std::vector<std::pair<uint16_t, UniqueFd>>> ListenForExposedPorts(
    const std::vector<uint16_t>& ports);

}  // namespace ward::oci
