#include "policy/workspace_choice.h"

#include "policy/paths.h"

namespace ward::policy {

const std::vector<std::string>& SystemTrees() {
  static const std::vector<std::string> kTrees = {"/usr",   "/etc",   "/bin",    "/sbin", "/lib",
                                                  "/lib32", "/lib64", "/libx32", "/boot", "/var",
                                                  "/proc",  "/sys",   "/dev",    "/run"};
  return kTrees;
}

namespace {

const char* const kProjectAdvice =
    "run ward from a project directory (cd DIR, or -C DIR), for example one in your HOME";

// A fixed directory as this host has it: its canonical form, and how to name it in a message.
struct Place {
  std::string canonical;
  std::string label;  // "/usr", or "/usr/bin (/bin)" when the name is a symlink
};

Place Resolve(const std::string& path, const Canonicalizer& canonical) {
  std::string c = NormalizePath(canonical ? canonical(path) : path);
  return Place{c, c == path ? path : c + " (" + path + ")"};
}

bool StrictlyWithin(const std::string& path, const std::string& dir) {
  return path != dir && PathIsWithin(path, dir);
}

// Why the workspace is refused, if it is (`my_home` normalised, "" when unknown).
std::optional<WorkspaceRefusal> Refusal(const std::string& ws, const std::string& my_home,
                                        const Canonicalizer& canonical) {
  if (ws == "/") {
    return WorkspaceRefusal{
        "the workspace is / (the whole file system): a run could write wherever the policy "
        "lets it see",
        kProjectAdvice};
  }
  std::vector<Place> trees;
  for (const std::string& t : SystemTrees()) trees.push_back(Resolve(t, canonical));
  const std::string system_why =
      ", a system directory: a run could change what this host "
      "itself runs";

  // The directories themselves.
  for (const Place& t : trees) {
    if (ws == t.canonical)
      return WorkspaceRefusal{"the workspace is " + t.label + system_why, kProjectAdvice};
  }
  const Place tmp = Resolve("/tmp", canonical);
  const Place var_tmp = Resolve("/var/tmp", canonical);
  for (const Place& t : {tmp, var_tmp}) {
    if (ws == t.canonical) {
      return WorkspaceRefusal{"the workspace is " + t.label +
                                  " itself, which every user and service of this host shares",
                              "make a directory for the work and use that (mkdir " + t.canonical +
                                  "/work && ward run -C " + t.canonical + "/work ...)"};
    }
  }
  const Place homes = Resolve("/home", canonical);
  if (ws == homes.canonical) {
    return WorkspaceRefusal{
        "the workspace is " + homes.label + " itself, which holds every user's HOME",
        "run ward from a project directory in your HOME (-C ~/project)"};
  }
  if (!my_home.empty() && ws == my_home) {
    return WorkspaceRefusal{
        "the workspace is your HOME itself (" + my_home +
            "): a run could rewrite your shell's startup files, ~/.ssh and the settings of "
            "every tool you use",
        "run ward from a project directory in it (mkdir ~/project && ward run -C ~/project "
        "...)"};
  }

  // Beneath the places where work is kept: fine, whatever tree holds them on this host.
  bool home_is_a_place = !my_home.empty() && my_home != "/";
  for (const Place& t : trees) {
    if (my_home == t.canonical) home_is_a_place = false;
  }
  for (const Place& p : {tmp, var_tmp, homes}) {
    if (StrictlyWithin(ws, p.canonical)) return std::nullopt;
  }
  if (home_is_a_place && StrictlyWithin(ws, my_home)) return std::nullopt;

  for (const Place& t : trees) {
    if (PathIsWithin(ws, t.canonical)) {
      return WorkspaceRefusal{"the workspace " + ws + " is inside " + t.label + system_why,
                              kProjectAdvice};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<WorkspaceRefusal> RefuseWorkspace(const std::string& workspace,
                                                const std::string& home,
                                                const Canonicalizer& canonical) {
  const std::string ws = NormalizePath(workspace);
  const std::string my_home = home.empty() ? std::string() : NormalizePath(home);
  std::optional<WorkspaceRefusal> refused = Refusal(ws, my_home, canonical);
  if (refused && !my_home.empty() && PathIsWithin(my_home, ws)) {
    refused->overridable = false;
    refused->advice += "; a workspace that holds your HOME (" + my_home +
                       ") is refused even with --workspace-anyway: every credential in it "
                       "would be visible inside";
  }
  return refused;
}

}  // namespace ward::policy
