// What a run's audit session says of it: session.start (the command, who ran it and where, the
// kernel, and what `ward explain` says of the sandbox), session.end (the outcome), and the note
// on a command whose name finds another binary inside than on the host.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "enforce/plan.h"
#include "enforce/probe.h"
#include "supervisor/command_lookup.h"
#include "supervisor/run.h"
#include "supervisor/run_audit.h"

namespace ward::supervisor {

nlohmann::json StartRecord(const RunRequest& req, const enforce::LaunchPlan& plan,
                           const enforce::PlanNotes& notes, const enforce::KernelFeatures& features);
nlohmann::json EndRecord(const RunRequest& req, const Outcome& out);

// What the command's name finds on the host's PATH and on the sandbox's (within the policy's
// view). Looked up while sandbox init builds the root, when the supervisor only waits.
CommandLookup LookUpRunCommand(const RunRequest& req);

// After the run: a command missing inside but on the host becomes a "command" denial (and a
// record); one that found another binary inside is said once per pair (a marker in the state
// directory). Returns that line, or "".
std::string NoteRunCommand(const RunRequest& req, const CommandLookup& found, RunAudit* audit,
                           Outcome* out);

}  // namespace ward::supervisor
