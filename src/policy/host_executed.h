// Host-executed workspace content: what a run may leave in a writable root that the host's own
// tools would later run or take their instructions from. One rule, two parts:
//
//  - the git directory of any repository, at any depth, recognised by its structure (a HEAD
//    file and objects/refs, or a commondir file), not by the name ".git" alone; and any
//    directory named ".git", which git would make a repository of as it stands (`git init`
//    keeps the hooks it finds there). Inside it git
//    may keep what it needs to work (objects, refs, the index, logs, locks, merge and rebase
//    state); what changes what git executes or where it reads config and hooks from is
//    host-executed: hooks, config (unless every key in it is inert), config.worktree and a
//    commondir other than a linked worktree's way back to its main repository. A ".git" file
//    ("gitdir: ...") redirects git to another git directory and is judged by where it points.
//  - the profile's protected names (".envrc", ".vscode", agent settings, ".ward.toml", ...),
//    wherever they appear below a writable root, not only at its top.
//
// Pure: the callers read the file system and pass names and contents in.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ward::policy {

// What the structure of a directory says: the names present and whether each is a directory.
struct DirShape {
  bool head_file = false;       // HEAD, a regular file
  bool objects_dir = false;     // objects/
  bool refs_dir = false;        // refs/
  bool commondir_file = false;  // commondir, a regular file
  bool named_dot_git = false;   // the directory's own name is ".git"
};

// Whether a directory with this shape is a git directory (what git's own discovery accepts:
// HEAD, and objects and refs here or through commondir), or one named ".git".
bool IsGitDirShape(const DirShape& shape);

enum class GitDirEntry {
  kInert,          // git's own data: objects, refs, index, logs, locks, state files
  kHook,           // hooks/<name>: git runs it (a "*.sample" file it never runs is inert)
  kConfig,         // config / config.worktree: names commands git runs
  kCommonDir,      // commondir: where config and hooks are read from
};

// What an entry inside a git directory is, by its path relative to that directory
// ("hooks/pre-commit", "config", "worktrees/w/commondir", "objects/ab/cd...").
GitDirEntry ClassifyGitDirEntry(std::string_view relpath);

// A linked worktree's administrative directory (<gitdir>/worktrees/<name>) points back to the
// main repository with commondir "../..": that one is inert.
bool IsInertCommonDir(std::string_view relpath, std::string_view content);

// A git config file, judged key by key. Only keys that cannot make git run a program or read
// config, hooks or objects from elsewhere are inert (core.repositoryformatversion, remote URLs
// and refspecs, branch tracking, user identity, ...); include and includeIf sections and every
// other key are not.
struct GitConfigReview {
  bool inert = true;
  std::vector<std::string> risky_keys;  // "core.fsmonitor", "include.path", ... (as written)
  std::string sanitized;                // the inert keys only, in git's config syntax
  std::string error;                    // non-empty when the file could not be parsed
};
GitConfigReview ReviewGitConfig(std::string_view text);

// Where a ".git" file points ("gitdir: <path>"), or "" when it is not such a file.
std::string GitFileTarget(std::string_view content);

// The index of the first component of `components` (a path relative to a writable root) at
// which one of `protected_relpaths` (each split into components) matches, at any depth, or -1.
// The match's end: *end is one past its last component.
int MatchProtectedName(const std::vector<std::string>& components,
                       const std::vector<std::vector<std::string>>& protected_relpaths,
                       size_t* end);

// Whether the creation of the entry at `components` (its path, split) is kept in the run's
// journal: the entry may be, or make its directory, host-executed content. Cheap enough for
// every creation: git's structural names as the last component, anything in a hooks
// directory, and any component that begins a protected name other than the git ones.
bool IsHostExecutedTrigger(const std::vector<std::string>& components,
                           const std::vector<std::vector<std::string>>& protected_relpaths);

// Whether a protected relpath is about a git directory (".git/hooks", ".git/config"): those
// are judged by the git directory rule, wherever the repository is.
bool IsGitProtectedName(const std::vector<std::string>& relpath);

// What the rule keeps read-only or uncreatable in every repository that exists when a run
// starts, whatever the profile lists: .git/hooks, .git/config, .git/config.worktree,
// .git/commondir.
const std::vector<std::string>& GitDirProtectedRelpaths();

// One line for `ward explain` and `ward why`: the rule, and what happens to such content.
std::string HostExecutedRuleText();

}  // namespace ward::policy
