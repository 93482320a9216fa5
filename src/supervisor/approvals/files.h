// File approvals: what the notifier does with a trapped open when approvals are on.
// The decision is computed from the LaunchPlan (the mounts of the sandbox's view and their
// access) and the policy's deny rules: an access the view already allows continues in the
// kernel, a denied path is refused at once, anything else is asked for through the
// ApprovalBroker. On a grant the supervisor opens the host path itself and injects the
// descriptor (seccomp ADDFD); the sandbox's own authority never gains anything.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/events.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "enforce/spec.h"
#include "policy/policy.h"
#include "supervisor/approvals/approval_broker.h"

namespace ward::supervisor {

// The sandbox's file view, reduced to what the decision needs. Paths are absolute and
// lexically normalised, the same inside and on the host (ward binds host paths at their own
// path).
struct FileView {
  struct Mount {
    std::string target;
    bool writable = false;
  };
  std::vector<Mount> mounts;  // binds and ward's files (resolv.conf)
  // Trees ward builds itself (/proc, /dev, the private /tmp and HOME): the policy already
  // decides everything below them, so nothing there is ever asked for.
  std::vector<std::string> synthetic;
  std::vector<std::pair<std::string, std::string>> symlinks;  // ward's links: path -> target
  std::vector<std::string> skeleton;  // directories of ward's read-only root (mount parents)
  std::vector<std::string> deny;      // the policy's deny rules (a last '*' glob component ok)

  static FileView From(const enforce::LaunchPlan& plan, const policy::Policy& policy);
};

enum class FileVerdict : uint8_t {
  kContinue,  // the view allows this access: let the kernel do it in the sandbox's context
  kDeny,      // an explicit deny rule: EACCES without asking
  kAsk,       // not allowed by the policy: ask the broker
};

struct FileDecision {
  FileVerdict verdict = FileVerdict::kAsk;
  std::string path;  // the normalised path the decision is about (after ward's symlinks)
  std::string why;   // "deny /etc/shadow", "bind /usr (read)", "not in the view"
};

// Pure. `path` is absolute (it is normalised here); `write` when the open wants more than
// reading (O_WRONLY, O_RDWR, O_TRUNC, O_CREAT).
FileDecision DecideFileAccess(const FileView& view, const std::string& path, bool write);

// What an open's flags ask for: O_CREAT -> create, O_RDWR -> read-write, O_WRONLY -> write,
// O_TRUNC with O_RDONLY -> write, else read.
FileAccess AccessForOpenFlags(int flags);

// The flags the supervisor uses to open a granted host file: the requested access mode and the
// harmless flags (O_CLOEXEC, O_DIRECTORY, O_NOCTTY, O_NONBLOCK, O_APPEND, O_SYNC, O_DSYNC,
// O_LARGEFILE), O_CREAT/O_EXCL only with a create grant, O_TRUNC only with a write grant, and
// always O_NOFOLLOW. An error for what is never granted (O_PATH, O_TMPFILE) or for flags the
// grant does not cover.
Result<int> GrantedOpenFlags(int requested, FileAccess granted);

// Opens an absolute host path without following any symlink or magic link on the way
// (openat2 RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS; component by component with
// O_NOFOLLOW where openat2 is missing). `flags` come from GrantedOpenFlags.
Result<UniqueFd> OpenHostPath(const std::string& path, int flags, mode_t mode);

// An answer the loop thread hands back to the notifier thread (which alone opens files and
// talks to the listener, with no capabilities beyond the sandbox's).
struct FileAnswer {
  uint64_t notif_id = 0;
  pid_t tid = 0;
  std::string syscall;
  std::string path;  // normalised
  int flags = 0;
  mode_t mode = 0;
  FileAccess access = FileAccess::kRead;
  bool allow = false;
  std::optional<Grant> grant;
  std::string reason;
};

// Shared between the notifier thread and the supervisor's loop: the broker, the view, and the
// queue of answers that arrive on the loop thread. Everything here is thread-safe.
class FileApprovals {
 public:
  FileApprovals(FileView view, std::shared_ptr<ApprovalBroker> broker, EventSink* events);
  ~FileApprovals();
  FileApprovals(const FileApprovals&) = delete;
  FileApprovals& operator=(const FileApprovals&) = delete;

  const FileView& view() const { return view_; }
  ApprovalBroker* broker() const { return broker_.get(); }
  EventSink* events() const { return events_; }

  // Asks the broker (never blocks); the answer is queued for the notifier thread, which is
  // woken through wake_fd().
  void Ask(FileAnswer pending, ApprovalRequest request);
  int wake_fd() const { return wake_.get(); }
  std::deque<FileAnswer> TakeAnswers();  // drains the queue and the wake fd

 private:
  struct Queue {
    std::mutex mu;
    std::deque<FileAnswer> answers;
    UniqueFd wake;  // a dup of FileApprovals::wake_ (the queue may outlive it)
  };
  FileView view_;
  std::shared_ptr<ApprovalBroker> broker_;
  EventSink* events_;
  UniqueFd wake_;
  std::shared_ptr<Queue> queue_;
};

}  // namespace ward::supervisor
