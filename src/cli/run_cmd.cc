// `ward run [OPTIONS] -- COMMAND [ARGS...]`: runs COMMAND inside every layer the policy needs.
// Exit status: the command's own, 128+N for a signal, 125 when ward refused or failed to set
// up (the message names the stage and errno), 126/127 like a shell when COMMAND cannot run.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/run_options.h"
#include "common/trace.h"
#include "policy/env.h"
#include "supervisor/run.h"

namespace ward::cli {
namespace {

struct RunCommandOptions {
  RunOptions run;
  int json_status_fd = -1;
  std::vector<std::string> command;
};

void WriteJsonStatus(int fd, const supervisor::Outcome& o) {
  nlohmann::json j = {
      {"status", supervisor::OutcomeKindName(o.kind)},
      {"exit_code", o.exit_code},
      {"signal", o.signal == 0 ? nlohmann::json(nullptr) : nlohmann::json(o.signal)},
      {"stage", o.stage.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.stage)},
      {"errno", o.err == 0 ? nlohmann::json(nullptr) : nlohmann::json(o.err)},
      {"message", o.message},
      {"degraded", o.notes.degraded},
      {"duration_ms", o.duration_ms},
  };
  std::string s = j.dump() + "\n";
  const char* p = s.data();
  size_t n = s.size();
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) break;
    p += w;
    n -= w;
  }
}

int RunCommand(RunCommandOptions& opts) {
  if (opts.command.empty()) {
    std::fprintf(stderr, "ward: no command given (usage: ward run [OPTIONS] -- COMMAND [ARGS...])\n");
    return 125;
  }
  supervisor::Outcome out;
  Result<policy::Policy> pol = LoadEffectivePolicy(opts.run);
  if (!pol.ok()) {
    out.kind = supervisor::Outcome::Kind::kRefused;
    out.exit_code = 125;
    out.message = pol.status().ToString();
  } else {
    TraceMark("policy loaded");
    supervisor::RunRequest req;
    req.policy = std::move(pol).value();
    req.argv = opts.command;
    for (const auto& [k, v] : policy::BuildEnvironment(req.policy, CallerEnvironment())) {
      req.env.push_back(k + "=" + v);
    }
    out = supervisor::Run(req);
  }
  if (!out.message.empty() && out.kind != supervisor::Outcome::Kind::kExited &&
      out.kind != supervisor::Outcome::Kind::kSignaled) {
    std::fprintf(stderr, "ward: %s\n", out.message.c_str());
  }
  for (const auto& d : out.notes.degraded) std::fprintf(stderr, "ward: degraded: %s\n", d.c_str());
  if (opts.json_status_fd >= 0) WriteJsonStatus(opts.json_status_fd, out);
  return out.exit_code;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<RunCommandOptions>();
  CLI::App* sub = app.add_subcommand("run", "Run COMMAND inside the sandbox");
  AddRunOptions(sub, &opts->run);
  sub->add_option("--json-status", opts->json_status_fd,
                  "Write the outcome as one JSON object to file descriptor FD");
  sub->add_option("command", opts->command, "COMMAND [ARGS...] (after --)");
  sub->positionals_at_end();
  sub->callback([opts, exit_code] { *exit_code = RunCommand(*opts); });
}

}  // namespace ward::cli
