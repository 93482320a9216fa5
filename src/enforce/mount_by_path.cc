#include "enforce/mount_by_path.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/linux.h"
#include "common/unique_fd.h"
#include "enforce/beneath.h"
#include "enforce/root_layout.h"
#include "policy/paths.h"

namespace ward::enforce {
namespace {

// Where the outer staging tmpfs may go: the first of these that exists and holds no source.
constexpr const char* kStages[] = {"/mnt", "/media", "/srv", "/opt", "/tmp", "/var/tmp"};
std::string Parent(const std::string& p) {
  size_t slash = p.find_last_of('/');
  return slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
}
std::string Base(const std::string& p) { return p.substr(p.find_last_of('/') + 1); }

bool SameObject(int fd, const struct stat& want) {
  struct stat st;
  return fstat(fd, &st) == 0 && st.st_dev == want.st_dev && st.st_ino == want.st_ino;
}

// The object at `rel` below `dir_fd` ("" for the directory itself), reached one component at a
// time without following a symlink (O_PATH; a final symlink is opened itself).
UniqueFd Walk(int dir_fd, const std::string& rel) {
  UniqueFd cur(fcntl(dir_fd, F_DUPFD_CLOEXEC, 3));
  for (const std::string& comp : policy::PathComponents(rel)) {
    if (!cur) break;
    cur.reset(OpenComponentNoFollow(cur.get(), comp.c_str(), O_PATH));
  }
  return cur;
}

// Whether the mount holding `fd` refuses writes: its flags say read-only (Linux), or faccessat
// answers EROFS (gVisor, whose statfs does not report a bind's own flags). faccessat alone is not
// enough: it asks the file's permissions first, and /proc/sys answers EACCES before EROFS.
bool RefusesWrites(int fd) {
  struct statfs sf;
  if (fstatfs(fd, &sf) == 0 && (sf.f_flags & ST_RDONLY) != 0) return true;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  return access(path, W_OK) != 0 && errno == EROFS;
}

class PathBuilder {
 public:
  PathBuilder(const MountSpec& spec, MountReport* report, ChildError* error)
      : spec_(spec), report_(report), error_(error) {}

  bool Run() {
    if (!MakePrivate() || !ChooseStage() || !MakeOuter() || !PrepareRootEntries() ||
        !PrepareTemplates() || !MakeRootView()) {
      return false;
    }
    for (const MountOp& op : spec_.ops) {
      if (!Apply(op)) return false;
    }
    for (const MaskOp& m : spec_.masks) {
      if (!Mask(m)) return false;
    }
    if (!Protect()) return false;
    return EnterRoot();
  }

  PendingSysctls TakeSysctls() { return std::move(sysctls_); }

 private:
  // --- the stage ---------------------------------------------------------------------------

  // Mounts made here must not propagate to the host. Where the kernel has no propagation to
  // change (gVisor answers EINVAL), no mount of this namespace may be shared.
  bool MakePrivate() {
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0) return true;
    if (errno != EINVAL) return error_->Set("mount", errno, "making / private");
    UniqueFd mi(open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
    std::string text;
    char buf[4096];
    for (ssize_t n; mi && (n = read(mi.get(), buf, sizeof buf)) > 0;) text.append(buf, n);
    if (!mi || text.find(" shared:") != std::string::npos) {
      return error_->Set("mount", EINVAL, "making / private (and a mount is shared)");
    }
    return true;
  }

  // A directory to stage the build in: covering it must hide no source of a bind.
  bool ChooseStage() {
    for (const char* cand : kStages) {
      struct stat st;
      if (lstat(cand, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
      bool holds = false;
      for (const MountOp& op : spec_.ops) {
        if (op.kind == MountOp::Kind::kBind && policy::PathIsWithin(op.source, cand)) holds = true;
      }
      if (!spec_.workspace.empty() && policy::PathIsWithin(spec_.workspace, cand)) holds = true;
      if (!holds) {
        stage_ = cand;
        return true;
      }
    }
    return error_->Set("mount", ENOENT, "no directory to stage the root in (/mnt, /tmp, ...)");
  }

  // The outer tmpfs: root/ (the root's content), view/ (its read-only view, the new root),
  // empty/ (an empty lower layer), t/ and tv/ (templates and their read-only view), p*/ (views).
  bool MakeOuter() {
    if (mount("tmpfs", stage_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=4m") != 0) {
      return error_->Set("mount", errno, "mounting the staging tmpfs at ", stage_.c_str());
    }
    ++report_->mounts;
    for (const char* d : {"root", "view", "empty", "t", "tv"}) {
      if (mkdir((stage_ + "/" + d).c_str(), std::strcmp(d, "root") == 0 ? 0755 : 0700) != 0) {
        return error_->Set("mount", errno, "making the stage's ", d);
      }
    }
    chmod((stage_ + "/root").c_str(), 0755);  // not the umask's
    return true;
  }

  // The mount op whose mount holds `path` (the deepest one at or above its parent), or nullptr
  // for the root's own tmpfs.
  const MountOp* Holder(const std::string& path) const {
    const MountOp* best = nullptr;
    for (const MountOp& op : spec_.ops) {
      if (op.kind == MountOp::Kind::kSymlink || op.target == path) continue;
      if (!policy::PathIsWithin(path, op.target)) continue;
      if (!best || op.target.size() > best->target.size()) best = &op;
    }
    return best;
  }

  // Every entry the root's tmpfs needs, made before it becomes read-only.
  bool PrepareRootEntries() {
    const std::string root = stage_ + "/root";
    for (const MountOp& op : spec_.ops) {
      if (Holder(op.target) != nullptr) continue;
      std::vector<std::string> comps = policy::PathComponents(op.target);
      std::string path = root;
      for (size_t i = 0; i + 1 < comps.size(); ++i) {
        path += "/" + comps[i];
        if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
          return error_->Set("mount", errno, "mkdir ", op.target.c_str());
        }
      }
      path += "/" + comps.back();
      int r = 0;
      if (op.kind == MountOp::Kind::kSymlink) {
        r = symlink(op.source.c_str(), path.c_str());
      } else if (op.kind == MountOp::Kind::kFile ||
                 (op.kind == MountOp::Kind::kBind && !op.is_dir)) {
        int f = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        r = f < 0 ? -1 : close(f);
      } else {
        r = mkdir(path.c_str(), 0755);
      }
      if (r != 0 && errno != EEXIST) {
        return error_->Set("mount", errno, "creating mount point ", op.target.c_str());
      }
    }
    return true;
  }

  // The covers (an empty unreadable file and directory) and the files of kFile ops, in t/,
  // with their read-only view tv/.
  bool PrepareTemplates() {
    const std::string t = stage_ + "/t";
    int f = open((t + "/f").c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0);
    if (f < 0 || close(f) != 0 || mkdir((t + "/d").c_str(), 0) != 0) {
      return error_->Set("mount", errno, "making the covers");
    }
    for (size_t i = 0; i < spec_.ops.size(); ++i) {
      const MountOp& op = spec_.ops[i];
      if (op.kind != MountOp::Kind::kFile) continue;
      std::string name = t + "/file" + std::to_string(i);
      UniqueFd out(open(name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, op.mode));
      if (!out || write(out.get(), op.content.data(), op.content.size()) !=
                      static_cast<ssize_t>(op.content.size())) {
        return error_->Set("mount", errno, "staging ", op.target.c_str());
      }
      fchmod(out.get(), op.mode);
    }
    return ReadOnlyView(t, stage_ + "/tv");
  }

  bool MakeRootView() {
    root_path_ = stage_ + "/view";
    if (!ReadOnlyView(stage_ + "/root", root_path_)) return false;
    root_.reset(open(root_path_.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!root_) return error_->Set("mount", errno, "opening the new root");
    return true;
  }

  // --- read-only views -------------------------------------------------------------------

  // Mounts at `at` (a directory in the stage) a read-only view of the directory `dir` (a path
  // only ward's own setup can change): a bind made read-only by a remount, or else a read-only
  // overlay of it.
  bool ReadOnlyView(const std::string& dir, const std::string& at) {
    if (mount(dir.c_str(), at.c_str(), nullptr, MS_BIND, nullptr) == 0) {
      if (mount(nullptr, at.c_str(), nullptr,
                MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) == 0 &&
          CheckReadOnly(at)) {
        ++report_->mounts;
        return true;
      }
      umount2(at.c_str(), MNT_DETACH);
    }
    if (dir.find_first_of(":,\\") != std::string::npos) {
      return error_->Set("mount", EINVAL,
                         "a path with ':', ',' or '\\' cannot be viewed: ", dir.c_str());
    }
    const std::string opts = "lowerdir=" + dir + ":" + stage_ + "/empty";
    if (mount("overlay", at.c_str(), "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts.c_str()) !=
        0) {
      return error_->Set("mount", errno, "making a read-only view of ", dir.c_str());
    }
    ++report_->mounts;
    return CheckReadOnly(at) || error_->Set("mount", EROFS, "view not read-only: ", dir.c_str());
  }

  bool CheckReadOnly(const std::string& path) {
    UniqueFd fd(open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    return fd && RefusesWrites(fd.get());
  }

  // A fresh directory in the stage for a view.
  std::string StagePoint() {
    std::string p = stage_ + "/p" + std::to_string(points_++);
    if (mkdir(p.c_str(), 0700) != 0) return "";
    return p;
  }

  // Binds a read-only view of the host object `src` (resolved to `want` before) at `target`
  // (inside the new root). The object is first bound into the stage and checked to be `want`,
  // so the view is of what was checked whatever happens to `src` meanwhile.
  bool ReadOnlyBind(const std::string& src, const struct stat& want, const std::string& target) {
    const bool dir = S_ISDIR(want.st_mode);
    std::string holder = StagePoint();
    if (holder.empty()) return error_->Set("mount", errno, "staging ", src.c_str());
    std::string pinned = dir ? holder : holder + "/f";
    if (!dir) {
      int f = open(pinned.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
      if (f < 0 || close(f) != 0) return error_->Set("mount", errno, "staging ", src.c_str());
    }
    if (mount(src.c_str(), pinned.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      return error_->Set("mount", errno, "binding ", src.c_str());
    }
    {
      UniqueFd got(open(pinned.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
      if (!got || !SameObject(got.get(), want)) {
        return error_->Set("mount", ESTALE, "changed while it was bound: ", src.c_str());
      }
    }
    std::string view = StagePoint();
    if (view.empty() || !ReadOnlyView(holder, view)) {
      return view.empty() ? error_->Set("mount", errno, "staging ", src.c_str()) : false;
    }
    return BindChecked(dir ? view : view + "/f", target, true);
  }

  // Binds `src` (in the stage, or a host path checked before) at `target` (inside the new root)
  // and checks that the object now reached at `target` without following a symlink is `src`'s
  // (and refuses writes when `read_only`).
  bool BindChecked(const std::string& src, const std::string& target, bool read_only) {
    struct stat want;
    if (stat(src.c_str(), &want) != 0) return error_->Set("mount", errno, "stat ", src.c_str());
    const std::string at = root_path_ + target;
    if (mount(src.c_str(), at.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      return error_->Set("mount", errno, "attaching ", target.c_str());
    }
    ++report_->mounts;
    return CheckLanded(target, want, read_only);
  }

  bool CheckLanded(const std::string& target, const struct stat& want, bool read_only) {
    UniqueFd got = Walk(root_.get(), target);
    if (!got || !SameObject(got.get(), want)) {
      return error_->Set("mount", ESTALE,
                         "a path changed while it was mounted on: ", target.c_str());
    }
    if (read_only && !RefusesWrites(got.get())) {
      return error_->Set("mount", EROFS, "not read-only after its bind: ", target.c_str());
    }
    return true;
  }

  // --- the ops -----------------------------------------------------------------------------

  // Makes `target`'s mount point where it is missing, only inside a tmpfs ward mounted.
  bool MountPoint(const std::string& target, bool dir) {
    if (UniqueFd existing = Walk(root_.get(), target)) {
      struct stat st;
      if (fstat(existing.get(), &st) != 0 || S_ISLNK(st.st_mode)) {
        return error_->Set("mount", ELOOP, "mount point ", target.c_str());
      }
      return true;
    }
    if (errno != ENOENT) return error_->Set("mount", errno, "opening ", target.c_str());
    const MountOp* holder = Holder(target);
    if (!holder || (holder->kind != MountOp::Kind::kTmpfs && holder->kind != MountOp::Kind::kDev)) {
      return error_->Set("mount", ENOENT,
                         "mount point missing in a host directory: ", target.c_str());
    }
    // The parent may itself be missing (HOME's parents in /tmp's tmpfs): made one by one.
    std::string path;
    UniqueFd cur = Walk(root_.get(), holder->target);
    for (const std::string& comp : policy::PathComponents(target.substr(holder->target.size()))) {
      path += "/" + comp;
      bool last = holder->target + path == target;
      int r = last && !dir ? [&] {
        int f = openat(cur.get(), comp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        return f < 0 ? -1 : close(f);
      }()
                           : mkdirat(cur.get(), comp.c_str(), 0755);
      if (r != 0 && errno != EEXIST) {
        return error_->Set("mount", errno, "creating mount point ", target.c_str());
      }
      if (!last) cur.reset(OpenComponentNoFollow(cur.get(), comp.c_str(), O_PATH | O_DIRECTORY));
      if (!cur) return error_->Set("mount", errno, "opening ", target.c_str());
    }
    return true;
  }

  bool Apply(const MountOp& op) {
    const std::string at = root_path_ + op.target;
    switch (op.kind) {
      case MountOp::Kind::kTmpfs: {
        if (!MountPoint(op.target, true)) return false;
        char opts[64];
        if (op.size > 0) {
          std::snprintf(opts, sizeof opts, "mode=%o,size=%llu", op.mode,
                        static_cast<unsigned long long>(op.size));
        } else {
          std::snprintf(opts, sizeof opts, "mode=%o", op.mode);
        }
        if (mount("tmpfs", at.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0) {
          return error_->Set("mount", errno, "mounting a tmpfs at ", op.target.c_str());
        }
        ++report_->mounts;
        return true;
      }
      case MountOp::Kind::kBind:
        if (!op.overlay_upper.empty()) {  // the planner refuses it; never a bind in its place
          return error_->Set("mount", ENOSYS, "an overlay (review mode) needs the mount API: ",
                             op.target.c_str());
        }
        return MountPoint(op.target, op.is_dir) && Bind(op);
      case MountOp::Kind::kSymlink: {
        if (Holder(op.target) == nullptr) return true;  // made with the root's entries
        UniqueFd parent = Walk(root_.get(), Parent(op.target));
        const MountOp* holder = Holder(op.target);
        if (!parent || holder->kind != MountOp::Kind::kTmpfs) {
          return error_->Set("mount", EPERM, "symlink outside ward's tmpfs: ", op.target.c_str());
        }
        if (symlinkat(op.source.c_str(), parent.get(), Base(op.target).c_str()) != 0 &&
            errno != EEXIST) {
          return error_->Set("mount", errno, "symlink ", op.target.c_str());
        }
        return true;
      }
      case MountOp::Kind::kFile: {
        if (!MountPoint(op.target, false)) return false;
        size_t index = &op - spec_.ops.data();
        return BindChecked(stage_ + "/tv/file" + std::to_string(index), op.target, true);
      }
      case MountOp::Kind::kDev:
        return BuildDev(op);
      case MountOp::Kind::kProc:
        return BuildProc(op);
    }
    return true;
  }

  // The host object a bind names, opened as the planner resolved it: below the workspace one
  // component at a time without following a symlink (beneath.h).
  bool ResolveSource(const MountOp& op, struct stat* st) {
    UniqueFd fd;
    if (op.beneath_workspace) {
      std::optional<std::string> rel = RelativeBeneath(spec_.workspace, op.source);
      UniqueFd ws(open(spec_.workspace.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (spec_.workspace.empty() || !rel || !ws) {
        return error_->Set("mount", ws ? EINVAL : errno,
                           "opening in the workspace: ", op.source.c_str());
      }
      fd = Walk(ws.get(), *rel);
    } else {
      fd.reset(open(op.source.c_str(), O_PATH | O_CLOEXEC));
    }
    if (!fd || fstat(fd.get(), st) != 0) {
      return error_->Set("mount", errno, "opening, following no symlink: ", op.source.c_str());
    }
    if (S_ISLNK(st->st_mode)) return error_->Set("mount", ELOOP, op.source.c_str());
    return true;
  }

  bool Bind(const MountOp& op) {
    struct stat want;
    if (!ResolveSource(op, &want)) return false;
    if (!op.writable) return ReadOnlyBind(op.source, want, op.target);
    const std::string at = root_path_ + op.target;
    // Recursive where the kernel allows it (gVisor refuses MS_REC on a bind).
    if (mount(op.source.c_str(), at.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 &&
        (errno != EINVAL || mount(op.source.c_str(), at.c_str(), nullptr, MS_BIND, nullptr) != 0)) {
      return error_->Set("mount", errno, "binding ", op.source.c_str());
    }
    ++report_->mounts;
    // nosuid and nodev by remount; gVisor has no remount (nor set-id execution to refuse).
    if (mount(nullptr, at.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV, nullptr) !=
            0 &&
        errno != EINVAL) {
      return error_->Set("mount", errno, "setting nosuid on ", op.target.c_str());
    }
    return CheckLanded(op.target, want, false);
  }

  bool BuildDev(const MountOp& op) {
    const std::string at = root_path_ + op.target;
    if (!MountPoint(op.target, true)) return false;
    if (mount("tmpfs", at.c_str(), "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") != 0) {
      return error_->Set("mount", errno, "mounting /dev");
    }
    ++report_->mounts;
    for (const char* node : kDevNodes) {
      const std::string host = std::string("/dev/") + node, point = at + "/" + node;
      struct stat want;
      if (stat(host.c_str(), &want) != 0) return error_->Set("mount", errno, host.c_str());
      int f = open(point.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
      if (f < 0 || close(f) != 0) return error_->Set("mount", errno, "creating ", point.c_str());
      // Read-only where a remount can make it so (chmod of the host's node then fails); the
      // device's own reads and writes do not depend on it.
      if (mount(host.c_str(), point.c_str(), nullptr, MS_BIND, nullptr) != 0) {
        return error_->Set("mount", errno, "binding ", host.c_str());
      }
      ++report_->mounts;
      mount(nullptr, point.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, nullptr);
      if (!CheckLanded(op.target + "/" + node, want, false)) return false;
    }
    UniqueFd dev = Walk(root_.get(), op.target);
    if (!dev) return error_->Set("mount", errno, "opening /dev");
    if (mkdirat(dev.get(), "pts", 0755) != 0 || mkdirat(dev.get(), "shm", 01777) != 0) {
      return error_->Set("mount", errno, "creating /dev/pts and /dev/shm");
    }
    // A private devpts instance: the sandbox's ptys are its own. gVisor has none to make:
    // /dev/pts stays empty there and a run with a terminal fails at its pty.
    if (mount("devpts", (at + "/pts").c_str(), "devpts", MS_NOSUID | MS_NOEXEC,
              "newinstance,ptmxmode=0666,mode=0620") == 0) {
      ++report_->mounts;
    } else if (errno != ENODEV) {
      return error_->Set("mount", errno, "mounting /dev/pts");
    }
    if (mount("tmpfs", (at + "/shm").c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
              "mode=1777,size=64m") != 0) {
      return error_->Set("mount", errno, "mounting /dev/shm");
    }
    ++report_->mounts;
    const std::pair<const char*, const char*> links[] = {
        {"ptmx", "pts/ptmx"},          {"fd", "/proc/self/fd"},       {"stdin", "/proc/self/fd/0"},
        {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"},
    };
    for (const auto& [name, dest] : links) {
      if (symlinkat(dest, dev.get(), name) != 0 && errno != EEXIST) {
        return error_->Set("mount", errno, "/dev symlink ", name);
      }
    }
    return true;
  }

  bool BuildProc(const MountOp& op) {
    const std::string at = root_path_ + op.target;
    if (!MountPoint(op.target, true)) return false;
    if (mount("proc", at.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      return error_->Set("mount", errno, "mounting /proc");
    }
    ++report_->mounts;
    UniqueFd proc = Walk(root_.get(), op.target);
    if (!proc) return error_->Set("mount", errno, "opening /proc");
    if (!OpenSysctls(proc.get())) return false;
    Listing entries;
    if (!ListDir(proc.get(), &entries)) return error_->Set("mount", errno, "listing /proc");
    auto type_of = [&](const char* name) -> int {
      for (const auto& [n, type] : entries) {
        if (n == name) return type;
      }
      return -1;
    };
    for (const char* name : kProcReadOnly) {
      if (type_of(name) < 0) continue;
      if (!ReadOnlyProcEntry(op.target, name)) return false;
    }
    for (const char* name : kProcHidden) {
      int type = type_of(name);
      if (type < 0 || type == DT_LNK) continue;
      if (type == DT_UNKNOWN) {
        struct stat st;
        if (fstatat(proc.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
      }
      if (!Cover(op.target + "/" + name, type == DT_DIR)) return false;
    }
    return true;
  }

  // A kernel knob directory of the fresh /proc, read-only: a self-bind made read-only by a
  // remount, or else the same entry of a second /proc mounted read-only (gVisor: a bind keeps
  // the flags of the mount it comes from).
  bool ReadOnlyProcEntry(const std::string& proc, const char* name) {
    const std::string target = proc + "/" + name, at = root_path_ + target;
    struct stat want;
    if (lstat(at.c_str(), &want) != 0) return error_->Set("mount", errno, at.c_str());
    if (mount(at.c_str(), at.c_str(), nullptr, MS_BIND, nullptr) == 0) {
      if (mount(nullptr, at.c_str(), nullptr,
                MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                nullptr) == 0) {
        ++report_->mounts;
        return CheckLanded(target, want, true);
      }
      umount2(at.c_str(), MNT_DETACH);
    }
    if (ro_proc_.empty()) {
      ro_proc_ = StagePoint();
      if (ro_proc_.empty() || mount("proc", ro_proc_.c_str(), "proc",
                                    MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
        return error_->Set("mount", errno, "mounting a read-only /proc");
      }
    }
    return BindChecked(ro_proc_ + "/" + name, target, true);
  }

  // Covers `target` (inside the new root) with the empty unreadable file or directory.
  bool Cover(const std::string& target, bool dir) {
    ++report_->masked;
    return BindChecked(stage_ + (dir ? "/tv/d" : "/tv/f"), target, true);
  }

  // The user.* knobs of the fresh /proc, opened while it is writable (see mount.cc).
  bool OpenSysctls(int proc_fd) {
    for (const Sysctl& s : spec_.sysctls) {
      UniqueFd dir = Walk(proc_fd, "sys/" + Parent("/" + s.path).substr(1));
      UniqueFd f(dir ? OpenComponentNoFollow(dir.get(), Base(s.path).c_str(), O_WRONLY) : -1);
      if (!f) {
        if (errno == ENOENT && s.optional) continue;
        return error_->Set("sysctl", errno, "/proc/sys/", s.path.c_str());
      }
      sysctls_.emplace_back(std::move(f), &s);
    }
    return true;
  }

  bool Mask(const MaskOp& m) {
    const std::string parent_path = Parent(m.target), pattern = Base(m.target);
    UniqueFd parent = Walk(root_.get(), parent_path);
    if (!parent) {
      if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) return true;  // not visible
      return error_->Set("mount", errno, "resolving mask ", m.target.c_str());
    }
    struct stat pst;
    if (fstat(parent.get(), &pst) != 0 || !S_ISDIR(pst.st_mode)) return true;
    for (const std::string& name : MaskNames(parent.get(), pattern)) {
      struct stat st;
      if (fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISLNK(st.st_mode)) continue;  // decided by its own path
      if (!Cover((parent_path == "/" ? "" : parent_path) + "/" + name, S_ISDIR(st.st_mode))) {
        return false;
      }
    }
    return true;
  }

  // --- protected paths (see mount.cc: Protect) ---------------------------------------------

  bool Protect() {
    for (const std::string& root : spec_.protect.roots) {
      std::vector<std::pair<UniqueFd, std::string>> bases;
      UniqueFd root_fd = Walk(root_.get(), root);
      if (!root_fd) return error_->Set("mount", errno, "opening writable root ", root.c_str());
      bases.emplace_back(std::move(root_fd), root);
      FindNestedRepos(bases[0].first.get(), root, spec_.protect.nested_repo_depth, &bases);
      report_->nested_repos += static_cast<int>(bases.size()) - 1;
      for (auto& [fd, path] : bases) {
        struct stat st;
        if (fstat(fd.get(), &st) == 0 && report_->nbases < MountReport::kMaxBases) {
          report_->base_dev[report_->nbases] = st.st_dev;
          report_->base_ino[report_->nbases] = st.st_ino;
          ++report_->nbases;
        }
        for (const std::string& rel : spec_.protect.relpaths) {
          if (!ProtectOne(fd.get(), path, rel)) return false;
        }
      }
    }
    return true;
  }

  void FindNestedRepos(int dirfd, const std::string& path, int depth,
                       std::vector<std::pair<UniqueFd, std::string>>* out) {
    if (depth <= 0 || visited_ > 4000) return;
    Listing entries;
    if (!ListDir(dirfd, &entries)) return;
    struct stat here;
    if (fstat(dirfd, &here) != 0) return;
    for (const auto& [name, type] : entries) {
      if (type != DT_DIR || name == ".git" || name == "node_modules") continue;
      if (++visited_ > 4000) return;
      UniqueFd sub(OpenComponentNoFollow(dirfd, name.c_str(), O_PATH | O_DIRECTORY));
      struct stat st;
      if (!sub || fstat(sub.get(), &st) != 0 || st.st_dev != here.st_dev) continue;
      const std::string sub_path = path + "/" + name;
      if (fstatat(sub.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) {
        out->emplace_back(UniqueFd(fcntl(sub.get(), F_DUPFD_CLOEXEC, 3)), sub_path);
      }
      FindNestedRepos(sub.get(), sub_path, depth - 1, out);
    }
  }

  bool ProtectOne(int base_fd, const std::string& base_path, const std::string& rel) {
    std::vector<std::string> comps = policy::PathComponents(rel);
    UniqueFd held(fcntl(base_fd, F_DUPFD_CLOEXEC, 3));
    std::string path = base_path;
    for (size_t i = 0; i < comps.size(); ++i) {
      const bool last = i + 1 == comps.size();
      const std::string parent_path = path;
      path += "/" + comps[i];
      UniqueFd next(OpenComponentNoFollow(held.get(), comps[i].c_str(), O_PATH));
      if (!next) {
        if (errno == ENOENT || errno == ENOTDIR) return true;  // absent
        return error_->Set("mount", errno, "resolving protected path ", path.c_str());
      }
      struct stat st;
      if (fstat(next.get(), &st) != 0) return error_->Set("mount", errno, "stat ", path.c_str());
      if (S_ISLNK(st.st_mode)) {
        // A symlink cannot carry a mount: what contains it becomes read-only, unless that is
        // the writable root itself.
        if (i == 0) return true;
        struct stat pst;
        if (fstat(held.get(), &pst) != 0) return error_->Set("mount", errno, parent_path.c_str());
        ++report_->protected_existing;
        return ReadOnlyBind(root_path_ + parent_path, pst, parent_path);
      }
      if (last || !S_ISDIR(st.st_mode)) {
        if (!protected_.insert({st.st_dev, st.st_ino}).second) return true;
        ++report_->protected_existing;
        return ReadOnlyBind(root_path_ + path, st, path);
      }
      // Pin the directory on the way (still writable): a mount point cannot be renamed away.
      if (pinned_.insert({st.st_dev, st.st_ino}).second) {
        const std::string at = root_path_ + path;
        if (mount(at.c_str(), at.c_str(), nullptr, MS_BIND, nullptr) != 0) {
          return error_->Set("mount", errno, "pinning ", path.c_str());
        }
        ++report_->mounts;
        if (!CheckLanded(path, st, false)) return false;
        next.reset(OpenComponentNoFollow(held.get(), comps[i].c_str(), O_PATH | O_DIRECTORY));
        if (!next) return error_->Set("mount", errno, "reopening ", path.c_str());
      }
      held = std::move(next);
    }
    return true;
  }

  // --- entering the root -------------------------------------------------------------------

  bool EnterRoot() {
    if (chdir(root_path_.c_str()) != 0) return error_->Set("pivot_root", errno, "chdir");
    if (sys::PivotRoot(".", ".") == 0) {
      if (umount2(".", MNT_DETACH) != 0) return error_->Set("pivot_root", errno, "detach");
    } else {
      // gVisor has no pivot_root: the host's tree stays in this mount namespace, out of reach
      // of every process without CAP_SYS_CHROOT (init drops it before it serves anything).
      if (chroot(".") != 0) return error_->Set("chroot", errno, root_path_.c_str());
      report_->chroot = true;
    }
    if (chdir("/") != 0) return error_->Set("pivot_root", errno, "chdir /");
    return true;
  }

  const MountSpec& spec_;
  MountReport* report_;
  ChildError* error_;
  std::string stage_;      // the outer tmpfs's mount point
  std::string root_path_;  // the new root (stage_/view)
  UniqueFd root_;          // and its descriptor
  std::string ro_proc_;    // a read-only /proc instance, when one was needed
  int points_ = 0;
  int visited_ = 0;
  PendingSysctls sysctls_;
  std::set<std::pair<dev_t, ino_t>> pinned_, protected_;
};

}  // namespace

bool ApplyMountsByPath(const MountSpec& spec, MountReport* report, ChildError* error,
                       PendingSysctls* sysctls) {
  PathBuilder b(spec, report, error);
  if (!b.Run()) return false;
  *sysctls = b.TakeSysctls();
  return true;
}

}  // namespace ward::enforce
