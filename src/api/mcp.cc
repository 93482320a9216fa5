#include "api/mcp.h"

#include <signal.h>

#include <algorithm>

#include "api/params.h"
#include "audit/session_log.h"
#include "api/sandbox_spec.h"

namespace ward::api {

namespace {

const char* const kLegacyVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
constexpr const char* kMetaVersionKey = "io.modelcontextprotocol/protocolVersion";

// The server's instructions: how commands run (a fresh sandbox each, the session's live sandbox,
// or review mode), then what the file tools check, then how a long command is followed.
constexpr const char* kFreshSandbox =
    "Every command runs in its own fresh ward sandbox (namespaces, Landlock, seccomp, no network "
    "unless the server's profile allows it) with the workspace as its working directory";
constexpr const char* kLiveSandbox =
    "Commands run in one ward sandbox (namespaces, Landlock, seccomp, no network unless the "
    "server's profile allows it) that lives for this session, like commands typed in one "
    "terminal: processes left running in the background, servers on its loopback, /tmp and HOME "
    "persist from one command to the next; each starts in the workspace (or cwd). reset_sandbox "
    "ends everything in it and starts a new one. ";
constexpr const char* kReviewMode =
    ", in review mode: the commands' writes to the workspace are kept apart for the user to "
    "review and apply, and each command sees those of the commands before it. Commands run one "
    "at a time. The file tools are off: read and write files with commands (cat, sed, tee). ";
constexpr const char* kFileTools =
    "Files are read and written through the supervisor and checked against the same policy: "
    "protected paths (.git/hooks, .envrc, agent settings) and paths outside the workspace are "
    "refused. ";
constexpr const char* kPolling =
    "A command still running after yield_ms returns status \"running\" and an exec_id: call "
    "exec_poll to wait for it and exec_kill to stop it.";

nlohmann::json TextContent(const std::string& text) {
  return nlohmann::json::array({{{"type", "text"}, {"text", text}}});
}

nlohmann::json StatusSchema() {
  return {
      {"type", "object"},
      {"properties",
       {{"status",
         {{"type", "string"},
          {"enum", {"exited", "running", "denied", "timed_out", "interrupted"}},
          {"description",
           "exited: the command ended (see exit_code); running: still running, "
           "use exec_poll; denied: ward refused to run it"}}},
        {"exit_code", {{"type", {"integer", "null"}}}},
        {"signal", {{"type", {"integer", "null"}}}},
        {"stdout", {{"type", "string"}}},
        {"stderr", {{"type", "string"}}},
        {"truncated", {{"type", "boolean"}}},
        {"exec_id", {{"type", "string"}}},
        {"stdout_offset", {{"type", "integer"}}},
        {"stderr_offset", {{"type", "integer"}}},
        {"reason", {{"type", {"string", "null"}}}}}},
      {"required", {"status", "exit_code", "stdout", "stderr", "truncated", "exec_id"}},
  };
}

std::string Indented(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

nlohmann::json ToolError(const std::string& message) {
  return {{"content", TextContent(message)}, {"isError", true}};
}

namespace {

// The tools that run commands: exec, exec_poll, exec_kill, reset_sandbox.
void AddCommandTools(nlohmann::json& tools) {
  nlohmann::json str = {{"type", "string"}};
  tools.push_back({
      {"name", "exec"},
      {"title", "Run a command in the sandbox"},
      {"description",
       "Runs a command in the session's ward sandbox (what earlier commands left running or "
       "wrote in /tmp and HOME is still there), in the workspace. Give `command` (a shell "
       "command line, run with /bin/sh -c) or `argv`. Returns status, exit_code, stdout, stderr. "
       "A command still running after yield_ms (at most 20000) returns status \"running\" and "
       "an exec_id for exec_poll / exec_kill. A non-zero exit or a denial is reported as an "
       "error result."},
      {"inputSchema",
       {{"type", "object"},
        {"properties",
         {{"command", {{"type", "string"}, {"description", "Shell command line (/bin/sh -c)"}}},
          {"argv",
           {{"type", "array"},
            {"items", str},
            {"description", "Program and arguments, instead of command"}}},
          {"cwd", {{"type", "string"}, {"description", "Directory relative to the workspace"}}},
          {"timeout_ms",
           {{"type", "integer"},
            {"minimum", 1},
            {"description", "Kill the command after this many milliseconds"}}},
          {"yield_ms",
           {{"type", "integer"},
            {"minimum", 0},
            {"maximum", kMcpMaxYieldMs},
            {"description", "Return a handle if it is still running after this long"}}},
          {"stdin", {{"type", "string"}, {"description", "Data for the command's stdin"}}}}},
        {"additionalProperties", false}}},
      {"outputSchema", StatusSchema()},
  });
  tools.push_back({
      {"name", "exec_poll"},
      {"title", "Wait for a running command"},
      {"description",
       "Waits up to wait_ms (default 10000, at most 20000) for a command started by exec, and "
       "returns its status and its output from the given offsets (default: from the start)."},
      {"inputSchema",
       {{"type", "object"},
        {"properties",
         {{"exec_id", str},
          {"wait_ms", {{"type", "integer"}, {"minimum", 0}, {"maximum", kMcpMaxYieldMs}}},
          {"stdout_offset", {{"type", "integer"}, {"minimum", 0}}},
          {"stderr_offset", {{"type", "integer"}, {"minimum", 0}}}}},
        {"required", {"exec_id"}},
        {"additionalProperties", false}}},
      {"outputSchema", StatusSchema()},
  });
  tools.push_back({
      {"name", "exec_kill"},
      {"title", "Stop a running command"},
      {"description",
       "Sends a signal (default KILL; also TERM, INT, HUP) to a command started by exec; KILL "
       "ends its whole sandbox."},
      {"inputSchema",
       {{"type", "object"},
        {"properties",
         {{"exec_id", str},
          {"signal", {{"type", "string"}, {"enum", {"KILL", "TERM", "INT", "HUP", "QUIT"}}}}}},
        {"required", {"exec_id"}},
        {"additionalProperties", false}}},
      {"outputSchema", StatusSchema()},
  });
  tools.push_back({
      {"name", "reset_sandbox"},
      {"title", "Start the sandbox afresh"},
      {"description",
       "Ends every process of the session's sandbox (background servers included) and starts a "
       "new one: /tmp and HOME are empty again; the workspace keeps what was written to it."},
      {"inputSchema", {{"type", "object"}, {"properties", nlohmann::json::object()},
                       {"additionalProperties", false}}},
  });
}

// The tools that read and write the workspace through the policy's checks.
void AddFileTools(nlohmann::json& tools) {
  nlohmann::json str = {{"type", "string"}};
  tools.push_back({
      {"name", "read_file"},
      {"title", "Read a file of the workspace"},
      {"description",
       "Reads a text file of the workspace: `offset` is the first line (1-based, default 1), "
       "`limit` the number of lines (default 2000)."},
      {"inputSchema",
       {{"type", "object"},
        {"properties",
         {{"path", str},
          {"offset", {{"type", "integer"}, {"minimum", 1}}},
          {"limit", {{"type", "integer"}, {"minimum", 1}}}}},
        {"required", {"path"}},
        {"additionalProperties", false}}},
  });
  tools.push_back({
      {"name", "write_file"},
      {"title", "Write a file of the workspace"},
      {"description", "Creates or replaces a file of the workspace (atomically) with `content`."},
      {"inputSchema",
       {{"type", "object"},
        {"properties", {{"path", str}, {"content", str}}},
        {"required", {"path", "content"}},
        {"additionalProperties", false}}},
  });
  tools.push_back({
      {"name", "edit_file"},
      {"title", "Replace a string in a file"},
      {"description",
       "Replaces `old_string` by `new_string` in a file of the workspace. old_string must occur "
       "exactly once unless replace_all is true."},
      {"inputSchema",
       {{"type", "object"},
        {"properties",
         {{"path", str},
          {"old_string", str},
          {"new_string", str},
          {"replace_all", {{"type", "boolean"}}}}},
        {"required", {"path", "old_string", "new_string"}},
        {"additionalProperties", false}}},
  });
  tools.push_back({
      {"name", "list_files"},
      {"title", "List files of the workspace"},
      {"description",
       "Lists a directory of the workspace (default: its root) down to `depth` levels "
       "(default 2, at most 10). Directories end in '/'."},
      {"inputSchema",
       {{"type", "object"},
        {"properties",
         {{"path", str}, {"depth", {{"type", "integer"}, {"minimum", 1}, {"maximum", 10}}}}},
        {"additionalProperties", false}}},
  });
}

}  // namespace

nlohmann::json McpServer::ToolDefinitions() {
  nlohmann::json tools = nlohmann::json::array();
  AddCommandTools(tools);
  AddFileTools(tools);
  return tools;
}

McpServer::McpServer(asio::io_context& io, McpConfig config, WriteLine write)
    : io_(io), config_(std::move(config)), write_(std::move(write)), execs_(io, config_.exec) {}

McpServer::~McpServer() { Shutdown(); }

Status McpServer::Init() {
  WARD_TRY(execs_.Init());
  auto fs = WorkspaceFs::Open(config_.workspace, config_.policy);
  if (!fs.ok()) return Status(Code::kInvalidArgument, fs.error().message);
  fs_.emplace(std::move(fs).value());
  session_label_ = NewId("sb");
  return Ok();
}

void McpServer::Shutdown() {
  execs_.KillAll("the MCP server stopped");
  if (live_) live_->Close("the MCP server stopped");
  live_.reset();
}

std::string McpServer::Instructions() const {
  if (!config_.review.session.empty()) return std::string(kFreshSandbox) + kReviewMode + kPolling;
  if (UsesLive()) return std::string(kLiveSandbox) + kFileTools + kPolling;
  return std::string(kFreshSandbox) + ". " + kFileTools + kPolling;
}

nlohmann::json McpServer::ToolReset(const nlohmann::json& args) {
  Params p(args, "arguments");
  if (!p.Finish()) return ToolError(p.error().message);
  if (!UsesLive()) return ToolError("every command already runs in a fresh sandbox");
  if (live_) live_->Close("reset_sandbox");
  live_.reset();
  return {{"content", TextContent("The sandbox was reset: its next command starts a new one.")},
          {"isError", false}};
}

bool McpServer::UsesLive() const { return config_.live && config_.review.session.empty(); }

// The session's live sandbox, started when there is none or the last one ended.
Expected<std::shared_ptr<LiveSandbox>> McpServer::Live() {
  if (live_ && !live_->ended()) return live_;
  std::vector<std::string> labels;
  if (config_.exec.labels) labels = {"sandbox=" + session_label_};
  live_session_ = audit::NewSessionId();
  RunInvocation inv =
      BuildLiveInvocation(config_.flags, config_.workspace, labels, live_session_);
  WARD_API_ASSIGN_OR_RETURN(live_, LiveSandbox::Start(io_, config_.exec.ward_binary,
                                                      std::move(inv.args)));
  return live_;
}

void McpServer::Send(const nlohmann::json& message) { write_(SerializeLine(message)); }

void McpServer::Respond(const nlohmann::json& id, Expected<nlohmann::json> result, bool modern) {
  if (!result.ok()) {
    Send(MakeErrorResponse(id, result.error()));
    return;
  }
  nlohmann::json r = std::move(result).value();
  if (modern && r.is_object()) r["resultType"] = "complete";
  Send(MakeResult(id, std::move(r)));
}

void McpServer::HandleLine(std::string_view line) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
  ParseFailure failure;
  auto m = ParseMessage(line, &failure);
  if (!m.ok()) {
    Send(MakeErrorResponse(failure.id, m.error()));
    return;
  }
  try {
    if (m->kind == Message::Kind::kRequest) {
      HandleRequest(*m);
    } else if (m->kind == Message::Kind::kNotification) {
      HandleNotification(*m);
    }
    // Responses: we never send requests to the client, so there is nothing to match.
  } catch (const std::exception& e) {
    if (m->kind == Message::Kind::kRequest) {
      Error err = MakeError(ErrorKind::kInterrupted, std::string("internal error: ") + e.what());
      err.code = -32603;
      Send(MakeErrorResponse(m->id, err));
    }
  }
}

void McpServer::HandleNotification(const Message& m) {
  if (m.method == "notifications/initialized") {
    initialized_ = true;
  } else if (m.method == "notifications/cancelled") {
    if (!m.params.is_object() || !m.params.contains("requestId")) return;
    std::string key = m.params["requestId"].dump();
    auto it = calls_.find(key);
    if (it == calls_.end()) return;
    it->second.cancelled = true;
    if (it->second.progress) it->second.progress->cancel();
    if (!it->second.exec_id.empty()) {
      if (auto e = execs_.Find(it->second.exec_id); e && e->running()) (void)e->Signal(SIGKILL);
    }
  }
  // Other notifications (roots, progress of ours) need nothing.
}

void McpServer::HandleRequest(const Message& m) {
  const nlohmann::json& params = m.params;
  // The stateless revision puts its version in every request's _meta.
  bool modern = false;
  if (params.is_object() && params.contains("_meta") && params["_meta"].is_object() &&
      params["_meta"].contains(kMetaVersionKey)) {
    const auto& v = params["_meta"][kMetaVersionKey];
    if (!v.is_string() || v.get<std::string>() != kMcpStatelessVersion) {
      Error e = MakeError(ErrorKind::kUnsupported, "unsupported protocol version");
      e.code = kMcpUnsupportedVersionCode;
      e.data["supported"] = {kMcpStatelessVersion};
      e.data["requested"] = v;
      Send(MakeErrorResponse(m.id, e));
      return;
    }
    modern = true;
  }
  nlohmann::json server_info = {
      {"name", "ward"}, {"title", "ward sandbox"}, {"version", config_.version}};
  nlohmann::json caps = {{"tools", {{"listChanged", false}}}};
  if (m.method == "initialize") {
    std::string want;
    if (params.is_object() && params.contains("protocolVersion") &&
        params["protocolVersion"].is_string()) {
      want = params["protocolVersion"].get<std::string>();
    }
    std::string chosen = kMcpLegacyVersion;
    for (const char* v : kLegacyVersions) {
      if (want == v) chosen = v;
    }
    Respond(m.id,
            nlohmann::json{{"protocolVersion", chosen},
                           {"capabilities", caps},
                           {"serverInfo", server_info},
                           {"instructions", Instructions()}},
            false);
    return;
  }
  if (m.method == "server/discover") {
    Respond(m.id,
            nlohmann::json{{"supportedVersions", {kMcpStatelessVersion}},
                           {"capabilities", caps},
                           {"serverInfo", server_info},
                           {"instructions", Instructions()}},
            true);
    return;
  }
  if (m.method == "ping") {
    Respond(m.id, nlohmann::json::object(), modern);
    return;
  }
  if (m.method == "tools/list") {
    Respond(m.id, nlohmann::json{{"tools", ToolDefinitions()}}, modern);
    return;
  }
  if (m.method == "tools/call") {
    std::string key = m.id.dump();
    if (calls_.count(key)) {
      Error e = InvalidError("a request with this id is still running");
      e.code = kInvalidRequestCode;
      Send(MakeErrorResponse(m.id, e));
      return;
    }
    calls_[key] = Call{m.id, "", false, nullptr};
    nlohmann::json id = m.id;
    CallTool(key, params, [this, key, id, modern](nlohmann::json result) {
      auto it = calls_.find(key);
      bool cancelled = it != calls_.end() && it->second.cancelled;
      if (it != calls_.end()) {
        if (it->second.progress) it->second.progress->cancel();
        calls_.erase(it);
      }
      // A cancelled request gets no response.
      if (!cancelled) Respond(id, std::move(result), modern);
    });
    return;
  }
  if (m.method == "resources/list" || m.method == "prompts/list" ||
      m.method == "resources/templates/list") {
    Error e = MakeError(ErrorKind::kUnsupported, "method not found: " + m.method);
    e.code = kMethodNotFoundCode;
    Send(MakeErrorResponse(m.id, e));
    return;
  }
  if (m.method == "logging/setLevel") {
    Respond(m.id, nlohmann::json::object(), modern);
    return;
  }
  Error e = MakeError(ErrorKind::kUnsupported, "method not found: " + m.method);
  e.code = kMethodNotFoundCode;
  Send(MakeErrorResponse(m.id, e));
}

void McpServer::CallTool(const std::string& key, const nlohmann::json& params, ToolDone done) {
  if (!params.is_object() || !params.contains("name") || !params["name"].is_string()) {
    return done(ToolError("tools/call needs a tool name"));
  }
  std::string name = params["name"].get<std::string>();
  nlohmann::json args = params.contains("arguments") && !params["arguments"].is_null()
                            ? params["arguments"]
                            : nlohmann::json::object();
  if (!args.is_object()) return done(ToolError("arguments must be an object"));
  nlohmann::json progress = nullptr;
  if (params.contains("_meta") && params["_meta"].is_object() &&
      params["_meta"].contains("progressToken")) {
    progress = params["_meta"]["progressToken"];
  }
  if (name == "exec") return ToolExec(key, args, progress, std::move(done));
  if (name == "exec_poll") return ToolPoll(key, args, progress, std::move(done));
  if (name == "exec_kill") return ToolKill(args, std::move(done));
  if (name == "reset_sandbox") return done(ToolReset(args));
  if (!config_.review.session.empty() &&
      (name == "read_file" || name == "write_file" || name == "edit_file" ||
       name == "list_files")) {
    return done(ToolError("review mode: the workspace the commands see is an overlay the file "
                          "tools cannot reach; use the exec tool (cat, sed, tee) instead"));
  }
  if (name == "read_file") return done(ToolReadFile(args));
  if (name == "write_file") return done(ToolWriteFile(args));
  if (name == "edit_file") return done(ToolEditFile(args));
  if (name == "list_files") return done(ToolListFiles(args));
  done(ToolError("unknown tool \"" + name + "\""));
}

nlohmann::json McpServer::ExecResult(const Exec& e, uint64_t out_offset, uint64_t err_offset) {
  const Exec::Info& info = e.info();
  nlohmann::json s = {{"status", ExecStateName(info.outcome.state)},
                      {"exit_code", info.outcome.exit_code ? nlohmann::json(*info.outcome.exit_code)
                                                           : nlohmann::json(nullptr)},
                      {"signal", info.outcome.signal ? nlohmann::json(*info.outcome.signal)
                                                     : nlohmann::json(nullptr)},
                      {"exec_id", info.id}};
  bool truncated = info.dropped[0] > 0 || info.dropped[1] > 0;
  uint64_t offsets[2] = {out_offset, err_offset};
  for (Stream st : {Stream::kStdout, Stream::kStderr}) {
    int i = st == Stream::kStdout ? 0 : 1;
    auto data = e.Read(st, offsets[i], kMcpInlineBytes);
    std::string text = data.ok() ? *data : std::string();
    if (offsets[i] + text.size() < info.size[i]) truncated = true;
    s[StreamName(st)] = ToValidUtf8(text);
    s[std::string(StreamName(st)) + "_offset"] = offsets[i] + text.size();
  }
  s["truncated"] = truncated;
  s["reason"] = info.outcome.reason.is_object() && info.outcome.reason.contains("message")
                    ? info.outcome.reason["message"]
                    : nlohmann::json(nullptr);
  bool error =
      info.outcome.state != ExecState::kRunning &&
      (info.outcome.state != ExecState::kExited || info.outcome.exit_code.value_or(1) != 0);
  return {{"content", TextContent(Indented(s))}, {"structuredContent", s}, {"isError", error}};
}

void McpServer::WaitAndReport(const std::string& key, std::shared_ptr<Exec> e, uint64_t wait_ms,
                              uint64_t out_offset, uint64_t err_offset,
                              const nlohmann::json& progress, ToolDone done) {
  auto answered = std::make_shared<bool>(false);
  auto timer = std::make_shared<asio::steady_timer>(io_);
  std::weak_ptr<Exec> we = e;
  auto finish = [this, we, answered, timer, out_offset, err_offset, done] {
    if (*answered) return;
    *answered = true;
    timer->cancel();
    auto ex = we.lock();
    if (!ex) return done(ToolError("the command is gone"));
    done(ExecResult(*ex, out_offset, err_offset));
  };
  if (!e->running()) return finish();
  e->Subscribe(nullptr, finish);
  timer->expires_after(std::chrono::milliseconds(wait_ms));
  timer->async_wait([finish](const asio::error_code& ec) {
    if (!ec) finish();
  });
  if (!progress.is_null()) {
    auto it = calls_.find(key);
    if (it == calls_.end()) return;
    auto tick = std::make_shared<asio::steady_timer>(io_);
    it->second.progress = tick;
    ArmProgress(tick, progress, we, answered, std::chrono::steady_clock::now());
  }
}

void McpServer::ArmProgress(std::shared_ptr<asio::steady_timer> tick, nlohmann::json token,
                            std::weak_ptr<Exec> we, std::shared_ptr<bool> answered,
                            std::chrono::steady_clock::time_point start) {
  tick->expires_after(config_.progress_interval);
  tick->async_wait([this, tick, token, we, answered, start](const asio::error_code& ec) {
    auto ex = we.lock();
    if (ec || *answered || !ex || !ex->running()) return;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
    uint64_t bytes = ex->info().size[0] + ex->info().size[1];
    Send(MakeNotification("notifications/progress",
                          {{"progressToken", token},
                           {"progress", ms},
                           {"message", "running for " + std::to_string(ms / 1000) + " s, " +
                                           std::to_string(bytes) + " bytes of output"}}));
    ArmProgress(tick, token, we, answered, start);
  });
}

void McpServer::ToolExec(const std::string& key, const nlohmann::json& args,
                         const nlohmann::json& progress, ToolDone done) {
  Params p(args, "arguments");
  bool has_cmd = p.Has("command"), has_argv = p.Has("argv");
  auto command = p.String("command");
  auto argv = p.StringList("argv", 4096);
  auto cwd = p.String("cwd", 4096);
  auto timeout = p.Int("timeout_ms", 1, int64_t{7} * 24 * 3600 * 1000);
  auto yield = p.Int("yield_ms", 0, static_cast<int64_t>(kMcpMaxYieldMs));
  auto stdin_data = p.Bytes("stdin", 16 << 20);
  if (!p.Finish()) return done(ToolError(p.error().message));
  if (has_cmd == has_argv) return done(ToolError("give exactly one of command and argv"));
  ExecCommand cmd;
  cmd.argv = has_cmd ? std::vector<std::string>{"/bin/sh", "-c", *command} : argv;
  if (cmd.argv.empty() || cmd.argv[0].empty()) return done(ToolError("the command is empty"));
  auto rcwd = ResolveCwd(config_.workspace, cwd.value_or(""));
  if (!rcwd.ok()) return done(ToolError(rcwd.error().message));
  cmd.cwd = *rcwd;
  auto beneath = CheckWorkspacePaths(config_.flags, config_.workspace,
                                     config_.policy ? config_.policy->home : std::string());
  if (!beneath.ok()) return done(ToolError(beneath.error().message));
  StartRequest req;
  req.sandbox_id = session_label_;
  req.flags = config_.flags;
  req.workspace = config_.workspace;
  req.command = cmd;
  req.stdin_data = stdin_data.value_or("");
  req.timeout_ms = static_cast<uint64_t>(timeout.value_or(0));
  req.review = config_.review;
  if (UsesLive()) {
    auto live = Live();
    if (!live.ok()) return done(ToolError(live.error().message));
    req.live = *live;
    req.live_request.argv = cmd.argv;
    req.live_request.cwd = cmd.cwd.empty() ? config_.workspace : cmd.cwd;
    req.live_session = live_session_;
  }
  if (!req.review.session.empty()) {
    for (const auto& other : execs_.List(session_label_)) {
      if (other->running()) {
        return done(ToolError("review mode runs one command at a time (" + other->id() +
                              " is running): wait for it with exec_poll"));
      }
    }
  }
  auto started = execs_.Start(std::move(req));
  if (!started.ok()) return done(ToolError(started.error().message));
  auto it = calls_.find(key);
  if (it != calls_.end()) it->second.exec_id = (*started)->id();
  uint64_t wait = std::min<uint64_t>(
      yield ? static_cast<uint64_t>(*yield) : config_.default_yield_ms, kMcpMaxYieldMs);
  WaitAndReport(key, *started, wait, 0, 0, progress, std::move(done));
}

void McpServer::ToolPoll(const std::string& key, const nlohmann::json& args,
                         const nlohmann::json& progress, ToolDone done) {
  Params p(args, "arguments");
  p.Require("exec_id");
  auto id = p.String("exec_id", 64);
  auto wait = p.Int("wait_ms", 0, static_cast<int64_t>(kMcpMaxYieldMs));
  auto out_off = p.Int("stdout_offset", 0, INT64_MAX);
  auto err_off = p.Int("stderr_offset", 0, INT64_MAX);
  if (!p.Finish()) return done(ToolError(p.error().message));
  auto e = execs_.Find(*id);
  if (!e) return done(ToolError("no command " + *id));
  WaitAndReport(key, e, static_cast<uint64_t>(wait.value_or(10000)),
                static_cast<uint64_t>(out_off.value_or(0)),
                static_cast<uint64_t>(err_off.value_or(0)), progress, std::move(done));
}

void McpServer::ToolKill(const nlohmann::json& args, ToolDone done) {
  Params p(args, "arguments");
  p.Require("exec_id");
  auto id = p.String("exec_id", 64);
  auto sig_name = p.String("signal", 16);
  if (!p.Finish()) return done(ToolError(p.error().message));
  auto e = execs_.Find(*id);
  if (!e) return done(ToolError("no command " + *id));
  std::string name = sig_name.value_or("KILL");
  int sig = name == "KILL"   ? SIGKILL
            : name == "TERM" ? SIGTERM
            : name == "INT"  ? SIGINT
            : name == "HUP"  ? SIGHUP
            : name == "QUIT" ? SIGQUIT
                             : 0;
  if (sig == 0) return done(ToolError("unknown signal " + name));
  if (e->running()) {
    auto r = e->Signal(sig);
    if (!r.ok()) return done(ToolError(r.error().message));
  }
  WaitAndReport("", e, 5000, 0, 0, nullptr, std::move(done));
}

nlohmann::json McpServer::ToolReadFile(const nlohmann::json& args) {
  Params p(args, "arguments");
  p.Require("path");
  auto path = p.String("path", 4096);
  auto offset = p.Int("offset", 1, INT64_MAX);
  auto limit = p.Int("limit", 1, INT64_MAX);
  if (!p.Finish()) return ToolError(p.error().message);
  auto r = fs_->Read(*path, 0, kMaxFsReadBytes);
  if (!r.ok()) return ToolError(r.error().message);
  if (r->data.find('\0') != std::string::npos) {
    return ToolError("\"" + *path + "\" looks like a binary file");
  }
  int64_t first = offset.value_or(1), count = limit.value_or(2000);
  std::string out;
  int64_t line = 1, lines_out = 0;
  size_t i = 0;
  const std::string& d = r->data;
  while (i < d.size() && lines_out < count) {
    size_t nl = d.find('\n', i);
    size_t end = nl == std::string::npos ? d.size() : nl + 1;
    if (line >= first) {
      out.append(d, i, end - i);
      ++lines_out;
    }
    ++line;
    i = end;
  }
  bool more = i < d.size() || !r->eof;
  std::string text = ToValidUtf8(out);
  if (more) {
    text +=
        "\n[... more lines: call read_file with offset " + std::to_string(first + lines_out) + "]";
  }
  return {{"content", TextContent(text)}, {"isError", false}};
}

nlohmann::json McpServer::ToolWriteFile(const nlohmann::json& args) {
  Params p(args, "arguments");
  p.Require("path");
  p.Require("content");
  auto path = p.String("path", 4096);
  auto content = p.Bytes("content", kMaxFsReadBytes);
  if (!p.Finish()) return ToolError(p.error().message);
  auto r = fs_->Write(*path, *content, std::nullopt, /*atomic=*/true);
  if (!r.ok()) return ToolError(r.error().message);
  return {
      {"content", TextContent("wrote " + std::to_string(content->size()) + " bytes to " + r->path)},
      {"isError", false}};
}

nlohmann::json McpServer::ToolEditFile(const nlohmann::json& args) {
  Params p(args, "arguments");
  p.Require("path");
  p.Require("old_string");
  p.Require("new_string");
  auto path = p.String("path", 4096);
  auto old_s = p.Bytes("old_string", kMaxFsReadBytes);
  auto new_s = p.Bytes("new_string", kMaxFsReadBytes);
  auto all = p.Bool("replace_all");
  if (!p.Finish()) return ToolError(p.error().message);
  if (old_s->empty()) return ToolError("old_string must not be empty");
  if (*old_s == *new_s) return ToolError("old_string and new_string are the same");
  auto r = fs_->Read(*path, 0, kMaxFsReadBytes);
  if (!r.ok()) return ToolError(r.error().message);
  if (!r->eof) return ToolError("\"" + *path + "\" is too large to edit");
  std::string text = r->data;
  size_t count = 0;
  for (size_t pos = text.find(*old_s); pos != std::string::npos;
       pos = text.find(*old_s, pos + old_s->size())) {
    ++count;
  }
  if (count == 0) return ToolError("old_string was not found in " + *path);
  if (count > 1 && !all.value_or(false)) {
    return ToolError("old_string occurs " + std::to_string(count) + " times in " + *path +
                     "; give more context so it is unique, or set replace_all");
  }
  std::string out;
  size_t pos = 0;
  for (size_t hit = text.find(*old_s); hit != std::string::npos;
       hit = text.find(*old_s, hit + old_s->size())) {
    out.append(text, pos, hit - pos);
    out += *new_s;
    pos = hit + old_s->size();
  }
  out.append(text, pos, std::string::npos);
  auto w = fs_->Write(*path, out, std::nullopt, /*atomic=*/true);
  if (!w.ok()) return ToolError(w.error().message);
  return {{"content", TextContent("replaced " + std::to_string(count) + " occurrence" +
                                  (count == 1 ? "" : "s") + " in " + w->path)},
          {"isError", false}};
}

nlohmann::json McpServer::ToolListFiles(const nlohmann::json& args) {
  Params p(args, "arguments");
  auto path = p.String("path", 4096);
  auto depth = p.Int("depth", 1, 10);
  if (!p.Finish()) return ToolError(p.error().message);
  bool truncated = false;
  auto r = fs_->List(path.value_or("."), static_cast<int>(depth.value_or(2)), 2000, &truncated);
  if (!r.ok()) return ToolError(r.error().message);
  std::string text;
  for (const auto& f : *r) {
    text += f.path;
    if (f.type == "dir") {
      text += "/";
    } else if (f.type == "symlink") {
      text += " (symlink)";
    } else {
      text += "  " + std::to_string(f.size);
    }
    if (!f.writable) text += "  (read-only)";
    text += "\n";
  }
  if (truncated) text += "[... listing truncated]\n";
  if (text.empty()) text = "(empty)\n";
  return {{"content", TextContent(ToValidUtf8(text))}, {"isError", false}};
}

}  // namespace ward::api
