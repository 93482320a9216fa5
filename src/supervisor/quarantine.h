// The quarantine: where the check after a run puts host-executed content the run left in a
// writable root (workspace_check.h), outside every sandbox's view, until a human looks at it.
// <state_dir>/quarantine/<id>/ holds `item.json` (what it was, where, why) and `object` (the
// file or directory itself, moved there whole). Restoring moves it back to where it was, only
// if nothing has taken its place; dropping deletes it.
//
// Every path in the workspace is opened beneath the writable root it belongs to with no symlink
// followed (enforce/beneath.h): the workspace is written by sandboxes, and a link there must not
// carry a move or a restore out of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace ward::supervisor {

struct QuarantineItem {
  std::string id;       // "<session>.<n>"
  std::string session;  // the run that left it
  std::string root;     // the writable root it was found below (host path)
  std::string path;     // where it was (host path, below root)
  std::string kind;     // "hook", "git-config", "commondir", "gitfile", "protected", "special"
  std::string reason;   // one sentence: why the host would have run it
  int64_t time = 0;     // when it was taken (seconds since the epoch)
  bool replaced = false;   // an inert copy stands in its place (a git config's inert keys)
  bool in_place = false;   // too large to move off the file system: renamed beside itself
  std::string object;      // where it is now (host path)

  nlohmann::json ToJson() const;
  static Result<QuarantineItem> FromJson(const nlohmann::json& j);
};

class QuarantineStore {
 public:
  explicit QuarantineStore(std::string state_dir) : state_dir_(std::move(state_dir)) {}

  // <state_dir>/quarantine
  std::string Dir() const;

  // Moves `name` out of the directory `parent_fd` (the host path of the entry is item.path) into
  // the store; fills id, object, time and in_place. `replacement`, when not null, is written in
  // its place afterwards (mode 0644), and item.replaced set.
  Result<QuarantineItem> Take(int parent_fd, const std::string& name, QuarantineItem item,
                              const std::string* replacement = nullptr);

  Result<std::vector<QuarantineItem>> List() const;
  Result<QuarantineItem> Get(const std::string& id) const;
  // Puts the object back where it was. A replacement the check wrote is removed first; anything
  // else at that path refuses the restore, naming it.
  Status Restore(const std::string& id);
  Status Drop(const std::string& id);

 private:
  std::string state_dir_;
};

}  // namespace ward::supervisor
