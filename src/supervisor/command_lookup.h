// Where the command would be found: on the host's PATH, and on the sandbox's PATH within what the
// policy shows. Said after the run (never on the start-up path): a command missing inside but
// present on the host (kind "command" denial, with the -r that would show it), and a command that
// inside resolves to another binary than on the host (pyenv, nvm and cargo shims), said once.
#pragma once

#include <string>

#include "policy/policy.h"

namespace ward::supervisor {

struct CommandLookup {
  enum class Kind { kSame, kHiddenHere, kDifferentHere };
  Kind kind = Kind::kSame;
  std::string host;        // what the host's PATH finds ("" if nothing)
  std::string inside;      // what the sandbox's PATH finds within the policy's view
  std::string allow_with;  // "-r DIR" that would show the host's
};

// Compares what the two PATHs find for `argv0` (a name without '/'; anything else is kSame).
CommandLookup LookUpCommand(const policy::Policy& policy, const std::string& argv0,
                            const std::string& inside_path, const std::string& host_path);

// The -r that shows `host_binary`'s tool: ~/.cargo for ~/.cargo/bin/cargo, ~/.local/bin for
// what is there, /opt/x for /opt/x/bin/y.
std::string ReadFlagFor(const std::string& host_binary, const std::string& home);

// True the first time it is asked for `key` in `state_dir` (a marker file is left there);
// false after, and when there is no state directory to remember it in.
bool FirstNotice(const std::string& state_dir, const std::string& key);

}  // namespace ward::supervisor
