// `ward mcp`: a Model Context Protocol server over stdio. It speaks the 2025-11-25 revision
// (initialize / notifications/initialized, tools/list, tools/call, ping, progress and
// cancellation notifications) and answers the stateless 2026-07-28 revision (server/discover,
// a protocol version in each request's _meta, resultType on results). Its tools run every
// command in a fresh sandbox under the server's profile and options, and touch files only
// through WorkspaceFs (policy-checked, openat2 beneath the workspace).
#pragma once

#include <asio.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/error.h"
#include "api/exec.h"
#include "api/live_sandbox.h"
#include "api/jsonrpc.h"
#include "api/workspace_fs.h"
#include "policy/loader.h"
#include "policy/policy.h"

namespace ward::api {

inline constexpr const char* kMcpLegacyVersion = "2025-11-25";
inline constexpr const char* kMcpStatelessVersion = "2026-07-28";
inline constexpr int kMcpUnsupportedVersionCode = -32022;
// A tools/call that is still running after this long returns a handle (clients time out at 60 s).
inline constexpr uint64_t kMcpMaxYieldMs = 20000;
// Output returned inline by a tool result, per stream; the rest is read with exec_poll.
inline constexpr size_t kMcpInlineBytes = 64 << 10;

struct McpConfig {
  std::string version;                     // ward's version
  policy::RunFlags flags;                  // the server's run options, applied to every exec
  std::string workspace;                   // canonical
  const policy::Policy* policy = nullptr;  // effective policy (for the file tools)
  ExecManagerConfig exec;
  uint64_t default_yield_ms = kMcpMaxYieldMs;
  // Review mode (`ward mcp --workspace=overlay`): every exec writes this review session, one at
  // a time, and the file tools are off (they would go around it). Empty: direct.
  ExecReview review;
  std::chrono::milliseconds progress_interval{1000};
  // The session's commands run in one live sandbox (not in review mode), as commands typed in
  // one terminal; false: each in a fresh sandbox (`ward mcp --fresh-execs`).
  bool live = false;
};

class McpServer {
 public:
  using WriteLine = std::function<void(const std::string& line)>;  // one JSON message + '\n'
  McpServer(asio::io_context& io, McpConfig config, WriteLine write);
  ~McpServer();
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  Status Init();
  // The instructions of initialize: live, fresh or review mode.
  std::string Instructions() const;
  // One line from the client (without the newline).
  void HandleLine(std::string_view line);
  // Kills running execs.
  void Shutdown();
  // No tools/call is in flight (stdin may close once the answers are out).
  bool idle() const { return calls_.empty(); }

  // The tool definitions of tools/list.
  static nlohmann::json ToolDefinitions();

 private:
  nlohmann::json ToolReset(const nlohmann::json& args);
  bool UsesLive() const;
  Expected<std::shared_ptr<LiveSandbox>> Live();
  struct Call {
    nlohmann::json id;
    std::string exec_id;
    bool cancelled = false;
    std::shared_ptr<asio::steady_timer> progress;
  };
  void Send(const nlohmann::json& message);
  void Respond(const nlohmann::json& id, Expected<nlohmann::json> result, bool modern);
  void HandleRequest(const Message& m);
  void HandleNotification(const Message& m);
  // Tools; `done` gets a CallToolResult (content, structuredContent, isError).
  using ToolDone = std::function<void(nlohmann::json)>;
  void CallTool(const std::string& key, const nlohmann::json& params, ToolDone done);
  void ToolExec(const std::string& key, const nlohmann::json& args, const nlohmann::json& progress,
                ToolDone done);
  void ToolPoll(const std::string& key, const nlohmann::json& args, const nlohmann::json& progress,
                ToolDone done);
  void ToolKill(const nlohmann::json& args, ToolDone done);
  nlohmann::json ToolReadFile(const nlohmann::json& args);
  nlohmann::json ToolWriteFile(const nlohmann::json& args);
  nlohmann::json ToolEditFile(const nlohmann::json& args);
  nlohmann::json ToolListFiles(const nlohmann::json& args);
  // Waits for `e` to end for at most wait_ms, sending progress, then calls done with its state.
  void WaitAndReport(const std::string& key, std::shared_ptr<Exec> e, uint64_t wait_ms,
                     uint64_t out_offset, uint64_t err_offset, const nlohmann::json& progress,
                     ToolDone done);
  void ArmProgress(std::shared_ptr<asio::steady_timer> tick, nlohmann::json token,
                   std::weak_ptr<Exec> we, std::shared_ptr<bool> answered,
                   std::chrono::steady_clock::time_point start);
  nlohmann::json ExecResult(const Exec& e, uint64_t out_offset, uint64_t err_offset);

  asio::io_context& io_;
  McpConfig config_;
  WriteLine write_;
  ExecManager execs_;
  std::shared_ptr<LiveSandbox> live_;  // the session's live sandbox, started by its first exec
  std::string live_session_;
  std::optional<WorkspaceFs> fs_;
  std::string session_label_;
  std::map<std::string, Call> calls_;  // in-flight tools/call by request id (dumped)
  bool initialized_ = false;
};

// The result of a tool that failed before doing anything: isError with a text message.
nlohmann::json ToolError(const std::string& message);

}  // namespace ward::api
