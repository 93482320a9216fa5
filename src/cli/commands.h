// Each subcommand lives in its own file and registers itself on the root CLI11 app.
// A subcommand's callback stores its exit status in *exit_code.
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace ward::cli {

void AddRunCommand(CLI::App& app, int* exit_code);
void AddCheckCommand(CLI::App& app, int* exit_code);
void AddAuditCommand(CLI::App& app, int* exit_code);
void AddExplainCommand(CLI::App& app, int* exit_code);
void AddWhyCommand(CLI::App& app, int* exit_code);
void AddServeCommand(CLI::App& app, int* exit_code);
void AddMcpCommand(CLI::App& app, int* exit_code);
void AddOciCommand(CLI::App& app, int* exit_code);  // in progress, unlisted
void AddShellPrefixCommand(CLI::App& app, int* exit_code);
void AddHookCommand(CLI::App& app, int* exit_code);
void AddApprovalsCommand(CLI::App& app, int* exit_code);  // approvals, approve, deny, grants
void AddQuarantineCommand(CLI::App& app, int* exit_code);
void AddLearnCommand(CLI::App& app, int* exit_code);
// diff, apply, discard (review mode); argv is recorded in the audit trail.
void AddReviewCommands(CLI::App& app, int* exit_code, int argc, char** argv);

void AddProfilesCommand(CLI::App& app, int* exit_code);  // profiles list, profiles show
void AddInitCommand(CLI::App& app, int* exit_code);
// `ward audit prune`, on the `audit` subcommand; state_dir() is its --state-dir or the default.
void AddAuditPruneCommand(CLI::App& audit, int* exit_code, std::function<std::string()> state_dir);
// After a run's audit session is closed: when the automatic prune is due (one stat), starts it
// in a detached process and returns.
void StartAuditPruneIfDue(const std::string& state_dir);

// Whether this build's `ward run` takes --label (execs of `serve` and `mcp` are then tagged
// sandbox=/exec=).
bool RunTakesLabels();

// Exit statuses of the subcommands that report rather than run (approvals, audit).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // tampered or missing, unknown session or id, refused
inline constexpr int kExitUsage = 125;

}  // namespace ward::cli
