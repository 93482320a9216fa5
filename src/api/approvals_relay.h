// The daemon's side of approvals (`approvals.*` of `ward serve`): every exec of a sandbox with
// approvals runs as `ward run --session-id ID`, so its supervisor serves the approval socket of
// session ID (supervisor/approvals/socket.h; protocol in docs/approvals.md). This file talks to
// such a socket from the daemon's event loop without blocking it: connect, one request line,
// one reply line, the whole exchange bounded by a timer, so a stuck or dead supervisor costs a
// clear error after a short while and never a hung daemon. The client-side checks are the
// CLI's: the socket directory is ours, a directory and not writable by others, and the server
// runs as our uid.
#pragma once

#include <asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/error.h"
#include "common/status.h"

namespace ward::api {

// How long one exchange with an exec's approval socket may take.
inline constexpr std::chrono::milliseconds kApprovalCallTimeout{2000};

using ApprovalReplyFn = std::function<void(Expected<nlohmann::json>)>;

// Sends `request` (one object: {"op": ...}) to the approval socket at `path` and calls `done`
// exactly once, on `io`'s loop and never inline, with the reply object ({"ok": true, ...}) or
// an Error:
//   not_found       no socket (the run has not started its approvals yet, or has ended), or
//                   the socket's own not_found (no such pending request or grant)
//   policy_denied   the directory or the socket's server is not ours
//   timeout         no complete reply within `timeout`
//   interrupted     the server refused the connection or closed it without a reply
//   invalid_request the socket refused the request (bad id, bad prefix, grant not live)
// The directory of `path` is checked first (supervisor::CheckPrivateDir).
void CallApprovalSocketAsync(asio::io_context& io, const std::string& path,
                             const nlohmann::json& request, std::chrono::milliseconds timeout,
                             ApprovalReplyFn done);

// The approval socket of `session` in ward's runtime directory (supervisor::WardRuntimeDir());
// "" for an id that is not in NewSessionId's format (never used to build a path), or when no
// runtime directory can be told.
std::string ApprovalSocketPathFor(const std::string& session);

// The number of questions pending in the run of `session` ({"op":"hello"}, bounded by
// `timeout`): 0 when the run has no socket (not started yet, or ended), nullopt when the socket
// does not answer properly. `done` runs on the loop, never inline.
void CountPendingApprovals(asio::io_context& io, const std::string& session,
                           std::chrono::milliseconds timeout,
                           std::function<void(std::optional<uint64_t>)> done);

// One exchange per target, all at once; `done` gets the outcomes in the targets' order once
// every one is in (each bounded by `timeout`).
using ApprovalResults = std::vector<std::optional<Expected<nlohmann::json>>>;
void CallApprovalSockets(asio::io_context& io, const std::vector<std::string>& paths,
                         const nlohmann::json& request, std::chrono::milliseconds timeout,
                         std::function<void(ApprovalResults)> done);

}  // namespace ward::api
