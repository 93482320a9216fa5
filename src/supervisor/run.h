// The launch sequence of one `ward run`, in the design's order, and the supervisor's event
// loop around it: plan -> probe -> clone -> (init builds the root) ->
// serve what init hands back (pty, notification listener) -> wait -> outcome.
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/events.h"
#include "common/status.h"
#include "enforce/mount.h"
#include "enforce/plan.h"
#include "enforce/probe.h"
#include "policy/policy.h"
#include "supervisor/approvals/wiring.h"
#include "supervisor/denials.h"
#include "supervisor/workspace_check.h"

namespace ward::supervisor {

// Where a run's events and secrets go once its audit trail is open (see `open_audit`).
struct AuditAttachment {
  EventSink* events = nullptr;
  std::function<void(const std::string&)> add_secret;
  // Registers the run's stop for the trail's first write error (fail closed): the stop is
  // called once, from whichever thread hit the error, and may be called after Run returned.
  std::function<void(std::function<void(const Status&)>)> on_failure;
};

struct RunRequest {
  policy::Policy policy;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=VALUE", built from the policy's allow list
  EventSink* events = nullptr;   // audit sink (may be null)
  // Supervisor-side name overrides for the proxy (`--resolve HOST:ADDR[,ADDR]`).
  std::vector<std::string> resolve;
  // File and host approvals (--ask): the approver channels and the session id.
  ApprovalRunOptions approvals;
  // ward's state directory (the quarantine's home); "" for audit::DefaultStateDir().
  std::string state_dir;
  // --raw-terminal: the command's pty output reaches the terminal unfiltered (terminal.h).
  bool raw_terminal = false;
  // Extra CAs the credential broker trusts for upstreams (`--upstream-ca FILE`).
  std::vector<std::string> upstream_ca;
  // The workspace itself, or in review mode its overlay or copy (review_store.h).
  enforce::WorkspaceLayer workspace_layer;
  // The kernel's features when the caller probed them already (ward run overlaps the probe
  // with loading the policy); else Run probes.
  std::optional<enforce::KernelFeatures> features;
  // A live sandbox (`ward serve`): no command (`argv` empty); the sandbox runs what arrives on
  // this exec channel (enforce/exec_wire.h) until its other end closes, which ends the sandbox.
  int exec_channel = -1;
  // Called right before the sandbox is cloned. A clone copies only the calling thread, and
  // with it any lock another thread holds at that moment: the caller joins its threads here.
  std::function<void()> before_clone;
  // Called with each brokered secret before anything runs (the audit redactor).
  std::function<void(const std::string&)> add_secret;
  // Opens the audit trail right after the clone, on the supervisor's thread, while sandbox
  // init builds the root: a mkdir and two creates (a journal commit or two) are then off the
  // start-up's critical path. Its sink and secret hook replace `events` and `add_secret`. A
  // failure kills the half-made sandbox before anything in it ran, and refuses the run.
  std::function<Result<AuditAttachment>()> open_audit;
  // Checks of the policy made right after the clone, while init builds the root (off the
  // start-up's path), before any secret is fetched or the trail opened: a failure refuses the
  // run in the same way, before the command could start.
  std::function<Status()> check_after_clone;
  // Called once the sandbox exists (after the clone, before the command runs), on the
  // supervisor's thread: the place for work that may start threads or should overlap with
  // the sandbox's own setup (the audit session's start record).
  std::function<void(const enforce::LaunchPlan&, const enforce::PlanNotes&,
                     const enforce::KernelFeatures&)>
      on_started;
};

// A resource limit the run ran into; also emitted as a `limit.hit` event.
struct LimitHit {
  std::string limit;    // "timeout", "memory", "pids", "file_size"
  std::string message;  // human text
  nlohmann::json data;  // the event's data
};

// What the resource limits did during the run.
struct LimitsOutcome {
  std::string backend;              // "cgroup v2", "cgroup v1", "rlimits", "none"
  std::vector<std::string> cgroup;  // the run's cgroup directories (removed at the end)
  std::optional<uint64_t> memory_peak_bytes;
  uint64_t oom_kills = 0;
  uint64_t pids_refused = 0;
  std::optional<uint64_t> cpu_usage_usec;
  uint64_t cpu_throttled_periods = 0;
  bool timed_out = false;
  bool killed_after_grace = false;  // the SIGTERM at the deadline was not enough
  std::vector<LimitHit> hits;
  std::string teardown_error;  // the cgroup could not be removed (a reaper keeps trying)
};
nlohmann::json LimitsOutcomeToJson(const LimitsOutcome& l);

struct Outcome {
  enum class Kind {
    kExited,       // the command exited: exit_code is its status
    kSignaled,     // killed by `signal`: exit_code 128+signal
    kExecFailed,   // could not be executed: 126/127
    kSetupFailed,  // a layer could not be applied inside the sandbox: 125
    kRefused,      // refused before starting (policy, missing kernel feature): 125
    kTimedOut,     // the wall-clock limit ended it: 124, like timeout(1)
    kAuditFailed,  // the audit trail could not be written: the sandbox was stopped, 125
  };
  Kind kind = Kind::kRefused;
  int exit_code = 125;
  int signal = 0;
  std::string stage;    // for kSetupFailed / kExecFailed
  int err = 0;          // errno
  std::string message;  // human text for anything but kExited/kSignaled
  double duration_ms = 0;
  struct rusage rusage = {};
  bool rusage_from_init = false;  // `rusage` is init's count of every process inside
  enforce::MountReport mounts;
  enforce::PlanNotes notes;
  struct Egress {
    bool enabled = false;
    uint64_t connections = 0, allowed = 0, denied = 0, bytes_up = 0, bytes_down = 0;
    uint64_t dns_queries = 0, dns_answered = 0, dns_nxdomain = 0;
    bool credentials = false;  // a credential broker served this run
    uint64_t intercepted = 0, credential_uses = 0, leak_attempts = 0;
  } egress;
  int notifications = 0;      // trapped syscalls answered by the supervisor
  int protected_denials = 0;  // of those, refused (protected paths and the guard's own rules)
  LimitsOutcome limits;
  WorkspaceCheckOutcome workspace;  // what the check after the run quarantined
  // Every denial ward observed, most frequent first (denials.h); the caller may add its own.
  std::vector<Denial> denials;
};

const char* OutcomeKindName(Outcome::Kind k);

// Runs the command under the policy. Must be called while the process is single-threaded.
Outcome Run(const RunRequest& req);

}  // namespace ward::supervisor
