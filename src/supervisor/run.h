// The launch sequence of one `ward run`, in the design's order, and the supervisor's event
// loop around it: plan -> probe -> compile seccomp -> clone -> (init builds the root) ->
// serve what init hands back (pty, notification listener) -> wait -> outcome.
#pragma once

#include <sys/resource.h>

#include <string>
#include <vector>

#include "common/events.h"
#include "enforce/mount.h"
#include "enforce/plan.h"
#include "policy/policy.h"

namespace ward::supervisor {

struct RunRequest {
  policy::Policy policy;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=VALUE", built from the policy's allow list
  EventSink* events = nullptr;   // audit sink (may be null)
};

struct Outcome {
  enum class Kind {
    kExited,      // the command exited: exit_code is its status
    kSignaled,    // killed by `signal`: exit_code 128+signal
    kExecFailed,  // could not be executed: 126/127
    kSetupFailed, // a layer could not be applied inside the sandbox: 125
    kRefused,     // refused before starting (policy, missing kernel feature): 125
  };
  Kind kind = Kind::kRefused;
  int exit_code = 125;
  int signal = 0;
  std::string stage;    // for kSetupFailed / kExecFailed
  int err = 0;          // errno
  std::string message;  // human text for anything but kExited/kSignaled
  double duration_ms = 0;
  struct rusage rusage = {};
  enforce::MountReport mounts;
  enforce::PlanNotes notes;
  int notifications = 0;       // trapped syscalls answered by the supervisor
  int protected_denials = 0;   // of those, creations of protected paths refused
};

const char* OutcomeKindName(Outcome::Kind k);

// Runs the command under the policy. Must be called while the process is single-threaded.
Outcome Run(const RunRequest& req);

}  // namespace ward::supervisor
