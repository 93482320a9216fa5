// `ward explain`: the effective policy, which layer enforces each rule, and the run described
// along the design's eight axes, with figures computed from the actual plan for this host.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "enforce/plan.h"
#include "enforce/probe.h"
#include "policy/policy.h"

namespace ward::supervisor {

struct ExplainInput {
  const policy::Policy* policy = nullptr;
  std::vector<std::string> argv;  // the command, if given
  std::vector<std::string> env;   // the environment the command would get ("NAME=VALUE")
  std::string granularity = "one command: a fresh sandbox for this invocation (ward run)";
  std::string version;
  // With approvals on: the channels that would be asked ("socket", "webhook", "terminal").
  std::vector<std::string> approval_channels;
  // --raw-terminal: the command's terminal output is relayed unfiltered.
  bool raw_terminal = false;
  // Only what the audit's session.start record keeps: policy, plan, layers and axes (the
  // rules, limits and syscall names are derived from those and not built).
  bool record_only = false;
};

// Builds the explanation (JSON). Fails when the run would be refused, with that reason.
Result<nlohmann::json> Explain(const ExplainInput& in, const enforce::KernelFeatures& features);

// The same for a plan already made (the audit's session.start record of a real run).
Result<nlohmann::json> ExplainPlan(const ExplainInput& in, const enforce::KernelFeatures& features,
                                   const enforce::LaunchPlan& plan,
                                   const enforce::PlanNotes& notes);

// The Landlock rights a kernel lacks, as `ward explain` and `ward check --json` list them:
// [{right, abi, kernel, guarantee, decision, covered_by, why}].
nlohmann::json LandlockGapsJson(const std::vector<enforce::LandlockGap>& gaps);

// Human text for the JSON above.
std::string RenderExplain(const nlohmann::json& j);

}  // namespace ward::supervisor
