// Connections into a sandbox's network from outside it: the ports a container exposes to its
// pod (run.ward/expose). The supervisor accepts on listening sockets in the pod's network and
// joins each connection to one it opens to the same port on the sandbox's loopback, through a
// socket the caller makes inside the sandbox's namespace. Nothing else of the outside reaches the
// sandbox, and the sandbox reaches nothing through it: it only ever answers. Each connection is
// one `net.inbound` event at its end (port, peer, bytes each way, or why it was not joined), up to
// a bound: a peer outside cannot fill the trail.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "common/events.h"
#include "common/status.h"
#include "common/unique_fd.h"

namespace asio {
class io_context;
}

namespace ward::net {

struct PortForwardOptions {
  size_t max_connections = 256;  // open at once (joined or being joined); more are closed
  size_t max_per_peer = 64;      // of those, from one address: one peer cannot take them all
  std::chrono::milliseconds connect_timeout{5000};  // for the connection inside
  // net.inbound records at most; the rest are counted in one net.inbound.unrecorded at Stop().
  uint64_t max_records = 1000;
  // A TCP socket of `family` (AF_INET, AF_INET6) made inside the sandbox's network namespace.
  std::function<Result<UniqueFd>(int family)> socket_inside;
};

namespace internal {
struct ForwardCore;
}

class PortForwarder {
 public:
  // `events` (null: no events) must outlive the forwarder.
  PortForwarder(asio::io_context& ctx, EventSink* events, PortForwardOptions options);
  ~PortForwarder();  // Stop()s
  PortForwarder(const PortForwarder&) = delete;
  PortForwarder& operator=(const PortForwarder&) = delete;

  // Connections accepted on `listening_socket` (a listening TCP socket outside) go to `port`
  // inside: 127.0.0.1, else ::1.
  Status Serve(uint16_t port, UniqueFd listening_socket);
  // Closes the listeners and every connection.
  void Stop();

  struct Stats {
    uint64_t joined = 0;     // connections joined to one inside
    uint64_t unjoined = 0;   // nothing listened inside, or over a cap
    uint64_t bytes_in = 0;   // outside to inside
    uint64_t bytes_out = 0;  // inside to outside
  };
  Stats stats() const;

 private:
  std::shared_ptr<internal::ForwardCore> core_;
};

}  // namespace ward::net
