// The per-session approval socket: `<runtime dir>/approvals-<session>.sock` (runtime_dir.h:
// $XDG_RUNTIME_DIR/ward, /run/user/<uid>/ward, or under ward's state directory; never /tmp), in
// a 0700 directory of ours, the socket itself 0600. Every peer passes the one PeerGate
// (common/socket_peer.h): our uid AND our own pid, user and mount namespaces, so a process in
// any sandbox is refused (and the attempt audited) even where it could reach the path. One JSON
// object per line in each direction; the protocol is in docs/approvals.md. No sandbox sees the
// directory (private_dirs.h), and abstract sockets are not used (each sandbox has its own
// network namespace).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <asio/io_context.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/events.h"
#include "common/socket_peer.h"
#include "common/status.h"
#include "supervisor/approvals/approval_broker.h"

namespace ward::supervisor {

// <dir>/approvals-<session>.sock (dir: WardRuntimeDir()).
std::string ApprovalSocketPath(const std::string& dir, std::string_view session);

// The protocol without the socket: one request object in, one reply object out. Never throws.
nlohmann::json HandleApprovalMessage(ApprovalBroker& broker, const nlohmann::json& message,
                                     std::string_view session);

struct ApprovalServerOptions {
  std::string path;     // the socket's path (its directory must exist)
  std::string session;  // reported by "hello"
  size_t max_connections = 16;
  size_t max_line_bytes = 64 * 1024;  // a longer request line closes the connection
  size_t max_queued_bytes = 4 << 20;  // replies a client does not read close it
  // Where refused peers are recorded (channel.peer_refused; the run's audit session). May be
  // null.
  EventSink* events = nullptr;
};

class ApprovalServer {
 public:
  // Binds and listens (a live socket at the path is an error; a stale one is replaced).
  static Result<std::unique_ptr<ApprovalServer>> Start(asio::io_context& io,
                                                       std::shared_ptr<ApprovalBroker> broker,
                                                       ApprovalServerOptions options);
  ~ApprovalServer();
  ApprovalServer(const ApprovalServer&) = delete;
  ApprovalServer& operator=(const ApprovalServer&) = delete;

  // Closes the listener and every connection and removes the socket file if it is still ours.
  void Stop();
  const std::string& path() const { return options_.path; }
  // Connections refused: peers the gate refused (uid, namespaces) and those over the limit.
  // Readable from any thread while the loop runs.
  uint64_t refused() const { return refused_.load(); }

 private:
  class Connection;
  ApprovalServer(asio::io_context& io, std::shared_ptr<ApprovalBroker> broker,
                 ApprovalServerOptions options);
  void Accept();
  void OnAccept(int fd);
  void Closed(Connection* c);

  asio::io_context& io_;
  std::shared_ptr<ApprovalBroker> broker_;
  ApprovalServerOptions options_;
  PeerGate gate_;
  std::unique_ptr<asio::posix::stream_descriptor> listener_;
  ino_t socket_ino_ = 0;
  std::set<std::shared_ptr<Connection>> conns_;
  std::atomic<uint64_t> refused_{0};
  bool stopped_ = false;
};

// Client side (the CLI), blocking.
struct ApprovalSession {
  std::string session;
  std::string path;
};
// The sessions whose socket in `dir` accepts a connection, sorted by id (stale sockets of
// sessions that died are skipped). Checks the directory first (CheckPrivateDir).
Result<std::vector<ApprovalSession>> FindApprovalSessions(const std::string& dir);
// Sends one request line and reads one reply line within `timeout`. Refuses a server that is
// not ours (CheckApprovalServerPeer).
Result<nlohmann::json> CallApprovalSocket(const std::string& path, const nlohmann::json& request,
                                          std::chrono::milliseconds timeout);
// The client's check of a connected socket `fd` (to `path`): the server runs as our uid, in our
// own namespaces (a server inside a sandbox could show made-up requests).
Status CheckApprovalServerPeer(int fd, const std::string& path);
// A reply's verdict: Ok for {"ok":true}, else the Status its "error" names (code and message).
Status ApprovalReplyStatus(const nlohmann::json& reply);

}  // namespace ward::supervisor
