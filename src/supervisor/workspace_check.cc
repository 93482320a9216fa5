#include "supervisor/workspace_check.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <set>

#include "common/unique_fd.h"
#include "enforce/beneath.h"
#include "policy/host_executed.h"
#include "policy/paths.h"

namespace ward::supervisor {
namespace {

constexpr size_t kMaxConfigBytes = 1 << 20;
constexpr size_t kMaxGitFileBytes = 4096;
constexpr int kMaxModuleDepth = 6;

std::string Join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "/" + b;
}

std::string JoinComponents(const std::vector<std::string>& c, size_t n) {
  std::string out;
  for (size_t i = 0; i < n && i < c.size(); ++i) out = Join(out, c[i]);
  return out;
}

std::string Parent(const std::string& rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string::npos ? "" : rel.substr(0, slash);
}

std::string Name(const std::string& rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

bool AtOrAfter(const struct statx_timestamp& t, const struct timespec& start) {
  return t.tv_sec > start.tv_sec ||
         (t.tv_sec == start.tv_sec && static_cast<long>(t.tv_nsec) >= start.tv_nsec);
}

class Check {
 public:
  explicit Check(const WorkspaceCheckInput& in) : in_(in) {
    for (const std::string& rel : in.protected_relpaths) {
      std::vector<std::string> c = policy::PathComponents(rel);
      if (!c.empty() && !policy::IsGitProtectedName(c)) protected_.push_back(std::move(c));
    }
    all_protected_ = protected_;
    for (const std::string& rel : in.protected_relpaths) {
      std::vector<std::string> c = policy::PathComponents(rel);
      if (policy::IsGitProtectedName(c)) all_protected_.push_back(std::move(c));
    }
    for (const std::string& r : in.roots) {
      UniqueFd fd(open(r.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (fd) roots_.push_back({r, std::move(fd)});
    }
  }

  WorkspaceCheckOutcome Run() {
    CollectCandidates();
    for (const auto& [root, rel] : candidates_) Examine(root, rel);
    for (const auto& [root, rel] : git_dirs_) ExamineGitDir(root, rel, 0);
    return std::move(out_);
  }

 private:
  struct Root {
    std::string path;
    UniqueFd fd;
  };
  using Place = std::pair<size_t, std::string>;  // a root's index, a path relative to it

  // --- what to look at ----------------------------------------------------------------------

  void CollectCandidates() {
    const CreationJournal* j = in_.journal;
    if (!j || j->overflowed()) {
      out_.walked = true;
      for (size_t i = 0; i < roots_.size(); ++i) Walk(i, "");
    } else {
      for (const JournalEntry& e : j->entries()) {
        std::optional<Place> p = PlaceOf(e.path);
        if (!p) continue;
        if (e.subtree) {
          candidates_.insert(*p);
          Walk(p->first, p->second);
        } else {
          candidates_.insert(*p);
        }
      }
    }
    // A protected name at a root's top: the guard keeps it uncreatable, but a socket bound
    // there (bind(2) is not trapped) or a run without the guard can still leave one.
    for (size_t i = 0; i < roots_.size(); ++i) {
      for (const auto& rel : protected_) candidates_.insert({i, JoinComponents(rel, rel.size())});
    }
  }

  std::optional<Place> PlaceOf(const std::string& path) const {
    std::optional<Place> best;
    size_t best_len = 0;
    for (size_t i = 0; i < roots_.size(); ++i) {
      std::optional<std::string> rel = enforce::RelativeBeneath(roots_[i].path, path);
      if (rel && !rel->empty() && roots_[i].path.size() >= best_len) {
        best = Place{i, *rel};
        best_len = roots_[i].path.size();
      }
    }
    return best;
  }

  // Every entry below root/rel, no symlink followed: the names the rule triggers on, and any
  // file with setuid or setgid bits.
  void Walk(size_t root, const std::string& start) {
    std::vector<std::string> dirs = {start};
    while (!dirs.empty()) {
      std::string rel = std::move(dirs.back());
      dirs.pop_back();
      WalkDirectory(root, rel, &dirs);
    }
  }

  // One directory of the walk: each entry looked at, the subdirectories added to `dirs`.
  void WalkDirectory(size_t root, const std::string& rel, std::vector<std::string>* dirs) {
    UniqueFd dir = OpenDir(root, rel);
    if (!dir) return;
    DIR* d = fdopendir(dir.release());
    if (!d) return;
    while (struct dirent* e = readdir(d)) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      WalkEntry(root, rel, d, *e, dirs);
    }
    closedir(d);
  }

  // An entry of the walk: a candidate when it has set-id bits or a name the rule triggers on;
  // a directory is walked in turn.
  void WalkEntry(size_t root, const std::string& rel, DIR* d, const struct dirent& e,
                 std::vector<std::string>* dirs) {
    std::string child = Join(rel, e.d_name);
    unsigned char type = e.d_type;
    struct stat st;
    if (type == DT_UNKNOWN || type == DT_REG) {
      if (fstatat(dirfd(d), e.d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
      if (S_ISDIR(st.st_mode)) type = DT_DIR;
      if (S_ISREG(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID))) {
        candidates_.insert({root, child});
      }
    }
    if (type == DT_DIR) dirs->push_back(child);
    if (policy::IsHostExecutedTrigger(policy::PathComponents(Join(roots_[root].path, child)),
                                      all_protected_)) {
      candidates_.insert({root, child});
    }
  }

  // --- one entry ----------------------------------------------------------------------------

  void Examine(size_t root, const std::string& rel) {
    struct statx sx;
    if (!Stat(root, rel, &sx)) return;
    if (Taken(root, rel)) return;
    const std::vector<std::string> comps = policy::PathComponents(rel);
    if (ExamineProtectedName(root, rel, comps, sx)) return;
    if (comps.back() == ".git" && S_ISREG(sx.stx_mode)) return ExamineGitFile(root, rel, sx);
    FindGitDir(root, comps);
    if (S_ISREG(sx.stx_mode) && (sx.stx_mode & (S_ISUID | S_ISGID)) && Changed(sx)) {
      TakeOffPrivilegeBits(root, rel, sx);
    }
  }

  // A protected name at any depth (".envrc", ".vscode/...", agent settings): the whole item
  // when the run made it, else only what the run put in it.
  bool ExamineProtectedName(size_t root, const std::string& rel,
                            const std::vector<std::string>& comps, const struct statx& sx) {
    size_t end = 0;
    const int at = policy::MatchProtectedName(comps, protected_, &end);
    if (at < 0) return false;
    const std::string item = JoinComponents(comps, end);
    const std::string name = JoinComponents(
        std::vector<std::string>(comps.begin() + at, comps.begin() + static_cast<long>(end)), end);
    struct statx isx;
    if (!Stat(root, item, &isx)) return true;
    const bool guarded = AtGuardedBase(root, JoinComponents(comps, static_cast<size_t>(at)));
    bool whole = guarded          ? !Existed(root, item) && Born(isx)
                 : S_ISDIR(isx.stx_mode) ? Born(isx)
                                         : Changed(isx);
    // Where the guard kept the name, the run could make only what bind(2) makes: a file, a
    // directory or a link made there meanwhile is the host's.
    if (guarded && GuardRan() && (S_ISREG(isx.stx_mode) || S_ISDIR(isx.stx_mode) ||
                                  S_ISLNK(isx.stx_mode))) {
      whole = false;
    }
    const std::string reason = "a protected name (" + name + "): host tools read it or run it";
    if (whole) {
      Quarantine(root, item, "protected", reason);
    } else if (item != rel && !guarded && Changed(sx)) {
      Quarantine(root, rel, "protected", reason);
    }
    return true;
  }

  // A ".git" file redirects git to the directory it names: one outside every writable root is
  // someone else's configuration and hooks; one inside is judged as a git directory.
  void ExamineGitFile(size_t root, const std::string& rel, const struct statx& sx) {
    if (!Changed(sx)) return;
    std::string content;
    if (!ReadSmall(root, rel, kMaxGitFileBytes, &content)) return;
    std::string target = policy::GitFileTarget(content);
    if (target.empty()) return;
    if (target[0] != '/') target = Join(roots_[root].path, Join(Parent(rel), target));
    target = policy::NormalizePath(target);
    std::optional<Place> p = PlaceOf(target);
    if (!p) {
      Quarantine(root, rel, "gitfile",
                 "a .git file that points git at " + target + ", outside the writable roots");
      return;
    }
    git_dirs_.insert({p->first, MainGitDir(p->first, p->second)});
  }

  // The git directory an entry belongs to: itself, or one of its nearest ancestors (an entry
  // is at most worktrees/<name>/<file> deep in the directory that makes it a repository).
  void FindGitDir(size_t root, const std::vector<std::string>& comps) {
    for (size_t up = 0; up <= 3 && up < comps.size(); ++up) {
      const std::string dir = JoinComponents(comps, comps.size() - up);
      if (IsGitDir(root, dir)) {
        git_dirs_.insert({root, MainGitDir(root, dir)});
        return;
      }
    }
  }

  // A linked worktree's administrative directory (<gitdir>/worktrees/<name>) is judged as part
  // of its main git directory, where its way back ("../..") is inert.
  std::string MainGitDir(size_t root, const std::string& dir) {
    const std::vector<std::string> c = policy::PathComponents(dir);
    if (c.size() >= 3 && c[c.size() - 2] == "worktrees") {
      const std::string main = JoinComponents(c, c.size() - 2);
      if (IsGitDir(root, main)) return main;
    }
    return dir;
  }

  // --- a git directory ----------------------------------------------------------------------

  void ExamineGitDir(size_t root, const std::string& gd, int depth) {
    if (!examined_.insert({root, gd}).second || depth > kMaxModuleDepth) return;
    // A repository whose git directory sits at a guarded base existed when the run started: its
    // hooks, config, config.worktree and commondir were read-only, absent ones uncreatable, and
    // what changed there meanwhile is the host's. Without the guard, absent ones could be made.
    const bool guarded = Name(gd) == ".git" && AtGuardedBase(root, Parent(gd)) && !MadeThisRun(root, gd);
    if (!guarded || !GuardRan()) {
      born_only_ = guarded;
      ExamineHooks(root, gd);
      ExamineConfig(root, Join(gd, "config"));
      ExamineOther(root, gd, "config.worktree");
      ExamineOther(root, gd, "commondir");
      born_only_ = false;
    }
    for (const std::string& w : List(root, Join(gd, "worktrees"))) {
      ExamineOther(root, gd, "worktrees/" + w + "/commondir");
      ExamineOther(root, gd, "worktrees/" + w + "/config.worktree");
    }
    ExamineModules(root, Join(gd, "modules"), depth);
  }

  void ExamineHooks(size_t root, const std::string& gd) {
    const std::string hooks = Join(gd, "hooks");
    struct statx sx;
    if (!Stat(root, hooks, &sx)) return;
    if (!S_ISDIR(sx.stx_mode)) {
      if (Made(root, hooks, sx)) Quarantine(root, hooks, "hook", "git's hooks directory, made a link or file");
      return;
    }
    for (const std::string& name : List(root, hooks)) {
      const std::string rel = Join(hooks, name);
      struct statx hx;
      if (policy::ClassifyGitDirEntry("hooks/" + name) != policy::GitDirEntry::kHook) continue;
      if (Stat(root, rel, &hx) && Made(root, rel, hx)) {
        Quarantine(root, rel, "hook", "a git hook (" + name + "): the host's git runs it");
      }
    }
  }

  void ExamineConfig(size_t root, const std::string& rel) {
    struct statx sx;
    if (!Stat(root, rel, &sx) || !Made(root, rel, sx)) return;
    std::string text;
    if (!S_ISREG(sx.stx_mode) || !ReadSmall(root, rel, kMaxConfigBytes, &text)) {
      Quarantine(root, rel, "git-config", "a git config that is not a small regular file");
      return;
    }
    policy::GitConfigReview review = policy::ReviewGitConfig(text);
    if (review.inert) return;
    if (!review.error.empty()) {
      Quarantine(root, rel, "git-config", "a git config git cannot read as written (" +
                                              review.error + ")");
      return;
    }
    std::string keys;
    for (const std::string& k : review.risky_keys) keys += (keys.empty() ? "" : ", ") + k;
    Quarantine(root, rel, "git-config",
               "git config keys that run programs or redirect git: " + keys +
                   " (its inert keys stay in place)",
               &review.sanitized);
  }

  void ExamineOther(size_t root, const std::string& gd, const std::string& inside) {
    const std::string rel = Join(gd, inside);
    struct statx sx;
    if (!Stat(root, rel, &sx) || !Made(root, rel, sx)) return;
    const policy::GitDirEntry kind = policy::ClassifyGitDirEntry(inside);
    if (kind == policy::GitDirEntry::kCommonDir) {
      std::string content;
      if (S_ISREG(sx.stx_mode) && ReadSmall(root, rel, kMaxGitFileBytes, &content) &&
          policy::IsInertCommonDir(inside, content)) {
        return;
      }
      Quarantine(root, rel, "commondir",
                 "commondir: makes git read its config and hooks from another directory");
    } else if (kind == policy::GitDirEntry::kConfig) {
      Quarantine(root, rel, "git-config", "a per-worktree git config (" + inside + ")");
    }
  }

  // Submodules' git directories live below modules/, one level per name component.
  void ExamineModules(size_t root, const std::string& dir, int depth) {
    if (depth > kMaxModuleDepth) return;
    for (const std::string& name : List(root, dir)) {
      const std::string sub = Join(dir, name);
      if (IsGitDir(root, sub)) {
        ExamineGitDir(root, sub, depth + 1);
      } else {
        ExamineModules(root, sub, depth + 1);
      }
    }
  }

  bool IsGitDir(size_t root, const std::string& rel) {
    UniqueFd dir = OpenDir(root, rel);
    if (!dir) return false;
    struct stat st;
    auto is = [&](const char* name, mode_t type) {
      return fstatat(dir.get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
             (st.st_mode & S_IFMT) == type;
    };
    return policy::IsGitDirShape({.head_file = is("HEAD", S_IFREG),
                                  .objects_dir = is("objects", S_IFDIR),
                                  .refs_dir = is("refs", S_IFDIR),
                                  .commondir_file = is("commondir", S_IFREG),
                                  .named_dot_git = Name(rel) == ".git"});
  }

  // --- acting -------------------------------------------------------------------------------

  void Quarantine(size_t root, const std::string& rel, const std::string& kind,
                  const std::string& reason, const std::string* replacement = nullptr) {
    if (Taken(root, rel)) return;
    UniqueFd parent = OpenPath(root, Parent(rel));
    const std::string path = Join(roots_[root].path, rel);
    if (!parent) {
      out_.errors.push_back(path + ": cannot be reached without a symlink; not moved");
      return;
    }
    QuarantineItem item;
    item.session = in_.session;
    item.root = roots_[root].path;
    item.path = path;
    item.kind = kind;
    item.reason = reason;
    Result<QuarantineItem> taken = in_.store->Take(parent.get(), Name(rel), item, replacement);
    if (!taken.ok()) {
      out_.errors.push_back(path + ": " + taken.status().ToString());
      return;
    }
    taken_.insert({root, rel});
    out_.quarantined.push_back(std::move(taken).value());
  }

  void TakeOffPrivilegeBits(size_t root, const std::string& rel, const struct statx& sx) {
    UniqueFd parent = OpenPath(root, Parent(rel));
    const std::string path = Join(roots_[root].path, rel);
    UniqueFd f(parent ? openat(parent.get(), Name(rel).c_str(),
                               O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
                      : -1);
    if (!f || fchmod(f.get(), sx.stx_mode & 0777) != 0) {
      out_.errors.push_back(path + ": its setuid/setgid bits could not be taken off");
      return;
    }
    out_.privilege_bits.push_back(path);
  }

  // --- the file system, beneath a root, no symlink followed ---------------------------------

  UniqueFd OpenPath(size_t root, const std::string& rel) {
    Result<UniqueFd> fd = enforce::OpenBeneath(roots_[root].fd.get(), roots_[root].path, rel);
    return fd.ok() ? std::move(fd).value() : UniqueFd();
  }

  UniqueFd OpenDir(size_t root, const std::string& rel) {
    UniqueFd p = OpenPath(root, rel);
    if (!p) return p;
    return UniqueFd(openat(p.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }

  bool Stat(size_t root, const std::string& rel, struct statx* sx) {
    if (rel.empty()) return false;
    UniqueFd parent = OpenPath(root, Parent(rel));
    return parent && statx(parent.get(), Name(rel).c_str(), AT_SYMLINK_NOFOLLOW,
                           STATX_BASIC_STATS | STATX_BTIME, sx) == 0;
  }

  std::vector<std::string> List(size_t root, const std::string& rel) {
    std::vector<std::string> out;
    UniqueFd dir = OpenDir(root, rel);
    DIR* d = dir ? fdopendir(dir.release()) : nullptr;
    if (!d) return out;
    while (struct dirent* e = readdir(d)) {
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) out.emplace_back(e->d_name);
    }
    closedir(d);
    return out;
  }

  bool ReadSmall(size_t root, const std::string& rel, size_t limit, std::string* out) {
    UniqueFd parent = OpenPath(root, Parent(rel));
    UniqueFd f(parent ? openat(parent.get(), Name(rel).c_str(),
                               O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
                      : -1);
    struct stat st;
    if (!f || fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    char buf[8192];
    ssize_t n;
    while ((n = read(f.get(), buf, sizeof buf)) > 0) {
      out->append(buf, static_cast<size_t>(n));
      if (out->size() > limit) return false;
    }
    return n == 0;
  }

  bool GuardRan() const { return in_.journal != nullptr; }

  // A directory the guard made, or moved into place, during the run (a .git that was not there).
  bool MadeThisRun(size_t root, const std::string& rel) {
    if (!in_.journal) return false;
    UniqueFd dir = OpenPath(root, rel);
    struct stat st;
    return dir && fstat(dir.get(), &st) == 0 && in_.journal->MadeThisRun(st.st_dev, st.st_ino);
  }

  // What the check counts as the run's in the git directory being examined.
  bool Made(size_t root, const std::string& rel, const struct statx& sx) const {
    return born_only_ ? !Existed(root, rel) && Born(sx) : Changed(sx);
  }

  // Whether the directory root/rel is one where the mount layer kept the protected names.
  bool AtGuardedBase(size_t root, const std::string& rel) {
    if (in_.guarded_bases.empty()) return false;
    UniqueFd dir = OpenPath(root, rel);
    struct stat st;
    return dir && fstat(dir.get(), &st) == 0 && in_.guarded_bases.count({st.st_dev, st.st_ino});
  }

  // Changed by the run: the inode's change time, which no process sets, is after its start.
  bool Changed(const struct statx& sx) const { return AtOrAfter(sx.stx_ctime, in_.start); }
  // Made by the run: its birth time where the file system keeps one, else its change time.
  bool Born(const struct statx& sx) const {
    return (sx.stx_mask & STATX_BTIME) ? AtOrAfter(sx.stx_btime, in_.start) : Changed(sx);
  }

  // Stood there when the run started (taken without a guard only).
  bool Existed(size_t root, const std::string& rel) const {
    return in_.existed.count(Join(roots_[root].path, rel)) > 0;
  }

  bool Taken(size_t root, const std::string& rel) const {
    for (std::string p = rel;; p = Parent(p)) {
      if (taken_.count({root, p})) return true;
      if (p.empty()) return false;
    }
  }

  const WorkspaceCheckInput& in_;
  std::vector<Root> roots_;
  std::vector<std::vector<std::string>> protected_;      // the names other than git's
  std::vector<std::vector<std::string>> all_protected_;  // all of them (the journal's triggers)
  std::set<Place> candidates_, git_dirs_, examined_, taken_;
  bool born_only_ = false;  // the git directory being examined is a guarded one
  WorkspaceCheckOutcome out_;
};

}  // namespace

WorkspaceCheckOutcome CheckWorkspaceAfterRun(const WorkspaceCheckInput& in) {
  return Check(in).Run();
}

std::set<std::string> ProtectedNamesNow(const std::vector<std::string>& roots,
                                        const std::vector<std::string>& relpaths) {
  std::set<std::string> out;
  for (const std::string& root : roots) {
    for (const std::string& rel : relpaths) {
      const std::string path = Join(root, rel);
      struct stat st;
      if (lstat(path.c_str(), &st) != 0) continue;
      out.insert(path);
      if (!S_ISDIR(st.st_mode)) continue;
      UniqueFd dir(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      DIR* d = dir ? fdopendir(dir.release()) : nullptr;
      if (!d) continue;
      while (struct dirent* e = readdir(d)) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) out.insert(Join(path, e->d_name));
      }
      closedir(d);
    }
  }
  return out;
}

}  // namespace ward::supervisor
