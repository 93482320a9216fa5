#include "supervisor/review_apply.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>

#include "audit/record.h"
#include "common/linux.h"
#include "common/unique_fd.h"
#include "enforce/beneath.h"
#include "policy/host_executed.h"
#include "policy/paths.h"
#include "supervisor/review_diff.h"

namespace ward::supervisor {
namespace {

// The names host tools run or read instructions from wherever they are, whatever the profile
// says (its own protected list is added to these).
const char* const kAlwaysProtected[] = {
    ".git/hooks", ".git/config", ".envrc",  ".vscode",    ".idea",  ".devcontainer", ".mcp.json",
    ".claude",    ".codex",      ".cursor", ".gemini",    ".ward.toml",
};

// What git needs inside its directory to work, and which changes nothing git executes or where
// it reads config and hooks from.
// Components [from, to) joined with "/".
std::string JoinFrom(const std::vector<std::string>& c, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < c.size(); ++i) out += (out.empty() ? "" : "/") + c[i];
  return out;
}

std::string JoinComponents(const std::vector<std::string>& c, size_t n) {
  std::string out;
  for (size_t i = 0; i < n && i < c.size(); ++i) out += (i ? "/" : "") + c[i];
  return out;
}

const char* KindName(ReviewChange::Kind k) {
  switch (k) {
    case ReviewChange::Kind::kAdd:
      return "add";
    case ReviewChange::Kind::kModify:
      return "modify";
    case ReviewChange::Kind::kDelete:
      return "delete";
  }
  return "modify";
}

std::string NowStamp() { return audit::FormatTimestamp(std::chrono::system_clock::now()); }

int64_t CtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
}

// Whether the directory `rel` (relative; "" for the root) looks like a git directory in the
// run's tree or on the host: HEAD with objects and refs, or a worktree's commondir.
class GitDirs {
 public:
  GitDirs(int tree_fd, int host_fd) : tree_fd_(tree_fd), host_fd_(host_fd) {}

  // The index of the last component of the innermost git directory above `components`' last
  // entry, -1 when none.
  int Find(const std::vector<std::string>& components) {
    int found = -1;
    for (size_t n = 0; n < components.size(); ++n) {
      if (components[n].empty()) continue;
      if (components[n] == ".git" && n + 1 < components.size()) {
        found = static_cast<int>(n);
        continue;
      }
      if (n + 1 < components.size() && IsGitDir(JoinComponents(components, n + 1))) {
        found = static_cast<int>(n);
      }
    }
    return found;
  }

 private:
  bool IsGitDir(const std::string& rel) {
    auto it = cache_.find(rel);
    if (it != cache_.end()) return it->second;
    const bool yes = (Has(rel, "HEAD", false) && Has(rel, "objects", true) && Has(rel, "refs", true)) ||
                     Has(rel, "commondir", false);
    cache_[rel] = yes;
    return yes;
  }
  bool Has(const std::string& rel, const char* name, bool dir) {
    const std::string path = rel.empty() ? name : rel + "/" + name;
    for (int root : {tree_fd_, host_fd_}) {
      UniqueFd fd(sys::Openat2(root, path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC, 0,
                               enforce::kResolveBeneath));
      struct stat st;
      if (fd && fstat(fd.get(), &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode))) {
        return true;
      }
    }
    return false;
  }

  const int tree_fd_, host_fd_;
  std::map<std::string, bool> cache_;
};

class Applier {
 public:
  Applier(ReviewSession* s, const ApplyOptions& o) : s_(*s), o_(o) {}

  Result<ApplyReport> Run() {
    if (s_.state != ReviewState::kOpen) {
      return Error(Code::kFailedPrecondition,
                   "review session " + s_.id + " was " + ReviewStateName(s_.state) +
                       (s_.ended.empty() ? "" : " at " + s_.ended) + ": there is nothing to apply");
    }
    host_.reset(open(s_.workspace.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!host_) return Errno("opening the workspace " + s_.workspace);
    tree_.reset(open(s_.tree().c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!tree_) return Errno("opening the run's tree " + s_.tree());
    git_.emplace(tree_.get(), host_.get());
    WARD_ASSIGN_OR_RETURN(std::vector<ReviewChange> all, CollectChanges(s_));
    WARD_ASSIGN_OR_RETURN(RenderedDiff diff, RenderDiff(s_, all));
    report_.diff_sha256 = diff.sha256;
    if (!o_.expect_sha256.empty() && o_.expect_sha256 != diff.sha256) {
      report_.refused.push_back("the session's diff is no longer the one reviewed (its sha256 is " +
                                diff.sha256 + ", not " + o_.expect_sha256 +
                                "): look at it again with ward diff " + s_.id);
      return std::move(report_);
    }
    std::vector<std::string> unmatched;
    std::vector<ReviewChange> chosen = SelectChanges(all, o_.paths, &unmatched);
    for (const std::string& p : unmatched) {
      report_.refused.push_back(QuotePath(p) + ": the session has no change there (ward diff " +
                                s_.id + " lists them)");
    }
    for (const ReviewChange& c : chosen) Check(c);
    if (!report_.refused.empty()) return std::move(report_);
    Write(chosen);
    const bool everything = chosen.size() == all.size();
    if (report_.failed.ok() && everything) {
      s_.state = ReviewState::kApplied;
      s_.ended = NowStamp();
      report_.complete = true;
    }
    Status saved = SaveReviewSession(s_);
    if (report_.failed.ok() && !saved.ok()) report_.failed = saved;
    if (report_.complete) (void)RemoveReviewLayers(s_);
    return std::move(report_);
  }

 private:
  // Every reason not to apply `c`, each a line of report_.refused.
  void Check(const ReviewChange& c) {
    std::vector<std::string> comps;
    const std::string q = QuotePath(c.path);
    if (!SplitRelative(c.path, &comps)) {
      report_.refused.push_back(q + ": not a path below the workspace");
      return;
    }
    if (c.new_type == EntryType::kOther) return;  // left out (Write says so)
    if (c.new_type == EntryType::kFile && (c.new_mode & 06000) != 0) {
      report_.refused.push_back(q + ": a setuid or setgid file is never applied; clear the bit " +
                                "(chmod ug-s) in a run, or leave the path out");
    }
    std::vector<std::string> prot(std::begin(kAlwaysProtected), std::end(kAlwaysProtected));
    prot.insert(prot.end(), s_.protected_relpaths.begin(), s_.protected_relpaths.end());
    std::string rule;
    const EntryType type = c.kind == ReviewChange::Kind::kDelete ? c.old_type : c.new_type;
    if (IsHostExecutedPath(comps, type, git_->Find(comps), prot, &rule) && !Included(c.path)) {
      report_.refused.push_back(q + ": host-executed content (" + rule + "); review it, then " +
                                "ward apply --include-protected " + q);
    }
    if (o_.force) return;
    if (c.kind == ReviewChange::Kind::kAdd && c.host_deleted_since) {
      report_.refused.push_back(q + ": deleted on the host since the run began; ward apply " +
                                "--force " + q + " brings the run's version back");
    } else if (c.old_type != EntryType::kNone && c.old_type != EntryType::kDir &&
               ChangedOnHost(c.path, c.old_ctime_ns)) {
      report_.refused.push_back(q + ": changed on the host since the run began; ward apply " +
                                "--force " + q + " puts the run's version over it");
    }
  }

  // A host entry's ctime not older than the session's start, unless it is the one an earlier
  // apply of this session left.
  bool ChangedOnHost(const std::string& path, int64_t ctime_ns) const {
    if (ctime_ns < s_.started_ns) return false;
    for (const AppliedPath& a : s_.applied) {
      if (a.path == path && a.ctime_ns == ctime_ns) return false;
    }
    return true;
  }

  bool Included(const std::string& path) const {
    for (const std::string& inc : o_.include_protected) {
      if (path == inc || (path.size() > inc.size() && path.compare(0, inc.size(), inc) == 0 &&
                          path[inc.size()] == '/')) {
        return true;
      }
    }
    return false;
  }

  // Deletions first, deepest first (a directory empties before it goes); then the rest, a
  // directory before what is below it. Stops at the first failure.
  void Write(const std::vector<ReviewChange>& chosen) {
    std::vector<const ReviewChange*> order;
    for (const ReviewChange& c : chosen) {
      if (c.kind == ReviewChange::Kind::kDelete) order.push_back(&c);
    }
    std::sort(order.begin(), order.end(),
              [](const ReviewChange* a, const ReviewChange* b) { return a->path > b->path; });
    for (const ReviewChange& c : chosen) {
      if (c.kind != ReviewChange::Kind::kDelete) order.push_back(&c);
    }
    for (const ReviewChange* c : order) {
      if (c->new_type == EntryType::kOther) {
        report_.skipped.push_back(QuotePath(c->path) + ": a special file (fifo or socket)");
        continue;
      }
      Status st = WriteOne(*c);
      if (!st.ok()) {
        report_.failed = std::move(st);
        return;
      }
    }
  }

  Status WriteOne(const ReviewChange& c) {
    std::vector<std::string> comps = policy::PathComponents(c.path);
    const std::string name = comps.back();
    const std::string parent_rel = JoinComponents(comps, comps.size() - 1);
    const std::string q = QuotePath(c.path);
    UniqueFd parent(parent_rel.empty()
                        ? fcntl(host_.get(), F_DUPFD_CLOEXEC, 3)
                        : sys::Openat2(host_.get(), parent_rel.c_str(),
                                       O_PATH | O_DIRECTORY | O_CLOEXEC, 0, enforce::kResolveBeneath));
    if (!parent) {
      if (errno == ELOOP || errno == EXDEV) {
        return Error(Code::kPermissionDenied,
                     q + ": a symlink on the host is in the way (in " + QuotePath(parent_rel) +
                         "): ward apply never follows one; nothing was written there");
      }
      return Errno(q + ": opening its directory in the workspace");
    }
    struct stat now;
    const bool present = fstatat(parent.get(), name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0;
    // What was checked is what is replaced: an entry that appeared, went or changed since
    // (a directory's ctime moves with its entries, and this apply's own) stops the apply.
    if (!o_.force && (present != (c.old_type != EntryType::kNone) ||
                      (present && !S_ISDIR(now.st_mode) && CtimeNs(now) != c.old_ctime_ns))) {
      return Error(Code::kFailedPrecondition,
                   q + ": changed on the host while being applied; nothing more was written");
    }
    AppliedItem item{c.path, KindName(c.kind), EntryTypeName(c.new_type), ""};
    if (c.kind == ReviewChange::Kind::kDelete) {
      if (present && unlinkat(parent.get(), name.c_str(), S_ISDIR(now.st_mode) ? AT_REMOVEDIR : 0) != 0 &&
          errno != ENOENT) {
        return Errno(q + ": deleting it on the host");
      }
    } else if (c.new_type == EntryType::kDir) {
      WARD_TRY(PutDirectory(parent.get(), name, present ? &now : nullptr, c, q));
    } else {
      WARD_TRY(PutEntry(parent.get(), name, present ? &now : nullptr, c, q));
      item.sha256 = NewContentSha256(s_, c);
    }
    struct stat after;
    s_.applied.push_back(
        {c.path, fstatat(parent.get(), name.c_str(), &after, AT_SYMLINK_NOFOLLOW) == 0 ? CtimeNs(after) : 0});
    report_.applied.push_back(std::move(item));
    return Ok();
  }

  Status PutDirectory(int parent, const std::string& name, const struct stat* now,
                      const ReviewChange& c, const std::string& q) {
    const mode_t mode = c.new_mode & 01777;  // never a setuid or setgid bit
    if (now && !S_ISDIR(now->st_mode) && unlinkat(parent, name.c_str(), 0) != 0) {
      return Errno(q + ": removing the host's " + EntryTypeName(c.old_type) + " for a directory");
    }
    if ((!now || !S_ISDIR(now->st_mode)) && mkdirat(parent, name.c_str(), 0700) != 0) {
      return Errno(q + ": creating the directory on the host");
    }
    UniqueFd dir(openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir || fchmod(dir.get(), mode) != 0) return Errno(q + ": setting the directory's mode");
    return Ok();
  }

  // A file or symlink: made under a temporary name in the same directory, then renamed over
  // the old entry.
  Status PutEntry(int parent, const std::string& name, const struct stat* now,
                  const ReviewChange& c, const std::string& q) {
    const std::string tmp = TempName();
    if (c.new_type == EntryType::kSymlink) {
      if (symlinkat(c.new_link.c_str(), parent, tmp.c_str()) != 0) {
        return Errno(q + ": creating the symlink on the host");
      }
      if (now && geteuid() == 0) {
        (void)fchownat(parent, tmp.c_str(), now->st_uid, now->st_gid, AT_SYMLINK_NOFOLLOW);
      }
    } else {
      WARD_TRY(WriteFile(parent, tmp, now, c, q));
    }
    if (now && S_ISDIR(now->st_mode) && unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0) {
      const int err = errno;
      (void)unlinkat(parent, tmp.c_str(), 0);
      return ErrnoError(q + ": removing the host's directory for a " + EntryTypeName(c.new_type),
                        err);
    }
    if (renameat(parent, tmp.c_str(), parent, name.c_str()) != 0) {
      const int err = errno;
      (void)unlinkat(parent, tmp.c_str(), 0);
      return ErrnoError(q + ": renaming into place", err);
    }
    return Ok();
  }

  Status WriteFile(int parent, const std::string& tmp, const struct stat* now,
                   const ReviewChange& c, const std::string& q) {
    UniqueFd src = OpenTreeEntry(tree_.get(), c.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat sst;
    if (!src || fstat(src.get(), &sst) != 0) return Errno(q + ": reading the run's version");
    if (!S_ISREG(sst.st_mode) || (sst.st_mode & 06000) != 0) {
      return Error(Code::kFailedPrecondition, q + ": the run's version changed since it was checked");
    }
    UniqueFd dst(openat(parent, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        0600));
    if (!dst) return Errno(q + ": creating a temporary file beside it");
    auto fail = [&](const std::string& what) {
      const int err = errno;
      (void)unlinkat(parent, tmp.c_str(), 0);
      return ErrnoError(q + ": " + what, err);
    };
    char buf[65536];
    for (;;) {
      ssize_t n = read(src.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail("reading the run's version");
      if (n == 0) break;
      for (ssize_t off = 0; off < n;) {
        ssize_t w = write(dst.get(), buf + off, static_cast<size_t>(n - off));
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return fail("writing it");
        off += w;
      }
    }
    if (now && geteuid() == 0) (void)fchown(dst.get(), now->st_uid, now->st_gid);
    if (fchmod(dst.get(), sst.st_mode & 0777) != 0) return fail("setting its mode");
    if (fsync(dst.get()) != 0) return fail("syncing it");
    return Ok();
  }

  static std::string TempName() {
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) r ^= static_cast<uint64_t>(getpid());
    char buf[48];
    std::snprintf(buf, sizeof buf, ".ward-apply-%016llx", static_cast<unsigned long long>(r));
    return buf;
  }

  ReviewSession& s_;
  const ApplyOptions& o_;
  UniqueFd host_, tree_;
  std::optional<GitDirs> git_;
  ApplyReport report_;
};

}  // namespace

bool IsHostExecutedPath(const std::vector<std::string>& c, EntryType type, int git_dir_at,
                        const std::vector<std::string>& protected_relpaths, std::string* rule) {
  // The host-executed rule (policy/host_executed.h): the protected names, wherever they are...
  std::vector<std::vector<std::string>> names;
  for (const std::string& rel : protected_relpaths) names.push_back(policy::PathComponents(rel));
  size_t end = 0;
  if (int at = policy::MatchProtectedName(c, names, &end); at >= 0) {
    if (rule) *rule = "protected name " + JoinFrom(c, static_cast<size_t>(at), end);
    return true;
  }
  // ...a ".git" that is not a directory, which points git at another git directory...
  if (!c.empty() && c.back() == ".git" && type != EntryType::kDir) {
    if (rule) *rule = "a .git file or link redirects git";
    return true;
  }
  // ...and what in a git directory makes git run code or read config and hooks elsewhere.
  if (git_dir_at >= 0 && static_cast<size_t>(git_dir_at) + 1 < c.size()) {
    const std::string inside = JoinFrom(c, static_cast<size_t>(git_dir_at) + 1, c.size());
    if (policy::ClassifyGitDirEntry(inside) != policy::GitDirEntry::kInert) {
      if (rule) *rule = "a git directory's " + inside;
      return true;
    }
  }
  return false;
}

Result<ApplyReport> ApplyReview(ReviewSession* s, const ApplyOptions& o) {
  Applier a(s, o);
  return a.Run();
}

Result<DiscardReport> DiscardReview(ReviewSession* s) {
  if (s->state != ReviewState::kOpen) {
    return Error(Code::kFailedPrecondition, "review session " + s->id + " was already " +
                                                ReviewStateName(s->state) +
                                                (s->ended.empty() ? "" : " at " + s->ended));
  }
  DiscardReport r;
  Result<std::vector<ReviewChange>> changes = CollectChanges(*s);
  if (changes.ok()) {
    Result<RenderedDiff> diff = RenderDiff(*s, *changes);
    if (diff.ok()) {
      r.diff_sha256 = diff->sha256;
      r.files = diff->files;
    }
  }
  WARD_TRY(RemoveReviewLayers(*s));
  s->state = ReviewState::kDiscarded;
  s->ended = NowStamp();
  WARD_TRY(SaveReviewSession(*s));
  return r;
}

}  // namespace ward::supervisor
