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

#include <sys/types.h>

#include <ctime>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "supervisor/creation_journal.h"
#include "supervisor/quarantine.h"

namespace ward::supervisor {

struct WorkspaceCheckInput {
  std::vector<std::string> roots;                  // writable roots (host paths)
  std::vector<std::string> protected_relpaths;     // the profile's protected names
  // What the creation guard made; null when there was no guard (then the roots are walked, as
  // they are when the journal overflowed).
  const CreationJournal* journal = nullptr;
  struct timespec start = {};                      // the run's start (CLOCK_REALTIME)
  std::string session;                             // the run's session id
  // The directories where the mount layer kept the protected names read-only (a writable
  // root's top, repositories found below it: MountReport's bases). There the sandbox changed
  // nothing that exists, so only what was made during the run counts: a host edit meanwhile
  // (git config on the host) is not the run's.
  std::set<std::pair<dev_t, ino_t>> guarded_bases;
  // Without the guard: the paths that stood at the protected names (and directly inside the
  // ones that are directories) when the run started. The mount layer kept those read-only and
  // in place, so there a file made during the run is told from one that was there by its path,
  // not by a time or an inode (some file systems keep no birth time; some renumber inodes).
  std::set<std::string> existed;
  QuarantineStore* store = nullptr;
};

struct WorkspaceCheckOutcome {
  std::vector<QuarantineItem> quarantined;
  std::vector<std::string> privilege_bits;  // paths whose setuid/setgid bits were taken off
  std::vector<std::string> errors;          // what could not be neutralised, and why
  bool walked = false;                      // the roots were walked (no usable journal)
};

WorkspaceCheckOutcome CheckWorkspaceAfterRun(const WorkspaceCheckInput& in);

// WorkspaceCheckInput::existed, taken before the run starts.
std::set<std::string> ProtectedNamesNow(const std::vector<std::string>& roots,
                                        const std::vector<std::string>& relpaths);

}  // namespace ward::supervisor
