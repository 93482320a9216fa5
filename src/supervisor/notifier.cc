#include "supervisor/notifier.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "common/linux.h"
#include "supervisor/sandbox_view.h"
#include "supervisor/trapped_call.h"
#include "policy/paths.h"

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

namespace ward::supervisor {
namespace {

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

bool SameInode(int fd, int dirfd, const char* name) {
  struct stat a, b;
  return fstat(fd, &a) == 0 && fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

bool OnProcfs(int fd) {
  struct statfs fs;
  return fstatfs(fd, &fs) != 0 || fs.f_type == PROC_SUPER_MAGIC;
}

// Whether the access an open asks for is within what the caller's descriptor already has.
bool AccessWithin(uint64_t open_flags, int fd_flags) {
  const int want = static_cast<int>(open_flags) & O_ACCMODE;
  const int have = fd_flags & O_ACCMODE;
  if (want == O_RDONLY) return have == O_RDONLY || have == O_RDWR;
  if (want == O_WRONLY) return have == O_WRONLY || have == O_RDWR;
  return have == O_RDWR;
}

// Character devices a descriptor link may stand for: the sandbox's own pty (its private
// devpts) and the memory devices every sandbox has. Not /dev/tty, /dev/ptmx or a host tty.
bool HarmlessCharDevice(dev_t rdev) {
  const unsigned ma = major(rdev), mi = minor(rdev);
  if (ma >= 136 && ma <= 143) return true;  // UNIX98 pty slaves
  return ma == 1 && (mi == 3 || mi == 5 || mi == 7 || mi == 8 || mi == 9);
}

void CopyName(char* dst, size_t cap, const std::string& src) {
  std::memset(dst, 0, cap);
  std::memcpy(dst, src.data(), std::min(src.size(), cap - 1));
}

// The caller's own descriptor `fdnum`, or none.
UniqueFd TakeCallerFd(pid_t tid, int fdnum) {
  UniqueFd pidfd(sys::PidfdOpen(tid, O_EXCL /* PIDFD_THREAD */));
  if (!pidfd) pidfd.reset(sys::PidfdOpen(tid, 0));
  return UniqueFd(pidfd ? sys::PidfdGetfd(pidfd.get(), fdnum, 0) : -1);
}

// Whether a trapped call asks for a set-id bit that the guard drops: a mode change, a creating
// open (O_CREAT, O_TMPFILE) or mknod. (mkdir's are ignored by the kernel anyway.)
bool AsksForPrivilegeBits(const TrappedCall& call) {
  if ((call.mode & enforce::kPrivilegeModeBits) == 0) return false;
  switch (call.op) {
    case TrappedOp::kChmod:
    case TrappedOp::kFchmod:
    case TrappedOp::kMknod:
      return true;
    case TrappedOp::kOpen:
      return (call.flags & (O_CREAT | (O_TMPFILE & ~O_DIRECTORY))) != 0;
    default:
      return false;
  }
}

// The path a call named, as the sandbox sees it (its directory as resolved, then the name).
std::string SeenPath(const ViewEntry& entry) {
  return policy::NormalizePath(entry.dir_path + "/" + entry.name);
}

}  // namespace

NotifierConfig NotifierConfig::From(const enforce::LaunchPlan& plan,
                                    const enforce::MountReport& mounts) {
  NotifierConfig c;
  for (const auto& rel : plan.mount.protect.relpaths) c.relpaths.push_back(policy::PathComponents(rel));
  for (int i = 0; i < mounts.nbases && i < enforce::MountReport::kMaxBases; ++i) {
    c.bases.insert({mounts.base_dev[i], mounts.base_ino[i]});
  }
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
      // A directory on the way that this run made (a new repository's .git): what is created
      // in it is judged after the run, as for any repository the run makes.
      if (MadeThisRun(cur.get())) {
        match = false;
        break;
      }
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

bool Notifier::MadeThisRun(int dirfd) const {
  struct stat st;
  return cfg_.journal && fstat(dirfd, &st) == 0 && cfg_.journal->MadeThisRun(st.st_dev, st.st_ino);
}

void Notifier::Journal(int dirfd, const std::string& name, bool moved) {
  if (cfg_.journal) cfg_.journal->Record(dirfd, name, moved);
}

void Notifier::Start(UniqueFd listener, EventSink* events) {
  listener_ = std::move(listener);
  events_ = events;
  wake_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  agent_.emplace(std::move(cfg_.agent), wake_.get());
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
  // applied explicitly) and no capabilities at all (reading the sandbox's memory needs none: the
  // sandbox runs with the supervisor's own ids).
  unshare(CLONE_FS);
  umask(0);
  sys::DropThreadCapabilities();
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

// One trapped call: decoded, its strings read once, checked to be still waiting, then resolved
// in the sandbox's view, decided here and performed by the guard agent inside the sandbox.
void Notifier::HandleOne(int listener, const struct seccomp_notif& req) {
  handled_.fetch_add(1);
  if (cfg_.approvals && HandleOpen(listener, req)) return;
  Answer answer{listener, req.id, this};
  TrappedCall call;
  if (!DecodeTrappedCall(req, &call)) return answer.Error(ENOSYS);
  const pid_t tid = static_cast<pid_t>(req.pid);
  if (int rc = ReadTrappedStrings(tid, &call); rc != 0) return answer.Error(-rc);
  // Everything read from the target must belong to the same, still-waiting call.
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) != 0) return;
  if (call.op == TrappedOp::kMemfd) return CreateMemfd(call, answer);
  if (AsksForPrivilegeBits(call)) NotePrivilegeBitsDropped(call);
  if (call.op == TrappedOp::kChmod || call.op == TrappedOp::kFchmod) {
    return ChangeMode(tid, call, answer);
  }
  const int umask_bits = ReadUmask(tid);
  SandboxView view(cfg_.root.get(), tid);
  ViewEntry entry;
  std::string abs;
  if (int rc = view.Absolute(call.dirfd, call.path, &abs); rc != 0) return answer.Error(-rc);
  if (call.op == TrappedOp::kOpen) {
    if (std::optional<int> n = CallerFdLink(abs)) return HandOverCallerFd(tid, *n, call, answer);
  }
  if (int rc = view.Parent(abs, &entry); rc != 0) return answer.Error(-rc);
  const mode_t mode = static_cast<mode_t>(call.mode & ~static_cast<uint64_t>(umask_bits) &
                                          ~uint64_t{enforce::kPrivilegeModeBits});
  switch (call.op) {
    case TrappedOp::kOpen:
      return CreateOrOpen(view, tid, call, std::move(entry), mode & 07777, answer);
    case TrappedOp::kMkdir:
    case TrappedOp::kMknod:
    case TrappedOp::kSymlink:
      return CreateEntry(call, entry, (mode & 07777) | (call.mode & S_IFMT), answer);
    case TrappedOp::kLink:
    case TrappedOp::kRename:
      return MoveOrLink(view, tid, call, entry, answer);
    case TrappedOp::kMemfd:
    case TrappedOp::kChmod:
    case TrappedOp::kFchmod:
      break;
  }
  answer.Error(ENOSYS);
}

void Notifier::Answer::Error(int err) const {
  struct seccomp_notif_resp resp = {};
  resp.id = id;
  resp.error = -err;
  ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

void Notifier::Answer::Value(long long val) const {
  struct seccomp_notif_resp resp = {};
  resp.id = id;
  resp.val = val;
  ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

void Notifier::Answer::Fd(int fd, bool cloexec) const {
  struct seccomp_notif_addfd addfd = {};
  addfd.id = id;
  addfd.flags = SECCOMP_ADDFD_FLAG_SEND;
  addfd.srcfd = static_cast<__u32>(fd);
  addfd.newfd_flags = cloexec ? O_CLOEXEC : 0;
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd) < 0 && errno != ENOENT) Error(errno);
}

void Notifier::Answer::Refuse(const char* syscall, const std::string& path, const char* rule,
                              int err, const std::string& detail,
                              const std::string& target) const {
  notifier->denied_.fetch_add(1);
  if (notifier->events_) {
    nlohmann::json data = {{"syscall", syscall},
                           {"path", path},
                           {"rule", rule},
                           {"errno", err == EROFS   ? "EROFS"
                                     : err == EPERM ? "EPERM"
                                                    : "EACCES"}};
    if (!detail.empty()) data["detail"] = detail;
    if (!target.empty()) data["target"] = target;
    notifier->events_->Emit("syscall.deny", std::move(data));
  }
  Error(err);
}

// A protected name: refused and recorded with the path as resolved in the view (the run's
// summary of denials names it).
void Notifier::RefuseProtected(const Answer& answer, const char* syscall, const std::string& named,
                               const ViewEntry& entry) {
  answer.Refuse(syscall, named, "filesystem.protected", EROFS, "", SeenPath(entry));
}

// The agent's result: an error, success, or (open, memfd) the new descriptor handed over.
void Notifier::Relay(const Answer& answer, const TrappedCall& call, int result, UniqueFd fd,
                     const std::string& seen) {
  if (agent_->lost() && result == -EACCES) {
    return answer.Refuse(call.syscall, call.path, "guard.agent", EACCES,
                         "the guard agent is gone: creations fail closed");
  }
  if (result == -EROFS || result == -EACCES || result == -EPERM) {
    RecordRefusedWrite(call, -result, seen);
  }
  if (result < 0) return answer.Error(-result);
  if (fd)
    return answer.Fd(fd.get(), (call.op == TrappedOp::kOpen && (call.flags & O_CLOEXEC)) ||
                                   (call.op == TrappedOp::kMemfd && (call.flags & MFD_CLOEXEC)));
  answer.Value(0);
}

// A write or creation the agent, with the sandbox's own authority, was refused: the path is
// read-only in the view or outside the writable roots (docs/denials.md). The tee in front of the
// audit sink bounds how many such records reach the trail.
void Notifier::RecordRefusedWrite(const TrappedCall& call, int err, const std::string& seen) const {
  if (events_ == nullptr || seen.empty()) return;
  events_->Emit("file.deny", {{"op", call.syscall},
                              {"path", seen},
                              {"errno", err == EROFS   ? "EROFS"
                                        : err == EPERM ? "EPERM"
                                                       : "EACCES"},
                              {"rule", err == EROFS ? "read-only here" : "not writable here"}});
}

// An open with O_CREAT: the final symlink followed in the view, a protected name refused, the
// open itself made by the agent.
void Notifier::CreateOrOpen(const SandboxView& view, pid_t tid, const TrappedCall& call,
                            ViewEntry entry, mode_t mode, const Answer& answer) {
  std::optional<int> fd_link;
  if (int rc = view.FollowFinalLinks(call.flags, &entry, &fd_link); rc != 0) {
    return answer.Error(-rc);
  }
  if (fd_link) return HandOverCallerFd(tid, *fd_link, call, answer);
  if (OnProcfs(entry.dir.get())) {
    return answer.Refuse(call.syscall, call.path, "guard.procfs", EACCES,
                         "creating opens under /proc are refused");
  }
  if ((call.flags & O_CREAT) && IsProtected(entry.dir.get(), entry.name)) {
    return RefuseProtected(answer, call.syscall, call.path, entry);
  }
  enforce::GuardRequest r;
  r.op = enforce::GuardOp::kOpen;
  r.flags = static_cast<int32_t>(call.flags);
  r.mode = mode;
  CopyName(r.name, sizeof r.name, entry.name);
  UniqueFd out;
  const int result = agent_->Call(r, {entry.dir.get()}, &out);
  if (result >= 0 && (call.flags & O_CREAT)) Journal(entry.dir.get(), entry.name, false);
  Relay(answer, call, result, std::move(out), SeenPath(entry));
}

// /dev/stdout and its kind: a descriptor the caller already holds. It gets that same open file
// back (never a reopen: a reopen would check the access asked for anew, with whoever reopens
// it), and only for access the descriptor already has. O_PATH and procfs descriptors and
// devices other than its own pty and the memory devices are refused.
void Notifier::HandOverCallerFd(pid_t tid, int fdnum, const TrappedCall& call,
                                const Answer& answer) {
  UniqueFd pidfd(sys::PidfdOpen(tid, O_EXCL /* PIDFD_THREAD */));
  if (!pidfd) pidfd.reset(sys::PidfdOpen(tid, 0));
  UniqueFd theirs(pidfd ? sys::PidfdGetfd(pidfd.get(), fdnum, 0) : -1);
  if (!theirs) return answer.Error(EBADF);
  const int fl = fcntl(theirs.get(), F_GETFL);
  struct stat st;
  const char* why = nullptr;
  if (fl < 0 || (fl & O_PATH) == O_PATH) {
    why = "an O_PATH descriptor";
  } else if (fstat(theirs.get(), &st) != 0 || S_ISBLK(st.st_mode) ||
             (S_ISCHR(st.st_mode) && !HarmlessCharDevice(st.st_rdev))) {
    why = "a device";
  } else if (OnProcfs(theirs.get())) {
    why = "a procfs file";
  } else if (!AccessWithin(call.flags, fl)) {
    why = "more access than the descriptor has";
  }
  if (why) {
    return answer.Refuse(call.syscall, call.path, "guard.fd_link", EACCES,
                         std::string("descriptor ") + std::to_string(fdnum) + ": " + why);
  }
  answer.Fd(theirs.get(), (call.flags & O_CLOEXEC) != 0);
}

// mkdir, mknod, symlink: a protected name refused, the rest made by the agent.
void Notifier::CreateEntry(const TrappedCall& call, const ViewEntry& entry, mode_t mode,
                           const Answer& answer) {
  if (IsProtected(entry.dir.get(), entry.name)) {
    // As the kernel would: a name that exists is EEXIST before any read-only mount is asked
    // (`mkdir -p` of a protected directory that is there goes on).
    struct stat st;
    if (fstatat(entry.dir.get(), entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      return answer.Error(EEXIST);
    }
    return RefuseProtected(answer, call.syscall, call.path, entry);
  }
  enforce::GuardRequest r;
  r.mode = mode;
  r.dev = call.dev;
  CopyName(r.name, sizeof r.name, entry.name);
  if (call.op == TrappedOp::kMkdir) {
    r.op = enforce::GuardOp::kMkdir;
  } else if (call.op == TrappedOp::kMknod) {
    r.op = enforce::GuardOp::kMknod;
  } else {
    r.op = enforce::GuardOp::kSymlink;
    if (call.path2.size() >= sizeof r.target) return answer.Error(ENAMETOOLONG);
    CopyName(r.target, sizeof r.target, call.path2);
  }
  UniqueFd none;
  const int result = agent_->Call(r, {entry.dir.get()}, &none);
  if (result >= 0) Journal(entry.dir.get(), entry.name, false);
  Relay(answer, call, result, UniqueFd(), SeenPath(entry));
}

// link and rename: both ends resolved in the view; a protected name refused at the new end (and
// at the old end of an exchange); the agent acts. A link of a descriptor (AT_EMPTY_PATH) links
// the caller's own file, with the agent's authority.
void Notifier::MoveOrLink(const SandboxView& view, pid_t tid, const TrappedCall& call,
                          const ViewEntry& entry, const Answer& answer) {
  if (IsProtected(entry.dir.get(), entry.name)) {
    return RefuseProtected(answer, call.syscall, call.path, entry);
  }
  enforce::GuardRequest r;
  r.op = call.op == TrappedOp::kLink ? enforce::GuardOp::kLink : enforce::GuardOp::kRename;
  r.flags = static_cast<int32_t>(call.flags);
  CopyName(r.name, sizeof r.name, entry.name);
  UniqueFd second;
  if (call.op == TrappedOp::kLink && (call.flags & AT_EMPTY_PATH) && call.path2.empty()) {
    UniqueFd pidfd(sys::PidfdOpen(tid, O_EXCL /* PIDFD_THREAD */));
    if (!pidfd) pidfd.reset(sys::PidfdOpen(tid, 0));
    second.reset(pidfd ? sys::PidfdGetfd(pidfd.get(), call.dirfd2, 0) : -1);
    if (!second) return answer.Error(EBADF);
    if (OnProcfs(second.get())) {
      return answer.Refuse(call.syscall, call.path, "guard.fd_link", EACCES, "a procfs file");
    }
    r.flags = AT_EMPTY_PATH;
  } else {
    std::string abs2;
    ViewEntry old_entry;
    if (int rc = view.Absolute(call.dirfd2, call.path2, &abs2); rc != 0) return answer.Error(-rc);
    if (int rc = view.Parent(abs2, &old_entry); rc != 0) return answer.Error(-rc);
    if (call.op == TrappedOp::kRename && (call.flags & RENAME_EXCHANGE) &&
        IsProtected(old_entry.dir.get(), old_entry.name)) {
      return RefuseProtected(answer, call.syscall, call.path2, old_entry);
    }
    if (call.op == TrappedOp::kLink) r.flags = static_cast<int32_t>(call.flags & AT_SYMLINK_FOLLOW);
    CopyName(r.name2, sizeof r.name2, old_entry.name);
    second = std::move(old_entry.dir);
  }
  UniqueFd none;
  const int result = agent_->Call(r, {entry.dir.get(), second.get()}, &none);
  if (result >= 0) {
    Journal(entry.dir.get(), entry.name, true);
    if (call.op == TrappedOp::kRename && (call.flags & RENAME_EXCHANGE)) {
      Journal(second.get(), r.name2, true);
    }
  }
  Relay(answer, call, result, UniqueFd(), SeenPath(entry));
}

// memfd_create: made by the agent, sealed against execution (MFD_NOEXEC_SEAL, Linux 6.3+), so
// no code runs from a file without a name. Asking for an executable memfd is refused; a kernel
// without the seal gets a plain memfd (execveat of a descriptor stays denied by seccomp).
void Notifier::CreateMemfd(const TrappedCall& call, const Answer& answer) {
  if (call.flags & MFD_EXEC) {
    return answer.Refuse(call.syscall, call.path, "memfd.exec", EPERM,
                         "executable memfds are refused");
  }
  if (call.path.size() >= sizeof(enforce::GuardRequest::name)) return answer.Error(EINVAL);
  enforce::GuardRequest r;
  r.op = enforce::GuardOp::kMemfd;
  CopyName(r.name, sizeof r.name, call.path);
  r.flags = static_cast<int32_t>((call.flags & ~MFD_CLOEXEC) | MFD_NOEXEC_SEAL | MFD_CLOEXEC);
  UniqueFd out;
  int result = agent_->Call(r, {}, &out);
  if (result == -EINVAL && !(call.flags & MFD_NOEXEC_SEAL) && !agent_->lost()) {
    r.flags = static_cast<int32_t>(call.flags | MFD_CLOEXEC);  // before Linux 6.3
    result = agent_->Call(r, {}, &out);
  }
  Relay(answer, call, result, std::move(out), "");
}

// chmod, fchmod, fchmodat and fchmodat2 with S_ISUID or S_ISGID (the filter traps no other
// mode): the agent makes the change without those bits. The guard only finds the file, as the
// kernel would for the caller: the caller's own descriptor (fchmod, AT_EMPTY_PATH, a
// /proc/self/fd link), or a path resolved in the sandbox's view. The agent changes it with the
// sandbox's authority, so read-only mounts and ownership answer as they would for the caller.
void Notifier::ChangeMode(pid_t tid, const TrappedCall& call, const Answer& answer) {
  UniqueFd file;
  if (call.op == TrappedOp::kFchmod) {
    file = TakeCallerFd(tid, call.dirfd);
    if (!file) return answer.Error(EBADF);
  } else if (int rc = FindModeTarget(tid, call, &file); rc != 0) {
    return answer.Error(-rc);
  }
  if (OnProcfs(file.get())) {
    return answer.Refuse(call.syscall, call.path, "guard.procfs", EACCES,
                         "set-id modes under /proc are refused");
  }
  enforce::GuardRequest r;
  r.op = enforce::GuardOp::kChmod;
  r.flags = call.op == TrappedOp::kFchmod ? 0 : AT_EMPTY_PATH;
  r.mode = static_cast<uint32_t>(call.mode & 07777 & ~uint64_t{enforce::kPrivilegeModeBits});
  UniqueFd none;
  const int result = agent_->Call(r, {file.get()}, &none);
  Relay(answer, call, result, UniqueFd(), "");
}

// The file a chmod, fchmodat or fchmodat2 names: an O_PATH descriptor of it, or of the caller's
// descriptor it names. A final symlink is followed hop by hop in the sandbox's view unless
// AT_SYMLINK_NOFOLLOW (then the link itself is meant, whose mode cannot change: EOPNOTSUPP, as
// the kernel says); one planted after that walk is not followed either. 0 or -errno.
int Notifier::FindModeTarget(pid_t tid, const TrappedCall& call, UniqueFd* file) const {
  constexpr uint64_t kKnownFlags = AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH;
  if (call.flags & ~kKnownFlags) return -EINVAL;
  const bool nofollow = (call.flags & AT_SYMLINK_NOFOLLOW) != 0;
  if (call.path.empty() && !(call.flags & AT_EMPTY_PATH)) return -ENOENT;
  if (call.path.empty() && call.dirfd != AT_FDCWD) {
    *file = TakeCallerFd(tid, call.dirfd);
    return *file ? 0 : -EBADF;
  }
  SandboxView view(cfg_.root.get(), tid);
  std::string abs;
  if (int rc = view.Absolute(call.dirfd, call.path.empty() ? "." : call.path, &abs); rc != 0) {
    return rc;
  }
  std::optional<int> fd_link = CallerFdLink(abs);
  ViewEntry entry;
  if (!fd_link) {
    if (int rc = view.Parent(abs, &entry); rc != 0) return rc;
    if (int rc = view.FollowFinalLinks(nofollow ? O_NOFOLLOW : 0, &entry, &fd_link); rc != 0) {
      return rc;
    }
  }
  if (fd_link) {
    if (nofollow) return -EOPNOTSUPP;
    *file = TakeCallerFd(tid, *fd_link);
    return *file ? 0 : -EBADF;
  }
  file->reset(openat(entry.dir.get(), entry.name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!*file) return -errno;
  struct stat st;
  if (fstat(file->get(), &st) != 0) return -errno;
  if (S_ISLNK(st.st_mode)) return -EOPNOTSUPP;
  if (call.path.size() > 1 && call.path.back() == '/' && !S_ISDIR(st.st_mode)) return -ENOTDIR;
  return 0;
}

// A set-id bit asked for and dropped, in the audit trail.
void Notifier::NotePrivilegeBitsDropped(const TrappedCall& call) const {
  if (!events_) return;
  char mode[16];
  std::snprintf(mode, sizeof mode, "%o", static_cast<unsigned>(call.mode & 07777));
  nlohmann::json data = {{"syscall", call.syscall}, {"mode", mode}};
  if (call.op == TrappedOp::kFchmod || call.path.empty()) {
    data["fd"] = call.dirfd;
  } else {
    data["path"] = call.path;
  }
  events_->Emit("file.privilege_bits_dropped", std::move(data));
}

namespace {

// An open of the sandbox, as its syscall's arguments give it.
struct OpenCall {
  int dirfd = AT_FDCWD;
  uint64_t path_addr = 0;
  int flags = 0;
  mode_t mode = 0;
  const char* name = nullptr;  // the syscall's
  bool openat2 = false;        // its flags and mode are behind a pointer
  int refuse = 0;              // an errno: the arguments cannot be read
};

// The open's arguments; nullopt when the call is not an open.
std::optional<OpenCall> DecodeOpen(const struct seccomp_notif& req, pid_t tid) {
  const __u64* a = req.data.args;
  OpenCall call;
  switch (req.data.nr) {
#ifdef __NR_open
    case __NR_open:
      call.path_addr = a[0];
      call.flags = static_cast<int>(a[1]);
      call.mode = static_cast<mode_t>(a[2]);
      call.name = "open";
      return call;
    case __NR_creat:
      call.path_addr = a[0];
      call.flags = O_CREAT | O_WRONLY | O_TRUNC;
      call.mode = static_cast<mode_t>(a[1]);
      call.name = "creat";
      return call;
#endif
    case __NR_openat:
      call.dirfd = static_cast<int>(a[0]);
      call.path_addr = a[1];
      call.flags = static_cast<int>(a[2]);
      call.mode = static_cast<mode_t>(a[3]);
      call.name = "openat";
      return call;
    case __NR_openat2: {
      call.dirfd = static_cast<int>(a[0]);
      call.path_addr = a[1];
      call.name = "openat2";
      call.openat2 = true;
      // struct open_how {u64 flags, mode, resolve}: the first version is 24 bytes.
      if (a[3] < 24) {
        call.refuse = EINVAL;
        return call;
      }
      uint64_t how[3] = {};
      struct iovec local = {how, sizeof how};
      struct iovec remote = {reinterpret_cast<void*>(a[2]), sizeof how};
      if (process_vm_readv(tid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(sizeof how)) {
        call.refuse = EFAULT;
        return call;
      }
      call.flags = static_cast<int>(how[0]);
      call.mode = static_cast<mode_t>(how[1]);
      return call;
    }
    default:
      return std::nullopt;
  }
}

// The trapped call fails with `err`. Returns true: the call is handled.
bool ReplyError(int listener, uint64_t id, int err) {
  struct seccomp_notif_resp resp = {};
  resp.id = id;
  resp.error = -err;
  ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  return true;
}

// An open the policy allows: the kernel performs it, unless it creates where the creation
// guard must (`guarded`: the run protects paths), or asks for set-id bits. Returns whether the
// call is handled here (false: the creation guard's).
bool ContinueOpen(int listener, uint64_t id, const OpenCall& call, bool guarded) {
  const bool setid = (call.flags & (O_CREAT | (O_TMPFILE & ~O_DIRECTORY))) &&
                     (call.mode & enforce::kPrivilegeModeBits);
  if (((call.flags & O_CREAT) && guarded) || setid) {
    // A creation inside the view: the creation guard performs it (it refuses protected
    // paths, drops set-id bits). It never handled openat2 (flags behind a pointer): ENOSYS.
    if (call.openat2) return ReplyError(listener, id, ENOSYS);
    return false;
  }
  // CONTINUE is safe here, unlike for a checked creation: the policy already allows this
  // access to this path, and the kernel now performs the call in the sandbox's own context
  // (its mount view, its Landlock domain). A second thread that swaps the path buffer
  // after our read gains nothing: the kernel checks whatever path it finally reads with
  // the sandbox's own authority, which never includes a host path outside the view.
  struct seccomp_notif_resp resp = {};
  resp.id = id;
  resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  return true;
}

// The question about an open outside the policy: the path, the access, and who asks.
ApprovalRequest FileRequest(pid_t tid, const std::string& path, FileAccess access) {
  ApprovalRequest request;
  request.kind = RequestKind::kFile;
  request.subject = path;
  request.access = access;
  request.pid = tid;
  char link[64], exe[PATH_MAX];
  std::snprintf(link, sizeof link, "/proc/%d/exe", tid);
  ssize_t n = readlink(link, exe, sizeof exe - 1);
  if (n > 0) request.exe.assign(exe, static_cast<size_t>(n));
  return request;
}

}  // namespace

// File approvals. Every open of the sandbox stops here; most continue at once.
bool Notifier::HandleOpen(int listener, const struct seccomp_notif& req) {
  const pid_t tid = static_cast<pid_t>(req.pid);
  std::optional<OpenCall> call = DecodeOpen(req, tid);
  if (!call) return false;  // not an open: the creation guard's
  if (call->refuse != 0) return ReplyError(listener, req.id, call->refuse);
  std::string path;
  if (int rc = ReadRemoteString(tid, call->path_addr, &path); rc != 0) {
    return ReplyError(listener, req.id, -rc);
  }
  if (path.empty()) return ReplyError(listener, req.id, ENOENT);
  // Relative to the dirfd or cwd as the sandbox sees them (ward binds host paths at the same
  // path, so the sandbox's paths and the host's name the same places).
  std::string abs;
  if (int rc = SandboxView(cfg_.root.get(), tid).Absolute(call->dirfd, path, &abs); rc != 0) {
    return ReplyError(listener, req.id, -rc);
  }
  // Everything read from the target must belong to the same, still-waiting call.
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) != 0) return true;

  const FileAccess access = AccessForOpenFlags(call->flags);
  const FileDecision d = DecideFileAccess(cfg_.approvals->view(), abs, access != FileAccess::kRead);
  switch (d.verdict) {
    case FileVerdict::kContinue:
      return ContinueOpen(listener, req.id, *call, !cfg_.relpaths.empty());
    case FileVerdict::kDeny:
      DenyOpen(listener, req.id, call->name, d.path, "filesystem.deny", d.why);
      return true;
    case FileVerdict::kAsk:
      break;
  }
  FileAnswer pending;
  pending.notif_id = req.id;
  pending.tid = tid;
  pending.syscall = call->name;
  pending.path = d.path;
  pending.flags = call->flags;
  pending.mode = call->mode;
  pending.access = access;
  if (Result<int> f = GrantedOpenFlags(call->flags, FileAccess::kCreate); !f.ok()) {
    // O_PATH, O_TMPFILE: never handed out for a path outside the view.
    DenyOpen(listener, req.id, call->name, d.path, "approvals", f.status().message());
    return true;
  }
  if (std::optional<Grant> g =
          cfg_.approvals->broker()->Match(RequestKind::kFile, d.path, access, 0)) {
    pending.allow = true;
    pending.grant = std::move(g);
    InjectGrant(listener, pending);
    return true;
  }
  // Never waits here: other trapped calls keep being answered while the question is open.
  cfg_.approvals->Ask(std::move(pending), FileRequest(tid, d.path, access));
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
  if (*flags & O_CREAT) {
    mode = static_cast<mode_t>(a.mode & ~ReadUmask(a.tid) & 07777 & ~enforce::kPrivilegeModeBits);
  }
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
  if (fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode) || OnProcfs(fd->get())) {
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
