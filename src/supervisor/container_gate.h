// The point where an OCI container rests between `ward oci create` and `ward oci start`
// (ContainerLaunch): its init exists, in its namespaces and with its root being built, and waits
// for the last piece of its setup (the seccomp program) before the command may run.
#pragma once

#include "common/status.h"
#include "enforce/launcher.h"
#include "supervisor/run.h"

namespace ward::supervisor {

// Says "created PID" on the launch's pipe, gives up the supervisor's copies of the container's
// stdio, and waits for a "start" from a peer of this uid on the launch's listener. Fails when
// init ends first, with init's own reason where it gave one.
Status AwaitContainerStart(const ContainerLaunch& launch, const enforce::Sandbox& sb);

}  // namespace ward::supervisor
