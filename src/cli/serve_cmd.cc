// `ward serve`: the local agent API, JSON-RPC 2.0 (one message per line) on a unix socket.
// The daemon holds sandboxes (a policy plus a workspace) and runs every exec as its own
// `ward run`; it never clones sandboxes itself. Protocol: docs/agents.md. Logs go to stderr.
#include <signal.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <asio.hpp>
#include <cstdio>

#include "api/server.h"
#include "api/service.h"
#include "audit/session_log.h"
#include "cli/commands.h"
#include "cli/run_options.h"
#include "supervisor/runtime_dir.h"

namespace ward::cli {
namespace {

struct ServeOptions {
  std::string socket;
  std::string state_dir;
  std::string audit_dir;
  size_t max_sandboxes = 64;
  size_t max_running = 32;
  bool workspace_anyway = false;
  bool fresh_execs = false;
  std::string ward_binary;
};

int RunServe(const ServeOptions& o) {
  signal(SIGPIPE, SIG_IGN);
  std::string socket = o.socket;
  if (socket.empty()) {
    auto p = api::DefaultSocketPath();
    if (!p.ok()) {
      std::fprintf(stderr, "ward serve: %s\n", p.error().message.c_str());
      return 1;
    }
    socket = *p;
  } else if (socket[0] != '/') {
    std::fprintf(stderr, "ward serve: --socket must be an absolute path\n");
    return 125;
  }
  std::string dir = socket.substr(0, socket.rfind('/'));
  std::string state = o.state_dir.empty() ? (dir.empty() ? "" : dir) + "/serve" : o.state_dir;
  if (Status st = supervisor::PreparePrivateDir(state); !st.ok()) {
    std::fprintf(stderr, "ward serve: state directory: %s\n", st.ToString().c_str());
    return 1;
  }

  api::ServiceConfig cfg;
  cfg.version = WARD_VERSION;
  cfg.state_dir = state;
  cfg.audit_dir = o.audit_dir.empty() ? audit::DefaultStateDir() : o.audit_dir;
  cfg.private_paths = {dir.empty() ? "/" : dir, socket};
  cfg.max_sandboxes = o.max_sandboxes;
  cfg.exec.max_running = o.max_running;
  cfg.exec.labels = RunTakesLabels();
  cfg.workspace_anyway = o.workspace_anyway;
  cfg.live = !o.fresh_execs;
  if (!o.ward_binary.empty()) cfg.exec.ward_binary = o.ward_binary;
  cfg.load_policy = [](const policy::RunFlags& flags, const std::string& ws) {
    RunOptions ro;
    ro.flags = flags;
    ro.workdir = ws;
    ro.workspace_anyway_hint =
        "start `ward serve` with --workspace-anyway if sandboxes there are deliberate (the "
        "audit trail records each)";
    return LoadEffectivePolicy(ro);
  };

  asio::io_context io;
  api::Service service(io, cfg);
  if (Status st = service.Init(); !st.ok()) {
    std::fprintf(stderr, "ward serve: %s\n", st.ToString().c_str());
    return 1;
  }
  api::ServerConfig scfg;
  scfg.socket_path = socket;
  scfg.events = service.daemon_events();  // refused peers are recorded there
  api::Server server(io, service, scfg);
  if (auto r = server.Start(); !r.ok()) {
    std::fprintf(stderr, "ward serve: %s\n", r.error().message.c_str());
    return 1;
  }
  std::fprintf(stderr, "ward serve: listening on %s (protocol %d, %zu sandboxes restored)\n",
               socket.c_str(), api::kServeProtocolVersion, service.sandbox_count());

  asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  signals.async_wait([&](const asio::error_code& ec, int signo) {
    if (ec) return;
    std::fprintf(stderr, "ward serve: signal %d, stopping\n", signo);
    server.Stop();
    service.Shutdown();
    io.stop();
  });
  asio::steady_timer tick(io);
  std::function<void()> arm = [&] {
    tick.expires_after(std::chrono::seconds(1));
    tick.async_wait([&](const asio::error_code& ec) {
      if (ec) return;
      service.Tick();
      arm();
    });
  };
  arm();
  // A handler that throws (it should not) costs that one operation, not the daemon.
  while (!io.stopped()) {
    try {
      io.run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ward serve: internal error: %s\n", e.what());
    }
  }
  server.Stop();
  service.Shutdown();
  return 0;
}

}  // namespace

void AddServeCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* sub = app.add_subcommand(
      "serve", "Serve the agent API: JSON-RPC on a unix socket, one sandbox per exec");
  sub->add_option("--socket", o->socket,
                  "Socket path (default: ward.sock in ward's runtime directory: "
                  "$XDG_RUNTIME_DIR/ward, else /run/user/UID/ward, else "
                  "~/.local/state/ward/run)");
  sub->add_option("--state-dir", o->state_dir,
                  "Where sandboxes and exec output are kept (default: beside the socket)");
  sub->add_option("--audit-dir", o->audit_dir,
                  "Audit state directory (default: $XDG_STATE_HOME/ward or ~/.local/state/ward)");
  sub->add_option("--max-sandboxes", o->max_sandboxes, "Most sandboxes at once (default 64)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--max-running", o->max_running, "Most running execs at once (default 32)")
      ->check(CLI::PositiveNumber);
  sub->add_flag("--workspace-anyway", o->workspace_anyway,
                "Let sandboxes use a workspace ward refuses (/, a system directory, /tmp, /home "
                "or the daemon's HOME itself); each is recorded in the audit trail");
  sub->add_flag("--fresh-execs", o->fresh_execs,
                "Run every exec in a sandbox of its own (nothing persists between execs) instead "
                "of in its sandbox's live sandbox");
  // Internal (hidden): what runs as `ward run` (bench/serve_bench.py measures a floor with it).
  sub->add_option("--ward-binary", o->ward_binary,
                  "The binary started as `ward run` for each sandbox (default: this one)")
      ->check(CLI::ExistingFile)
      ->group("");
  sub->callback([o, exit_code] { *exit_code = RunServe(*o); });
}

}  // namespace ward::cli
