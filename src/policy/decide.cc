#include "policy/decide.h"

#include <algorithm>

#include "policy/host_executed.h"
#include "policy/paths.h"

namespace ward::policy {
namespace {

using Visibility = PathDecision::Visibility;

// One thing that can provide a path: a built-in mount, the workspace, or a path rule.
struct Provider {
  std::string prefix;
  Visibility visibility;
  bool host_file;
  std::string via;
  std::optional<Origin> rule;
  std::string what;  // the reason's tail
};

std::string RuleText(const std::optional<Origin>& o) { return o ? " (" + o->ToString() + ")" : ""; }

const char* Verb(Visibility v) {
  switch (v) {
    case Visibility::kHidden:
      return "hidden";
    case Visibility::kRead:
      return "read-only";
    case Visibility::kWrite:
      return "writable";
  }
  return "?";
}

std::vector<Provider> Providers(const Policy& p) {
  // Order matters at equal paths: later entries are mounted later and win.
  std::vector<Provider> out;
  out.push_back({"/", Visibility::kHidden, false, "read-only tmpfs root", std::nullopt, ""});
  out.push_back({"/proc", Visibility::kRead, false, "fresh /proc", std::nullopt,
                 "a fresh /proc of the sandbox's own pid namespace (host processes are not "
                 "visible)"});
  out.push_back({"/sys", Visibility::kHidden, false, "not in the sandbox's view", std::nullopt,
                 "/sys is never mounted"});
  out.push_back({"/dev", Visibility::kRead, false, "minimal /dev", std::nullopt, ""});
  out.push_back({"/tmp", Visibility::kWrite, false, "private tmpfs /tmp", std::nullopt,
                 "a private tmpfs: the host's /tmp is not visible and nothing written there "
                 "survives the run"});
  if (!p.home.empty()) {
    out.push_back({NormalizePath(p.home), Visibility::kWrite, false, "private HOME (tmpfs)",
                   std::nullopt,
                   "HOME inside is a private tmpfs: the host's files appear there only through "
                   "rules (such as filesystem.read), and nothing written survives the run"});
  }
  bool var_tmp_bound = false;
  for (const PathRule& r : p.paths) {
    Visibility v = r.access == Access::kWrite ? Visibility::kWrite : Visibility::kRead;
    std::string via = "bind " + r.path + " (" + AccessName(r.access) + ")";
    out.push_back({r.path, v, true, via, r.origin, via});
    if (PathIsWithin("/var/tmp", r.path)) var_tmp_bound = true;
  }
  // The workspace is mounted after the rules: it wins over a rule for exactly its path
  // (workspace.access is how to change its access).
  if (p.workspace_access && !p.workspace.empty()) {
    Visibility v = *p.workspace_access == Access::kWrite ? Visibility::kWrite : Visibility::kRead;
    out.push_back({NormalizePath(p.workspace), v, true, "workspace", p.workspace_origin,
                   std::string("inside the workspace ") + NormalizePath(p.workspace) + " (access " +
                       AccessName(*p.workspace_access) + ")"});
  }
  if (!var_tmp_bound) {
    out.push_back({"/var/tmp", Visibility::kWrite, false, "private tmpfs /tmp", std::nullopt,
                   "/var/tmp is a symlink to the private /tmp: the host's /var/tmp is not "
                   "visible"});
  }
  return out;
}

// The minimal /dev of the mount planner.
void RefineDev(const std::string& path, PathDecision* d) {
  if (path == "/dev") {
    d->visibility = Visibility::kRead;
    d->reason = "read-only: the minimal /dev (a tmpfs with a few device nodes)";
    return;
  }
  std::string rest = path.substr(5);
  std::string first = rest.substr(0, rest.find('/'));
  bool deeper = first.size() < rest.size();
  static const char* kNodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
  if (!deeper && std::find(std::begin(kNodes), std::end(kNodes), first) != std::end(kNodes)) {
    d->visibility = Visibility::kWrite;
    d->host_file = true;
    d->reason = "writable: a device node of the minimal /dev (bound from the host)";
  } else if (first == "pts" || first == "shm" || (first == "ptmx" && !deeper)) {
    d->visibility = Visibility::kWrite;
    d->reason = "writable: the sandbox's own " + first + " in the minimal /dev";
  } else if (!deeper &&
             (first == "fd" || first == "stdin" || first == "stdout" || first == "stderr")) {
    d->visibility = Visibility::kRead;
    d->reason = "read-only: a symlink into /proc/self in the minimal /dev";
  } else {
    d->visibility = Visibility::kHidden;
    d->reason = "hidden: not in the minimal /dev";
  }
}

// Whether `path` matches a deny pattern (the pattern's path, or anything below it; the last
// component of the pattern may be a glob).
bool DenyMatches(const std::string& pattern, const std::string& path) {
  if (!HasGlob(pattern)) return PathIsWithin(path, pattern);
  std::string parent = ParentPath(pattern);
  std::string glob = pattern.substr(pattern.rfind('/') + 1);
  if (!PathIsWithin(path, parent) || path.size() == parent.size()) return false;
  std::string rest = path.substr(parent == "/" ? 1 : parent.size() + 1);
  return MatchComponent(glob, rest.substr(0, rest.find('/')));
}

// The repository roots that count for protection below writable root `root`.
std::vector<std::string> RepoBases(const Policy& p, const std::string& root,
                                   const std::string& path, const std::vector<std::string>& found,
                                   bool infer) {
  std::vector<std::string> bases = {root};
  auto eligible = [&](const std::string& d) {
    int depth = PathDepthBelow(d, root);
    if (depth < 1 || depth > p.nested_repo_depth) return false;
    // The planner does not descend into .git or node_modules directories.
    for (const std::string& comp : PathComponents(d.substr(root.size()))) {
      if (comp == ".git" || comp == "node_modules") return false;
    }
    return true;
  };
  for (const std::string& f : found) {
    std::string d = NormalizePath(f);
    if (eligible(d)) bases.push_back(d);
  }
  // Lexical inference: a path inside D/.git means D is a repository.
  for (std::string d = ParentPath(path); infer && PathIsWithin(d, root) && d != root; d = ParentPath(d)) {
    if (PathIsWithin(path, JoinPath(d, ".git")) && eligible(d)) bases.push_back(d);
  }
  return bases;
}

// The rule of host_executed.h, lexically: a protected name at any depth, or what runs code
// inside a directory named .git (a repository's structure is not known before it exists).
std::string HostExecutedWhat(const Policy& policy, const std::string& path) {
  std::vector<std::string> c = PathComponents(path);
  std::vector<std::vector<std::string>> names;
  for (const ProtectedRule& r : policy.protected_paths) {
    std::vector<std::string> rel = PathComponents(r.relpath);
    if (!IsGitProtectedName(rel)) names.push_back(std::move(rel));
  }
  size_t end = 0;
  int at = MatchProtectedName(c, names, &end);
  if (at >= 0) {
    std::string n;
    for (size_t i = static_cast<size_t>(at); i < end; ++i) n += (n.empty() ? "" : "/") + c[i];
    return "the protected name " + n + " at any depth";
  }
  for (size_t i = 0; i + 1 < c.size(); ++i) {
    if (c[i] != ".git") continue;
    std::string rest;
    for (size_t k = i + 1; k < c.size(); ++k) rest += (rest.empty() ? "" : "/") + c[k];
    if (ClassifyGitDirEntry(rest) != GitDirEntry::kInert) {
      return "a git directory's " + rest;
    }
  }
  return "";
}

bool IsHostExecutedPath(const Policy& policy, const std::string& path) {
  return !HostExecutedWhat(policy, path).empty();
}

// The tmpfs root itself, an empty directory of it on the way to a provider, or hidden.
void RefineRoot(const std::vector<Provider>& providers, const std::string& path, PathDecision* d) {
  if (path == "/") {
    d->visibility = Visibility::kRead;
    d->reason = "read-only: the root is an empty read-only tmpfs";
    return;
  }
  const Provider* child = nullptr;
  for (const Provider& p : providers) {
    if (p.prefix != path && p.visibility != Visibility::kHidden && PathIsWithin(p.prefix, path)) {
      child = &p;
      break;
    }
  }
  if (child != nullptr) {
    d->visibility = Visibility::kRead;
    d->reason = "read-only: an empty directory of the read-only tmpfs root, a parent of " +
                child->prefix + " (" + child->via + "); the host's contents are not visible";
  } else {
    d->via = "not in the sandbox's view";
    d->reason = "hidden: no rule makes it visible (the sandbox's root is built from nothing)";
  }
}

// The most specific provider decides; at equal length the later one (mounted on top).
void DecideByProvider(const std::vector<Provider>& providers, const std::string& path,
                      PathDecision* d) {
  const Provider* best = nullptr;
  for (const Provider& p : providers) {
    if (!PathIsWithin(path, p.prefix)) continue;
    if (best == nullptr || p.prefix.size() >= best->prefix.size()) best = &p;
  }
  d->visibility = best->visibility;
  d->host_file = best->host_file;
  d->via = best->via;
  d->rule = best->rule;
  d->reason = std::string(Verb(d->visibility)) + ": " + best->what + RuleText(best->rule);
  if (best->prefix == "/dev") {
    RefineDev(path, d);
  } else if (best->prefix == "/") {
    RefineRoot(providers, path, d);
  }
}

// The writable roots: the workspace when it is writable, and every writable path rule.
std::vector<std::string> WritableRoots(const Policy& policy) {
  std::vector<std::string> roots;
  if (policy.workspace_access == Access::kWrite && !policy.workspace.empty()) {
    roots.push_back(NormalizePath(policy.workspace));
  }
  for (const PathRule& r : policy.paths) {
    if (r.access == Access::kWrite) roots.push_back(r.path);
  }
  return roots;
}

// Protected paths: read-only below every writable root (and nested repositories).
void ApplyProtected(const Policy& policy, const std::string& path,
                    const std::vector<std::string>& nested_repo_roots, bool infer_nested_repos,
                    PathDecision* d) {
  if (d->visibility != Visibility::kWrite) return;
  for (const std::string& root : WritableRoots(policy)) {
    if (!PathIsWithin(path, root) || d->is_protected) continue;
    for (const std::string& base :
         RepoBases(policy, root, path, nested_repo_roots, infer_nested_repos)) {
      auto hit = std::find_if(
          policy.protected_paths.begin(), policy.protected_paths.end(),
          [&](const ProtectedRule& r) { return PathIsWithin(path, JoinPath(base, r.relpath)); });
      if (hit == policy.protected_paths.end()) continue;
      d->visibility = Visibility::kRead;
      d->is_protected = true;
      d->rule = hit->origin;
      d->reason = "read-only: protected path " + hit->relpath + " under " +
                  (base == root ? "writable root " : "nested repository ") + base +
                  RuleText(hit->origin) + "; it cannot be created or changed";
      break;
    }
  }
}

// Host-executed content elsewhere below a writable root: writable, judged after the run.
void MarkHostExecuted(const Policy& policy, const std::string& path, PathDecision* d) {
  if (d->visibility != Visibility::kWrite || !d->host_file || !IsHostExecutedPath(policy, path)) {
    return;
  }
  d->host_executed = true;
  d->reason += "; but host-executed content (" + HostExecutedWhat(policy, path) +
               "): what a run makes or changes here is moved to the quarantine when it ends "
               "(ward quarantine list)";
}

// Deny beats everything at or below its path.
void ApplyDeny(const Policy& policy, const std::string& path, PathDecision* d) {
  for (const DenyRule& r : policy.deny) {
    if (!DenyMatches(r.path, path)) continue;
    d->masked = d->visibility != Visibility::kHidden && d->host_file;
    d->visibility = Visibility::kHidden;
    d->host_file = false;
    d->is_protected = false;
    d->rule = r.origin;
    d->reason = "hidden: denied by " + r.path + RuleText(r.origin) +
                (d->masked ? " (masked inside " + d->via + ")" : "");
    return;
  }
}

}  // namespace

const char* VisibilityName(Visibility v) {
  switch (v) {
    case Visibility::kHidden:
      return "hidden";
    case Visibility::kRead:
      return "read";
    case Visibility::kWrite:
      return "write";
  }
  return "unknown";
}

PathDecision DecidePath(const Policy& policy, const std::string& abs_path) {
  return DecidePath(policy, abs_path, {});
}

PathDecision DecidePath(const Policy& policy, const std::string& abs_path,
                        const std::vector<std::string>& nested_repo_roots,
                        bool infer_nested_repos) {
  PathDecision d;
  if (abs_path.empty() || abs_path[0] != '/') {
    d.via = "not in the sandbox's view";
    d.reason = "hidden: not an absolute path";
    return d;
  }
  const std::string path = NormalizePath(abs_path);
  const std::vector<Provider> providers = Providers(policy);
  DecideByProvider(providers, path, &d);
  ApplyProtected(policy, path, nested_repo_roots, infer_nested_repos, &d);
  MarkHostExecuted(policy, path, &d);
  ApplyDeny(policy, path, &d);
  return d;
}

}  // namespace ward::policy
