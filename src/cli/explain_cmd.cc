// `ward explain [run options] [-- COMMAND]`: what a run would be, layer by layer, and along
// the eight axes. `--json` for tools.
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/commands.h"
#include "cli/run_options.h"
#include "enforce/probe.h"
#include "policy/env.h"
#include "supervisor/approvals/wiring.h"
#include "supervisor/explain.h"

namespace ward::cli {
namespace {

struct ExplainOptions {
  RunOptions run;
  bool json = false;
  std::vector<std::string> command;
};

int RunExplain(const ExplainOptions& opts) {
  Result<policy::Policy> pol = LoadEffectivePolicy(opts.run);
  if (!pol.ok()) {
    std::fprintf(stderr, "ward: %s\n", pol.status().ToString().c_str());
    return 125;
  }
  supervisor::ExplainInput in;
  in.policy = &pol.value();
  in.argv = opts.command;
  in.version = WARD_VERSION;
  in.raw_terminal = opts.run.raw_terminal;
  supervisor::ApprovalRunOptions ap;
  ap.approver = opts.run.approver;
  in.approval_channels =
      supervisor::ApprovalChannelNames(ap, isatty(0) == 1 && (isatty(1) == 1 || isatty(2) == 1));
  for (const auto& [k, v] : policy::BuildEnvironment(*pol, CallerEnvironment())) {
    in.env.push_back(k + "=" + v);
  }
  Result<nlohmann::json> j = supervisor::Explain(in, enforce::ProbeKernel(true));
  if (!j.ok()) {
    std::fprintf(stderr, "ward: this run would be refused: %s\n", j.status().ToString().c_str());
    return 125;
  }
  if (opts.json) {
    std::printf("%s\n", j->dump(2).c_str());
  } else {
    std::fputs(supervisor::RenderExplain(*j).c_str(), stdout);
  }
  return 0;
}

}  // namespace

void AddExplainCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<ExplainOptions>();
  CLI::App* sub = app.add_subcommand(
      "explain", "Describe what `ward run` with these options would enforce, and how");
  AddTerminalOptions(sub, &opts->run);  // before: grouped with the run options
  AddRunOptions(sub, &opts->run, RunOptionHelp::kExplain);
  sub->add_flag("--json", opts->json, "Machine-readable output");
  sub->add_option("command", opts->command, "COMMAND [ARGS...] (after --)");
  sub->positionals_at_end();
  sub->callback([opts, exit_code] { *exit_code = RunExplain(*opts); });
}

}  // namespace ward::cli
