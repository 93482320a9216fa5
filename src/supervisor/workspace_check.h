// The check after a run: once the sandbox is gone (every process in it is dead, so nothing
// races the check), host-executed content the run made or changed below a writable root
// (policy/host_executed.h) is moved to the quarantine (quarantine.h), and setuid or setgid bits
// it left are taken off. What it looks at is what the creation guard's journal names
// (creation_journal.h), not the whole tree; without a journal (no creation guard, or one that
// overflowed) it walks every writable root. "Made or changed by the run" is the entry's ctime,
// which no process can set, against the run's start.
//
// Every path is opened beneath its writable root with no symlink followed: the tree was written
// by the sandbox.
#pragma once

#include <ctime>
#include <string>
#include <vector>

#include "supervisor/creation_journal.h"
#include "supervisor/quarantine.h"

namespace ward::supervisor {

struct WorkspaceCheckInput {
  std::vector<std::string> roots;                  // writable roots (host paths)
  std::vector<std::string> protected_relpaths;     // the profile's protected names
  const CreationJournal* journal = nullptr;        // null or overflowed: walk the roots
  struct timespec start = {};                      // the run's start (CLOCK_REALTIME)
  std::string session;                             // the run's session id
  QuarantineStore* store = nullptr;
};

struct WorkspaceCheckOutcome {
  std::vector<QuarantineItem> quarantined;
  std::vector<std::string> privilege_bits;  // paths whose setuid/setgid bits were taken off
  std::vector<std::string> errors;          // what could not be neutralised, and why
  bool walked = false;                      // the roots were walked (no usable journal)
};

WorkspaceCheckOutcome CheckWorkspaceAfterRun(const WorkspaceCheckInput& in);

}  // namespace ward::supervisor
