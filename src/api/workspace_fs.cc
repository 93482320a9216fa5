#include "api/workspace_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "common/linux.h"
#include "policy/decide.h"
#include "policy/paths.h"

namespace ward::api {

namespace {

constexpr uint64_t kResolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

std::string TypeOf(mode_t m) {
  if (S_ISREG(m)) return "file";
  if (S_ISDIR(m)) return "dir";
  if (S_ISLNK(m)) return "symlink";
  return "other";
}

std::string JoinRel(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return a + "/" + b;
}

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

std::string TempName() {
  unsigned char b[6];
  if (getrandom(b, sizeof b, 0) != sizeof b) std::memset(b, 0x5a, sizeof b);
  static const char kHex[] = "0123456789abcdef";
  std::string s = ".ward-tmp-";
  for (unsigned char c : b) {
    s += kHex[c >> 4];
    s += kHex[c & 15];
  }
  return s;
}

// The entries of the directory `dfd` but "." and "..", sorted; none when it cannot be read.
std::vector<std::string> SortedNames(int dfd) {
  std::vector<std::string> names;
  int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return names;
  DIR* d = fdopendir(dup_fd);
  if (!d) {
    close(dup_fd);
    return names;
  }
  while (struct dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

Expected<WorkspaceFs> WorkspaceFs::Open(const std::string& workspace,
                                        const policy::Policy* policy) {
  if (workspace.empty() || workspace[0] != '/') return InvalidError("workspace must be absolute");
  if (!policy) return InvalidError("no policy for the workspace");
  int fd = open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return FromErrno("workspace " + workspace, errno);
  return WorkspaceFs(policy::NormalizePath(workspace), UniqueFd(fd), policy);
}

Expected<std::string> WorkspaceFs::Relative(const std::string& path) const {
  if (path.find('\0') != std::string::npos) return InvalidError("path contains NUL");
  if (path.size() > 4096) return InvalidError("path is too long");
  std::string abs;
  if (!path.empty() && path[0] == '/') {
    abs = policy::NormalizePath(path);
  } else {
    // Before normalisation hides it: "a/../../x" leaves.
    if (policy::ClimbsOut(path)) return DeniedError("\"" + path + "\" leaves the workspace");
    abs = policy::NormalizePath(policy::JoinPath(workspace_, path));
  }
  if (!policy::PathIsWithin(abs, workspace_)) {
    return DeniedError("\"" + path + "\" is outside the workspace");
  }
  if (abs == workspace_) return std::string();
  return abs.substr(workspace_ == "/" ? 1 : workspace_.size() + 1);
}

std::string WorkspaceFs::Absolute(const std::string& rel) const {
  return rel.empty() ? workspace_ : policy::JoinPath(workspace_, rel);
}

std::vector<std::string> WorkspaceFs::NestedRepos(const std::string& rel) const {
  // Ancestors of `rel` (below the workspace, within nested_repo_depth) that hold a .git.
  std::vector<std::string> roots;
  std::string prefix;
  int depth = 0;
  size_t i = 0;
  while (i < rel.size() && depth < policy_->nested_repo_depth) {
    size_t j = rel.find('/', i);
    if (j == std::string::npos) break;  // the last component is the path itself
    prefix = JoinRel(prefix, rel.substr(i, j - i));
    ++depth;
    int dfd =
        sys::Openat2(fd_.get(), prefix.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, kResolve);
    if (dfd < 0) break;
    struct stat st;
    if (fstatat(dfd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) roots.push_back(Absolute(prefix));
    close(dfd);
    i = j + 1;
  }
  return roots;
}

bool WorkspaceFs::Writable(const std::string& rel) const {
  policy::PathDecision d = policy::DecidePath(*policy_, Absolute(rel), NestedRepos(rel));
  return d.visibility == policy::PathDecision::Visibility::kWrite && !d.is_protected &&
         !d.host_executed && d.host_file;
}

bool WorkspaceFs::Visible(const std::string& rel) const {
  policy::PathDecision d = policy::DecidePath(*policy_, Absolute(rel), NestedRepos(rel));
  return d.visibility != policy::PathDecision::Visibility::kHidden && d.host_file;
}

Expected<Done> WorkspaceFs::Check(const std::string& rel, bool write) const {
  policy::PathDecision d = policy::DecidePath(*policy_, Absolute(rel), NestedRepos(rel));
  std::string shown = rel.empty() ? "." : rel;
  if (d.visibility == policy::PathDecision::Visibility::kHidden || !d.host_file) {
    Error e = DeniedError("\"" + shown + "\" is not visible to the sandbox: " + d.reason);
    return e;
  }
  if (write) {
    if (d.is_protected) {
      return DeniedError("\"" + shown + "\" is protected: " + d.reason);
    }
    // The daemon writes on the host, with no check after a run to follow: host-executed
    // content is not written through this API at all.
    if (d.host_executed) {
      return DeniedError("\"" + shown + "\" is host-executed content, which this API does not "
                         "write: " + d.reason);
    }
    if (d.visibility != policy::PathDecision::Visibility::kWrite) {
      return DeniedError("\"" + shown + "\" is read-only for the sandbox: " + d.reason);
    }
  }
  return Done{};
}

Expected<UniqueFd> WorkspaceFs::OpenBeneath(const std::string& rel, int flags, mode_t mode) const {
  const char* p = rel.empty() ? "." : rel.c_str();
  int fd = sys::Openat2(fd_.get(), p, static_cast<uint64_t>(flags) | O_CLOEXEC, mode, kResolve);
  if (fd < 0) return FromErrno(rel.empty() ? "." : rel, errno);
  return UniqueFd(fd);
}

Expected<UniqueFd> WorkspaceFs::OpenParent(const std::string& rel, std::string* name) const {
  if (rel.empty()) return InvalidError("not allowed on the workspace itself");
  size_t slash = rel.rfind('/');
  std::string parent = slash == std::string::npos ? "" : rel.substr(0, slash);
  *name = slash == std::string::npos ? rel : rel.substr(slash + 1);
  return OpenBeneath(parent, O_RDONLY | O_DIRECTORY);
}

FileInfo WorkspaceFs::InfoFrom(const std::string& rel, const struct stat& st) const {
  FileInfo fi;
  fi.path = rel.empty() ? "." : rel;
  fi.type = TypeOf(st.st_mode);
  fi.size = static_cast<uint64_t>(st.st_size);
  fi.mode = st.st_mode & 07777;
  fi.mtime_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  fi.writable = Writable(rel);
  return fi;
}

Expected<WorkspaceFs::ReadResult> WorkspaceFs::Read(const std::string& path, uint64_t offset,
                                                    size_t length) const {
  WARD_API_ASSIGN_OR_RETURN(std::string rel, Relative(path));
  WARD_API_TRY(Check(rel, false));
  // O_NONBLOCK: a FIFO planted in the workspace must not block the daemon.
  WARD_API_ASSIGN_OR_RETURN(UniqueFd fd, OpenBeneath(rel, O_RDONLY | O_NONBLOCK | O_NOCTTY));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return FromErrno(path, errno);
  if (S_ISDIR(st.st_mode)) return FromErrno(path, EISDIR);
  if (!S_ISREG(st.st_mode)) return InvalidError("\"" + path + "\" is not a regular file");
  ReadResult r;
  r.size = static_cast<uint64_t>(st.st_size);
  length = std::min(length, kMaxFsReadBytes);
  if (offset < r.size && length > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(length, r.size - offset));
    r.data.resize(n);
    size_t got = 0;
    while (got < n) {
      ssize_t k = pread(fd.get(), r.data.data() + got, n - got, static_cast<off_t>(offset + got));
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) return FromErrno(path, errno);
      if (k == 0) break;
      got += static_cast<size_t>(k);
    }
    r.data.resize(got);
  }
  r.eof = offset + r.data.size() >= r.size;
  return r;
}

Expected<FileInfo> WorkspaceFs::Write(const std::string& path, const std::string& data,
                                      std::optional<uint32_t> mode, bool atomic) const {
  WARD_API_ASSIGN_OR_RETURN(std::string rel, Relative(path));
  if (rel.empty()) return FromErrno(".", EISDIR);
  WARD_API_TRY(Check(rel, true));
  if (mode && (*mode & ~0777u)) return InvalidError("mode may only hold permission bits (0..0777)");
  if (atomic) {
    std::string name;
    WARD_API_ASSIGN_OR_RETURN(UniqueFd dir, OpenParent(rel, &name));
    if (name == "." || name == "..") return InvalidError("bad file name");
    mode_t m = mode.value_or(0644);
    struct stat old;
    if (fstatat(dir.get(), name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISLNK(old.st_mode)) return FromErrno(path, ELOOP);
      if (S_ISDIR(old.st_mode)) return FromErrno(path, EISDIR);
      if (!S_ISREG(old.st_mode)) return InvalidError("\"" + path + "\" is not a regular file");
      if (!mode) m = old.st_mode & 0777;
    } else if (errno != ENOENT) {
      return FromErrno(path, errno);
    }
    std::string tmp = TempName();
    int fd =
        openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, m);
    if (fd < 0) return FromErrno(path, errno);
    UniqueFd tfd(fd);
    bool ok = WriteAll(fd, data.data(), data.size()) && fchmod(fd, m) == 0 && fdatasync(fd) == 0;
    int err = errno;
    if (!ok || renameat(dir.get(), tmp.c_str(), dir.get(), name.c_str()) != 0) {
      if (ok) err = errno;
      unlinkat(dir.get(), tmp.c_str(), 0);
      return FromErrno(path, err);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) return FromErrno(path, errno);
    return InfoFrom(rel, st);
  }
  WARD_API_ASSIGN_OR_RETURN(
      UniqueFd fd,
      OpenBeneath(rel, O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY, mode.value_or(0644)));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return FromErrno(path, errno);
  if (!S_ISREG(st.st_mode)) return InvalidError("\"" + path + "\" is not a regular file");
  // Writing through a second name would change a file the policy may not let us write.
  if (st.st_nlink > 1) return DeniedError("\"" + path + "\" has other hard links");
  if (ftruncate(fd.get(), 0) != 0) return FromErrno(path, errno);
  if (!WriteAll(fd.get(), data.data(), data.size())) return FromErrno(path, errno);
  if (mode && fchmod(fd.get(), *mode) != 0) return FromErrno(path, errno);
  if (fstat(fd.get(), &st) != 0) return FromErrno(path, errno);
  return InfoFrom(rel, st);
}

Expected<FileInfo> WorkspaceFs::Stat(const std::string& path) const {
  WARD_API_ASSIGN_OR_RETURN(std::string rel, Relative(path));
  WARD_API_TRY(Check(rel, false));
  struct stat st;
  if (rel.empty()) {
    if (fstat(fd_.get(), &st) != 0) return FromErrno(".", errno);
    return InfoFrom(rel, st);
  }
  std::string name;
  WARD_API_ASSIGN_OR_RETURN(UniqueFd dir, OpenParent(rel, &name));
  if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return FromErrno(path, errno);
  }
  return InfoFrom(rel, st);
}

Expected<std::vector<FileInfo>> WorkspaceFs::List(const std::string& path, int depth,
                                                  size_t max_entries, bool* truncated) const {
  WARD_API_ASSIGN_OR_RETURN(std::string rel, Relative(path));
  WARD_API_TRY(Check(rel, false));
  depth = std::clamp(depth, 1, kMaxListDepth);
  max_entries = std::min(max_entries, kMaxListEntries);
  if (truncated) *truncated = false;
  WARD_API_ASSIGN_OR_RETURN(UniqueFd top, OpenBeneath(rel, O_RDONLY | O_DIRECTORY));
  std::vector<FileInfo> out;
  std::function<void(int, const std::string&, int)> walk = [&](int dfd, const std::string& base,
                                                               int level) {
    for (const auto& n : SortedNames(dfd)) {
      if (out.size() >= max_entries) {
        if (truncated) *truncated = true;
        return;
      }
      std::string child = JoinRel(base, n);
      struct stat st;
      if (fstatat(dfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (!Visible(child)) continue;  // masked by a deny rule: the sandbox does not see it
      out.push_back(InfoFrom(child, st));
      if (!S_ISDIR(st.st_mode) || level >= depth) continue;
      UniqueFd sub(sys::Openat2(dfd, n.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, kResolve));
      if (sub) walk(sub.get(), child, level + 1);
    }
  };
  walk(top.get(), rel, 1);
  return out;
}

Expected<FileInfo> WorkspaceFs::Mkdir(const std::string& path, bool parents) const {
  WARD_API_ASSIGN_OR_RETURN(std::string rel, Relative(path));
  if (rel.empty()) return FromErrno(".", EEXIST);
  WARD_API_TRY(Check(rel, true));
  const std::vector<std::string> comps = policy::PathComponents(rel);  // normalised: no empties
  std::string cur;
  for (size_t k = 0; k < comps.size(); ++k) {
    std::string next = JoinRel(cur, comps[k]);
    bool last = k + 1 == comps.size();
    WARD_API_ASSIGN_OR_RETURN(UniqueFd dir, OpenBeneath(cur, O_RDONLY | O_DIRECTORY));
    struct stat st;
    if (fstatat(dir.get(), comps[k].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISLNK(st.st_mode)) return FromErrno(next, ELOOP);
      if (!S_ISDIR(st.st_mode)) return FromErrno(next, ENOTDIR);
      if (last) {
        if (!parents) return FromErrno(path, EEXIST);
        return InfoFrom(rel, st);
      }
    } else if (errno != ENOENT) {
      return FromErrno(next, errno);
    } else {
      if (!last && !parents) return FromErrno(next, ENOENT);
      WARD_API_TRY(Check(next, true));
      if (mkdirat(dir.get(), comps[k].c_str(), 0755) != 0 && errno != EEXIST) {
        return FromErrno(next, errno);
      }
    }
    cur = next;
  }
  return Stat(rel);
}

Expected<Done> WorkspaceFs::CheckTree(const std::string& rel, const std::string* new_rel,
                                      size_t* count) const {
  WARD_API_TRY(Check(rel, true));
  if (new_rel) WARD_API_TRY(Check(*new_rel, true));
  if (++*count > kMaxTreeEntries) {
    return MakeError(ErrorKind::kResourceExhausted, "the tree has too many entries");
  }
  WARD_API_ASSIGN_OR_RETURN(UniqueFd dfd, OpenBeneath(rel, O_RDONLY | O_DIRECTORY));
  int dup_fd = fcntl(dfd.get(), F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return FromErrno(rel, errno);
  DIR* d = fdopendir(dup_fd);
  if (!d) {
    close(dup_fd);
    return FromErrno(rel, errno);
  }
  std::vector<std::pair<std::string, bool>> entries;
  while (struct dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st;
    bool is_dir =
        fstatat(dfd.get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    entries.emplace_back(n, is_dir);
  }
  closedir(d);
  for (const auto& [n, is_dir] : entries) {
    std::string child = JoinRel(rel, n);
    std::string new_child = new_rel ? JoinRel(*new_rel, n) : std::string();
    if (is_dir) {
      WARD_API_TRY(CheckTree(child, new_rel ? &new_child : nullptr, count));
    } else {
      if (++*count > kMaxTreeEntries) {
        return MakeError(ErrorKind::kResourceExhausted, "the tree has too many entries");
      }
      WARD_API_TRY(Check(child, true));
      if (new_rel) WARD_API_TRY(Check(new_child, true));
    }
  }
  return Done{};
}

Expected<Done> WorkspaceFs::RemoveTreeAt(int parent_fd, const std::string& name) const {
  int dfd = sys::Openat2(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, kResolve);
  if (dfd < 0) return FromErrno(name, errno);
  UniqueFd owned(dfd);
  int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return FromErrno(name, errno);
  DIR* d = fdopendir(dup_fd);
  if (!d) {
    close(dup_fd);
    return FromErrno(name, errno);
  }
  std::vector<std::string> names;
  while (struct dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  for (const auto& n : names) {
    struct stat st;
    if (fstatat(dfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      WARD_API_TRY(RemoveTreeAt(dfd, n));
    } else if (unlinkat(dfd, n.c_str(), 0) != 0 && errno != ENOENT) {
      return FromErrno(n, errno);
    }
  }
  if (unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0) return FromErrno(name, errno);
  return Done{};
}

Expected<Done> WorkspaceFs::Remove(const std::string& path, bool recursive) const {
  WARD_API_ASSIGN_OR_RETURN(std::string rel, Relative(path));
  if (rel.empty()) return DeniedError("the workspace itself cannot be removed");
  WARD_API_TRY(Check(rel, true));
  std::string name;
  WARD_API_ASSIGN_OR_RETURN(UniqueFd dir, OpenParent(rel, &name));
  struct stat st;
  if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return FromErrno(path, errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    if (unlinkat(dir.get(), name.c_str(), 0) != 0) return FromErrno(path, errno);
    return Done{};
  }
  if (!recursive) {
    if (unlinkat(dir.get(), name.c_str(), AT_REMOVEDIR) != 0) return FromErrno(path, errno);
    return Done{};
  }
  // Every entry is checked before anything goes: a tree holding a protected path stays whole.
  size_t count = 0;
  WARD_API_TRY(CheckTree(rel, nullptr, &count));
  return RemoveTreeAt(dir.get(), name);
}

Expected<Done> WorkspaceFs::Rename(const std::string& from, const std::string& to,
                                   bool overwrite) const {
  WARD_API_ASSIGN_OR_RETURN(std::string rel_from, Relative(from));
  WARD_API_ASSIGN_OR_RETURN(std::string rel_to, Relative(to));
  if (rel_from.empty() || rel_to.empty()) {
    return DeniedError("the workspace itself cannot be renamed");
  }
  if (policy::PathIsWithin("/" + rel_to, "/" + rel_from)) {
    return InvalidError("cannot move a directory into itself");
  }
  WARD_API_TRY(Check(rel_from, true));
  WARD_API_TRY(Check(rel_to, true));
  std::string from_name, to_name;
  WARD_API_ASSIGN_OR_RETURN(UniqueFd from_dir, OpenParent(rel_from, &from_name));
  WARD_API_ASSIGN_OR_RETURN(UniqueFd to_dir, OpenParent(rel_to, &to_name));
  struct stat st;
  if (fstatat(from_dir.get(), from_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return FromErrno(from, errno);
  }
  if (S_ISDIR(st.st_mode)) {
    // Both the old and the new name of every entry must be writable: moving a tree must not
    // carry a protected path away, nor create one (a "hooks" dir moved under .git).
    size_t count = 0;
    WARD_API_TRY(CheckTree(rel_from, &rel_to, &count));
  }
  struct stat dst;
  if (fstatat(to_dir.get(), to_name.c_str(), &dst, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISDIR(dst.st_mode) && overwrite) {
    size_t count = 0;
    WARD_API_TRY(CheckTree(rel_to, nullptr, &count));
  }
  unsigned flags = overwrite ? 0 : RENAME_NOREPLACE;
  if (renameat2(from_dir.get(), from_name.c_str(), to_dir.get(), to_name.c_str(), flags) != 0) {
    return FromErrno(from + " -> " + to, errno);
  }
  return Done{};
}

}  // namespace ward::api
