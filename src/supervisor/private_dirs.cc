#include "supervisor/private_dirs.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cstdio>

#include "audit/session_log.h"
#include "policy/decide.h"
#include "policy/paths.h"
#include "supervisor/runtime_dir.h"

namespace ward::supervisor {
namespace {

constexpr const char* kViewFix =
    "narrow the policy (workspace, -r/-w) so the sandbox does not see it";

// `path` with the symlinks of its longest existing prefix resolved (the rest kept as written):
// a directory that does not exist yet is still found under a bind that reaches it by a link.
// The kernel walks each prefix (one open each); the path it reached is read back from our own
// descriptor.
std::string ResolvedOnHost(const std::string& path) {
  std::string head = policy::NormalizePath(path);
  std::string tail;
  while (true) {
    const int fd = ::open(head.c_str(), O_PATH | O_CLOEXEC);
    if (fd >= 0) {
      char link[64], buf[PATH_MAX];
      std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
      const ssize_t n = ::readlink(link, buf, sizeof buf - 1);
      ::close(fd);
      if (n <= 0 || buf[0] != '/') return path;
      const std::string real(buf, static_cast<size_t>(n));
      return tail.empty() ? real : policy::JoinPath(real, tail);
    }
    if (head == "/") return path;
    size_t slash = head.rfind('/');
    std::string name = head.substr(slash + 1);
    tail = tail.empty() ? name : name + "/" + tail;
    head = slash == 0 ? "/" : head.substr(0, slash);
  }
}

// How the sandbox of `policy` would see `dir` (a normalised absolute path): "" when it does
// not, else the rule or mount that shows it.
std::string SeenVia(const policy::Policy& policy, const std::string& dir, const PrivateDir& pd) {
  using V = policy::PathDecision::Visibility;
  const V at_least = pd.writable_only ? V::kWrite : V::kRead;
  policy::PathDecision d = policy::DecidePath(policy, dir);
  if (d.visibility >= at_least && d.host_file) return d.via;
  if (!pd.contents_too) return "";
  // A bind of something inside it shows that part (DecidePath asks about the directory only).
  const policy::Access ws_least = pd.writable_only ? policy::Access::kWrite : policy::Access::kRead;
  if (policy.workspace_access && *policy.workspace_access >= ws_least && !policy.workspace.empty() &&
      policy::PathIsWithin(policy::NormalizePath(policy.workspace), dir)) {
    return "the workspace " + policy.workspace + " is inside it";
  }
  for (const policy::PathRule& r : policy.paths) {
    if (pd.writable_only && r.access != policy::Access::kWrite) continue;
    if (!r.path.empty() && r.path[0] == '/' &&
        policy::PathIsWithin(policy::NormalizePath(r.path), dir)) {
      return "the rule " + r.path + " (" + r.origin.ToString() + ") is inside it";
    }
  }
  return "";
}

// The fix to name: a workspace that holds the user's whole HOME is the cause to fix first
// (ward's directories default to places in HOME).
std::string FixFor(const policy::Policy& policy, const PrivateDir& d) {
  if (policy.workspace_access && !policy.home.empty() && !policy.workspace.empty()) {
    const std::string home = policy::NormalizePath(policy.home);
    const std::string ws = policy::NormalizePath(policy.workspace);
    if (policy::PathIsWithin(home, ws) &&
        policy::PathIsWithin(policy::NormalizePath(d.path), home)) {
      return "the workspace " + ws + " contains your HOME (" + home +
             "); run ward in a project directory, or pass -C DIR";
    }
  }
  return d.fix;
}

}  // namespace

std::vector<PrivateDir> WardPrivateDirs() {
  std::vector<PrivateDir> out;
  const std::string runtime_what =
      "ward's runtime directory (approval sockets, `ward serve`'s socket)";
  const std::string runtime = WardRuntimeDir();
  out.push_back({runtime_what, runtime,
                 std::string("set XDG_RUNTIME_DIR to a directory outside the sandbox's view, or ") +
                     kViewFix});
  const std::string run_user = RunUserWardDir();
  if (run_user != runtime) out.push_back({runtime_what, run_user, kViewFix});
  out.push_back({"ward's state directory (audit trails)", audit::DefaultStateDir(),
                 std::string("set XDG_STATE_HOME to a directory outside the sandbox's view, or ") +
                     kViewFix});
  return out;
}

Status CheckOutOfView(const policy::Policy& policy, const std::vector<PrivateDir>& dirs) {
  for (const PrivateDir& d : dirs) {
    if (d.path.empty() || d.path[0] != '/') continue;
    const std::string literal = policy::NormalizePath(d.path);
    const std::string resolved = ResolvedOnHost(literal);
    // The path as written, then as reached through links (when a link is on the way).
    const size_t forms = resolved == literal ? 1 : 2;
    for (size_t i = 0; i < forms; ++i) {
      const std::string& p = i == 0 ? literal : resolved;
      std::string via = SeenVia(policy, p, d);
      if (via.empty()) continue;
      return Error(Code::kFailedPrecondition,
                   d.what + " " + d.path + (d.writable_only ? " would be writable" : " would be visible") +
                       " inside the sandbox (" + via +
                       (d.writable_only ? "): a sandbox must never change what decides its next run; "
                                        : "): a sandbox must never reach ward's own sockets or records; ") +
                       FixFor(policy, d));
    }
  }
  return Ok();
}

}  // namespace ward::supervisor
