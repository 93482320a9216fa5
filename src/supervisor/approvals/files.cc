#include "supervisor/approvals/files.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/linux.h"
#include "enforce/plan.h"
#include "policy/paths.h"

namespace ward::supervisor {
namespace {

std::string Parent(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
}

void AddAncestors(const std::string& path, std::vector<std::string>* out) {
  for (std::string p = Parent(path);; p = Parent(p)) {
    out->push_back(p);
    if (p == "/") break;
  }
}

// Like the planner's deny matching: at or below the rule; a glob component matches one entry.
bool DeniedBy(const std::string& path, const std::string& rule) {
  if (!policy::HasGlob(rule)) return enforce::PathIsWithin(path, rule);
  std::vector<std::string> rc = policy::PathComponents(rule), pc = policy::PathComponents(path);
  if (pc.size() < rc.size()) return false;
  for (size_t i = 0; i < rc.size(); ++i) {
    if (!policy::MatchComponent(rc[i], pc[i])) return false;
  }
  return true;
}

}  // namespace

FileView FileView::From(const enforce::LaunchPlan& plan, const policy::Policy& policy) {
  FileView v;
  for (const enforce::MountOp& op : plan.mount.ops) {
    const std::string target = enforce::NormalizePath(op.target);
    switch (op.kind) {
      case enforce::MountOp::Kind::kBind:
        v.mounts.push_back({target, op.writable});
        break;
      case enforce::MountOp::Kind::kFile:
        v.mounts.push_back({target, false});
        break;
      case enforce::MountOp::Kind::kTmpfs:
      case enforce::MountOp::Kind::kDev:
      case enforce::MountOp::Kind::kProc:
        v.synthetic.push_back(target);
        break;
      case enforce::MountOp::Kind::kSymlink: {
        std::string dest =
            op.source.empty() || op.source[0] == '/' ? op.source : Parent(target) + "/" + op.source;
        v.symlinks.push_back({target, enforce::NormalizePath(dest)});
        break;
      }
    }
    AddAncestors(target, &v.skeleton);
  }
  std::sort(v.skeleton.begin(), v.skeleton.end());
  v.skeleton.erase(std::unique(v.skeleton.begin(), v.skeleton.end()), v.skeleton.end());
  // The most specific mount first.
  std::stable_sort(v.mounts.begin(), v.mounts.end(), [](const Mount& a, const Mount& b) {
    return a.target.size() > b.target.size();
  });
  for (const policy::DenyRule& d : policy.deny) v.deny.push_back(enforce::NormalizePath(d.path));
  return v;
}

FileDecision DecideFileAccess(const FileView& view, const std::string& path, bool write) {
  FileDecision d;
  d.path = enforce::NormalizePath(path);
  // ward's own symlinks (/var/tmp -> /tmp, a workspace given through a link) are part of the
  // view: follow them lexically, as the kernel would inside.
  for (int hops = 0; hops < 8; ++hops) {
    bool moved = false;
    for (const auto& [link, dest] : view.symlinks) {
      if (enforce::PathIsWithin(d.path, link)) {
        d.path = enforce::NormalizePath(dest + d.path.substr(link.size()));
        moved = true;
        break;
      }
    }
    if (!moved) break;
  }
  for (const std::string& s : view.synthetic) {
    if (enforce::PathIsWithin(d.path, s)) {
      d.verdict = FileVerdict::kContinue;
      d.why = "ward's own " + s;
      return d;
    }
  }
  for (const std::string& rule : view.deny) {
    if (DeniedBy(d.path, rule)) {
      d.verdict = FileVerdict::kDeny;
      d.why = "deny " + rule;
      return d;
    }
  }
  for (const FileView::Mount& m : view.mounts) {
    if (!enforce::PathIsWithin(d.path, m.target)) continue;
    if (!write || m.writable) {
      d.verdict = FileVerdict::kContinue;
      d.why = "bind " + m.target + (m.writable ? " (write)" : " (read)");
    } else {
      d.verdict = FileVerdict::kAsk;
      d.why = "bind " + m.target + " is read-only";
    }
    return d;
  }
  if (std::binary_search(view.skeleton.begin(), view.skeleton.end(), d.path)) {
    d.verdict = FileVerdict::kContinue;  // a directory of ward's read-only root
    d.why = "ward's root";
    return d;
  }
  d.verdict = FileVerdict::kAsk;
  d.why = "not in the view";
  return d;
}

FileAccess AccessForOpenFlags(int flags) {
  if (flags & O_CREAT) return FileAccess::kCreate;
  switch (flags & O_ACCMODE) {
    case O_RDWR:
      return FileAccess::kReadWrite;
    case O_WRONLY:
      return FileAccess::kWrite;
    default:
      return (flags & O_TRUNC) ? FileAccess::kWrite : FileAccess::kRead;
  }
}

Result<int> GrantedOpenFlags(int requested, FileAccess granted) {
  if (requested & O_PATH) return ErrnoError("O_PATH descriptors are not granted", EACCES);
  if ((requested & O_TMPFILE) == O_TMPFILE) {
    return ErrnoError("O_TMPFILE is not granted", EACCES);
  }
  const int mode = requested & O_ACCMODE;
  if (mode == O_ACCMODE) return InvalidArgument("bad access mode");
  const FileAccess wanted = AccessForOpenFlags(requested);
  if (!AccessCovers(granted, wanted)) {
    return ErrnoError(std::string("the grant is for ") + FileAccessName(granted) +
                          ", the open wants " + FileAccessName(wanted),
                      EACCES);
  }
  constexpr int kHarmless = O_CLOEXEC | O_DIRECTORY | O_NOCTTY | O_NONBLOCK | O_APPEND | O_SYNC |
                            O_DSYNC | O_LARGEFILE | O_NOFOLLOW;
  int out = mode | (requested & kHarmless);
  if (requested & O_CREAT) out |= O_CREAT | (requested & O_EXCL);  // covered: kCreate
  if (requested & O_TRUNC) out |= O_TRUNC;                         // covered: write or more
  return out | O_NOFOLLOW | O_CLOEXEC;
}

Result<UniqueFd> OpenHostPath(const std::string& path, int flags, mode_t mode) {
  std::vector<std::string> comps = policy::PathComponents(path);
  if (path.empty() || path[0] != '/' || comps.empty()) {
    return InvalidArgument("not an absolute file path: " + path);
  }
  for (const std::string& c : comps) {
    if (c == "." || c == "..") return InvalidArgument("not a normalised path: " + path);
  }
  const uint64_t how_mode = (flags & O_CREAT) ? (mode & 07777) : 0;
  UniqueFd fd(sys::Openat2(AT_FDCWD, path.c_str(), static_cast<uint64_t>(flags), how_mode,
                           RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
  if (fd) return fd;
  if (errno != ENOSYS) return Errno("open " + path);
  // No openat2: one component at a time, never following a link.
  UniqueFd dir(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return Errno("open /");
  for (size_t i = 0; i + 1 < comps.size(); ++i) {
    UniqueFd next(
        openat(dir.get(), comps[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) return Errno("open " + path);
    dir = std::move(next);
  }
  fd.reset(openat(dir.get(), comps.back().c_str(), flags | O_NOFOLLOW, mode & 07777));
  if (!fd) return Errno("open " + path);
  return fd;
}

FileApprovals::FileApprovals(FileView view, std::shared_ptr<ApprovalBroker> broker,
                             EventSink* events)
    : view_(std::move(view)),
      broker_(std::move(broker)),
      events_(events),
      wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      queue_(std::make_shared<Queue>()) {
  queue_->wake.reset(fcntl(wake_.get(), F_DUPFD_CLOEXEC, 3));
}

FileApprovals::~FileApprovals() = default;

void FileApprovals::Ask(FileAnswer pending, ApprovalRequest request) {
  // The callback may run after the notifier is gone (the session ending): it only touches the
  // shared queue.
  broker_->Ask(std::move(request),
               [queue = queue_, pending = std::move(pending)](const ApprovalDecision& d) mutable {
                 pending.allow = d.allow;
                 pending.grant = d.grant;
                 pending.reason = d.reason;
                 {
                   std::lock_guard<std::mutex> lock(queue->mu);
                   queue->answers.push_back(std::move(pending));
                 }
                 uint64_t one = 1;
                 ssize_t n = write(queue->wake.get(), &one, sizeof one);
                 (void)n;
               });
}

std::deque<FileAnswer> FileApprovals::TakeAnswers() {
  uint64_t count;
  ssize_t n = read(wake_.get(), &count, sizeof count);
  (void)n;
  std::deque<FileAnswer> out;
  std::lock_guard<std::mutex> lock(queue_->mu);
  out.swap(queue_->answers);
  return out;
}

}  // namespace ward::supervisor
