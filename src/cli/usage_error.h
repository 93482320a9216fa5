// What a new user sees when the command line does not parse: the word that is wrong and the
// nearest right one ("unknown command 'runn' (did you mean 'run'?)", "unknown option --bogus"),
// rather than CLI11's account of its parse ("arguments were not expected: --").
#pragma once

namespace CLI {
class App;
class ParseError;
}  // namespace CLI

namespace ward::cli {

// Prints the error (or the help or version CLI11 was asked for) and returns the exit status:
// 0 for --help and --version, kExitUsage (125) otherwise.
int ReportParseError(CLI::App& app, const CLI::ParseError& e, int argc, char** argv);

}  // namespace ward::cli
