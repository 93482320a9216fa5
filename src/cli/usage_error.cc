#include "cli/usage_error.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/sessions.h"
#include "cli/commands.h"

namespace ward::cli {
namespace {

size_t WordDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// The candidate nearest to `word` when it is near enough to be what was meant, else "".
std::string Nearest(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.size() > 64) return "";
  size_t best = SIZE_MAX;
  std::string best_word;
  for (const std::string& c : candidates) {
    size_t d = WordDistance(word, c);
    // A prefix of a candidate ("--mem" for "--memory") is near whatever its length.
    if (word.size() >= 3 && c.rfind(word, 0) == 0) d = std::min<size_t>(d, 1);
    if (d < best) {
      best = d;
      best_word = c;
    }
  }
  if (best > std::max<size_t>(2, word.size() / 3)) return "";
  return best_word;
}

// For an option: a one-letter one ("-X") is near every other one-letter option, so it gets none.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.size() <= 2) return "";
  std::string n = Nearest(word, candidates);
  return n.empty() ? "" : " (did you mean " + n + "?)";
}

std::vector<std::string> SubcommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (!sub->get_name().empty()) names.push_back(sub->get_name());
  }
  return names;
}

std::vector<std::string> OptionNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

CLI::App* FindSubcommand(CLI::App& app, const std::string& name) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (!sub->get_name().empty() && sub->check_name(name)) return sub;
  }
  return nullptr;
}

bool TakesPositionals(const CLI::App& app) {
  return !app.get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
}

std::string UsageWord(std::string_view word) {
  return audit::SanitizeForTerminal(std::string(word.substr(0, 80)));
}

// The first word of the command line that is not a subcommand or option of where it stands,
// said with the nearest right one; nullopt when every word is known (then CLI11's own message
// says what else is wrong, e.g. a missing value).
std::optional<std::string> UnknownWord(CLI::App& app, int argc, char** argv) {
  if (argc < 2) return std::nullopt;
  const std::string first = argv[1];
  std::vector<std::string> commands = SubcommandNames(app);
  if (first.size() > 1 && first[0] == '-') {
    if (app.get_option_no_throw(first.substr(0, first.find('='))) != nullptr) return std::nullopt;
    std::string bare = first.substr(first.find_first_not_of('-'));
    std::string near = Nearest(bare, commands);
    return "ward: unknown option " + UsageWord(first) +
           (near.empty() ? "" : " (did you mean the command '" + near + "'?)") +
           "; ward takes a command first: ward COMMAND [OPTIONS] (see ward --help)";
  }
  CLI::App* sub = FindSubcommand(app, first);
  if (sub == nullptr) {
    std::string near = Nearest(first, commands);
    return "ward: unknown command '" + UsageWord(first) + "'" +
           (near.empty() ? "" : " (did you mean '" + near + "'?)") + "; see ward --help";
  }
  std::string path = "ward " + first;
  for (int i = 2; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.size() < 2 || word[0] != '-') {
      if (CLI::App* nested = FindSubcommand(*sub, word)) {
        sub = nested;
        path += " " + word;
      } else if (!SubcommandNames(*sub).empty() && !TakesPositionals(*sub)) {
        std::string near = Nearest(word, SubcommandNames(*sub));
        return path + ": unknown command '" + UsageWord(word) + "'" +
               (near.empty() ? "" : " (did you mean '" + near + "'?)") + "; see " + path +
               " --help";
      }
      continue;
    }
    const bool long_form = word[1] == '-';
    const std::string name = long_form ? word.substr(0, word.find('=')) : word.substr(0, 2);
    const CLI::Option* opt = sub->get_option_no_throw(name);
    if (opt == nullptr) {
      return path + ": unknown option " + UsageWord(name) + DidYouMean(name, OptionNames(*sub)) +
             "; see " + path + " --help";
    }
    // Its value is the next word, unless it came attached ("--memory=2G", "-w/x").
    const bool attached = long_form ? word.find('=') != std::string::npos : word.size() > 2;
    if (opt->get_type_size_max() > 0 && !attached) {
      ++i;
    }
  }
  return std::nullopt;
}

}  // namespace

int ReportParseError(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
  if (std::optional<std::string> word = UnknownWord(app, argc, argv)) {
    std::fprintf(stderr, "%s\n", word->c_str());
    return kExitUsage;
  }
  app.exit(e);
  return kExitUsage;
}

}  // namespace ward::cli
