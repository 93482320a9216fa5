#include "supervisor/review_changes.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string_view>

#include "common/linux.h"
#include "common/unique_fd.h"
#include "enforce/beneath.h"
#include "policy/paths.h"
#include "supervisor/review_copy.h"

namespace ward::supervisor {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

std::string Join(const std::string& rel, const std::string& name) {
  return rel.empty() ? name : rel + "/" + name;
}

int64_t Ns(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

EntryType TypeOf(mode_t m) {
  if (S_ISREG(m)) return EntryType::kFile;
  if (S_ISDIR(m)) return EntryType::kDir;
  if (S_ISLNK(m)) return EntryType::kSymlink;
  return EntryType::kOther;
}

std::vector<std::string> SortedNames(int dirfd) {
  std::vector<std::string> out;
  DIR* d = fdopendir(fcntl(dirfd, F_DUPFD_CLOEXEC, 3));
  if (d == nullptr) return out;
  rewinddir(d);
  while (struct dirent* e = readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") out.emplace_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string ReadLink(int dirfd, const std::string& name, size_t size_hint) {
  std::string target(std::max<size_t>(size_hint, 255) + 1, '\0');
  ssize_t n = readlinkat(dirfd, name.c_str(), target.data(), target.size());
  if (n < 0) return "";
  target.resize(static_cast<size_t>(n));
  return target;
}

// An extended attribute of `name` in `dirfd`, not following it: through the directory's
// descriptor (a path no one else can change under us).
bool HasXattr(int dirfd, const std::string& name, const char* attr, std::string* value) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d/", dirfd);
  const std::string full = path + name;
  char buf[256];
  ssize_t n = lgetxattr(full.c_str(), attr, buf, sizeof buf);
  if (n < 0) return false;
  if (value) value->assign(buf, static_cast<size_t>(n));
  return true;
}

bool SameContent(int a, int b) {
  char ba[65536], bb[65536];
  for (;;) {
    ssize_t na = read(a, ba, sizeof ba);
    if (na < 0 && errno == EINTR) continue;
    if (na < 0) return false;
    size_t got = 0;
    while (got < static_cast<size_t>(na)) {
      ssize_t nb = read(b, bb + got, static_cast<size_t>(na) - got);
      if (nb < 0 && errno == EINTR) continue;
      if (nb <= 0) return false;
      got += static_cast<size_t>(nb);
    }
    if (na == 0) {
      ssize_t nb = read(b, bb, 1);
      return nb == 0;
    }
    if (std::memcmp(ba, bb, static_cast<size_t>(na)) != 0) return false;
  }
}

struct HostEntry {
  EntryType type = EntryType::kNone;
  struct stat st = {};
  std::string link;
};

HostEntry StatHost(int host_dirfd, const std::string& name) {
  HostEntry h;
  if (host_dirfd < 0) return h;
  if (fstatat(host_dirfd, name.c_str(), &h.st, AT_SYMLINK_NOFOLLOW) != 0) return h;
  h.type = TypeOf(h.st.st_mode);
  if (h.type == EntryType::kSymlink) {
    h.link = ReadLink(host_dirfd, name, static_cast<size_t>(h.st.st_size));
  }
  return h;
}

class Walker {
 public:
  explicit Walker(const ReviewSession& s) : s_(s), overlay_(s.mode == ReviewMode::kOverlay) {}

  Result<std::vector<ReviewChange>> Run() {
    UniqueFd tree(open(s_.tree().c_str(), kDirFlags));
    if (!tree) return Errno("opening the run's tree " + s_.tree());
    UniqueFd host(open(s_.workspace.c_str(), kDirFlags));
    if (!host) return Errno("opening the workspace " + s_.workspace);
    if (!overlay_) {
      WARD_ASSIGN_OR_RETURN(std::set<std::string> listed, ReadManifest(s_));
      for (const std::string& p : listed) {
        const size_t slash = p.rfind('/');
        const std::string parent = slash == std::string::npos ? "" : p.substr(0, slash);
        manifest_[parent].insert(slash == std::string::npos ? p : p.substr(slash + 1));
      }
    }
    WARD_TRY(Walk("", tree.get(), host.get()));
    std::sort(out_.begin(), out_.end(),
              [](const ReviewChange& a, const ReviewChange& b) { return a.path < b.path; });
    return std::move(out_);
  }

 private:
  Status Walk(const std::string& rel, int tree_dirfd, int host_dirfd) {
    const std::vector<std::string> names = SortedNames(tree_dirfd);
    for (const std::string& name : names) {
      WARD_TRY(Entry(rel, name, tree_dirfd, host_dirfd));
    }
    if (!overlay_) WARD_TRY(RemovedFromCopy(rel, names, host_dirfd));
    return Ok();
  }

  // What the copy held here and the run removed (`names`: what the run's tree holds, sorted).
  Status RemovedFromCopy(const std::string& rel, const std::vector<std::string>& names,
                         int host_dirfd) {
    auto it = manifest_.find(rel);
    if (it == manifest_.end()) return Ok();
    for (const std::string& name : it->second) {
      if (std::binary_search(names.begin(), names.end(), name)) continue;
      HostEntry h = StatHost(host_dirfd, name);
      if (h.type != EntryType::kNone) WARD_TRY(Deleted(Join(rel, name), host_dirfd, name, h));
    }
    return Ok();
  }

  Status Entry(const std::string& rel, const std::string& name, int tree_dirfd, int host_dirfd) {
    const std::string path = Join(rel, name);
    struct stat st;
    if (fstatat(tree_dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return Errno("stat " + path + " in the run's tree");
    }
    HostEntry host = StatHost(host_dirfd, name);
    if (overlay_ && S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {  // a whiteout
      return host.type == EntryType::kNone ? Ok() : Deleted(path, host_dirfd, name, host);
    }
    bool in_copy = false, changed = true;
    if (!overlay_) {
      auto it = manifest_.find(rel);
      in_copy = it != manifest_.end() && it->second.count(name) > 0;
      changed = !in_copy || Ns(st.st_ctim) > s_.copied_ns;
    }
    if (S_ISDIR(st.st_mode)) return Directory(rel, name, tree_dirfd, host_dirfd, st, host, changed);
    if (!changed) return Ok();
    ReviewChange c = Base(path, host);
    c.new_type = TypeOf(st.st_mode);
    c.new_mode = st.st_mode & 07777;
    c.new_size = static_cast<uint64_t>(st.st_size);
    if (c.new_type == EntryType::kSymlink) {
      c.new_link = ReadLink(tree_dirfd, name, static_cast<size_t>(st.st_size));
    }
    if (host.type == EntryType::kNone) {
      c.kind = ReviewChange::Kind::kAdd;
      c.content_changed = true;
      c.host_deleted_since = overlay_ ? CopiedUpFromAChangedDirectory(tree_dirfd, host_dirfd, name)
                                      : in_copy;
      out_.push_back(std::move(c));
      return Ok();
    }
    if (host.type == EntryType::kDir) WARD_TRY(DeletedBelow(path, host_dirfd, name));
    c.kind = ReviewChange::Kind::kModify;
    if (host.type != c.new_type) {
      c.content_changed = true;
    } else if (c.new_type == EntryType::kSymlink) {
      c.content_changed = c.old_link != c.new_link;
    } else if (c.new_type == EntryType::kFile) {
      c.content_changed = c.old_size != c.new_size || !SameFile(tree_dirfd, host_dirfd, name);
    }
    if (!c.content_changed && c.old_mode == c.new_mode) return Ok();  // touched only
    out_.push_back(std::move(c));
    return Ok();
  }

  Status Directory(const std::string& rel, const std::string& name, int tree_dirfd, int host_dirfd,
                   const struct stat& st, const HostEntry& host, bool changed) {
    const std::string path = Join(rel, name);
    UniqueFd sub = OpenTreeEntry(tree_dirfd, name, kDirFlags);
    if (!sub) return Errno("opening " + path + " in the run's tree");
    std::string opaque;
    const bool replaced =
        overlay_ && HasXattr(tree_dirfd, name, "user.overlay.opaque", &opaque) && opaque == "y";
    if (host.type == EntryType::kDir) {
      if (changed && (host.st.st_mode & 07777) != (st.st_mode & 07777)) {
        ReviewChange c = Base(path, host);
        c.kind = ReviewChange::Kind::kModify;
        c.new_type = EntryType::kDir;
        c.new_mode = st.st_mode & 07777;
        out_.push_back(std::move(c));
      }
      UniqueFd host_sub(openat(host_dirfd, name.c_str(), kDirFlags));
      if (!host_sub) return Errno("opening " + path + " in the workspace");
      if (replaced) WARD_TRY(ReplacedDirectory(path, sub.get(), host_sub.get()));
      return Walk(path, sub.get(), host_sub.get());
    }
    ReviewChange c = Base(path, host);
    c.kind = host.type == EntryType::kNone ? ReviewChange::Kind::kAdd : ReviewChange::Kind::kModify;
    c.new_type = EntryType::kDir;
    c.new_mode = st.st_mode & 07777;
    c.content_changed = host.type != EntryType::kNone;
    out_.push_back(std::move(c));
    return Walk(path, sub.get(), -1);
  }

  // An opaque directory of the overlay: the run's directory stands for the host's as a whole,
  // and what it lacks was deleted.
  Status ReplacedDirectory(const std::string& path, int tree_dirfd, int host_dirfd) {
    const std::vector<std::string> mine = SortedNames(tree_dirfd);
    for (const std::string& n : SortedNames(host_dirfd)) {
      if (std::binary_search(mine.begin(), mine.end(), n)) continue;
      HostEntry h = StatHost(host_dirfd, n);
      if (h.type != EntryType::kNone) WARD_TRY(Deleted(Join(path, n), host_dirfd, n, h));
    }
    return Ok();
  }

  // Overlay: whether an entry the host lacks may be one the host deleted after the run began.
  // user.overlay.origin says the entry was copied up from the host, though not from where (a
  // rename in the run keeps it): when the host's directory has not changed since the run
  // began (its ctime moves with every entry removed), the entry was not deleted there.
  bool CopiedUpFromAChangedDirectory(int tree_dirfd, int host_dirfd, const std::string& name) {
    if (!HasXattr(tree_dirfd, name, "user.overlay.origin", nullptr)) return false;
    struct stat dir;
    return host_dirfd < 0 || fstat(host_dirfd, &dir) != 0 || Ns(dir.st_ctim) >= s_.started_ns;
  }

  bool SameFile(int tree_dirfd, int host_dirfd, const std::string& name) {
    UniqueFd a = OpenTreeEntry(tree_dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    UniqueFd b(openat(host_dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    return a && b && SameContent(a.get(), b.get());
  }

  // The change's host side, from what the host has now.
  static ReviewChange Base(const std::string& path, const HostEntry& host) {
    ReviewChange c;
    c.path = path;
    c.old_type = host.type;
    if (host.type != EntryType::kNone) {
      c.old_mode = host.st.st_mode & 07777;
      c.old_size = static_cast<uint64_t>(host.st.st_size);
      c.old_uid = host.st.st_uid;
      c.old_gid = host.st.st_gid;
      c.old_ctime_ns = Ns(host.st.st_ctim);
      c.old_link = host.link;
    }
    return c;
  }

  // The host's entry `name` (and, for a directory, everything below it) was removed.
  Status Deleted(const std::string& path, int host_dirfd, const std::string& name,
                 const HostEntry& host) {
    if (host.type == EntryType::kDir) WARD_TRY(DeletedBelow(path, host_dirfd, name));
    ReviewChange c = Base(path, host);
    c.kind = ReviewChange::Kind::kDelete;
    c.content_changed = true;
    out_.push_back(std::move(c));
    return Ok();
  }

  Status DeletedBelow(const std::string& path, int host_dirfd, const std::string& name) {
    UniqueFd sub(openat(host_dirfd, name.c_str(), kDirFlags));
    if (!sub) return Errno("opening " + path + " in the workspace");
    for (const std::string& n : SortedNames(sub.get())) {
      HostEntry h = StatHost(sub.get(), n);
      if (h.type != EntryType::kNone) WARD_TRY(Deleted(Join(path, n), sub.get(), n, h));
    }
    return Ok();
  }

  const ReviewSession& s_;
  const bool overlay_;
  std::map<std::string, std::set<std::string>> manifest_;  // copy mode: directory -> names
  std::vector<ReviewChange> out_;
};

}  // namespace

const char* EntryTypeName(EntryType t) {
  switch (t) {
    case EntryType::kNone:
      return "absent";
    case EntryType::kFile:
      return "file";
    case EntryType::kDir:
      return "directory";
    case EntryType::kSymlink:
      return "symlink";
    case EntryType::kOther:
      return "special file";
  }
  return "absent";
}

bool TreeHoldsChanges(const ReviewSession& s) {
  if (s.mode == ReviewMode::kOverlay) return !ReviewTreeEmpty(s);
  Result<std::vector<ReviewChange>> changes = CollectChanges(s);
  return !changes.ok() || !changes->empty();
}

Result<std::vector<ReviewChange>> CollectChanges(const ReviewSession& s) {
  Walker w(s);
  return w.Run();
}

UniqueFd OpenTreeEntry(int root_fd, const std::string& rel, int flags) {
  UniqueFd fd(sys::Openat2(root_fd, rel.c_str(), flags, 0, enforce::kResolveBeneath));
  if (fd || errno != EACCES) return fd;
  UniqueFd path(sys::Openat2(root_fd, rel.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC, 0,
                             enforce::kResolveBeneath));
  struct stat st;
  if (!path || fstat(path.get(), &st) != 0 || st.st_uid != geteuid() || !S_ISREG(st.st_mode)) {
    errno = EACCES;
    return UniqueFd();
  }
  const mode_t lend = 0400;
  char proc[64];
  std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", path.get());
  if (fchmodat(AT_FDCWD, proc, (st.st_mode & 07777) | lend, 0) != 0) {
    errno = EACCES;
    return UniqueFd();
  }
  fd.reset(sys::Openat2(root_fd, rel.c_str(), flags, 0, enforce::kResolveBeneath));
  const int err = errno;
  (void)fchmodat(AT_FDCWD, proc, st.st_mode & 07777, 0);
  errno = err;
  return fd;
}

bool SplitRelative(const std::string& rel, std::vector<std::string>* out) {
  out->clear();
  // PathComponents skips empty components: refuse them first ("a//b", "a/").
  if (rel.empty() || rel[0] == '/' || rel.back() == '/' || rel.find("//") != std::string::npos) {
    return false;
  }
  *out = policy::PathComponents(rel);
  for (const std::string& comp : *out) {
    if (comp == "." || comp == "..") return false;
  }
  return true;
}

std::vector<ReviewChange> SelectChanges(const std::vector<ReviewChange>& all,
                                        const std::vector<std::string>& paths,
                                        std::vector<std::string>* unmatched) {
  if (paths.empty()) return all;
  std::vector<ReviewChange> out;
  std::vector<bool> used(paths.size(), false);
  for (const ReviewChange& c : all) {
    bool take = false;
    for (size_t i = 0; i < paths.size(); ++i) {
      const std::string& p = paths[i];
      if (c.path == p || (c.path.size() > p.size() && c.path.compare(0, p.size(), p) == 0 &&
                          c.path[p.size()] == '/')) {
        take = true;
        used[i] = true;
      }
    }
    if (take) out.push_back(c);
  }
  // A selected entry needs the directories the run made above it.
  std::vector<ReviewChange> parents;
  for (const ReviewChange& c : all) {
    if (c.new_type != EntryType::kDir || c.kind == ReviewChange::Kind::kDelete ||
        c.old_type == EntryType::kDir) {
      continue;
    }
    bool chosen = false, needed = false;
    for (const ReviewChange& o : out) {
      if (o.path == c.path) chosen = true;
      if (o.path.size() > c.path.size() && o.path.compare(0, c.path.size(), c.path) == 0 &&
          o.path[c.path.size()] == '/') {
        needed = true;
      }
    }
    if (needed && !chosen) parents.push_back(c);
  }
  if (!parents.empty()) {
    out.insert(out.end(), parents.begin(), parents.end());
    std::sort(out.begin(), out.end(),
              [](const ReviewChange& a, const ReviewChange& b) { return a.path < b.path; });
  }
  if (unmatched) {
    for (size_t i = 0; i < paths.size(); ++i) {
      if (!used[i]) unmatched->push_back(paths[i]);
    }
  }
  return out;
}

}  // namespace ward::supervisor
