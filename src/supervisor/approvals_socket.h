// The per-session approval socket: `$XDG_RUNTIME_DIR/ward/approvals-<session>.sock` (or
// `/tmp/ward-<uid>/` without XDG_RUNTIME_DIR), in a 0700 directory of ours, the socket itself
// 0600, every peer checked with SO_PEERCRED (our uid only). One JSON object per line in each
// direction; the protocol is in docs/approvals.md. The sandbox cannot reach it: neither
// /run/user nor the host's /tmp is in its mount view, and its abstract sockets live in its own
// network namespace.
#pragma once

#include <sys/types.h>

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

#include "common/status.h"
#include "supervisor/approvals.h"

namespace ward::supervisor {

// $XDG_RUNTIME_DIR/ward when XDG_RUNTIME_DIR is absolute, else /tmp/ward-<euid>.
std::string ApprovalSocketDir();
// Creates `dir` (0700) when missing; refuses one that is not a directory (a symlink included)
// or not ours; tightens a looser mode to 0700.
Status PrepareApprovalSocketDir(const std::string& dir);
// The client's check before trusting a directory: ours, a directory, not writable by others.
Status CheckApprovalSocketDir(const std::string& dir);
// <dir>/approvals-<session>.sock
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
  // Defence in depth: peers in this pid namespace (the sandbox's: the inode of
  // /proc/<init>/ns/pid) are refused even with our uid. 0: no such check.
  uint64_t refuse_pid_namespace = 0;
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
  uint64_t refused() const { return refused_; }  // peers refused (uid, pid namespace, limit)

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
  std::unique_ptr<asio::posix::stream_descriptor> listener_;
  ino_t socket_ino_ = 0;
  std::set<std::shared_ptr<Connection>> conns_;
  uint64_t refused_ = 0;
  bool stopped_ = false;
};

// Client side (the CLI), blocking.
struct ApprovalSession {
  std::string session;
  std::string path;
};
// The sessions whose socket in `dir` accepts a connection, sorted by id (stale sockets of
// sessions that died are skipped). Checks the directory first.
Result<std::vector<ApprovalSession>> FindApprovalSessions(const std::string& dir);
// Sends one request line and reads one reply line within `timeout`. Refuses a server that does
// not run as our uid.
Result<nlohmann::json> CallApprovalSocket(const std::string& path, const nlohmann::json& request,
                                          std::chrono::milliseconds timeout);
// The client's check of a connected socket `fd` (to `path`): the server runs as our uid.
Status CheckApprovalServerPeer(int fd, const std::string& path);
// A reply's verdict: Ok for {"ok":true}, else the Status its "error" names (code and message).
Status ApprovalReplyStatus(const nlohmann::json& reply);

}  // namespace ward::supervisor
