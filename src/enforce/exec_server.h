// A live sandbox's exec server: the sandbox's first process when it has no command of its own.
// It is the command up to its execve: every layer of the command applied (capabilities, no
// new privileges, Landlock, seccomp, whose listener went to the supervisor), so that whatever
// it starts is what `ward run` would have started. On each request from the supervisor's end of
// its socket (exec_wire.h) it spawns the command with the request's argv, environment, working
// directory and stdio, each in a session of its own, with the plan's resource limits. It
// reports each start and end. Nothing inside the sandbox holds its socket: only the supervisor can ask it for an exec.
#pragma once

#include <string>
#include <vector>

#include "enforce/exec_wire.h"
#include "enforce/spec.h"

namespace ward::enforce {

// Runs in the exec server's process, after the command's layers. `ctl` (init's control socket,
// which carried the seccomp listener) and `ready` (the exec pipe: its close tells init the server
// runs) are closed first. Serves `sock` until the supervisor closes it. Each exec's environment
// is `env` (the command's, as `ward run` would give it) with the request's "NAME=VALUE" set over
// it. Never returns.
[[noreturn]] void ExecServerMain(const LaunchPlan& plan, const std::vector<std::string>& env,
                                 int sock, int ctl, int ready);

// `base` with each "NAME=VALUE" of `set` replacing the variable of that name or added.
std::vector<std::string> MergeEnvironment(const std::vector<std::string>& base,
                                          const std::vector<std::string>& set);

}  // namespace ward::enforce
