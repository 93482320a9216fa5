// Each subcommand lives in its own file and registers itself on the root CLI11 app.
// A subcommand's callback stores its exit status in *exit_code.
#pragma once

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
void AddShellPrefixCommand(CLI::App& app, int* exit_code);
void AddHookCommand(CLI::App& app, int* exit_code);
void AddApprovalsCommand(CLI::App& app, int* exit_code);  // approvals, approve, deny, grants
void AddQuarantineCommand(CLI::App& app, int* exit_code);
void AddLearnCommand(CLI::App& app, int* exit_code);
// diff, apply, discard (review mode); argv is recorded in the audit trail.
void AddReviewCommands(CLI::App& app, int* exit_code, int argc, char** argv);

// Whether this build's `ward run` takes --label (execs of `serve` and `mcp` are then tagged
// sandbox=/exec=).
bool RunTakesLabels();

// Exit statuses of the subcommands that report rather than run (approvals, audit).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // tampered or missing, unknown session or id, refused
inline constexpr int kExitUsage = 125;

}  // namespace ward::cli
