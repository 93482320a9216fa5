// A container's cgroup: where its engine names it (linux.cgroupsPath), and its resources as
// `update` and `events --stats` reach them from outside its supervisor: the cgroup directories
// ward made for its run (at the engine's path, or named "ward-..."), found from its init's
// /proc/PID/cgroup while that pid is still the container's init (its start time); never a
// directory of anything else. A limit the container was created without has no directory of
// its own, and `update` cannot add one: it says so.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "oci/config.h"
#include "oci/state.h"

namespace ward::oci {

// linux.cgroupsPath as a path below each hierarchy's root ("/a/b/leaf"), "" when absent. A
// relative path is taken below the root too. With --systemd-cgroup it is "slice:prefix:name",
// placed where systemd would place that scope ("a-b.slice:p:n" is "/a.slice/a-b.slice/p-n.scope");
// ward writes the cgroups itself, asking systemd nothing. ".." and the root itself are refused
// (kInvalidArgument naming the field).
Result<std::string> EngineCgroupPath(const std::string& cgroups_path, bool systemd);

struct ContainerCgroup {
  int version = 0;  // 2, 1, or 0 when ward made none for the container
  std::string memory, pids, cpu;  // "" where ward made none for that controller
};

// kFailedPrecondition when the container is not running.
Result<ContainerCgroup> FindContainerCgroup(const ContainerState& s);

// Writes each limit `r` sets to the container's own cgroup; nothing when one of them has no
// directory there (the error names it).
Status UpdateResources(const ContainerCgroup& cg, const Resources& r, const std::string& id);

// One snapshot as runc's `events --stats` prints it: {"type": "stats", "id", "data": {"cpu",
// "memory", "pids"}}. CPU time and the process count come from the container's processes
// (/proc), memory from its cgroup when ward made one (else the processes' resident sizes).
nlohmann::json StatsSnapshot(const ContainerState& s, const ContainerCgroup& cg,
                             const std::vector<pid_t>& pids);

}  // namespace ward::oci
