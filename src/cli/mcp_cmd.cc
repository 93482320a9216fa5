// `ward mcp [run options]`: a Model Context Protocol server on stdin/stdout. Every `exec` tool
// call runs in a fresh sandbox under these options (`ward run` with the same flags); the file
// tools go through the supervisor's policy checks. Only MCP messages go to stdout; logs go to
// stderr.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <asio.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "api/jsonrpc.h"
#include "api/mcp.h"
#include "cli/commands.h"
#include "cli/run_options.h"
#include "audit/session_log.h"
#include "supervisor/private_dirs.h"
#include "supervisor/review_store.h"
#include "supervisor/runtime_dir.h"

namespace ward::cli {
namespace {

struct McpOptions {
  RunOptions run;
  std::string workspace_mode = "direct";  // --workspace: direct, overlay or copy
  bool fresh_execs = false;               // --fresh-execs: no live sandbox
};

void WriteStdout(const std::string& line) {
  const char* p = line.data();
  size_t n = line.size();
  while (n > 0) {
    ssize_t w = write(1, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // the client is gone; stdin EOF follows
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// A directory of its own in ward's runtime directory for the execs' records and output; ""
// when it cannot be made (said on stderr).
std::string MakeMcpStateDir() {
  Result<std::string> runtime = supervisor::MakeWardRuntimeDir();
  if (!runtime.ok()) {
    std::fprintf(stderr, "ward mcp: %s\n", runtime.status().ToString().c_str());
    return "";
  }
  std::string tmpl = *runtime + "/mcp-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    std::fprintf(stderr, "ward mcp: cannot create %s: %s\n", tmpl.c_str(), std::strerror(errno));
    return "";
  }
  return buf.data();
}

// Review mode: one session for every exec of this server, made now; its changes wait there
// for `ward diff`, `ward apply` and `ward discard` (the agent has no tool for them). false: it
// could not be made (said on stderr).
bool OpenMcpReview(const McpOptions& o, const policy::Policy& pol,
                   std::optional<supervisor::ReviewSession>* review, api::McpConfig* cfg) {
  supervisor::ReviewRequest rq;
  rq.state_dir = audit::DefaultStateDir();
  rq.id = audit::NewSessionId();
  rq.workspace = pol.workspace;
  rq.force_copy = o.workspace_mode == "copy";
  rq.created_by = "mcp";
  for (const policy::ProtectedRule& p : pol.protected_paths) {
    rq.protected_relpaths.push_back(p.relpath);
  }
  Result<supervisor::ReviewSession> made = supervisor::CreateReviewSession(rq);
  if (!made.ok()) {
    std::fprintf(stderr, "ward mcp: --workspace=%s: %s\n", o.workspace_mode.c_str(),
                 made.status().ToString().c_str());
    return false;
  }
  *review = std::move(made).value();
  cfg->review = {supervisor::ReviewModeName((*review)->mode), (*review)->id};
  if (!(*review)->note.empty() && o.workspace_mode != "copy") {
    std::fprintf(stderr,
                 "ward mcp: review mode: overlayfs cannot be used here (%s); the "
                 "workspace was copied instead\n",
                 (*review)->note.c_str());
  }
  std::fprintf(stderr, "ward mcp: review mode: the commands' changes wait in session %s\n",
               (*review)->id.c_str());
  return true;
}

// Each whole line of the input to the server; one too long is answered with an error.
void FeedLines(std::string_view chunk, api::LineFramer* framer, api::McpServer* server) {
  framer->Feed(chunk);
  while (auto item = framer->Next()) {
    if (item->oversized) {
      api::Error e = api::InvalidError("message too long; it was discarded");
      e.code = api::kInvalidRequestCode;
      WriteStdout(api::SerializeLine(api::MakeErrorResponse(nullptr, e)));
      continue;
    }
    server->HandleLine(item->line);
  }
}

// Serves MCP on stdin/stdout until the input ends or a signal comes. false: the server could
// not start (said on stderr; the state directory is gone).
bool ServeMcp(const api::McpConfig& cfg, const std::string& state) {
  asio::io_context io;
  api::McpServer server(io, cfg, WriteStdout);
  if (Status st = server.Init(); !st.ok()) {
    std::fprintf(stderr, "ward mcp: %s\n", st.ToString().c_str());
    api::RemoveTree(state);
    return false;
  }
  std::fprintf(stderr, "ward mcp: serving %s (profile %s)\n", cfg.workspace.c_str(),
               cfg.flags.profile.c_str());
  asio::posix::stream_descriptor in(io, dup(0));
  api::LineFramer framer;
  std::array<char, 65536> chunk;
  bool stopping = false;
  auto stop = [&] {
    if (stopping) return;
    stopping = true;
    server.Shutdown();
    io.stop();
  };
  // At the end of stdin, calls still in flight get their answers first (each ends within its
  // yield), then the server stops.
  asio::steady_timer drain(io);
  std::function<void()> stop_when_idle = [&] {
    if (server.idle()) return stop();
    drain.expires_after(std::chrono::milliseconds(50));
    drain.async_wait([&](const asio::error_code& ec) {
      if (!ec) stop_when_idle();
    });
  };
  std::function<void()> read_more = [&] {
    in.async_wait(asio::posix::descriptor_base::wait_read, [&](const asio::error_code& ec) {
      if (ec) return stop_when_idle();
      ssize_t n = read(in.native_handle(), chunk.data(), chunk.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) return read_more();
      if (n <= 0) return stop_when_idle();
      FeedLines(std::string_view(chunk.data(), static_cast<size_t>(n)), &framer, &server);
      read_more();
    });
  };
  read_more();
  asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  signals.async_wait([&](const asio::error_code& ec, int) {
    if (!ec) stop();
  });
  // A handler that throws (it should not) costs that one operation, not the server.
  while (!io.stopped()) {
    try {
      io.run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ward mcp: internal error: %s\n", e.what());
    }
  }
  server.Shutdown();
  return true;
}

// The review session once the server is done: gone when the execs changed nothing, else one
// line says where the changes wait and what to do with them.
void EndMcpReview(const supervisor::ReviewSession& review) {
  if (supervisor::ReviewTreeEmpty(review)) {
    (void)supervisor::RetireEmptyReviewSession(review);
    return;
  }
  const char* id = review.id.c_str();
  std::fprintf(stderr,
               "ward mcp: review mode: the changes to the workspace wait in session %s: ward "
               "diff %s; ward apply %s; ward discard %s\n",
               id, id, id, id);
}

int RunMcp(const McpOptions& o) {
  signal(SIGPIPE, SIG_IGN);
  Result<policy::Policy> pol = LoadEffectivePolicy(o.run);
  if (!pol.ok()) {
    std::fprintf(stderr, "ward mcp: %s\n", pol.status().ToString().c_str());
    return 125;
  }
  // The exec records and output live in ward's runtime directory, which no exec may see: checked
  // before anything is made there.
  if (Status hidden = supervisor::CheckOutOfView(*pol, supervisor::WardPrivateDirs());
      !hidden.ok()) {
    std::fprintf(stderr, "ward mcp: %s\n", hidden.ToString().c_str());
    return 125;
  }
  const std::string state = MakeMcpStateDir();
  if (state.empty()) return 1;
  api::McpConfig cfg;
  std::optional<supervisor::ReviewSession> review;
  if (o.workspace_mode != "direct" && !OpenMcpReview(o, *pol, &review, &cfg)) {
    api::RemoveTree(state);
    return 125;
  }
  cfg.version = WARD_VERSION;
  cfg.flags = o.run.flags;
  cfg.workspace = pol->workspace;
  cfg.policy = &pol.value();
  cfg.exec.state_dir = state;
  cfg.exec.labels = RunTakesLabels();
  cfg.live = !o.fresh_execs;
  if (!ServeMcp(cfg, state)) return 1;
  api::RemoveTree(state);
  if (review) EndMcpReview(*review);
  return 0;
}

}  // namespace

void AddMcpCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<McpOptions>();
  CLI::App* sub = app.add_subcommand(
      "mcp", "Serve MCP on stdio: the session's commands run in one live sandbox under OPTIONS");
  AddRunOptions(sub, &o->run);
  sub->add_option("--workspace", o->workspace_mode,
                  "direct (default), or overlay: review mode, the commands' writes wait in a "
                  "review session for `ward apply` (docs/review.md); copy: the same with a copy")
      ->check(CLI::IsMember({"direct", "overlay", "copy"}));
  sub->add_flag("--fresh-execs", o->fresh_execs,
                "Run every command in a sandbox of its own instead of in the session's live "
                "sandbox");
  sub->callback([o, exit_code] { *exit_code = RunMcp(*o); });
}

}  // namespace ward::cli
