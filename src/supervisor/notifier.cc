#include "supervisor/notifier.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "common/linux.h"

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

namespace ward::supervisor {
namespace {

constexpr uint64_t kInRoot = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;

std::vector<std::string> SplitPath(const std::string& p) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < p.size()) {
    while (i < p.size() && p[i] == '/') ++i;
    size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    if (j > i) out.push_back(p.substr(i, j - i));
    i = j;
  }
  return out;
}

// Reads a NUL-terminated string from the target's memory, page by page (a string may end just
// before an unmapped page). Returns -errno on failure.
int ReadString(pid_t pid, uint64_t addr, std::string* out) {
  out->clear();
  if (addr == 0) return -EFAULT;
  char buf[4096];
  // Most paths are short: read 256 bytes first (never past the page), the rest a page at a time.
  size_t want = 256;
  while (out->size() < PATH_MAX) {
    size_t page_left = 4096 - (addr % 4096);
    size_t len = std::min(page_left, want);
    want = sizeof buf;
    struct iovec local = {buf, len};
    struct iovec remote = {reinterpret_cast<void*>(addr), len};
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) return n < 0 ? -errno : -EFAULT;
    void* nul = std::memchr(buf, '\0', n);
    if (nul) {
      out->append(buf, static_cast<char*>(nul) - buf);
      return 0;
    }
    out->append(buf, n);
    addr += n;
  }
  return -ENAMETOOLONG;
}

int ReadUmask(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", pid);
  FILE* f = std::fopen(path, "re");
  if (!f) return 022;
  char line[256];
  int mask = 022;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "Umask:", 6) == 0) {
      mask = static_cast<int>(std::strtol(line + 6, nullptr, 8));
      break;
    }
  }
  std::fclose(f);
  return mask;
}

// The sandbox-side view of one trapped call's process: its root and its cwd/dirfds, resolved
// through /proc/<tid>, which reaches the sandbox's own mounts (read-only binds stay read-only).
class View {
 public:
  explicit View(pid_t tid) : tid_(tid) {}

  bool Open() {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/root", tid_);
    root_.reset(open(path, O_PATH | O_DIRECTORY | O_CLOEXEC));
    return root_.valid();
  }

  // The sandbox-absolute path of a dirfd argument (AT_FDCWD: the cwd).
  int DirPath(int dirfd, std::string* out) const {
    char link[64], buf[PATH_MAX];
    if (dirfd == AT_FDCWD) {
      std::snprintf(link, sizeof link, "/proc/%d/cwd", tid_);
    } else {
      std::snprintf(link, sizeof link, "/proc/%d/fd/%d", tid_, dirfd);
    }
    ssize_t n = readlink(link, buf, sizeof buf - 1);
    if (n < 0) return errno == ENOENT ? -EBADF : -errno;
    buf[n] = '\0';
    if (buf[0] != '/') return -ENOTDIR;  // a pipe, socket or anon inode: not a directory
    *out = buf;
    return 0;
  }

  // Splits dirfd+path into the directory that will hold the entry (opened O_PATH, in the
  // sandbox's view) and the entry's name. A trailing "." or ".." makes the whole path the
  // directory and the name ".".
  int ResolveParent(int dirfd, const std::string& path, UniqueFd* parent, std::string* name) const {
    if (path.empty()) return -ENOENT;
    std::string abs;
    if (path[0] == '/') {
      abs = path;
    } else {
      std::string base;
      if (int rc = DirPath(dirfd, &base); rc != 0) return rc;
      abs = base + "/" + path;
    }
    std::vector<std::string> comps = SplitPath(abs);
    std::string last = comps.empty() ? "." : comps.back();
    std::string dir = "/";
    if (last == "." || last == "..") {
      dir = abs;
      last = ".";
    } else {
      comps.pop_back();
      for (const auto& c : comps) dir += c + "/";
    }
    UniqueFd fd(
        sys::Openat2(root_.get(), dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, kInRoot));
    if (!fd) return -errno;
    *parent = std::move(fd);
    *name = last;
    return 0;
  }

  int root() const { return root_.get(); }
  pid_t tid() const { return tid_; }

 private:
  pid_t tid_;
  UniqueFd root_;
};

// Whether `name` in `dirfd` is the root of a mount in the sandbox's view. The kernel refuses to
// rename a mount point (EBUSY) only in the namespace that has the mount, and the supervisor
// acts from its own namespace, so it checks this itself.
bool IsMountPoint(int dirfd, const std::string& name) {
  struct statx stx;
  if (statx(dirfd, name.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) != 0) return false;
  return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
         (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

bool SameInode(int fd, int dirfd, const char* name) {
  struct stat a, b;
  return fstat(fd, &a) == 0 && fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void DropThreadCapabilities(bool keep_ptrace) {
  // Per-thread: capset(2) affects only the calling thread.
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &hdr, data) != 0) return;
  uint32_t ptrace_bit = 1u << CAP_SYS_PTRACE;
  data[0].effective = keep_ptrace ? (data[0].effective & ptrace_bit) : 0;
  data[1].effective = 0;
  data[0].inheritable = data[1].inheritable = 0;
  syscall(SYS_capset, &hdr, data);
}

}  // namespace

NotifierConfig NotifierConfig::From(const enforce::LaunchPlan& plan,
                                    const enforce::MountReport& mounts) {
  NotifierConfig c;
  for (const auto& rel : plan.mount.protect.relpaths) c.relpaths.push_back(SplitPath(rel));
  for (int i = 0; i < mounts.nbases && i < enforce::MountReport::kMaxBases; ++i) {
    c.bases.insert({mounts.base_dev[i], mounts.base_ino[i]});
  }
  c.privileged = plan.privileged;
  return c;
}

bool Notifier::IsProtected(int dirfd, const std::string& name) const {
  for (const auto& rel : cfg_.relpaths) {
    if (rel.empty() || rel.back() != name) continue;
    // Walk up from dirfd checking the names rel[k-2], rel[k-3], ... and that the directory
    // reached is a protected base.
    UniqueFd cur(fcntl(dirfd, F_DUPFD_CLOEXEC, 3));
    bool match = true;
    for (size_t i = rel.size() - 1; i-- > 0;) {
      UniqueFd up(openat(cur.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!up || !SameInode(cur.get(), up.get(), rel[i].c_str())) {
        match = false;
        break;
      }
      cur = std::move(up);
    }
    if (!match) continue;
    struct stat st;
    if (fstat(cur.get(), &st) == 0 && cfg_.bases.count({st.st_dev, st.st_ino})) return true;
  }
  return false;
}

void Notifier::Start(UniqueFd listener, EventSink* events) {
  listener_ = std::move(listener);
  events_ = events;
  wake_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  thread_ = std::thread([this] { Loop(); });
}

void Notifier::Stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  ssize_t n = write(wake_.get(), &one, sizeof one);
  (void)n;
  thread_.join();
}

void Notifier::Loop() {
  // This thread acts for the sandbox: its own fs context (umask 0; the target's umask is
  // applied explicitly) and, for a root supervisor, no capabilities beyond reading the
  // target's memory, so it can create nothing the sandbox itself could not.
  unshare(CLONE_FS);
  umask(0);
  if (cfg_.privileged) DropThreadCapabilities(/*keep_ptrace=*/true);
  struct seccomp_notif_sizes sizes = {};
  if (sys::Seccomp(SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0) return;
  std::vector<char> req_buf(std::max<size_t>(sizes.seccomp_notif, sizeof(struct seccomp_notif)));
  // With every open trapped, the round trip is the cost of an allowed open: ask the kernel
  // (6.6+) to hand the CPU straight between the trapped thread and this one. Older kernels
  // refuse the flag; nothing else changes.
  if (cfg_.approvals) {
    ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
  }
  const int answers_fd = cfg_.approvals ? cfg_.approvals->wake_fd() : -1;
  while (true) {
    struct pollfd p[3] = {
        {listener_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}, {answers_fd, POLLIN, 0}};
    int n = poll(p, answers_fd >= 0 ? 3 : 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents) return;
    // Answers to open questions arrive from the supervisor's loop; this thread alone opens
    // the files (with no capabilities beyond the sandbox's) and talks to the listener.
    if (answers_fd >= 0 && (p[2].revents & POLLIN)) HandleAnswers(listener_.get());
    if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL)) return;  // every filtered task is gone
    if (!(p[0].revents & POLLIN)) continue;
    std::memset(req_buf.data(), 0, req_buf.size());
    auto* req = reinterpret_cast<struct seccomp_notif*>(req_buf.data());
    if (ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_RECV, req) != 0) {
      if (errno == EINTR || errno == ENOENT) continue;
      return;
    }
    HandleOne(listener_.get(), *req);
  }
}

void Notifier::HandleOne(int listener, const struct seccomp_notif& req) {
  handled_.fetch_add(1);
  if (cfg_.approvals && HandleOpen(listener, req)) return;
  struct seccomp_notif_resp resp = {};
  resp.id = req.id;
  const __u64* a = req.data.args;
  pid_t tid = static_cast<pid_t>(req.pid);
  auto reply = [&](long long val, int err) {
    resp.val = err ? 0 : val;
    resp.error = err ? -err : 0;
    ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  };
  auto deny = [&](const char* syscall_name, const std::string& path) {
    denied_.fetch_add(1);
    if (events_) {
      events_->Emit("syscall.deny", {{"syscall", syscall_name},
                                     {"path", path},
                                     {"rule", "filesystem.protected"},
                                     {"errno", "EROFS"}});
    }
    reply(0, EROFS);
  };

  // Decode the call into (kind, dirfds, paths, flags).
  enum Op { kOpen, kMkdir, kMknod, kSymlink, kLink, kRename, kUnknown } op = kUnknown;
  int dirfd = AT_FDCWD, dirfd2 = AT_FDCWD;
  uint64_t path_addr = 0, path2_addr = 0;
  uint64_t flags = 0, mode = 0, dev = 0;
  const char* name = "?";
  switch (req.data.nr) {
#ifdef __NR_open
    case __NR_open:
      op = kOpen;
      path_addr = a[0];
      flags = a[1];
      mode = a[2];
      name = "open";
      break;
    case __NR_creat:
      op = kOpen;
      path_addr = a[0];
      flags = O_CREAT | O_WRONLY | O_TRUNC;
      mode = a[1];
      name = "creat";
      break;
    case __NR_mkdir:
      op = kMkdir;
      path_addr = a[0];
      mode = a[1];
      name = "mkdir";
      break;
    case __NR_mknod:
      op = kMknod;
      path_addr = a[0];
      mode = a[1];
      dev = a[2];
      name = "mknod";
      break;
    case __NR_symlink:
      op = kSymlink;
      path2_addr = a[0];
      path_addr = a[1];
      name = "symlink";
      break;
    case __NR_link:
      op = kLink;
      path2_addr = a[0];
      path_addr = a[1];
      name = "link";
      break;
    case __NR_rename:
      op = kRename;
      path2_addr = a[0];
      path_addr = a[1];
      name = "rename";
      break;
#endif
    case __NR_openat:
      op = kOpen;
      dirfd = static_cast<int>(a[0]);
      path_addr = a[1];
      flags = a[2];
      mode = a[3];
      name = "openat";
      break;
    case __NR_mkdirat:
      op = kMkdir;
      dirfd = static_cast<int>(a[0]);
      path_addr = a[1];
      mode = a[2];
      name = "mkdirat";
      break;
    case __NR_mknodat:
      op = kMknod;
      dirfd = static_cast<int>(a[0]);
      path_addr = a[1];
      mode = a[2];
      dev = a[3];
      name = "mknodat";
      break;
    case __NR_symlinkat:
      op = kSymlink;
      path2_addr = a[0];
      dirfd = static_cast<int>(a[1]);
      path_addr = a[2];
      name = "symlinkat";
      break;
    case __NR_linkat:
      op = kLink;
      dirfd2 = static_cast<int>(a[0]);
      path2_addr = a[1];
      dirfd = static_cast<int>(a[2]);
      path_addr = a[3];
      flags = a[4];
      name = "linkat";
      break;
    case __NR_renameat:
      op = kRename;
      dirfd2 = static_cast<int>(a[0]);
      path2_addr = a[1];
      dirfd = static_cast<int>(a[2]);
      path_addr = a[3];
      name = "renameat";
      break;
    case __NR_renameat2:
      op = kRename;
      dirfd2 = static_cast<int>(a[0]);
      path2_addr = a[1];
      dirfd = static_cast<int>(a[2]);
      path_addr = a[3];
      flags = a[4];
      name = "renameat2";
      break;
    default:
      // openat2 keeps its flags behind a pointer; programs fall back to openat on ENOSYS.
      reply(0, ENOSYS);
      return;
  }

  std::string path, path2;
  if (int rc = ReadString(tid, path_addr, &path); rc != 0) return reply(0, -rc);
  if (path2_addr && op != kLink) {
    if (int rc = ReadString(tid, path2_addr, &path2); rc != 0) return reply(0, -rc);
  } else if (op == kLink) {
    if (int rc = ReadString(tid, path2_addr, &path2); rc != 0) return reply(0, -rc);
  }
  View view(tid);
  if (!view.Open()) return reply(0, EACCES);
  // Everything read from the target must belong to the same, still-waiting call.
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) != 0) return;
  int umask_bits = ReadUmask(tid);

  UniqueFd parent;
  std::string entry;
  if (int rc = view.ResolveParent(dirfd, path, &parent, &entry); rc != 0) return reply(0, -rc);

  switch (op) {
    case kOpen: {
      // Follow a final symlink the way the kernel would for O_CREAT (without O_NOFOLLOW or
      // O_EXCL), checking every name it leads to.
      for (int hops = 0;; ++hops) {
        if (hops > 40) return reply(0, ELOOP);
        struct stat st;
        if ((flags & (O_NOFOLLOW | O_EXCL)) || entry == "." ||
            fstatat(parent.get(), entry.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISLNK(st.st_mode)) {
          break;
        }
        char target[PATH_MAX];
        ssize_t n = readlinkat(parent.get(), entry.c_str(), target, sizeof target - 1);
        if (n < 0) return reply(0, errno);
        target[n] = '\0';
        std::string next = target;
        if (next.rfind("/proc/", 0) == 0 || next.rfind("/dev/fd/", 0) == 0) {
          // /dev/stdout and friends: the existing fd of the caller, reopened (no creation).
          int fdnum = -1;
          const char* p = std::strrchr(target, '/');
          if (p && std::sscanf(p + 1, "%d", &fdnum) == 1 &&
              (next.rfind("/proc/self/fd/", 0) == 0 ||
               next.rfind("/proc/thread-self/fd/", 0) == 0 || next.rfind("/dev/fd/", 0) == 0)) {
            UniqueFd pidfd(sys::PidfdOpen(tid, O_EXCL /* PIDFD_THREAD */));
            if (!pidfd) pidfd.reset(sys::PidfdOpen(tid, 0));
            UniqueFd theirs(pidfd ? sys::PidfdGetfd(pidfd.get(), fdnum, 0) : -1);
            if (!theirs) return reply(0, EBADF);
            char self[64];
            std::snprintf(self, sizeof self, "/proc/self/fd/%d", theirs.get());
            UniqueFd reopened(open(self, (flags & ~(O_CREAT | O_EXCL)) | O_CLOEXEC));
            if (!reopened) return reply(0, errno);
            struct seccomp_notif_addfd addfd = {};
            addfd.id = req.id;
            addfd.flags = SECCOMP_ADDFD_FLAG_SEND;
            addfd.srcfd = reopened.get();
            addfd.newfd_flags = (flags & O_CLOEXEC) ? O_CLOEXEC : 0;
            ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd);
            return;
          }
          return reply(0, EACCES);
        }
        UniqueFd np;
        std::string ne;
        int rc;
        if (next[0] == '/') {
          rc = view.ResolveParent(AT_FDCWD, next, &np, &ne);
        } else {
          // Relative to the link's directory.
          std::vector<std::string> comps = SplitPath(next);
          if (comps.empty()) return reply(0, ENOENT);
          ne = comps.back();
          comps.pop_back();
          std::string dir = ".";
          for (const auto& c : comps) dir += "/" + c;
          np.reset(sys::Openat2(parent.get(), dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                RESOLVE_NO_MAGICLINKS));
          rc = np ? 0 : -errno;
          if (rc == 0 && (ne == "." || ne == "..")) {
            np.reset(sys::Openat2(np.get(), ne.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                  RESOLVE_NO_MAGICLINKS));
            rc = np ? 0 : -errno;
            ne = ".";
          }
        }
        if (rc != 0) return reply(0, -rc);
        parent = std::move(np);
        entry = ne;
      }
      if ((flags & O_CREAT) && IsProtected(parent.get(), entry)) return deny(name, path);
      int fd = openat(parent.get(), entry.c_str(), static_cast<int>(flags) | O_NOFOLLOW | O_CLOEXEC,
                      static_cast<mode_t>(mode & ~umask_bits & 07777));
      if (fd < 0) return reply(0, errno);
      UniqueFd mine(fd);
      struct seccomp_notif_addfd addfd = {};
      addfd.id = req.id;
      addfd.flags = SECCOMP_ADDFD_FLAG_SEND;
      addfd.srcfd = mine.get();
      addfd.newfd_flags = (flags & O_CLOEXEC) ? O_CLOEXEC : 0;
      if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd) < 0 && errno != ENOENT) {
        reply(0, errno);
      }
      return;
    }
    case kMkdir:
      if (IsProtected(parent.get(), entry)) return deny(name, path);
      if (mkdirat(parent.get(), entry.c_str(), static_cast<mode_t>(mode & ~umask_bits & 07777)) !=
          0) {
        return reply(0, errno);
      }
      return reply(0, 0);
    case kMknod: {
      mode_t type = static_cast<mode_t>(mode) & S_IFMT;
      // What the sandbox could do itself: no device nodes (it has no CAP_MKNOD).
      if (type == S_IFCHR || type == S_IFBLK) return reply(0, EPERM);
      if (IsProtected(parent.get(), entry)) return deny(name, path);
      mode_t m = (static_cast<mode_t>(mode) & ~S_IFMT & ~umask_bits & 07777) | type;
      if (mknodat(parent.get(), entry.c_str(), m, static_cast<dev_t>(dev)) != 0) {
        return reply(0, errno);
      }
      return reply(0, 0);
    }
    case kSymlink:
      if (IsProtected(parent.get(), entry)) return deny(name, path);
      if (symlinkat(path2.c_str(), parent.get(), entry.c_str()) != 0) return reply(0, errno);
      return reply(0, 0);
    case kLink: {
      if (IsProtected(parent.get(), entry)) return deny(name, path);
      if ((flags & AT_EMPTY_PATH) && path2.empty()) {
        UniqueFd pidfd(sys::PidfdOpen(tid, O_EXCL));
        if (!pidfd) pidfd.reset(sys::PidfdOpen(tid, 0));
        UniqueFd theirs(pidfd ? sys::PidfdGetfd(pidfd.get(), dirfd2, 0) : -1);
        if (!theirs) return reply(0, EBADF);
        if (linkat(theirs.get(), "", parent.get(), entry.c_str(), AT_EMPTY_PATH) != 0) {
          return reply(0, errno);
        }
        return reply(0, 0);
      }
      UniqueFd old_parent;
      std::string old_entry;
      if (int rc = view.ResolveParent(dirfd2, path2, &old_parent, &old_entry); rc != 0) {
        return reply(0, -rc);
      }
      if (linkat(old_parent.get(), old_entry.c_str(), parent.get(), entry.c_str(),
                 static_cast<int>(flags & AT_SYMLINK_FOLLOW)) != 0) {
        return reply(0, errno);
      }
      return reply(0, 0);
    }
    case kRename: {
      UniqueFd old_parent;
      std::string old_entry;
      if (int rc = view.ResolveParent(dirfd2, path2, &old_parent, &old_entry); rc != 0) {
        return reply(0, -rc);
      }
      if (IsProtected(parent.get(), entry)) return deny(name, path);
      if ((flags & RENAME_EXCHANGE) && IsProtected(old_parent.get(), old_entry)) {
        return deny(name, path2);
      }
      if (IsMountPoint(old_parent.get(), old_entry) || IsMountPoint(parent.get(), entry)) {
        return reply(0, EBUSY);
      }
      if (syscall(SYS_renameat2, old_parent.get(), old_entry.c_str(), parent.get(), entry.c_str(),
                  static_cast<unsigned>(flags)) != 0) {
        return reply(0, errno);
      }
      return reply(0, 0);
    }
    case kUnknown:
      break;
  }
  reply(0, ENOSYS);
}

// File approvals. Every open of the sandbox stops here; most continue at once.
bool Notifier::HandleOpen(int listener, const struct seccomp_notif& req) {
  const __u64* a = req.data.args;
  const pid_t tid = static_cast<pid_t>(req.pid);
  int dirfd = AT_FDCWD;
  uint64_t path_addr = 0;
  int flags = 0;
  mode_t mode = 0;
  const char* name = nullptr;
  bool openat2 = false;
  auto reply = [&](int err) {
    struct seccomp_notif_resp resp = {};
    resp.id = req.id;
    resp.error = -err;
    ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    return true;
  };
  switch (req.data.nr) {
#ifdef __NR_open
    case __NR_open:
      path_addr = a[0];
      flags = static_cast<int>(a[1]);
      mode = static_cast<mode_t>(a[2]);
      name = "open";
      break;
    case __NR_creat:
      path_addr = a[0];
      flags = O_CREAT | O_WRONLY | O_TRUNC;
      mode = static_cast<mode_t>(a[1]);
      name = "creat";
      break;
#endif
    case __NR_openat:
      dirfd = static_cast<int>(a[0]);
      path_addr = a[1];
      flags = static_cast<int>(a[2]);
      mode = static_cast<mode_t>(a[3]);
      name = "openat";
      break;
    case __NR_openat2: {
      dirfd = static_cast<int>(a[0]);
      path_addr = a[1];
      name = "openat2";
      openat2 = true;
      // struct open_how {u64 flags, mode, resolve}: the first version is 24 bytes.
      if (a[3] < 24) return reply(EINVAL);
      uint64_t how[3] = {};
      struct iovec local = {how, sizeof how};
      struct iovec remote = {reinterpret_cast<void*>(a[2]), sizeof how};
      if (process_vm_readv(tid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(sizeof how)) {
        return reply(EFAULT);
      }
      flags = static_cast<int>(how[0]);
      mode = static_cast<mode_t>(how[1]);
      break;
    }
    default:
      return false;  // not an open: the creation guard's
  }
  std::string path;
  if (int rc = ReadString(tid, path_addr, &path); rc != 0) return reply(-rc);
  if (path.empty()) return reply(ENOENT);
  std::string abs = path;
  if (path[0] != '/') {
    // Relative to the dirfd or cwd as the sandbox sees them (ward binds host paths at the same
    // path, so /proc/<tid>/fd/N and cwd name the same place inside and out).
    std::string base;
    if (int rc = View(tid).DirPath(dirfd, &base); rc != 0) return reply(-rc);
    abs = base + "/" + path;
  }
  // Everything read from the target must belong to the same, still-waiting call.
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) != 0) return true;

  const FileAccess access = AccessForOpenFlags(flags);
  const FileDecision d = DecideFileAccess(cfg_.approvals->view(), abs, access != FileAccess::kRead);
  switch (d.verdict) {
    case FileVerdict::kContinue: {
      if ((flags & O_CREAT) && !cfg_.relpaths.empty()) {
        // A creation inside the view: the creation guard performs it (it refuses protected
        // paths). It never handled openat2 (flags behind a pointer): ENOSYS as before.
        if (openat2) return reply(ENOSYS);
        return false;
      }
      // CONTINUE is safe here, unlike for a checked creation: the policy already allows this
      // access to this path, and the kernel now performs the call in the sandbox's own context
      // (its mount view, its Landlock domain). A second thread that swaps the path buffer
      // after our read gains nothing: the kernel checks whatever path it finally reads with
      // the sandbox's own authority, which never includes a host path outside the view.
      struct seccomp_notif_resp resp = {};
      resp.id = req.id;
      resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
      ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
      return true;
    }
    case FileVerdict::kDeny:
      DenyOpen(listener, req.id, name, d.path, "filesystem.deny", d.why);
      return true;
    case FileVerdict::kAsk:
      break;
  }
  FileAnswer pending;
  pending.notif_id = req.id;
  pending.tid = tid;
  pending.syscall = name;
  pending.path = d.path;
  pending.flags = flags;
  pending.mode = mode;
  pending.access = access;
  if (Result<int> f = GrantedOpenFlags(flags, FileAccess::kCreate); !f.ok()) {
    // O_PATH, O_TMPFILE: never handed out for a path outside the view.
    DenyOpen(listener, req.id, name, d.path, "approvals", f.status().message());
    return true;
  }
  if (std::optional<Grant> g =
          cfg_.approvals->broker()->Match(RequestKind::kFile, d.path, access, 0)) {
    pending.allow = true;
    pending.grant = std::move(g);
    InjectGrant(listener, pending);
    return true;
  }
  ApprovalRequest request;
  request.kind = RequestKind::kFile;
  request.subject = d.path;
  request.access = access;
  request.pid = tid;
  char link[64], exe[PATH_MAX];
  std::snprintf(link, sizeof link, "/proc/%d/exe", tid);
  ssize_t n = readlink(link, exe, sizeof exe - 1);
  if (n > 0) request.exe.assign(exe, static_cast<size_t>(n));
  // Never waits here: other trapped calls keep being answered while the question is open.
  cfg_.approvals->Ask(std::move(pending), std::move(request));
  return true;
}

void Notifier::HandleAnswers(int listener) {
  for (FileAnswer& a : cfg_.approvals->TakeAnswers()) {
    // The caller may have died (or been interrupted and restarted) while we asked.
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &a.notif_id) != 0) continue;
    if (a.allow) {
      InjectGrant(listener, a);
    } else {
      DenyOpen(listener, a.notif_id, a.syscall, a.path, "approvals", a.reason);
    }
  }
}

// Opens the granted host path on the sandbox's behalf and injects the descriptor. The host
// path is the sandbox path: ward binds host paths at the same path inside, and the decision
// never asks about ward's own trees (/proc, /dev, the private /tmp and HOME).
void Notifier::InjectGrant(int listener, const FileAnswer& a) {
  const FileAccess granted = a.grant ? a.grant->spec.access : a.access;
  Result<int> flags = GrantedOpenFlags(a.flags, granted);
  if (!flags.ok()) {
    return DenyOpen(listener, a.notif_id, a.syscall, a.path, "approvals", flags.status().message());
  }
  mode_t mode = 0;
  if (*flags & O_CREAT) mode = static_cast<mode_t>(a.mode & ~ReadUmask(a.tid) & 07777);
  // O_NONBLOCK and O_NOCTTY while opening: a FIFO must not stall this thread (every trapped
  // call of the sandbox waits on it) and a terminal must not become anyone's controlling one.
  Result<UniqueFd> fd = OpenHostPath(a.path, *flags | O_NONBLOCK | O_NOCTTY, mode);
  struct seccomp_notif_resp resp = {};
  resp.id = a.notif_id;
  if (!fd.ok()) {
    // A symlink on the way (ELOOP) or a missing file: the sandbox gets the error, not a file.
    resp.error = -(fd.status().err() ? fd.status().err() : EACCES);
    ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    return;
  }
  // Regular files only. A directory descriptor would let the sandbox resolve relative paths
  // from a host directory, outside its mount view (the decision is lexical, the kernel's walk
  // would not be); devices, FIFOs and sockets are not files anyone means to grant.
  struct stat st;
  if (fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return DenyOpen(listener, a.notif_id, a.syscall, a.path, "approvals",
                    "only regular files are granted");
  }
  if (!(*flags & O_NONBLOCK)) fcntl(fd->get(), F_SETFL, fcntl(fd->get(), F_GETFL) & ~O_NONBLOCK);
  struct seccomp_notif_addfd addfd = {};
  addfd.id = a.notif_id;
  addfd.flags = SECCOMP_ADDFD_FLAG_SEND;
  addfd.srcfd = static_cast<__u32>(fd->get());
  addfd.newfd_flags = (a.flags & O_CLOEXEC) ? O_CLOEXEC : 0;
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd) < 0 && errno != ENOENT) {
    resp.error = -errno;
    ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  }
}

void Notifier::DenyOpen(int listener, uint64_t id, const std::string& syscall,
                        const std::string& path, const std::string& rule,
                        const std::string& detail) {
  if (EventSink* ev = cfg_.approvals ? cfg_.approvals->events() : events_) {
    ev->Emit("syscall.deny", {{"syscall", syscall},
                              {"path", path},
                              {"rule", rule},
                              {"detail", detail},
                              {"errno", "EACCES"}});
  }
  struct seccomp_notif_resp resp = {};
  resp.id = id;
  resp.error = -EACCES;
  ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

}  // namespace ward::supervisor
