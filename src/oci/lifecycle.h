// A container's life as the engines drive it (runc's process model):
//
// - `create` checks the bundle and makes the container's policy and root, claims its state
//   directory, and forks the container's supervisor, which starts sandbox init as its own
//   sibling: `create`'s process is init's parent, and when it exits the engine's subreaper
//   adopts init, reaps it, and takes its exit status (the command's) as the container's. The
//   supervisor holds what ward keeps outside the sandbox (the proxy, the DNS stub, the broker,
//   approvals, the audit session) and ends with the container. `create` returns once init
//   exists and waits for its start; its host pid goes to the pid file and the state.
// - `start` lets the command run (one "start" on the supervisor's socket in the state
//   directory, which only this uid can reach, and nothing inside the container can see).
// - `kill` signals init by pidfd (init passes the signal to the command's process group);
//   `delete` removes what is left.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "oci/config.h"
#include "policy/user_config.h"

namespace ward::oci {

struct CreateOptions {
  std::string root;  // the state root (--root)
  std::string id;
  std::string bundle;
  std::string pid_file;        // "" for none
  std::string console_socket;  // "" for none
  bool systemd_cgroup = false;  // --systemd-cgroup: linux.cgroupsPath is "slice:prefix:name"
  policy::OciDefaults node;
  std::string ward_version;  // said in the audit session's start
};

// Returns the warnings for the engine's log (rlimits clamped to what ward may set).
Result<std::vector<std::string>> Create(const CreateOptions& options);

// Writes `pid` to `path` (none when empty), whole: a temporary file renamed into place.
Status WritePidFile(const std::string& path, pid_t pid);

// What ward runs a container's processes as: the engine's own ids, which its user namespace
// maps to themselves. The error names `field`.
Status CheckProcessUser(const Process& p, const std::string& field);

Status Start(const std::string& root, const std::string& id);

// The container's processes, as host pids: those in init's pid namespace (init first).
Result<std::vector<pid_t>> ContainerPids(const std::string& root, const std::string& id);

// A signal as runc takes it: "TERM", "SIGTERM" or "15".
Result<int> ParseSignal(const std::string& text);

}  // namespace ward::oci
