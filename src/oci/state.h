// What `ward oci` keeps of each container in its state directory (`--root`): enough for
// `state`, `kill`, `delete` and `ps` to work after the process that created the container has
// gone. One directory per container id, `<root>/<id>/state.json` (0600 in a 0700 directory),
// written whole and renamed into place, read back as untrusted (bounded, checked).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace ward::oci {

inline constexpr const char* kOciVersion = "1.0.2";

struct ContainerState {
  std::string id;
  std::string bundle;  // absolute
  pid_t pid = 0;       // the container's init in the host's pid namespace; 0 while creating
  // Its start time (field 22 of /proc/PID/stat): a pid the kernel gave to another process
  // since is not the container's.
  uint64_t pid_start = 0;
  bool started = false;  // `start` ran: the user's process was let go
  std::string created;   // RFC 3339, UTC
  std::map<std::string, std::string> annotations;
  // The container's cgroup below each hierarchy's root where its engine named it
  // (EngineCgroupPath); "" for ward's own name.
  std::string cgroup_leaf;
};

// A container id: 1-128 of [A-Za-z0-9_.+-], not starting with '.' (it names a directory).
Status CheckContainerId(const std::string& id);

// creating (no init yet), created (init waits for start), running, stopped (init is gone).
std::string ContainerStatus(const ContainerState& s);
// The OCI state: {ociVersion, id, status, pid, bundle, annotations} (pid only while alive).
nlohmann::json StateJson(const ContainerState& s);

// The container's directory in the state root, the socket in it that `start` connects to (its
// supervisor listens there while the container is created), and the one `exec` connects to
// (SOCK_SEQPACKET, served while it runs).
std::string StateDir(const std::string& root, const std::string& id);
inline constexpr const char* kStartSocket = "start.sock";
inline constexpr const char* kExecSocket = "exec.sock";

// Makes the container's directory; an error when the id is taken.
Status ClaimState(const std::string& root, const std::string& id);
Status SaveState(const std::string& root, const ContainerState& s);
// kNotFound "container ID does not exist" when there is none.
Result<ContainerState> LoadState(const std::string& root, const std::string& id);
Status RemoveState(const std::string& root, const std::string& id);

// The start time of `pid` (0 when it is gone or cannot be read).
uint64_t ProcessStartTime(pid_t pid);

// Sends `sig` to the container's init by pidfd, once the pidfd is known to be that process (its
// start time is the recorded one): a pid reused since is never signalled. Ok when it is gone.
Status KillInit(const ContainerState& s, int sig);

}  // namespace ward::oci
