// ward: a sandbox runtime for AI agents. Subcommands are one file each.
#include <malloc.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/usage_error.h"
#include "cli/version.h"
#include "common/heap.h"
#include "common/trace.h"
#include "enforce/launcher.h"

namespace {

// Every subcommand but `run`.
void AddOtherCommands(CLI::App& app, int* exit_code, int argc, char** argv) {
  ward::cli::AddCheckCommand(app, exit_code);
  ward::cli::AddExplainCommand(app, exit_code);
  ward::cli::AddWhyCommand(app, exit_code);
  ward::cli::AddAuditCommand(app, exit_code);
  ward::cli::AddServeCommand(app, exit_code);
  ward::cli::AddMcpCommand(app, exit_code);
  ward::cli::AddOciCommand(app, exit_code);
  ward::cli::AddShellPrefixCommand(app, exit_code);
  ward::cli::AddHookCommand(app, exit_code);
  ward::cli::AddApprovalsCommand(app, exit_code);
  ward::cli::AddQuarantineCommand(app, exit_code);
  ward::cli::AddLearnCommand(app, exit_code);
  ward::cli::AddReviewCommands(app, exit_code, argc, argv);
  ward::cli::AddProfilesCommand(app, exit_code);
  ward::cli::AddInitCommand(app, exit_code);
}

// The end of a run: what stdio holds is written out, and the process ends without the static
// destructors and exit handlers (the iostreams' and locale's, the loader's walk of every object's
// finalisers), which a run needs none of: RunCommand has closed the audit trail (and synced it when
// asked to), init has emptied the sandbox and the outcome is written. Under AddressSanitizer the
// run returns, so that LeakSanitizer still checks it at exit.
#if !defined(__SANITIZE_ADDRESS__)
[[noreturn]] void EndRun(int exit_code) {
  std::fflush(nullptr);
  _exit(exit_code);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  ward::enforce::RememberProcessArgs(argc, argv);
  // Installed as `ward-oci` too: the engines' runtime path, which behaves as `ward oci`.
  std::vector<char*> oci_argv;
  std::string_view name = argv[0];
  if (name.substr(name.find_last_of('/') + 1) == "ward-oci") {
    oci_argv = {argv[0], const_cast<char*>("oci")};
    oci_argv.insert(oci_argv.end(), argv + 1, argv + argc);
    oci_argv.push_back(nullptr);
    argc = static_cast<int>(oci_argv.size()) - 1;
    argv = oci_argv.data();
  }
  ward::TraceMark("main");
  CLI::App app{"ward: run commands inside every boundary the Linux kernel offers", "ward"};
  app.set_version_flag("--version", ward::cli::VersionText);
  app.require_subcommand(1);
  int exit_code = 0;
  // `ward run` wraps every tool call: its start-up does not pay for building the other
  // subcommands' parsers.
  const bool run = argc >= 2 && std::string_view(argv[1]) == "run";
  // One malloc arena for every thread of a run. A thread's own arena is a fresh heap: its pages
  // fault in one by one, sandbox init (cloned from this process) copies them with their page
  // tables and tears them down again, and each page the supervisor writes after the clone is a
  // copy-on-write fault. The supervisor's threads allocate little; they share the main heap.
  if (run) mallopt(M_ARENA_MAX, 1);
  // Sandbox init is cloned now, while this process is small and single-threaded; its first
  // wakeup overlaps with the parsing and planning below (enforce/launcher.h).
  if (run) ward::enforce::PrecloneSandboxInit();
  // The heap the run will use, present in one call rather than faulted in page by page. After
  // the clone, so that these pages are the supervisor's own rather than shared with init, where
  // every write would be a copy.
  if (run) ward::PopulateHeap(512 << 10);
  ward::cli::AddRunCommand(app, &exit_code);
  if (!run) AddOtherCommands(app, &exit_code, argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    ward::enforce::DiscardPreclonedInit();
    // Usage errors of `ward run` are setup failures of ward itself: 125, like env(1) uses 125.
    return ward::cli::ReportParseError(app, e, argc, argv);
  }
  ward::enforce::DiscardPreclonedInit();  // when the run was refused before it took init
  ward::TraceMark("exit");
#if !defined(__SANITIZE_ADDRESS__)
  if (run) EndRun(exit_code);
#endif
  return exit_code;
}
