#include "enforce/plan.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "common/unique_fd.h"
#include "enforce/beneath.h"
#include "enforce/limits.h"
#include "policy/host_executed.h"
#include "policy/paths.h"

namespace ward::enforce {
namespace {

// The next component of `p` at or after `*i` (empty at the end), skipping repeated slashes.
std::string_view NextComponent(std::string_view p, size_t* i) {
  while (*i < p.size() && p[*i] == '/') ++*i;
  size_t j = *i;
  while (j < p.size() && p[j] != '/') ++j;
  std::string_view c = p.substr(*i, j - *i);
  *i = j;
  return c;
}

// Component by component, so that a directory sorts right before what is below it.
bool PathLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (true) {
    std::string_view ca = NextComponent(a, &i), cb = NextComponent(b, &j);
    if (ca.empty() || cb.empty()) return ca.empty() && !cb.empty();
    if (ca != cb) return ca < cb;
  }
}

// The policy's deny rules, prepared once per plan: a rule matches `path` when path is at or
// below it; a glob component ("ssh_host_*_key") matches one directory entry. The default
// profiles hold ~70 rules checked against every bound path and its real path.
class DenyMatcher {
 public:
  explicit DenyMatcher(const std::vector<policy::DenyRule>& rules) {
    for (const policy::DenyRule& d : rules) {
      Rule r{&d, {}};
      if (policy::HasGlob(d.path)) r.glob = policy::PathComponents(d.path);
      rules_.push_back(std::move(r));
    }
  }

  const policy::DenyRule* Find(const std::string& path) const {
    std::vector<std::string> pc;  // split only when a glob rule is reached
    for (const Rule& r : rules_) {
      if (r.glob.empty()) {
        if (PathIsWithin(path, r.rule->path)) return r.rule;
        continue;
      }
      if (pc.empty()) pc = policy::PathComponents(path);
      if (pc.size() < r.glob.size()) continue;
      bool all = true;
      for (size_t i = 0; i < r.glob.size() && all; ++i) {
        all = policy::MatchComponent(r.glob[i], pc[i]);
      }
      if (all) return r.rule;
    }
    return nullptr;
  }

 private:
  struct Rule {
    const policy::DenyRule* rule;
    std::vector<std::string> glob;  // the components of a rule with a glob, else empty
  };
  std::vector<Rule> rules_;
};

struct Bind {
  std::string target;  // canonical host path, same path inside
  std::string source;  // where it comes from when not `target` itself (the workspace's copy)
  std::string overlay_upper, overlay_work;  // the workspace in review mode (MountOp)
  bool writable = false;
  bool is_dir = true;
  bool beneath_workspace = false;  // the workspace or below it (MountOp::beneath_workspace)
  std::string why;
};

// The canonical workspace that rules are resolved beneath: "" when there is none to speak of
// (no directory there, or the root itself, which every path is below).
std::string WorkspaceAnchor(const policy::Policy& policy, const std::string& ws) {
  if (policy.workspace_access) return ws;
  char buf[PATH_MAX];
  if (policy.workspace.empty() || realpath(policy.workspace.c_str(), buf) == nullptr) return "";
  return std::string(buf) == "/" ? "" : buf;
}

// A rule's path on the host. Below the workspace no symlink is followed: the sandboxes that
// write the workspace could have planted it (beneath.h).
Result<std::string> ResolveRulePath(const std::string& path, const std::string& anchor) {
  if (!anchor.empty()) return RealPathNotFollowingBelow(path, anchor);
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) return ErrnoError(path, errno);
  return std::string(buf);
}

// No privilege bits leave a run: a set-id mode is trapped and performed without its bits, or,
// where the kernel cannot hand a call to the supervisor (SeccompSpec::no_user_notif), refused;
// copying or extracting a set-id file then fails where it would have succeeded.
void PlanPrivilegeBits(const KernelFeatures& features, LaunchPlan* plan, PlanNotes* notes) {
  if (plan->seccomp_enabled && !features.seccomp_user_notif) {
    notes->degraded.push_back(
        "seccomp: no user notification: chmod, open and mknod with a setuid or setgid bit fail "
        "with EPERM instead of succeeding without the bit (cp -p and tar xpf of such files report "
        "errors)");
  }
}

// Protected names that do not exist yet are kept uncreatable by the creation guard, which needs
// seccomp user notification. Without it (gVisor, Linux < 5.5) a run goes on only when the user
// allowed the seccomp layer to be degraded: those names can then be created during the run, and
// the check after the run (supervisor) is what finds and quarantines them.
Status PlanCreationGuard(const policy::Policy& policy, const KernelFeatures& features,
                         LaunchPlan* plan, PlanNotes* notes) {
  const bool wanted = !plan->mount.protect.roots.empty() && !plan->mount.protect.relpaths.empty();
  plan->seccomp_spec.notify_creations = wanted;
  if (!wanted || (plan->seccomp_enabled && features.seccomp_user_notif)) return Ok();
  if (policy.allow_degraded.count(policy::Layer::kSeccomp) == 0) {
    return Error(Code::kFailedPrecondition,
                 "protected paths need seccomp user notification (Linux >= 5.5) for the creation "
                 "guard, which this kernel lacks. Pass --allow-degraded=seccomp to run without "
                 "the guard: protected names that do not exist can then be created during the "
                 "run, and are quarantined after it");
  }
  plan->seccomp_spec.notify_creations = false;
  notes->degraded.push_back(
      "creation guard: no seccomp user notification; protected names that do not exist can be "
      "created during the run and are quarantined after it (allowed by " +
      policy.degraded_origins.at(policy::Layer::kSeccomp).ToString() + ")");
  return Ok();
}

// How the root is built. With the mount API (Linux >= 5.12) every host tree is captured as a
// detached clone before anything is attached (mount.cc). Without it (gVisor, older kernels) the
// root is built with mount(2) by path (mount_by_path.cc). Where a new user namespace may not
// mount at all (gVisor), a root supervisor keeps init in its own user namespace, the sandbox's
// processes still without capabilities; unprivileged there is no way to build a root.
Status PlanRootMechanism(const KernelFeatures& features, LaunchPlan* plan, PlanNotes* notes) {
  if (features.mount_api) return Ok();
  plan->mount.by_path = true;
  notes->degraded.push_back(
      "mounts: no mount API (open_tree/move_mount, mount_setattr); the root is built with "
      "mount(2) by path, "
      "each mount checked against what was resolved before it, read-only binds made from "
      "read-only views");
  if (features.userns_mounts) return Ok();
  if (!plan->privileged) {
    return Error(Code::kFailedPrecondition,
                 "this kernel refuses mount(2) in a new user namespace (gVisor does), so ward "
                 "cannot build the sandbox's root unprivileged here. Run ward as root inside this "
                 "outer wall (the command still runs without capabilities)");
  }
  plan->user_ns = false;
  notes->degraded.push_back(
      "user namespace: mounts are refused in a new one here; the sandbox stays in root's user "
      "namespace, its processes without capabilities");
  return Ok();
}

// The rights this kernel's Landlock lacks (landlock_coverage.h): each is covered by another
// layer of this plan, or the run is refused naming it, unless --allow-degraded=landlock. Never
// silently weaker.
Status PlanLandlockGaps(const policy::Policy& policy, const KernelFeatures& features,
                        const PlanInput& input, const LaunchPlan& plan, PlanNotes* notes) {
  if (!plan.landlock.enabled) return Ok();
  LandlockContext ctx;
  ctx.abi = features.landlock_abi;
  // Every run has network and pid namespaces of its own: the network one made by the
  // supervisor (ns/net.cc) or, inside gVisor, by init itself (launcher.cc: OwnNetworkNamespace).
  ctx.network_namespace = true;
  ctx.pid_namespace = true;
  if (LandlockLacksTruncate(ctx.abi)) {  // what only the truncate right would cover
    ctx.writable_mount_without_landlock_write =
        WritableMountOutsideLandlockWrites(plan.mount, plan.landlock);
    ctx.host_files_by_descriptor = input.truncatable_stdio;
    // A granted file is injected as a descriptor of the host's file (supervisor/approvals/files.cc).
    if (policy.approvals.enabled) ctx.host_files_by_descriptor.push_back("files granted by --ask");
  }
  notes->landlock_gaps = LandlockGaps(ctx);
  const LandlockGap* refused = FirstRefusedGap(notes->landlock_gaps);
  if (refused == nullptr) return Ok();
  if (policy.allow_degraded.count(policy::Layer::kLandlock) == 0) {
    return Error(Code::kFailedPrecondition,
                 LandlockGapRefusal(*refused, ctx.abi, features.kernel_release));
  }
  for (const LandlockGap& g : notes->landlock_gaps) {
    if (g.decision != LandlockGapDecision::kRefused) continue;
    notes->degraded.push_back(
        "landlock: ABI " + std::to_string(ctx.abi) + " lacks " + g.feature->right + " (ABI " +
        std::to_string(g.feature->abi) + ", Linux " + g.feature->kernel + "): " + g.why +
        " (allowed by " + policy.degraded_origins.at(policy::Layer::kLandlock).ToString() + ")");
  }
  return Ok();
}

// The workspace and HOME as the plan uses them.
struct WorkspaceAndHome {
  std::string ws;      // canonical when the run sees the workspace, else the policy's path
  std::string anchor;  // what rules are resolved beneath (WorkspaceAnchor)
  std::string home;    // canonical where it exists; "" for none
};

// The workspace the run sees: canonical, a directory, and not denied. Without access to it,
// the policy's path as it is.
Result<std::string> ResolveWorkspace(const policy::Policy& policy, const DenyMatcher& deny) {
  if (!policy.workspace_access) return policy.workspace;
  char buf[PATH_MAX];
  if (realpath(policy.workspace.c_str(), buf) == nullptr) {
    return ErrnoError("workspace " + policy.workspace, errno);
  }
  std::string ws = buf;
  struct stat st;
  if (stat(ws.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return InvalidArgument("workspace " + ws + " is not a directory");
  }
  if (const policy::DenyRule* d = deny.Find(ws)) {
    return InvalidArgument("workspace " + ws + " is denied by " + d->origin.ToString());
  }
  return ws;
}

// HOME, made private inside: canonical where it exists.
std::string ResolveHome(const policy::Policy& policy) {
  std::string home = policy.home.empty() ? std::string() : NormalizePath(policy.home);
  if (!home.empty() && home != "/") {
    char hb[PATH_MAX];
    if (realpath(home.c_str(), hb) != nullptr) home = hb;
  }
  return home;
}

Result<WorkspaceAndHome> PlanWorkspaceAndHome(const policy::Policy& policy, const DenyMatcher& deny,
                                              PlanNotes* notes) {
  WorkspaceAndHome p;
  WARD_ASSIGN_OR_RETURN(p.ws, ResolveWorkspace(policy, deny));
  notes->workspace = p.ws;
  p.anchor = WorkspaceAnchor(policy, p.ws);
  p.home = ResolveHome(policy);
  if (policy.workspace_access && !p.home.empty() && PathIsWithin(p.home, p.ws)) {
    return InvalidArgument(
        "the workspace " + p.ws + " contains your HOME (" + p.home +
        "): every credential in it (~/.ssh, ~/.aws, tokens) would be visible inside. Run ward in "
        "a project directory, or pass -C DIR");
  }
  return p;
}

// What the run binds from the host, and the symlinks the rules' paths took to get there.
struct BindSet {
  std::map<std::string, Bind> binds;                          // by target
  std::vector<std::pair<std::string, std::string>> symlinks;  // link path -> canonical target
};

// One path rule, bound where it resolves. Deny wins: a denied rule is an error, unless it is
// optional; an optional rule that is denied or absent is skipped and noted.
Status AddRuleBind(const policy::PathRule& r, const DenyMatcher& deny, const std::string& anchor,
                   BindSet* set, PlanNotes* notes) {
  std::string path = NormalizePath(r.path);
  if (PathIsWithin(path, "/proc") || PathIsWithin(path, "/dev")) {
    return InvalidArgument(path + " (" + r.origin.ToString() +
                           "): /proc and /dev are the sandbox's own and cannot be bound");
  }
  if (const policy::DenyRule* d = deny.Find(path)) {
    if (!r.optional) {
      return InvalidArgument(path + " (" + r.origin.ToString() + ") is denied by " +
                             d->origin.ToString() + " (deny wins over every other rule)");
    }
    notes->skipped.push_back(path + ": denied by " + d->origin.ToString());
    return Ok();
  }
  Result<std::string> resolved = ResolveRulePath(path, anchor);
  if (!resolved.ok()) {
    const Status& st = resolved.status();
    if (st.err() == ENOENT && r.optional) {
      notes->skipped.push_back(path + ": absent on this host (" + r.origin.ToString() + ")");
      return Ok();
    }
    if (st.err() != 0) return ErrnoError(path + " (" + r.origin.ToString() + ")", st.err());
    return Status(st.code(), path + " (" + r.origin.ToString() + "): " + st.message());
  }
  std::string real = std::move(resolved).value();
  if (const policy::DenyRule* d = deny.Find(real)) {
    notes->skipped.push_back(path + " -> " + real + ": denied by " + d->origin.ToString());
    return Ok();
  }
  if (real != path) set->symlinks.push_back({path, real});
  struct stat st;
  if (stat(real.c_str(), &st) != 0) return ErrnoError(real, errno);
  Bind b;
  b.target = real;
  b.writable = r.access == policy::Access::kWrite;
  b.is_dir = S_ISDIR(st.st_mode);
  b.beneath_workspace = !anchor.empty() && PathIsWithin(real, anchor);
  b.why = r.origin.ToString();
  set->binds[real] = b;  // a later rule for the same path wins (flags after profiles)
  return Ok();
}

// The workspace's own bind: the host's directory, or in review mode its overlay or its copy.
Status AddWorkspaceBind(const policy::Policy& policy, const WorkspaceLayer& layer,
                        const std::string& ws, BindSet* set) {
  if (layer.kind != WorkspaceLayer::Kind::kDirect &&
      policy.workspace_access != policy::Access::kWrite) {
    return InvalidArgument(
        "--workspace=overlay reviews what a run writes to the workspace, and this policy does not "
        "let it write there: drop --workspace=overlay, or give the workspace write access");
  }
  if (!policy.workspace_access) return Ok();
  Bind b;
  b.target = ws;
  b.writable = *policy.workspace_access == policy::Access::kWrite;
  b.beneath_workspace = true;
  b.why = "workspace";
  if (layer.kind == WorkspaceLayer::Kind::kOverlay) {
    b.overlay_upper = layer.upper;
    b.overlay_work = layer.work;
    b.why = "workspace (overlay: review mode)";
  } else if (layer.kind == WorkspaceLayer::Kind::kCopy) {
    // The copy in ward's state directory stands in for the workspace: not below it.
    b.source = layer.copy;
    b.beneath_workspace = false;
    b.why = "workspace (a copy: review mode)";
  }
  set->binds[ws] = b;
  if (NormalizePath(policy.workspace) != ws)
    set->symlinks.push_back({NormalizePath(policy.workspace), ws});
  return Ok();
}

// The writable directories bound: the roots protected paths apply below.
std::vector<std::string> WritableRoots(const std::map<std::string, Bind>& binds) {
  std::vector<std::string> roots;
  for (const auto& [t, b] : binds) {
    if (b.writable && b.is_dir) roots.push_back(t);
  }
  return roots;
}

// Whether a bind between `outer` and `inner` changes the access (a nested bind of the other
// kind).
bool AccessChangesBetween(const std::map<std::string, Bind>& binds, const std::string& outer,
                          bool outer_writable, const std::string& inner) {
  for (const auto& [t, b] : binds) {
    if (t != outer && t != inner && PathIsWithin(t, outer) && PathIsWithin(inner, t) &&
        b.writable != outer_writable) {
      return true;
    }
  }
  return false;
}

// Whether the bind at `target` adds nothing: it lies in a directory bind of the same host tree
// with the same access, and nothing between them changes that. The workspace in review mode is
// never folded into a bind around it: that would show the host's own directory in its place.
bool IsRedundantBind(const std::map<std::string, Bind>& binds, const std::string& target,
                     const Bind& bind) {
  if (!bind.source.empty() || !bind.overlay_upper.empty()) return false;
  for (const auto& [t, b] : binds) {
    if (t != target && PathIsWithin(target, t) && b.writable == bind.writable && b.is_dir &&
        !AccessChangesBetween(binds, t, b.writable, target)) {
      return true;
    }
  }
  return false;
}

// A bind inside another bind of the same host tree with the same access adds nothing (the
// paths are identical inside and out): dropped, every mount costs start-up time.
void FoldRedundantBinds(std::map<std::string, Bind>* binds) {
  for (auto it = binds->begin(); it != binds->end();) {
    it = IsRedundantBind(*binds, it->first, it->second) ? binds->erase(it) : std::next(it);
  }
}

// In review mode every write below the workspace goes to the overlay (or the copy): a
// writable bind of the host's own tree in it would go around the review.
Status CheckReviewedWorkspace(const WorkspaceLayer& layer, const std::string& ws,
                              const std::map<std::string, Bind>& binds) {
  if (layer.kind == WorkspaceLayer::Kind::kDirect) return Ok();
  for (const auto& [t, b] : binds) {
    if (t != ws && b.writable && PathIsWithin(t, ws)) {
      return InvalidArgument(t + " (" + b.why + ") is writable below the workspace, which " +
                             "--workspace=overlay reviews: its writes would reach the host " +
                             "unreviewed. Drop the rule (the workspace is writable already)");
    }
  }
  return Ok();
}

// Whether `path` lies strictly below a bind, in a directory from the host.
bool CoveredByBind(const std::map<std::string, Bind>& binds, const std::string& path) {
  for (const auto& [t, b] : binds) {
    if (PathIsWithin(path, t) && path != t) return true;
  }
  return false;
}

MountOp TmpfsOp(const std::string& target, uint32_t mode, uint64_t size, const char* why) {
  MountOp op;
  op.kind = MountOp::Kind::kTmpfs;
  op.target = target;
  op.mode = mode;
  op.size = size;
  op.why = why;
  return op;
}

MountOp BindOp(const std::string& target, const Bind& b) {
  MountOp op;
  op.kind = MountOp::Kind::kBind;
  op.source = b.source.empty() ? target : b.source;
  op.target = target;
  op.overlay_upper = b.overlay_upper;
  op.overlay_work = b.overlay_work;
  op.writable = b.writable;
  op.is_dir = b.is_dir;
  op.beneath_workspace = b.beneath_workspace;
  op.why = b.why;
  return op;
}

MountOp SymlinkOp(const std::string& link, const std::string& dest, std::string why) {
  MountOp op;
  op.kind = MountOp::Kind::kSymlink;
  op.source = dest;
  op.target = link;
  op.why = std::move(why);
  return op;
}

// The links the rules' paths took to their targets, and /var/tmp to the private /tmp.
void AddSymlinkOps(const BindSet& set, std::vector<MountOp>* ops) {
  for (const auto& [link, real] : set.symlinks) {
    // Only where ward owns the parent directory (the root tmpfs, /tmp, HOME).
    if (CoveredByBind(set.binds, link) || set.binds.count(link)) continue;
    ops->push_back(SymlinkOp(link, real, "symlink to " + real));
  }
  // Not where something is bound below /var/tmp (a workspace there): its path must be made of
  // directories, and a link on the way would stop the bind.
  const bool bound_below_var_tmp =
      std::any_of(set.binds.begin(), set.binds.end(),
                  [](const auto& b) { return PathIsWithin(b.first, "/var/tmp"); });
  if (!CoveredByBind(set.binds, "/var/tmp") && set.binds.count("/var") == 0 &&
      !bound_below_var_tmp) {
    ops->push_back(SymlinkOp("/var/tmp", "/tmp", "/var/tmp is the private /tmp"));
  }
}

// Names at the top of an image that the sandbox has of its own (or not at all: /sys).
bool SandboxOwnsTopLevel(std::string_view name) {
  return name == "proc" || name == "dev" || name == "tmp" || name == "sys";
}

// One entry at the top of the image: a directory or file bound beneath the rootfs, a symlink
// made as itself (it resolves in the container's view). Anything else is not bound.
Status AddImageEntry(const ImageRoot& image, int rootfs_fd, const char* name, BindSet* set) {
  struct stat st;
  if (fstatat(rootfs_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return ErrnoError("rootfs " + image.rootfs + "/" + name, errno);
  }
  const std::string target = std::string("/") + name;
  if (S_ISLNK(st.st_mode)) {
    char link[PATH_MAX];
    ssize_t n = readlinkat(rootfs_fd, name, link, sizeof link - 1);
    if (n <= 0) return ErrnoError("rootfs " + image.rootfs + "/" + name, errno);
    set->symlinks.push_back({target, std::string(link, static_cast<size_t>(n))});
    return Ok();
  }
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) return Ok();
  Bind b;
  b.target = target;
  b.source = image.rootfs + target;
  b.writable = !image.readonly;
  b.is_dir = S_ISDIR(st.st_mode);
  b.beneath_workspace = true;  // the rootfs is the anchor (MountSpec::workspace)
  b.why = image.readonly ? "image (read-only root)" : "image";
  set->binds[target] = b;
  return Ok();
}

// A container's view: its image's top-level entries and the bundle's binds (ImageRoot).
Result<WorkspaceAndHome> PlanImageView(const ImageRoot& image, BindSet* set) {
  UniqueFd fd(open(image.rootfs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return ErrnoError("rootfs " + image.rootfs, errno);
  DIR* dir = fdopendir(dup(fd.get()));
  if (dir == nullptr) return ErrnoError("rootfs " + image.rootfs, errno);
  Status st = Ok();
  while (struct dirent* e = readdir(dir)) {
    const std::string_view name = e->d_name;
    if (name == "." || name == ".." || SandboxOwnsTopLevel(name)) continue;
    st = AddImageEntry(image, fd.get(), e->d_name, set);
    if (!st.ok()) break;
  }
  closedir(dir);
  WARD_TRY(st);
  for (const ContainerBind& cb : image.binds) {
    struct stat bst;
    if (stat(cb.source.c_str(), &bst) != 0) return ErrnoError(cb.source + " (" + cb.why + ")", errno);
    Bind b;
    b.target = NormalizePath(cb.target);
    b.source = cb.source;
    b.writable = cb.writable;
    b.is_dir = S_ISDIR(bst.st_mode);
    b.why = cb.why;
    set->binds[b.target] = b;
  }
  WorkspaceAndHome places;
  places.anchor = image.rootfs;
  return places;
}

// The root's mounts but egress's file, in the order they are planned (not yet sorted).
std::vector<MountOp> PlanMountOps(const BindSet& set, const std::string& home, uint64_t tmp_size) {
  std::vector<MountOp> ops;
  ops.push_back(TmpfsOp("/tmp", 01777, tmp_size, "private /tmp"));
  // The private HOME, also when a broader bind (-r /home) would otherwise show the host's.
  if (!home.empty() && home != "/" && set.binds.count(home) == 0) {
    ops.push_back(TmpfsOp(home, 0700, tmp_size, "private HOME"));
  }
  MountOp dev;
  dev.kind = MountOp::Kind::kDev;
  dev.target = "/dev";
  dev.why = "minimal /dev";
  ops.push_back(dev);
  MountOp proc;
  proc.kind = MountOp::Kind::kProc;
  proc.target = "/proc";
  proc.why = "fresh /proc";
  ops.push_back(proc);
  for (const auto& [t, b] : set.binds) ops.push_back(BindOp(t, b));
  AddSymlinkOps(set, &ops);
  return ops;
}

// Egress: the proxy and the DNS stub are the only way out. Present in every run, a host
// allowed or not: what the command tries to reach is then answered (NXDOMAIN, 403) with the
// reason and recorded, instead of failing unseen.
Status PlanEgress(const policy::Policy& policy, const KernelFeatures& features, NetSpec* net) {
  const bool wants_egress = !policy.network.allow.empty() || policy.approvals.enabled;
  const bool gvisor = features.outer_wall.rfind("gvisor", 0) == 0;
  if (wants_egress && gvisor) {
    // The proxy's sockets are made in the namespace the supervisor creates and init joins;
    // gVisor cannot join one, and the command would find nothing listening.
    return Error(Code::kFailedPrecondition,
                 "egress (network.allow, -n) needs the sandbox's network namespace to be joined, "
                 "which gVisor cannot do: run without allowing any host inside gVisor");
  }
  // Inside gVisor a run without egress has only its own loopback (launcher.cc:
  // OwnNetworkNamespace), as before: nothing answers there, and nothing is recorded.
  net->enabled = !gvisor;
  return Ok();
}

// Where the host's /etc/resolv.conf is: where the link points when it is a symlink
// (systemd-resolved: into /run), never in /proc or /dev.
std::string ResolvConfTarget() {
  std::string target = "/etc/resolv.conf";
  char rp[PATH_MAX];
  if (realpath(target.c_str(), rp) != nullptr) {
    target = rp;
  } else {
    char link[PATH_MAX];
    ssize_t n = readlink(target.c_str(), link, sizeof link - 1);
    if (n > 0) {
      link[n] = '\0';
      target = NormalizePath(link[0] == '/' ? std::string(link) : "/etc/" + std::string(link));
    }
  }
  if (PathIsWithin(target, "/proc") || PathIsWithin(target, "/dev")) target = "/etc/resolv.conf";
  return target;
}

// /etc/resolv.conf inside names the stub. Where the host's is a symlink, the file goes where
// the link points, in ward's own tmpfs.
void AddDnsStubFile(std::vector<MountOp>* ops) {
  const std::string target = ResolvConfTarget();
  struct stat rst;
  const bool host_has_one = lstat(target.c_str(), &rst) == 0;
  MountOp rc;
  rc.kind = MountOp::Kind::kFile;
  rc.target = target;
  rc.mode = 0644;
  rc.content = "# ward: the sandbox's DNS stub (allow-listed names only)\nnameserver 127.0.0.1\n";
  rc.why = "DNS stub";
  // Without one on the host there is nothing to cover (and no mount point in a directory bound
  // from the host): resolvers without /etc/resolv.conf ask 127.0.0.1:53, the stub, anyway.
  if (host_has_one) ops->push_back(rc);
}

// Deny rules that fall inside something visible, each covered at mount time.
std::vector<MaskOp> PlanMasks(const std::vector<policy::DenyRule>& deny,
                              const std::map<std::string, Bind>& binds) {
  std::vector<MaskOp> masks;
  for (const policy::DenyRule& d : deny) {
    std::string path = NormalizePath(d.path);
    const bool visible = CoveredByBind(binds, path);
    // Only what exists needs covering (a glob is expanded inside, at mount time).
    struct stat st;
    bool glob = path.find_first_of("*?[") != std::string::npos;
    if (visible && (glob || lstat(path.c_str(), &st) == 0)) {
      masks.push_back({path, d.origin.ToString()});
    }
  }
  return masks;
}

// The names protected below every writable root, and how deep nested repositories are found.
void PlanProtectedPaths(const policy::Policy& policy, ProtectSpec* protect) {
  for (const policy::ProtectedRule& pr : policy.protected_paths) {
    protect->relpaths.push_back(pr.relpath);
  }
  // The git directory's part of the host-executed rule holds in every profile that protects
  // anything, whatever its list names.
  if (!protect->relpaths.empty()) {
    for (const std::string& rel : policy::GitDirProtectedRelpaths()) {
      auto& rels = protect->relpaths;
      if (std::find(rels.begin(), rels.end(), rel) == rels.end()) rels.push_back(rel);
    }
  }
  protect->nested_repo_depth = policy.nested_repo_depth;
}

// The overlay is made with the mount API; a root built by path would bind the host's
// workspace instead, around the review.
Status CheckOverlayMechanism(const MountSpec& mount, const WorkspaceLayer& layer) {
  if (mount.by_path && layer.kind == WorkspaceLayer::Kind::kOverlay) {
    return Error(Code::kFailedPrecondition,
                 "--workspace=overlay needs the mount API (Linux >= 5.2), which this kernel (or "
                 "an outer wall such as gVisor) lacks: run with --workspace=copy");
  }
  return Ok();
}

// Whether the run has Landlock: required, unless --allow-degraded=landlock.
Result<bool> DecideLandlock(const policy::Policy& policy, const KernelFeatures& features,
                            PlanNotes* notes) {
  if (features.landlock_abi > 0) return true;
  if (policy.allow_degraded.count(policy::Layer::kLandlock) == 0) {
    return Error(Code::kFailedPrecondition,
                 "Landlock is not available on this kernel; refusing to run without it. Pass "
                 "--allow-degraded=landlock to accept a run without this layer");
  }
  notes->degraded.push_back("landlock: not available in this kernel (allowed by " +
                            policy.degraded_origins.at(policy::Layer::kLandlock).ToString() + ")");
  return false;
}

// Landlock's path rules: everything readable, the writable binds, ward's own tmpfs mounts and
// the device nodes writable, /proc as procfs.
std::vector<LandlockPath> LandlockPaths(const std::map<std::string, Bind>& binds,
                                        const std::string& home) {
  std::vector<LandlockPath> paths;
  paths.push_back({"/", false, false, false});
  for (const auto& [t, b] : binds) {
    if (b.writable) paths.push_back({t, true, false, false});
  }
  paths.push_back({"/tmp", true, false, false});
  if (!home.empty() && home != "/") paths.push_back({home, true, false, false});
  paths.push_back({"/dev/shm", true, false, false});
  for (const char* node : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
                           "/dev/tty", "/dev/pts"}) {
    paths.push_back({node, false, true, false});
  }
  paths.push_back({"/proc", false, false, true});
  return paths;
}

Status PlanLandlock(const policy::Policy& policy, const KernelFeatures& features,
                    const PlanInput& input, const std::map<std::string, Bind>& binds,
                    const std::string& home, LaunchPlan* plan, PlanNotes* notes) {
  WARD_ASSIGN_OR_RETURN(plan->landlock.enabled, DecideLandlock(policy, features, notes));
  plan->landlock.abi = features.landlock_abi;
  plan->landlock.paths = LandlockPaths(binds, home);
  plan->landlock.tcp = !input.exec_server;
  if (plan->net.enabled) plan->landlock.connect_tcp = plan->net.tcp_ports();
  return PlanLandlockGaps(policy, features, input, *plan, notes);
}

// seccomp is required, unless --allow-degraded=seccomp.
Status DecideSeccomp(const policy::Policy& policy, const KernelFeatures& features, LaunchPlan* plan,
                     PlanNotes* notes) {
  if (features.seccomp) return Ok();
  if (policy.allow_degraded.count(policy::Layer::kSeccomp) == 0) {
    return Error(Code::kFailedPrecondition,
                 "seccomp is not available; refusing to run without it. Pass "
                 "--allow-degraded=seccomp to accept a run without this layer");
  }
  plan->seccomp_enabled = false;
  notes->degraded.push_back("seccomp: not available (allowed by " +
                            policy.degraded_origins.at(policy::Layer::kSeccomp).ToString() + ")");
  return Ok();
}

// File approvals trap every open. Letting an allowed open continue in the kernel is safe only
// because the sandbox's own layers then apply; Landlock is what refuses a host file reached
// through a descriptor ward injected (/proc/self/fd/N), so approvals need it and seccomp.
Status PlanFileApprovals(const policy::Policy& policy, const KernelFeatures& features,
                         LaunchPlan* plan) {
  if (!policy.approvals.enabled) return Ok();
  if (!plan->seccomp_enabled || !features.seccomp_user_notif || !plan->landlock.enabled) {
    return Error(Code::kFailedPrecondition,
                 "approvals (--ask) need seccomp user notification and Landlock, which this run "
                 "does not have");
  }
  plan->seccomp_spec.notify_opens = true;
  return Ok();
}

Status PlanSeccomp(const policy::Policy& policy, const KernelFeatures& features,
                   const PlanInput& input, LaunchPlan* plan, PlanNotes* notes) {
  WARD_TRY(DecideSeccomp(policy, features, plan, notes));
  PlanPrivilegeBits(features, plan, notes);
  WARD_TRY(PlanCreationGuard(policy, features, plan, notes));
  plan->seccomp_spec.no_user_notif = !features.seccomp_user_notif;
  WARD_TRY(PlanFileApprovals(policy, features, plan));
  if (plan->seccomp_enabled && input.prepare_seccomp) {
    WARD_ASSIGN_OR_RETURN(plan->seccomp, PrepareSeccomp(plan->seccomp_spec));
  }
  return Ok();
}

// What common tools need to find the proxy (later entries replace the caller's values).
void SetProxyEnvironment(uint16_t proxy_port, std::vector<std::string>* env) {
  std::string url = "http://127.0.0.1:" + std::to_string(proxy_port);
  std::string port = std::to_string(proxy_port);
  const std::pair<const char*, std::string> vars[] = {
      {"HTTP_PROXY", url},
      {"HTTPS_PROXY", url},
      {"ALL_PROXY", url},
      // Empty: even 127.0.0.1 goes through the proxy, which records what it refuses and reaches
      // the host's loopback where an address rule allows it. (A live sandbox's own loopback
      // services are reached by an exec that sets NO_PROXY, or by a client without a proxy.)
      {"NO_PROXY", ""},
      {"http_proxy", url},
      {"https_proxy", url},
      {"all_proxy", url},
      {"no_proxy", ""},
      {"npm_config_proxy", url},
      {"npm_config_https_proxy", url},
      {"YARN_HTTP_PROXY", url},
      {"YARN_HTTPS_PROXY", url},
      {"PIP_PROXY", url},
      {"CARGO_HTTP_PROXY", url},
      {"NODE_USE_ENV_PROXY", "1"},
      {"JAVA_TOOL_OPTIONS", "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=" + port +
                                " -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=" + port +
                                " -Dhttp.nonProxyHosts=localhost|127.0.0.1"},
  };
  for (const auto& [name, value] : vars) {
    std::string prefix = std::string(name) + "=";
    env->erase(std::remove_if(env->begin(), env->end(),
                              [&](const std::string& e) { return e.rfind(prefix, 0) == 0; }),
               env->end());
    env->push_back(prefix + value);
  }
}

// The command: its argv, its environment (with the proxy's, where there is egress) and where
// it starts.
void PlanProcess(const policy::Policy& policy, const PlanInput& input, const std::string& ws,
                 const NetSpec& net, ProcessSpec* process) {
  process->argv = input.argv;
  process->env = input.env;
  if (net.enabled) SetProxyEnvironment(net.proxy_port, &process->env);
  process->workdir = policy.workspace_access ? ws : "/";
}

Status PlanResourceLimits(const policy::Policy& policy, const KernelFeatures& features,
                          LaunchPlan* plan, PlanNotes* notes) {
  WARD_ASSIGN_OR_RETURN(LimitsPlan limits, PlanLimits(policy, features, plan->uid));
  plan->limits = std::move(limits.spec);
  plan->process.rlimits = std::move(limits.rlimits);
  plan->mount.sysctls = std::move(limits.sysctls);
  // Built by path (gVisor), /proc/sys may lack the user.* knobs: seccomp still refuses the
  // command every new namespace.
  if (plan->mount.by_path) {
    for (Sysctl& s : plan->mount.sysctls) s.optional = true;
  }
  for (auto& d : limits.degraded) notes->degraded.push_back(std::move(d));
  return Ok();
}

// What the run sees: a container's image, or the host's paths the policy names and the
// workspace.
Result<WorkspaceAndHome> PlanView(const policy::Policy& policy, const PlanInput& input,
                                  const DenyMatcher& deny, BindSet* set, PlanNotes* notes) {
  if (input.image) {
    if (!policy.paths.empty() || policy.workspace_access) {
      return InvalidArgument(
          "a container sees its image: the policy may name no host path and no workspace");
    }
    return PlanImageView(*input.image, set);
  }
  WARD_ASSIGN_OR_RETURN(WorkspaceAndHome places, PlanWorkspaceAndHome(policy, deny, notes));
  for (const policy::PathRule& r : policy.paths) {
    WARD_TRY(AddRuleBind(r, deny, places.anchor, set, notes));
  }
  WARD_TRY(AddWorkspaceBind(policy, input.workspace_layer, places.ws, set));
  return places;
}

// The bundle's tmpfs mounts, sized like the private /tmp.
void AddImageTmpfs(const ImageRoot& image, uint64_t size, std::vector<MountOp>* ops) {
  for (const std::string& t : image.tmpfs) {
    ops->push_back(TmpfsOp(NormalizePath(t), 0755, size, "config.json tmpfs"));
  }
}

// /etc/resolv.conf names the stub where the container has one (the image's or the engine's).
void AddImageDnsStubFile(const ImageRoot& image, const BindSet& set, std::vector<MountOp>* ops) {
  struct stat st;
  const std::string image_file = image.rootfs + "/etc/resolv.conf";
  const bool has_one = set.binds.count("/etc/resolv.conf") != 0 ||
                       (lstat(image_file.c_str(), &st) == 0 && S_ISREG(st.st_mode));
  if (!has_one) return;
  MountOp rc;
  rc.kind = MountOp::Kind::kFile;
  rc.target = "/etc/resolv.conf";
  rc.mode = 0644;
  rc.content = "# ward: the sandbox's DNS stub (allow-listed names only)\nnameserver 127.0.0.1\n";
  rc.why = "DNS stub";
  ops->push_back(rc);
}

// The bundle's rlimits, where they are lower than ward's own (or ward sets none).
void NarrowRlimits(const std::vector<ProcessSpec::Rlimit>& asked,
                   std::vector<ProcessSpec::Rlimit>* rlimits) {
  for (const ProcessSpec::Rlimit& a : asked) {
    auto it = std::find_if(rlimits->begin(), rlimits->end(),
                           [&](const ProcessSpec::Rlimit& r) { return r.resource == a.resource; });
    if (it == rlimits->end()) {
      rlimits->push_back(a);
    } else {
      it->soft = std::min(it->soft, a.soft);
      it->hard = std::min(it->hard, a.hard);
    }
  }
}

// A container starts where its bundle says, with its hostname, rlimits, seccomp filter and
// cgroup; its tmpfs mounts are writable, and the ports it exposes are the ones it may listen on.
void PlanContainerProcess(const ImageRoot& image, const KernelFeatures& features,
                          LaunchPlan* plan) {
  NarrowRlimits(image.rlimits, &plan->process.rlimits);
  PlanEngineCgroup(features.cgroup, image.cgroup_path, plan->privileged, &plan->limits);
  plan->process.container_seccomp = image.seccomp;
  plan->landlock.bind_tcp = image.listen_ports;
  plan->mount.workdir = image.workdir;
  plan->process.workdir = image.workdir;
  if (!image.hostname.empty()) plan->mount.hostname = image.hostname;
  for (const std::string& t : image.tmpfs) {
    plan->landlock.paths.push_back({NormalizePath(t), true, false, false});
  }
}

}  // namespace

std::string NormalizePath(const std::string& path) { return policy::NormalizePath(path); }

bool PathIsWithin(const std::string& path, const std::string& dir) {
  return policy::PathIsWithin(path, dir);
}

Result<LaunchPlan> PlanLaunch(const policy::Policy& policy, const KernelFeatures& features,
                              const PlanInput& input, PlanNotes* notes) {
  LaunchPlan plan;
  plan.uid = getuid();
  plan.gid = getgid();
  plan.privileged = geteuid() == 0;
  if (input.argv.empty() && !input.exec_server) {
    return InvalidArgument("no command given (ward run [OPTIONS] -- COMMAND)");
  }
  plan.exec_server = input.exec_server;
  plan.container_init = input.image.has_value();
  const DenyMatcher deny(policy.deny);
  const WorkspaceLayer& layer = input.workspace_layer;
  BindSet set;
  WARD_ASSIGN_OR_RETURN(const WorkspaceAndHome places, PlanView(policy, input, deny, &set, notes));
  // Protected paths apply below every writable root, including nested write rules that the
  // fold may merge into their parent.
  plan.mount.protect.roots = WritableRoots(set.binds);
  FoldRedundantBinds(&set.binds);
  WARD_TRY(CheckReviewedWorkspace(layer, places.ws, set.binds));

  std::vector<MountOp> ops =
      PlanMountOps(set, places.home, policy.limits.tmp_size_bytes.value_or(0));
  WARD_TRY(PlanEgress(policy, features, &plan.net));
  if (input.image) {
    AddImageTmpfs(*input.image, policy.limits.tmp_size_bytes.value_or(0), &ops);
    if (plan.net.enabled && set.binds.count("/etc")) AddImageDnsStubFile(*input.image, set, &ops);
  } else if (plan.net.enabled) {
    AddDnsStubFile(&ops);
  }
  std::stable_sort(ops.begin(), ops.end(),
                   [](const MountOp& a, const MountOp& b) { return PathLess(a.target, b.target); });
  plan.mount.ops = std::move(ops);
  plan.mount.masks = PlanMasks(policy.deny, set.binds);
  PlanProtectedPaths(policy, &plan.mount.protect);
  WARD_TRY(PlanRootMechanism(features, &plan, notes));
  WARD_TRY(CheckOverlayMechanism(plan.mount, layer));
  plan.mount.workdir = places.ws;
  plan.mount.workspace = places.anchor;

  WARD_TRY(PlanLandlock(policy, features, input, set.binds, places.home, &plan, notes));
  WARD_TRY(PlanSeccomp(policy, features, input, &plan, notes));
  PlanProcess(policy, input, places.ws, plan.net, &plan.process);
  WARD_TRY(PlanResourceLimits(policy, features, &plan, notes));
  // After ward's own rlimits: the bundle's may only lower them.
  if (input.image) PlanContainerProcess(*input.image, features, &plan);
  for (int i = 0; i < 3; ++i) plan.tty[i] = input.tty[i] && !input.exec_server;
  return plan;
}

Status PlanLateFile(std::string target, std::string why, LaunchPlan* plan) {
  if (plan->late_file_op >= 0) {
    return Error(Code::kInternal, "a plan takes one late file; " + target + " is a second");
  }
  MountOp op;
  op.kind = MountOp::Kind::kFile;
  op.target = std::move(target);
  op.mode = 0444;
  op.why = std::move(why);
  std::vector<MountOp>& ops = plan->mount.ops;
  auto at = std::upper_bound(ops.begin(), ops.end(), op,
                             [](const MountOp& a, const MountOp& b) { return PathLess(a.target, b.target); });
  plan->late_file_op = static_cast<int>(at - ops.begin());
  ops.insert(at, std::move(op));
  plan->await_late_setup = true;
  return Ok();
}

const std::string& LateFileTarget(const LaunchPlan& plan) {
  static const std::string kNone;
  if (plan.late_file_op < 0 || static_cast<size_t>(plan.late_file_op) >= plan.mount.ops.size()) {
    return kNone;
  }
  return plan.mount.ops[plan.late_file_op].target;
}

}  // namespace ward::enforce
