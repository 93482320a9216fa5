// A container's exposed ports (run.ward/expose), served by its supervisor in the pod's network:
// each connection accepted there is joined to the same port on the container's loopback, through
// a socket made in the container's network namespace (net/port_forward.h) by a thread of the
// supervisor's that lives there and has dropped every capability once there. The supervisor is in the pod's namespace
// already (oci/pod_network.h). Call before the command starts, while the supervisor still has
// its capabilities (the thread needs them to join the namespace).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "common/events.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "net/port_forward.h"

namespace asio {
class io_context;
}

namespace ward::supervisor {

// Serves `listeners` (taken) on `ctx`, into `sandbox_netns` (taken). Null and nothing done when
// there are none. A port among `ward_own` (the proxy's, the DNS stub's inside) is refused.
Result<std::unique_ptr<net::PortForwarder>> ServeContainerPorts(
    asio::io_context& ctx, const std::vector<std::pair<uint16_t, int>>& listeners,
    const std::vector<uint16_t>& ward_own, UniqueFd sandbox_netns, EventSink* events);

}  // namespace ward::supervisor
