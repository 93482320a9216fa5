// `ward learn`'s proposal: from the denials of one run (the shape of `--json-status`'s
// `denials`) to the profile and the flags that would allow what the run needed. Pure: it takes
// plain structs, reads nothing, and only ever turns a denial's own `allow_with` into a rule; a
// denial refused on purpose (deny list, protected path, credential leak) is never proposed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ward::policy {

// One distinct denial, as `ward run --json-status` reports it.
struct LearnDenial {
  std::string kind;         // network, dns, file.write, file.read, protected, command, ...
  std::string target;       // host:port, name, path, argv0, ...
  uint64_t count = 0;       // how many times
  std::string rule;         // the deciding rule, in words
  std::string allow_with;   // the flag(s) that would allow it; "" when ward suggests none
  bool on_purpose = false;  // refused by the deny list, a protected path or the leak rule
};

// A rule the proposal adds: [section] key gains value; `flag value` is the same on the
// command line.
struct LearnRule {
  std::string section;                 // "filesystem", "network", "limits"
  std::string key;                     // "read", "write", "allow", "memory", ...
  std::string value;                   // as written in the profile (paths ~/... where they can be)
  std::string flag;                    // "-r", "-w", "-n", "--memory", ...
  std::vector<LearnDenial> needed_by;  // the denials it answers, most frequent first
  uint64_t count = 0;                  // their counts, summed
  // A rule of the profile being rewritten in place (LearnInput::previous), with its comment.
  bool kept = false;
  std::string kept_comment;
};

struct LearnInput {
  std::vector<LearnDenial> denials;
  // What the proposal extends: the profile the run used, as `extends` accepts it (a name,
  // builtin:NAME, or an absolute path of a file).
  std::string base_profile = "default";
  std::vector<std::string> command;  // for the header and the equivalent flags
  std::string home;                  // absolute paths below it are written ~/...
  std::string cwd;                   // a relative path in allow_with is relative to it
  // The run's filesystem.deny (absolute; the last component may be a glob): a path at or below
  // one is refused on purpose, whatever the denial says, since deny beats every rule.
  std::vector<std::string> deny_paths;
  // When FILE is rewritten in place (--save FILE --force with -p FILE): its rules, kept ahead of
  // the new ones; base_profile is then what FILE extends.
  std::vector<LearnRule> previous;
};

// A denial that is not proposed, and why.
struct LearnLeftOut {
  LearnDenial denial;
  std::string why;  // on purpose: the rule; otherwise why ward proposes nothing for it
};

struct LearnProposal {
  std::vector<LearnRule> rules;              // grouped: one per (key, value), covered ones merged
  std::vector<LearnLeftOut> on_purpose;      // needed, refused on purpose: never proposed
  std::vector<LearnLeftOut> not_proposable;  // no allow_with, or one ward learn will not write
  // Nothing new: no rule beyond the kept ones.
  bool empty() const {
    for (const LearnRule& r : rules) {
      if (!r.kept) return false;
    }
    return true;
  }
};

LearnProposal ProposeFromDenials(const LearnInput& in);

// A profile `ward learn` may rewrite in place: what it extends (one profile) and its rules
// (filesystem.read/write, network.allow, limits), each with the comment on its line. Anything
// else in it is an error naming the key: such a file is the user's, to be extended, not
// rewritten.
struct LearnedProfile {
  std::string extends;
  std::vector<LearnRule> rules;
};
Result<LearnedProfile> ParseLearnedProfile(const std::string& text, const std::string& name);

// The proposal as a profile `-p FILE` accepts: `extends` the base, one commented line per rule
// (what needed it, how many times), the left-out denials as comments at the end. Every byte
// that came from the run is escaped (comments) or refused (values) so the text is valid TOML.
std::string ProposalProfileText(const LearnProposal& p, const LearnInput& in);

// `ward run [-p BASE] -r ... -w ... -n ... -- COMMAND`, each word quoted for a POSIX shell when
// it needs it.
std::string ProposalFlags(const LearnProposal& p, const LearnInput& in);

// One word for a POSIX shell: as is when it is plain, else in single quotes.
std::string ShellQuote(const std::string& word);

}  // namespace ward::policy
