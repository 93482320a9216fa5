// The planner: turns the effective Policy into the specs each enforcer takes, in the parent,
// before anything is cloned. It resolves host paths (symlinks, existence), orders the mounts,
// and decides which layer enforces which rule; `ward explain` prints its result.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "enforce/landlock_coverage.h"
#include "enforce/probe.h"
#include "enforce/spec.h"
#include "policy/policy.h"

namespace ward::enforce {

// What the sandbox's workspace is. Direct: the host's directory itself, bound read-write.
// Review mode (`ward run --workspace=overlay`, supervisor/review_store.h): an overlay whose lower
// layer is the host's directory (never written) and whose upper layer keeps the run's writes in
// ward's state directory; or, where overlayfs cannot be had, a copy of the workspace there, bound
// in its place. Either way nothing the run writes reaches the host's workspace until `ward apply`.
struct WorkspaceLayer {
  enum class Kind { kDirect, kOverlay, kCopy };
  Kind kind = Kind::kDirect;
  std::string upper;  // kOverlay: the upper and work directories (absolute, in ward's state)
  std::string work;
  std::string copy;  // kCopy: the copy bound at the workspace's path
};

// An OCI container's root (`ward oci`): the image's root file system stands where a run has
// the host's paths. Each entry at the top of the rootfs is bound at its own name, opened beneath
// the rootfs with no symlink followed (a top-level symlink is made as the same symlink, which
// resolves inside), read-only when the bundle's root is; the bundle's binds and tmpfs mounts
// follow at their destinations, whose mount points exist (the caller made them beneath the
// rootfs). /proc, /dev and /tmp are the sandbox's own; there is no /sys.
struct ContainerBind {
  std::string source;  // canonical host path
  std::string target;  // absolute, inside the container
  bool writable = false;
  std::string why;  // "config.json mounts[3]"
};
struct ImageRoot {
  std::string rootfs;  // canonical host directory
  bool readonly = false;
  std::vector<ContainerBind> binds;
  std::vector<std::string> tmpfs;  // destinations of the bundle's tmpfs mounts
  std::string workdir = "/";
  std::string hostname;  // "" keeps ward's
  // The bundle's rlimits: they only narrow, each taking the lower of its own and ward's.
  std::vector<ProcessSpec::Rlimit> rlimits;
  // The bundle's seccomp filter (oci/seccomp_filter.h), loaded on the command after ward's.
  std::vector<sock_filter> seccomp;
  // Where the credential broker's CA bundle goes in the image ("" when no credential needs it).
  std::string ca_bundle;
  // The container's cgroup as its engine names it, below each hierarchy's root
  // (PlanEngineCgroup); "" for one of ward's own.
  std::string cgroup_path;
  // The TCP ports the container may listen on: those it exposes to its pod (run.ward/expose).
  std::vector<uint16_t> listen_ports;
};

struct PlanInput {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=VALUE", already built from the policy's allow list
  bool tty[3] = {false, false, false};
  // A live sandbox: no command of its own, an exec server instead (exec_server.h).
  bool exec_server = false;
  // The command's stdio that are host files it could truncate by descriptor where Landlock has
  // no truncate right (TruncatableStdio): "stdin", "stdout", "stderr".
  std::vector<std::string> truncatable_stdio;
  bool prepare_seccomp = true;  // false for explain-only plans that do not need the program
  WorkspaceLayer workspace_layer;
  // A container: its image is the root, and the policy has no paths of the host (nor a
  // workspace); init is the supervisor's sibling (LaunchPlan::container_init).
  std::optional<ImageRoot> image;
};

struct PlanNotes {
  std::vector<std::string> skipped;   // optional paths absent on this host
  std::vector<std::string> degraded;  // layers running weaker, each with the reason
  std::string workspace;              // canonical workspace path
  // The Landlock rights this kernel lacks and what covers each (landlock_coverage.h).
  std::vector<LandlockGap> landlock_gaps;
};

Result<LaunchPlan> PlanLaunch(const policy::Policy& policy, const KernelFeatures& features,
                              const PlanInput& input, PlanNotes* notes);

// A read-only file whose content the supervisor learns only after the clone (the credential
// broker's CA bundle, made from a session CA that must not exist in init's copy of its memory):
// placed now in the plan's mount order, so it lands on top of the bind that holds its path, and
// the plan waits for its late setup (SendLateSetup sends the content). One per plan.
Status PlanLateFile(std::string target, std::string why, LaunchPlan* plan);
// The late file's target ("" when the plan has none).
const std::string& LateFileTarget(const LaunchPlan& plan);

// Lexical helpers shared with explain/why.
bool PathIsWithin(const std::string& path, const std::string& dir);  // path == dir or below it
std::string NormalizePath(const std::string& path);                  // "/a//b/./c/../d" -> "/a/b/d"

}  // namespace ward::enforce
