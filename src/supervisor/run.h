// The launch sequence of one `ward run`, in the design's order, and the supervisor's event
// loop around it: plan -> probe -> clone -> (init builds the root) ->
// serve what init hands back (pty, notification listener) -> wait -> outcome.
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/events.h"
#include "common/status.h"
#include "enforce/mount.h"
#include "enforce/plan.h"
#include "enforce/probe.h"
#include "policy/policy.h"
#include "supervisor/approvals/wiring.h"
#include "supervisor/denials.h"
#include "supervisor/private_dirs.h"
#include "supervisor/review_store.h"
#include "supervisor/run_audit.h"
#include "supervisor/workspace_check.h"

namespace ward::supervisor {

// An OCI container (`ward oci create`): the image is the root (enforce::ImageRoot) and init is
// the supervisor's sibling. Once init is cloned and has all of its setup but the seccomp
// program, the supervisor writes "created PID\n" to `created_fd` and lets go of the container's
// stdio (init holds them), then waits on `start_listener` for a connection of its own uid that
// says "start" before the command may run. A run refused before that says nothing there. Once
// it runs, each connection on `exec_listener` (at `exec_socket`) is an exec (container_execs.h).
struct ContainerLaunch {
  enforce::ImageRoot image;
  int created_fd = -1;
  int start_listener = -1;
  int exec_listener = -1;
  std::string exec_socket;
  // The engine's socket for the container's terminal (process.terminal): the pty's master goes
  // there before "created"; "" for none.
  std::string console_socket;
  // Listening sockets in the pod's network for the ports the container exposes (run.ward/expose),
  // by port: their connections are joined to the same port inside (container_ports.h). The run
  // takes them.
  std::vector<std::pair<uint16_t, int>> exposed;
};

struct RunRequest {
  policy::Policy policy;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=VALUE", built from the policy's allow list
  EventSink* events = nullptr;   // where events go without an audit trail (may be null)
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
  // The audit trail (run_audit.h): where it goes and what its session says; none without.
  std::optional<RunAuditOptions> audit;
  // ward's own directories: the run is refused, and keeps no trail, when the policy's view
  // includes any of them (private_dirs.h; checked while init builds the root).
  std::vector<PrivateDir> out_of_view;
  // Review mode: the session that takes the run's writes (its layer is `workspace_layer`).
  std::optional<ReviewSession> review;
  // The caller prints no notes (--quiet): the once-only note on the command is not spent.
  bool quiet = false;
  std::optional<ContainerLaunch> container;
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
    bool transparent = false;  // transparent capture was on
    uint64_t transparent_connections = 0;  // of `connections`, those it captured
    std::string transparent_off;           // why it was off although planned ("" otherwise)
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
  std::string audit_session;  // the run's audit session ("" without one)
  bool review_changed = false;  // review mode: the run left something in the session's tree
  // Said once after the run: the command's name finds another binary inside than on the host.
  std::string command_note;
};

const char* OutcomeKindName(Outcome::Kind k);
nlohmann::json EgressToJson(const Outcome::Egress& e);  // null when the run had no egress

// Runs the command under the policy, from its plan to its audit trail's last record. Must be
// called while the process is single-threaded.
Outcome Run(const RunRequest& req);

}  // namespace ward::supervisor
