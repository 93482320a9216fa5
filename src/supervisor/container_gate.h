// The point where an OCI container rests between `ward oci create` and `ward oci start`
// (ContainerLaunch): its init exists, in its namespaces and with its root being built, and waits
// for the last piece of its setup (the seccomp program) before the command may run.
#pragma once

#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"
#include "enforce/cgroup.h"
#include "enforce/launcher.h"
#include "supervisor/run.h"

namespace ward::supervisor {

// A control message init sent while the container waited for its start: the run handles it
// afterwards, in the order it came.
struct EarlyControl {
  enforce::ControlMsg msg;
  UniqueFd fd;
};

// With a console socket, first hands the container's pty master to it (the engine's, as runc
// does during create; init's messages before it go to `early`). Then says "created PID" on the
// launch's pipe, gives up the supervisor's copies of the container's stdio, and waits for a
// "start" from a peer of this uid on the launch's listener. Fails when init ends first, with
// init's own reason where it gave one.
Status AwaitContainerStart(const ContainerLaunch& launch, const enforce::Sandbox& sb,
                           std::vector<EarlyControl>* early);

// Waits until the container's init is in every directory of the run's cgroup (it joins v1
// cgroups itself, told so while it builds the root), so that once `create` has said the pid,
// the engine's statistics and `update` find it there, as under runc. Fails when init ends first.
Status AwaitInitInCgroup(const enforce::Sandbox& sb, const enforce::Cgroup& cgroup);

}  // namespace ward::supervisor
