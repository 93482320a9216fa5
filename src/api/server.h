// The transport of `ward serve`: a unix stream socket, newline-delimited JSON-RPC, one event
// loop for every client. Every client passes the PeerGate (common/socket_peer.h): a client of
// another uid (root included, unless root runs the daemon), or one in namespaces other than
// the daemon's (any sandbox's), gets one error and is closed, and the attempt is audited in the
// daemon's session. Malformed, oversized or hostile input gets an error and the connection (and
// the daemon) stays up. A client that does not read its replies is dropped once too much is
// queued for it.
#pragma once

#include <sys/types.h>

#include <asio.hpp>
#include <cstddef>
#include <memory>
#include <set>
#include <string>

#include "api/error.h"
#include "api/jsonrpc.h"
#include "api/service.h"
#include "common/events.h"
#include "common/socket_peer.h"

namespace ward::api {

struct ServerConfig {
  std::string socket_path;
  size_t max_connections = 128;
  size_t max_line_bytes = kDefaultMaxLineBytes;
  size_t max_queued_bytes = 256 << 20;  // replies waiting for a slow reader
  EventSink* events = nullptr;          // where refused peers are recorded (may be null)
};

class Server {
 public:
  Server(asio::io_context& io, Service& service, ServerConfig config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the socket (0600). A live daemon on the same path is an error; a stale socket file
  // is replaced; anything else at the path is refused.
  Expected<Done> Start();
  // Stops accepting, closes every connection and removes the socket file.
  void Stop();
  size_t connections() const { return conns_.size(); }

 private:
  class Connection;
  void Accept();
  void Closed(Connection* c);

  asio::io_context& io_;
  Service& service_;
  ServerConfig config_;
  std::optional<asio::local::stream_protocol::acceptor> acceptor_;
  std::set<std::shared_ptr<Connection>> conns_;
  PeerGate gate_;
  bool stopped_ = false;
  ino_t socket_ino_ = 0;
};

}  // namespace ward::api
