#include "enforce/mount.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/linux.h"
#include "common/trace.h"
#include "common/unique_fd.h"
#include "enforce/beneath.h"
#include "enforce/mount_by_path.h"
#include "enforce/root_layout.h"

namespace ward::enforce {
namespace {

constexpr uint64_t kResolveInside = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
// Created in the root tmpfs during setup and unlinked before the root becomes read-only; the
// masks keep referencing its inode.
constexpr const char* kEmptyFile = ".ward-empty";

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = i;
    while (j < path.size() && path[j] != '/') ++j;
    if (j > i) parts.push_back(path.substr(i, j - i));
    i = j;
  }
  return parts;
}

uint64_t MountId(int fd) {
  struct statx stx;
  if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) != 0) return 0;
  return stx.stx_mnt_id;
}

class Builder {
 public:
  Builder(const MountSpec& spec, MountReport* report, ChildError* error)
      : spec_(spec), report_(report), error_(error) {}

  // The cover templates were never attached: their last close dissolves them, and that waits
  // for an RCU grace period (see ApplyMounts).
  void HandOverDetached(std::vector<UniqueFd>* out) {
    for (UniqueFd* t : {&file_cover_, &dir_cover_}) {
      if (*t) out->push_back(std::move(*t));
    }
  }

  bool Run() {
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      return error_->Set("mount", errno, "making / private");
    }
    if (!CaptureSources()) return false;
    TraceMark("init: sources captured");
    if (!CreateRoot()) return false;
    for (const MountOp& op : spec_.ops) {
      if (!Apply(op)) return false;
    }
    TraceMark("init: mount ops applied");
    for (const MaskOp& m : spec_.masks) {
      if (!Mask(m)) return false;
    }
    mask_parent_.reset();
    TraceMark("init: masks applied");
    if (!Protect()) return false;
    TraceMark("init: protected paths bound");
    if (unlinkat(root_.get(), kEmptyFile, 0) != 0) {
      return error_->Set("mount", errno, "removing setup file");
    }
    struct mount_attr attr = {};
    attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if (sys::MountSetattr(root_.get(), "", AT_EMPTY_PATH, &attr) != 0) {
      return error_->Set("mount", errno, "making the root read-only");
    }
    return PivotRoot();
  }

  // The sysctls opened while /proc/sys was writable (see OpenSysctls), not yet written.
  PendingSysctls TakeSysctls() { return std::move(sysctls_); }

 private:
  // Detached clones of every host path to bind, taken before anything covers the host tree.
  bool CaptureSources() {
    sources_.resize(spec_.ops.size());
    for (size_t i = 0; i < spec_.ops.size(); ++i) {
      const MountOp& op = spec_.ops[i];
      if (op.kind == MountOp::Kind::kBind) {
        UniqueFd fd = CaptureBindSource(op);
        if (!fd) return false;
        sources_[i] = std::move(fd);
      } else if (op.kind == MountOp::Kind::kDev) {
        if (!CaptureDevNodes()) return false;
      }
    }
    workspace_.reset();  // a descriptor of a host directory is not kept past the capture
    return true;
  }

  // The detached tree a bind attaches: the workspace's overlay in review mode, a clone opened
  // beneath the workspace, or a clone of the host path.
  UniqueFd CaptureBindSource(const MountOp& op) {
    if (!op.overlay_upper.empty()) return OverlayOfWorkspace(op);
    if (op.beneath_workspace) return CloneBeneathWorkspace(op);
    return CloneTree(AT_FDCWD, op.source.c_str(), op.writable, op.source.c_str());
  }

  // The host's device nodes that the minimal /dev shows (BuildDev), into dev_sources_.
  bool CaptureDevNodes() {
    for (const char* node : kDevNodes) {
      std::string host = std::string("/dev/") + node;
      int fd = sys::OpenTree(AT_FDCWD, host.c_str(),
                             OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
      if (fd < 0) return error_->Set("mount", errno, "cloning ", host.c_str());
      struct mount_attr attr = {};
      // Read-only: writing to a device node is unaffected, but chmod/chown/utimes of the
      // host's node (which root inside would own) fail with EROFS.
      attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;
      if (sys::MountSetattr(fd, "", AT_EMPTY_PATH, &attr) != 0) {
        close(fd);
        return error_->Set("mount", errno, "setting flags of ", host.c_str());
      }
      dev_sources_.emplace_back(fd);
    }
    return true;
  }

  // A bind of the workspace or of something in it: opened from the workspace's directory with
  // no symlink on the way (beneath.h), so a sandbox of the same workspace that swapped a
  // directory for a symlink since the planner looked makes this fail, never bind the link's
  // target.
  UniqueFd CloneBeneathWorkspace(const MountOp& op) {
    std::optional<std::string> rel = RelativeBeneath(spec_.workspace, op.source);
    if (spec_.workspace.empty() || !rel) {
      error_->Set("mount", EINVAL,
                  "bind marked beneath the workspace lies outside it: ", op.source.c_str());
      return UniqueFd();
    }
    if (!workspace_) {
      workspace_.reset(
          open(spec_.workspace.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!workspace_) {
        error_->Set("mount", errno, "opening the workspace ", spec_.workspace.c_str());
        return UniqueFd();
      }
    }
    if (rel->empty()) return CloneTree(workspace_.get(), "", op.writable, op.source.c_str());
    UniqueFd fd(
        sys::Openat2(workspace_.get(), rel->c_str(), O_PATH | O_CLOEXEC, 0, kResolveBeneath));
    if (!fd) {
      error_->Set("mount", errno,
                  "opening in the workspace, following no symlink: ", op.source.c_str());
      return UniqueFd();
    }
    return CloneTree(fd.get(), "", op.writable, op.source.c_str());
  }

  // The workspace in review mode: a new overlay whose lower layer is the workspace's directory
  // (opened as CloneBeneathWorkspace opens it; overlayfs never writes a lower layer) and whose
  // upper and work directories are in ward's state directory, which no sandbox sees. Every
  // layer is handed over as a descriptor, never as a path overlayfs would parse. `userxattr`:
  // the mount is made in the sandbox's user namespace (as root too), where overlayfs keeps its
  // whiteout and opaque marks in user.overlay.* attributes (Linux >= 5.11).
  UniqueFd OverlayOfWorkspace(const MountOp& op) {
    if (spec_.workspace.empty() || op.source != spec_.workspace) {
      error_->Set("mount", EINVAL, "overlay of something other than the workspace: ",
                  op.source.c_str());
      return UniqueFd();
    }
    UniqueFd lower(open(spec_.workspace.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    UniqueFd upper(open(op.overlay_upper.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    UniqueFd work(open(op.overlay_work.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!lower || !upper || !work) {
      error_->Set("mount", errno, "opening the overlay's layers for ", op.source.c_str());
      return UniqueFd();
    }
    UniqueFd fs(sys::Fsopen("overlay", FSOPEN_CLOEXEC));
    if (!fs) {
      error_->Set("mount", errno, "fsopen overlay (review mode) for ", op.source.c_str());
      return UniqueFd();
    }
    const std::pair<const char*, int> layers[] = {
        {"lowerdir+", lower.get()}, {"upperdir", upper.get()}, {"workdir", work.get()}};
    for (const auto& [key, fd] : layers) {
      if (!SetOverlayLayer(fs.get(), key, fd)) {
        error_->Set("mount", errno, "configuring the overlay's ", key);
        return UniqueFd();
      }
    }
    if (sys::Fsconfig(fs.get(), FSCONFIG_SET_FLAG, "userxattr", nullptr, 0) != 0 ||
        sys::Fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
      error_->Set("mount", errno, "creating the overlay (review mode) of ", op.source.c_str());
      return UniqueFd();
    }
    UniqueFd mnt(sys::Fsmount(fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
    if (!mnt) error_->Set("mount", errno, "fsmount of the overlay of ", op.source.c_str());
    return mnt;
  }

  // One layer by descriptor (Linux >= 6.13 takes it as is); before that, by the descriptor's
  // /proc/self/fd name, which overlayfs resolves to the very directory that was opened (the
  // legacy "lowerdir" key, since "lowerdir+" came with 6.5).
  static bool SetOverlayLayer(int fs, const char* key, int fd) {
    if (sys::Fsconfig(fs, FSCONFIG_SET_FD, key, nullptr, fd) == 0) return true;
    // EOPNOTSUPP: an overlayfs that takes its options only as text (Linux < 6.5); EBADF: one
    // that takes "lowerdir+" as a path but not as a descriptor (6.5 to 6.12).
    if (errno != EINVAL && errno != EOPNOTSUPP && errno != EBADF) return false;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    const char* legacy = std::strcmp(key, "lowerdir+") == 0 ? "lowerdir" : key;
    return sys::Fsconfig(fs, FSCONFIG_SET_STRING, legacy, path, 0) == 0;
  }

  UniqueFd CloneTree(int dirfd, const char* path, bool writable, const char* what) {
    int flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW;
    if (*path == '\0') flags |= AT_EMPTY_PATH;
    UniqueFd fd(sys::OpenTree(dirfd, path, flags));
    if (!fd) {
      error_->Set("mount", errno, "cloning ", what);
      return UniqueFd();
    }
    struct mount_attr attr = {};
    attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (writable ? 0 : MOUNT_ATTR_RDONLY);
    attr.propagation = MS_PRIVATE;
    if (sys::MountSetattr(fd.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr) != 0) {
      error_->Set("mount", errno, "setting flags of ", what);
      return UniqueFd();
    }
    return fd;
  }

  UniqueFd NewMount(const char* fstype,
                    const std::vector<std::pair<const char*, std::string>>& opts, unsigned attrs,
                    const char* what) {
    UniqueFd fs(sys::Fsopen(fstype, FSOPEN_CLOEXEC));
    if (!fs) {
      error_->Set("mount", errno, "fsopen ", fstype);
      return UniqueFd();
    }
    for (const auto& [key, value] : opts) {
      int r = value.empty() ? sys::Fsconfig(fs.get(), FSCONFIG_SET_FLAG, key, nullptr, 0)
                            : sys::Fsconfig(fs.get(), FSCONFIG_SET_STRING, key, value.c_str(), 0);
      if (r != 0) {
        error_->Set("mount", errno, "configuring ", what);
        return UniqueFd();
      }
    }
    if (sys::Fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
      error_->Set("mount", errno, "creating ", what);
      return UniqueFd();
    }
    UniqueFd mnt(sys::Fsmount(fs.get(), FSMOUNT_CLOEXEC, attrs));
    if (!mnt) error_->Set("mount", errno, "fsmount ", what);
    return mnt;
  }

  bool CreateRoot() {
    root_ = NewMount("tmpfs", {{"mode", "0755"}, {"size", "1m"}},
                     MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "the root tmpfs");
    if (!root_) return false;
    // Staging place: any directory works since every host source is already captured.
    const char* stage = access("/tmp", F_OK) == 0 ? "/tmp" : "/mnt";
    if (sys::MoveMount(root_.get(), "", AT_FDCWD, stage, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
      return error_->Set("mount", errno, "attaching the root tmpfs at ", stage);
    }
    owned_mounts_.insert(MountId(root_.get()));
    UniqueFd f(openat(root_.get(), kEmptyFile, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0));
    if (!f) return error_->Set("mount", errno, "creating setup file");
    ++report_->mounts;
    return true;
  }

  // Opens the directory at `path` (inside the new root), creating missing components only in
  // tmpfs mounts ward made itself: never in a host directory.
  UniqueFd OpenDir(const std::string& path, bool create) {
    // Usually the directory exists: one resolution of the whole path.
    {
      std::string rel = path.find_first_not_of('/') == std::string::npos
                            ? "."
                            : path.substr(path.find_first_not_of('/'));
      UniqueFd fd(sys::Openat2(root_.get(), rel.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                               kResolveInside));
      if (fd || errno != ENOENT || !create) {
        if (!fd) error_->Set("mount", errno, "opening ", path.c_str());
        return fd;
      }
    }
    UniqueFd cur(fcntl(root_.get(), F_DUPFD_CLOEXEC, 3));
    for (const std::string& comp : Split(path)) {
      UniqueFd next(sys::Openat2(cur.get(), comp.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                 kResolveInside));
      if (!next && errno == ENOENT && create) {
        if (owned_mounts_.count(MountId(cur.get())) == 0) {
          error_->Set("mount", ENOENT, "parent directory outside ward's tmpfs: ", path.c_str());
          return UniqueFd();
        }
        if (mkdirat(cur.get(), comp.c_str(), 0755) != 0 && errno != EEXIST) {
          error_->Set("mount", errno, "mkdir ", path.c_str());
          return UniqueFd();
        }
        next.reset(sys::Openat2(cur.get(), comp.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                kResolveInside));
      }
      if (!next) {
        error_->Set("mount", errno, "opening ", path.c_str());
        return UniqueFd();
      }
      cur = std::move(next);
    }
    return cur;
  }

  static std::string Parent(const std::string& p) {
    size_t slash = p.find_last_of('/');
    return slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
  }
  static std::string Base(const std::string& p) { return p.substr(p.find_last_of('/') + 1); }

  // Creates `name` in `dirfd` (a directory of a tmpfs ward made) as a directory or an empty
  // file; one that exists already is fine. 0 or -1 with errno.
  static int CreateEntry(int dirfd, const char* name, bool dir) {
    if (dir) return mkdirat(dirfd, name, 0755) == 0 || errno == EEXIST ? 0 : -1;
    int f = openat(dirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (f >= 0) close(f);
    return f >= 0 || errno == EEXIST ? 0 : -1;
  }

  // Opens (creating in an owned tmpfs if missing) the mount point for `target`.
  UniqueFd MountPoint(const std::string& target, bool dir) {
    std::string base = Base(target);
    unsigned flags = O_PATH | O_CLOEXEC | O_NOFOLLOW | (dir ? O_DIRECTORY : 0);
    if (Parent(target) == "/") {
      // In the root tmpfs, which ward made and nothing else has seen: made first (it usually
      // is missing), then opened as strictly as anywhere else.
      if (CreateEntry(root_.get(), base.c_str(), dir) != 0) {
        error_->Set("mount", errno, "creating mount point ", target.c_str());
        return UniqueFd();
      }
      UniqueFd fd(sys::Openat2(root_.get(), base.c_str(), flags, 0, kResolveInside));
      if (!fd) error_->Set("mount", errno, "opening mount point ", target.c_str());
      return fd;
    }
    UniqueFd parent = OpenDir(Parent(target), true);
    if (!parent) return UniqueFd();
    UniqueFd fd(sys::Openat2(parent.get(), base.c_str(), flags, 0, kResolveInside));
    if (!fd && errno == ENOENT) {
      if (owned_mounts_.count(MountId(parent.get())) == 0) {
        error_->Set("mount", ENOENT, "mount point missing in a host directory: ", target.c_str());
        return UniqueFd();
      }
      if (CreateEntry(parent.get(), base.c_str(), dir) != 0) {
        error_->Set("mount", errno, "creating mount point ", target.c_str());
        return UniqueFd();
      }
      fd.reset(sys::Openat2(parent.get(), base.c_str(), flags, 0, kResolveInside));
    }
    if (!fd) error_->Set("mount", errno, "opening mount point ", target.c_str());
    return fd;
  }

  bool Attach(int mnt_fd, int target_fd, const std::string& what) {
    return AttachAt(mnt_fd, target_fd, "", what);
  }
  // Onto `name` in `dirfd` (its last component not followed: no MOVE_MOUNT_T_SYMLINKS), or onto
  // `dirfd` itself when `name` is empty. Only by name within a tree ward made itself.
  bool AttachAt(int mnt_fd, int dirfd, const char* name, const std::string& what) {
    const unsigned flags = MOVE_MOUNT_F_EMPTY_PATH | (*name ? 0 : MOVE_MOUNT_T_EMPTY_PATH);
    if (sys::MoveMount(mnt_fd, "", dirfd, name, flags) != 0) {
      return error_->Set("mount", errno, "attaching ", what.c_str());
    }
    ++report_->mounts;
    return true;
  }

  bool Apply(const MountOp& op) {
    size_t index = &op - spec_.ops.data();
    switch (op.kind) {
      case MountOp::Kind::kTmpfs:
        return AttachTmpfs(op);
      case MountOp::Kind::kBind: {
        UniqueFd tgt = MountPoint(op.target, op.is_dir);
        return tgt && Attach(sources_[index].get(), tgt.get(), op.target);
      }
      case MountOp::Kind::kSymlink:
        return PlaceSymlink(op);
      case MountOp::Kind::kFile:
        return PlaceFile(op);
      case MountOp::Kind::kDev:
        return BuildDev(op);
      case MountOp::Kind::kProc:
        return BuildProc(op);
    }
    return true;
  }

  // A tmpfs of ward's own: mount points may be made in it (owned_mounts_).
  bool AttachTmpfs(const MountOp& op) {
    std::vector<std::pair<const char*, std::string>> opts;
    char mode[16];
    snprintf(mode, sizeof mode, "%o", op.mode);
    opts.push_back({"mode", mode});
    if (op.size > 0) opts.push_back({"size", std::to_string(op.size)});
    UniqueFd mnt = NewMount("tmpfs", opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, op.target.c_str());
    if (!mnt) return false;
    UniqueFd tgt = MountPoint(op.target, true);
    if (!tgt || !Attach(mnt.get(), tgt.get(), op.target)) return false;
    owned_mounts_.insert(MountId(mnt.get()));
    return true;
  }

  // A symlink, only in a tmpfs ward made itself.
  bool PlaceSymlink(const MountOp& op) {
    if (Parent(op.target) == "/") {  // the root tmpfs: ward's own (see MountPoint)
      if (symlinkat(op.source.c_str(), root_.get(), Base(op.target).c_str()) != 0 &&
          errno != EEXIST) {
        return error_->Set("mount", errno, "symlink ", op.target.c_str());
      }
      return true;
    }
    UniqueFd parent = OpenDir(Parent(op.target), true);
    if (!parent) return false;
    if (owned_mounts_.count(MountId(parent.get())) == 0) {
      return error_->Set("mount", EPERM, "symlink outside ward's tmpfs: ", op.target.c_str());
    }
    if (symlinkat(op.source.c_str(), parent.get(), Base(op.target).c_str()) != 0 &&
        errno != EEXIST) {
      return error_->Set("mount", errno, "symlink ", op.target.c_str());
    }
    return true;
  }

  // A file with fixed content, over a bound file (e.g. /etc/resolv.conf) or in a tmpfs.
  bool PlaceFile(const MountOp& op) {
    // A staging file in the root tmpfs, bound over the target; the name is removed once the
    // mount holds the inode (a mount cannot be attached from an already unlinked file).
    const char* stage_name = ".ward-file";
    {
      UniqueFd f(openat(root_.get(), stage_name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, op.mode));
      if (!f) return error_->Set("mount", errno, "staging ", op.target.c_str());
      if (write(f.get(), op.content.data(), op.content.size()) !=
          static_cast<ssize_t>(op.content.size())) {
        return error_->Set("mount", errno, "writing ", op.target.c_str());
      }
    }
    UniqueFd tree = CloneTree(root_.get(), stage_name, false, op.target.c_str());
    if (!tree) return false;
    UniqueFd tgt = MountPoint(op.target, false);
    if (!tgt || !Attach(tree.get(), tgt.get(), op.target)) return false;
    if (unlinkat(root_.get(), stage_name, 0) != 0) {
      return error_->Set("mount", errno, "unstaging ", op.target.c_str());
    }
    return true;
  }

  bool BuildDev(const MountOp& op) {
    UniqueFd mnt = NewMount("tmpfs", {{"mode", "0755"}, {"size", "64k"}},
                            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, "/dev");
    if (!mnt) return false;
    UniqueFd tgt = MountPoint(op.target, true);
    if (!tgt || !Attach(mnt.get(), tgt.get(), op.target)) return false;
    owned_mounts_.insert(MountId(mnt.get()));
    // Everything below is made in that new tmpfs, relative to its own fd: nothing else has
    // seen it, so no path needs resolving.
    const int dev = mnt.get();
    for (size_t i = 0; i < dev_sources_.size(); ++i) {
      std::string node = op.target + "/" + kDevNodes[i];
      UniqueFd point(openat(dev, kDevNodes[i], O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644));
      if (!point) return error_->Set("mount", errno, "creating mount point ", node.c_str());
      if (!Attach(dev_sources_[i].get(), point.get(), node)) return false;
    }
    auto subdir = [&](const char* name) {
      UniqueFd fd;
      if (mkdirat(dev, name, 0755) == 0) {
        fd.reset(openat(dev, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      }
      if (!fd)
        error_->Set("mount", errno, "creating mount point ", (op.target + "/" + name).c_str());
      return fd;
    };
    // A private devpts instance: the sandbox's ptys are its own, never the host's.
    UniqueFd pts = NewMount("devpts", {{"newinstance", ""}, {"ptmxmode", "0666"}, {"mode", "0620"}},
                            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, "/dev/pts");
    if (!pts) return false;
    UniqueFd pts_point = subdir("pts");
    if (!pts_point || !Attach(pts.get(), pts_point.get(), op.target + "/pts")) return false;
    UniqueFd shm = NewMount("tmpfs", {{"mode", "1777"}, {"size", "64m"}},
                            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "/dev/shm");
    if (!shm) return false;
    UniqueFd shm_point = subdir("shm");
    if (!shm_point || !Attach(shm.get(), shm_point.get(), op.target + "/shm")) return false;
    const std::pair<const char*, const char*> links[] = {
        {"ptmx", "pts/ptmx"},          {"fd", "/proc/self/fd"},       {"stdin", "/proc/self/fd/0"},
        {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}, {"core", "/proc/kcore"},
    };
    for (const auto& [name, dest] : links) {
      if (std::strcmp(name, "core") == 0) continue;  // never expose kcore
      if (symlinkat(dest, dev, name) != 0 && errno != EEXIST) {
        return error_->Set("mount", errno, "/dev symlink ", name);
      }
    }
    return true;
  }

  bool BuildProc(const MountOp& op) {
    UniqueFd mnt =
        NewMount("proc", {}, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, "/proc");
    if (!mnt) return false;
    UniqueFd tgt = MountPoint(op.target, true);
    if (!tgt || !Attach(mnt.get(), tgt.get(), op.target)) return false;
    if (!OpenSysctls(mnt.get())) return false;
    // Kernel knobs and host-wide information: read-only, or covered with an empty file/dir.
    // Which of them this kernel has, and their types: one listing of the new /proc instead of
    // a stat each. It is this pid namespace's own procfs, which nothing else has seen, so each
    // entry is then mounted on by its name relative to it (never following a symlink).
    Listing entries;
    if (!ListDir(mnt.get(), &entries)) return error_->Set("mount", errno, "listing /proc");
    auto type_of = [&](const char* name) -> int {
      for (const auto& [n, type] : entries) {
        if (n == name) return type;
      }
      return -1;  // absent
    };
    for (const char* name : kProcReadOnly) {
      if (type_of(name) < 0) continue;
      std::string what = op.target + "/" + name;
      UniqueFd tree = CloneTree(mnt.get(), name, false, what.c_str());
      if (!tree || !AttachAt(tree.get(), mnt.get(), name, what)) return false;
    }
    for (const char* name : kProcHidden) {
      int type = type_of(name);
      if (type < 0) continue;
      if (type == DT_UNKNOWN) {
        struct stat st;
        if (fstatat(mnt.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
      }
      if (type == DT_LNK) continue;  // a symlink cannot be covered (none of these is one)
      if (!Cover(mnt.get(), name, type == DT_DIR, op.target + "/" + name)) return false;
    }
    return true;
  }

  // The user.* knobs are per user namespace and init holds CAP_SYS_RESOURCE in its own, so
  // they can be lowered. Opened here, before /proc/sys becomes read-only for good; written
  // once the root is built, because the mount API's detached trees count as mount namespaces.
  bool OpenSysctls(int proc_fd) {
    // Each directory is resolved once (sysctl lookups are slow), each knob relative to it.
    std::string dir_path;
    UniqueFd dir;
    for (const Sysctl& s : spec_.sysctls) {
      std::string rel = "sys/" + s.path;
      std::string parent = rel.substr(0, rel.rfind('/'));
      if (!dir || parent != dir_path) {
        dir.reset(sys::Openat2(proc_fd, parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                               kResolveInside));
        dir_path = parent;
        if (!dir) {
          if (errno == ENOENT && s.optional) continue;
          return error_->Set("sysctl", errno, "/proc/", parent.c_str());
        }
      }
      std::string base = rel.substr(rel.rfind('/') + 1);
      UniqueFd f(sys::Openat2(dir.get(), base.c_str(), O_WRONLY | O_CLOEXEC, 0, kResolveInside));
      if (!f) {
        if (errno == ENOENT && s.optional) continue;
        return error_->Set("sysctl", errno, "/proc/", rel.c_str());
      }
      sysctls_.emplace_back(std::move(f), &s);
    }
    return true;
  }

  // Covers an entry with an empty, unreadable file or an empty read-only directory. The first
  // cover of each kind is made in full and kept detached as a template; later ones are clones
  // of it (one open_tree instead of a new tmpfs or a clone plus mount_setattr each): /proc
  // alone has some twenty entries to hide.
  bool Cover(int point_fd, bool dir, const std::string& what) {
    return Cover(point_fd, "", dir, what);
  }
  // The same for the entry `name` of `dirfd` (see AttachAt).
  bool Cover(int dirfd, const char* name, bool dir, const std::string& what) {
    UniqueFd& tmpl = dir ? dir_cover_ : file_cover_;
    if (!tmpl) {
      tmpl = dir ? NewMount(
                       "tmpfs", {{"mode", "0"}, {"size", "4k"}},
                       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                       what.c_str())
                 : CloneTree(root_.get(), kEmptyFile, false, what.c_str());
      if (!tmpl) return false;
    }
    UniqueFd cover;
    if (clone_covers_) {
      cover.reset(
          sys::OpenTree(tmpl.get(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH));
      // Older kernels refuse to clone a detached mount: each cover is then made in full.
      if (!cover && errno == EINVAL) clone_covers_ = false;
      if (!cover && clone_covers_) {
        return error_->Set("mount", errno, "cloning the cover of ", what.c_str());
      }
    }
    if (!clone_covers_) cover = std::move(tmpl);  // the next cover makes a template anew
    ++report_->masked;
    return AttachAt(cover.get(), dirfd, name, what);
  }

  bool Mask(const MaskOp& m) {
    std::string parent_path = Parent(m.target);
    std::string pattern = Base(m.target);
    // The same directory as the previous mask's (/etc for several): opened once. A mask covers
    // an entry of its directory, never the directory itself, so the fd still names what the
    // path does.
    if (!mask_parent_ || parent_path != mask_parent_path_) {
      mask_parent_.reset(sys::Openat2(root_.get(), parent_path.c_str() + 1,
                                      O_PATH | O_DIRECTORY | O_CLOEXEC, 0, kResolveInside));
      mask_parent_path_ = parent_path;
    }
    const UniqueFd& parent = mask_parent_;
    if (!parent) {
      if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) return true;  // not visible
      return error_->Set("mount", errno, "resolving mask ", m.target.c_str());
    }
    for (const std::string& name : MaskNames(parent.get(), pattern)) {
      struct stat st;
      if (fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      // A symlink cannot be covered; whatever it points to is decided by its own path.
      if (S_ISLNK(st.st_mode)) continue;
      UniqueFd point(sys::Openat2(parent.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC, 0,
                                  kResolveInside));
      if (!point) return error_->Set("mount", errno, "opening mask ", name.c_str());
      if (!Cover(point.get(), S_ISDIR(st.st_mode), parent_path + "/" + name)) return false;
    }
    return true;
  }

  // Protected paths: read-only self-binds below each writable root and nested repository;
  // intermediate directories are pinned (a mount point cannot be renamed or removed), so
  // `mv .git x` cannot carry the protection away.
  bool Protect() {
    for (const std::string& root : spec_.protect.roots) {
      UniqueFd root_fd(sys::Openat2(root_.get(), root.c_str() + 1, O_PATH | O_DIRECTORY | O_CLOEXEC,
                                    0, kResolveInside));
      if (!root_fd) return error_->Set("mount", errno, "opening writable root ", root.c_str());
      std::vector<std::pair<UniqueFd, std::string>> bases;
      bases.emplace_back(std::move(root_fd), root);
      // The root's entries, read once: for the nested repositories below it and for the
      // protected names, most of which are absent (each would otherwise cost a lookup).
      Listing top;
      const bool listed = ListDir(bases[0].first.get(), &top);
      FindNestedRepos(bases[0].first.get(), root, spec_.protect.nested_repo_depth, &bases,
                      listed ? &top : nullptr);
      report_->nested_repos += static_cast<int>(bases.size()) - 1;
      for (size_t b = 0; b < bases.size(); ++b) {
        auto& [fd, path] = bases[b];
        struct stat st;
        if (fstat(fd.get(), &st) == 0 && report_->nbases < MountReport::kMaxBases) {
          report_->base_dev[report_->nbases] = st.st_dev;
          report_->base_ino[report_->nbases] = st.st_ino;
          ++report_->nbases;
        }
        Listing own;
        const Listing* names =
            b == 0 ? (listed ? &top : nullptr) : (ListDir(fd.get(), &own) ? &own : nullptr);
        const std::vector<bool> present = FirstComponentsPresent(names);
        for (size_t r = 0; r < spec_.protect.relpaths.size(); ++r) {
          // Absent now: not creatable either (the supervisor refuses that), nothing to bind.
          if (!present[r]) continue;
          if (!ProtectOne(fd.get(), path, spec_.protect.relpaths[r])) return false;
        }
      }
    }
    return true;
  }

  // Which of the protected relative paths have their first component among `names` (all of
  // them when the directory could not be listed: each is then looked up).
  std::vector<bool> FirstComponentsPresent(const Listing* names) const {
    const std::vector<std::string>& rels = spec_.protect.relpaths;
    std::vector<bool> present(rels.size(), names == nullptr);
    if (names == nullptr) return present;
    std::vector<std::pair<std::string_view, size_t>> firsts;  // sorted: one search per entry
    for (size_t r = 0; r < rels.size(); ++r) {
      std::string_view rel = rels[r];
      rel.remove_prefix(std::min(rel.find_first_not_of('/'), rel.size()));
      firsts.emplace_back(rel.substr(0, rel.find('/')), r);
    }
    std::sort(firsts.begin(), firsts.end());
    for (const auto& entry : *names) {
      std::string_view name = entry.first;
      auto it = std::lower_bound(firsts.begin(), firsts.end(), std::make_pair(name, size_t{0}));
      for (; it != firsts.end() && it->first == name; ++it) present[it->second] = true;
    }
    return present;
  }

  void FindNestedRepos(int dirfd, const std::string& path, int depth,
                       std::vector<std::pair<UniqueFd, std::string>>* out,
                       const Listing* listed = nullptr) {
    if (depth <= 0 || visited_ > 4000) return;
    Listing own;
    if (listed == nullptr) {
      if (!ListDir(dirfd, &own)) return;
      listed = &own;
    }
    std::vector<std::string> subdirs;
    for (const auto& [name, type] : *listed) {
      if (type != DT_DIR) continue;
      if (name == "." || name == ".." || name == ".git" || name == "node_modules") continue;
      subdirs.push_back(name);
    }
    for (const std::string& name : subdirs) {
      if (++visited_ > 4000) return;
      UniqueFd sub(sys::Openat2(dirfd, name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                kResolveInside | RESOLVE_NO_XDEV));
      if (!sub) continue;
      struct stat st;
      std::string sub_path = path + "/" + name;
      if (fstatat(sub.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) {
        UniqueFd copy(fcntl(sub.get(), F_DUPFD_CLOEXEC, 3));
        out->emplace_back(std::move(copy), sub_path);
      }
      FindNestedRepos(sub.get(), sub_path, depth - 1, out);
    }
  }

  bool SelfBind(int fd, bool read_only, const std::string& what) {
    UniqueFd tree = CloneTree(fd, "", !read_only, what.c_str());
    return tree && Attach(tree.get(), fd, what);
  }

  bool ProtectOne(int base_fd, const std::string& base_path, const std::string& rel) {
    std::vector<std::string> comps = Split(rel);
    // The directory the next component is looked up in: the base itself (not a copy of its fd:
    // most protected names are absent, and that lookup is all they cost), then what was opened.
    UniqueFd held;
    int cur = base_fd;
    std::string path = base_path;
    for (size_t i = 0; i < comps.size(); ++i) {
      bool last = i + 1 == comps.size();
      path += "/" + comps[i];
      UniqueFd next(
          sys::Openat2(cur, comps[i].c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, kResolveInside));
      if (!next) {
        if (errno == ENOENT || errno == ENOTDIR) return true;  // absent: not creatable (supervisor)
        return error_->Set("mount", errno, "resolving protected path ", path.c_str());
      }
      struct stat st;
      if (fstat(next.get(), &st) != 0) return error_->Set("mount", errno, "stat ", path.c_str());
      if (S_ISLNK(st.st_mode)) {
        // A symlink cannot carry a mount: pin what contains it instead (read-only), unless that
        // is the writable root itself, whose protected names stay uncreatable.
        if (i == 0) return true;
        ++report_->protected_existing;
        return SelfBind(cur, true, path);
      }
      if (last || !S_ISDIR(st.st_mode)) {
        // The protected entry itself (or a file where a directory was expected, such as a
        // .git pointer file): read-only.
        if (already_protected_.count({st.st_dev, st.st_ino})) return true;
        already_protected_.insert({st.st_dev, st.st_ino});
        ++report_->protected_existing;
        return SelfBind(next.get(), true, path);
      }
      // Pin the intermediate directory (still writable) so it cannot be renamed away.
      if (!pinned_.count({st.st_dev, st.st_ino})) {
        pinned_.insert({st.st_dev, st.st_ino});
        if (!SelfBind(next.get(), false, path)) return false;
        next.reset(sys::Openat2(cur, comps[i].c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC, 0,
                                kResolveInside));
        if (!next) return error_->Set("mount", errno, "reopening ", path.c_str());
      }
      held = std::move(next);
      cur = held.get();
    }
    return true;
  }

  bool PivotRoot() {
    if (fchdir(root_.get()) != 0) return error_->Set("pivot_root", errno, "chdir to new root");
    if (sys::PivotRoot(".", ".") != 0) return error_->Set("pivot_root", errno, "pivot_root");
    TraceMark("init: pivoted");
    // The old root is now stacked on top of "."; detach it.
    if (umount2(".", MNT_DETACH) != 0) return error_->Set("pivot_root", errno, "detach old root");
    TraceMark("init: old root detached");
    if (chdir("/") != 0) return error_->Set("pivot_root", errno, "chdir /");
    return true;
  }

  const MountSpec& spec_;
  MountReport* report_;
  ChildError* error_;
  UniqueFd root_;
  std::vector<UniqueFd> sources_;
  UniqueFd workspace_;  // the workspace's directory, while sources are captured
  std::vector<UniqueFd> dev_sources_;
  std::set<uint64_t> owned_mounts_;
  PendingSysctls sysctls_;
  UniqueFd file_cover_, dir_cover_;  // detached templates of the masks (see Cover)
  bool clone_covers_ = true;          // false where the kernel cannot clone a detached mount
  UniqueFd mask_parent_;             // the last mask's directory (see Mask)
  std::string mask_parent_path_;
  std::set<std::pair<dev_t, ino_t>> pinned_;
  std::set<std::pair<dev_t, ino_t>> already_protected_;
  int visited_ = 0;
};

}  // namespace

bool ApplyMounts(const MountSpec& spec, MountReport* report, ChildError* error,
                 std::vector<UniqueFd>* detached, PendingSysctls* sysctls) {
  if (spec.by_path) {
    PendingSysctls own;
    if (!ApplyMountsByPath(spec, report, error, sysctls ? sysctls : &own)) return false;
    return sysctls != nullptr || WriteSysctls(&own, error);
  }
  Builder b(spec, report, error);
  if (!b.Run()) return false;
  if (detached) b.HandOverDetached(detached);
  if (sysctls) {
    *sysctls = b.TakeSysctls();
    return true;
  }
  PendingSysctls own = b.TakeSysctls();
  return WriteSysctls(&own, error);
}

bool WriteSysctls(PendingSysctls* sysctls, ChildError* error) {
  for (const auto& [fd, s] : *sysctls) {
    if (write(fd.get(), s->value.data(), s->value.size()) !=
        static_cast<ssize_t>(s->value.size())) {
      return error->Set("sysctl", errno, "/proc/sys/", s->path.c_str());
    }
  }
  sysctls->clear();
  return true;
}

}  // namespace ward::enforce
