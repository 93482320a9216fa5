// What the creation guard saw a run create that may be host-executed content, kept for the
// check after the run (workspace_check.h). The guard records each entry it made, with the path
// of its directory as the kernel names it (not as the sandbox spelled it, links and all), and
// every directory moved or linked into place whole, whose subtree is looked at after the run.
// Only entries the host-executed rule names are kept (policy/host_executed.h), so a run that
// installs a thousand packages keeps a handful; past a bound the journal gives up and the check
// walks every writable root instead.
//
// Written by the guard's thread; read after the run, or (a live sandbox) after each exec while
// the guard goes on: every member takes the journal's lock.
#pragma once

#include <sys/types.h>

#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ward::supervisor {

struct JournalEntry {
  std::string path;      // the entry's path in the sandbox (a writable root's is the host's)
  dev_t dir_dev = 0;     // its directory when it was made, to check the path again after
  ino_t dir_ino = 0;
  bool subtree = false;  // a directory moved into place: everything below it counts
};

class CreationJournal {
 public:
  explicit CreationJournal(std::vector<std::vector<std::string>> protected_relpaths,
                           size_t limit = 65536)
      : protected_(std::move(protected_relpaths)), limit_(limit) {}

  // After the guard made `name` in `dirfd` (O_PATH, the sandbox's view). `moved`: a rename or
  // link put it there.
  void Record(int dirfd, const std::string& name, bool moved);

  // Whether a directory was made, or moved into place, during this run: inside such a one a
  // repository's hooks and config are judged after the run instead of refused.
  bool MadeThisRun(dev_t dev, ino_t ino) const {
    std::lock_guard lock(mu_);
    return made_dirs_.count({dev, ino}) > 0;
  }

  bool overflowed() const {
    std::lock_guard lock(mu_);
    return overflowed_;
  }
  std::vector<JournalEntry> entries() const {
    std::lock_guard lock(mu_);
    return entries_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::vector<std::string>> protected_;
  size_t limit_;
  bool overflowed_ = false;
  std::vector<JournalEntry> entries_;
  std::set<std::pair<dev_t, ino_t>> made_dirs_;
};

}  // namespace ward::supervisor
