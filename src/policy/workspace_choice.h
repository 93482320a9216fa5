// Which directories make sense as a workspace. The workspace is mounted writable at its own path
// and the host's tools read it afterwards, so ward refuses the directories where that would let
// a run change what the host itself runs or what other users own: the whole file system, the
// system trees, the shared temporary directories themselves, /home itself and the caller's HOME
// itself. Pure: symlinks are resolved by the caller (the workspace, HOME, and through
// `canonical` the fixed directories named here). The rule is documented in docs/profiles.md.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ward::policy {

// The system trees: refused themselves and everything beneath them, except beneath /var/tmp.
const std::vector<std::string>& SystemTrees();

// Maps one of the fixed directories above ("/usr", "/tmp", "/home", ...) to its canonical form
// on this host (realpath); returns it unchanged when it does not resolve.
using Canonicalizer = std::function<std::string(const std::string& path)>;

struct WorkspaceRefusal {
  std::string why;     // "the workspace is /usr, a system directory: ..."
  std::string advice;  // what to do instead ("run ward from a project directory ...")
  // Whether --workspace-anyway may accept it: never for a workspace that holds the caller's
  // HOME (every credential in it would be visible inside; the mount planner refuses it too).
  bool overridable = true;
};

// Whether `workspace` (canonical) is refused, given the caller's `home` (canonical; "" when
// unknown). Refused: "/"; a system tree or anything beneath it; /tmp and /var/tmp themselves;
// /home itself; `home` itself. Accepted whatever tree they lie in (a host may keep /home in
// /var/home, a service account its HOME in /var/lib): directories strictly beneath /tmp,
// /var/tmp, /home or `home`, unless `home` is "/" or a system tree itself.
// A refused workspace that holds `home` is not `overridable`, and its advice says so.
std::optional<WorkspaceRefusal> RefuseWorkspace(const std::string& workspace,
                                                const std::string& home,
                                                const Canonicalizer& canonical);

}  // namespace ward::policy
