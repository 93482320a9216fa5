// The creation guard: answers the sandbox's trapped creation syscalls (open with O_CREAT,
// mkdir, mknod, symlink, link, rename, memfd_create). For each it resolves the path in the
// sandbox's own view (sandbox_view.h: the sandbox's root, RESOLVE_IN_ROOT, no magic links),
// refuses one that would create a protected path (".envrc", ".git/hooks", ...) below a writable
// root or a nested repository, and has the guard agent (enforce/guard_agent.h), a process of
// the sandbox with the sandbox's own authority, perform the rest. It never lets a checked call
// continue on the sandbox's own authority: the entry it checked is the entry the agent acts on,
// in the directory it resolved (no TOCTOU). The same thread answers file approvals (--ask).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/events.h"
#include "common/unique_fd.h"
#include "enforce/mount.h"
#include "enforce/spec.h"
#include "supervisor/approvals/files.h"
#include "supervisor/creation_journal.h"
#include "supervisor/guard_channel.h"

namespace ward::supervisor {

class SandboxView;
struct TrappedCall;
struct ViewEntry;

struct NotifierConfig {
  std::vector<std::vector<std::string>> relpaths;  // components of each protected path
  std::set<std::pair<unsigned long long, unsigned long long>> bases;  // (dev, ino) of roots
  UniqueFd root;   // the sandbox's root (O_PATH), from sandbox init
  UniqueFd agent;  // the supervisor's end of the guard agent's socketpair
  // File approvals (--ask): every open is trapped and decided here; null when off.
  std::shared_ptr<FileApprovals> approvals;
  // What the guard made that may be host-executed content (checked after the run); null: none.
  CreationJournal* journal = nullptr;
  static NotifierConfig From(const enforce::LaunchPlan& plan, const enforce::MountReport& mounts);
};

class Notifier {
 public:
  explicit Notifier(NotifierConfig cfg) : cfg_(std::move(cfg)) {}
  ~Notifier() { Stop(); }
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  void Start(UniqueFd listener, EventSink* events);
  void Stop();
  int handled() const { return handled_.load(); }
  int denied() const { return denied_.load(); }

  // Exposed for tests: would creating `name` in directory `dirfd` create a protected path?
  bool IsProtected(int dirfd, const std::string& name) const;

  // Whether the directory `dirfd` was made during this run (the journal's record).
  bool MadeThisRun(int dirfd) const;

 private:
  // The answer to one trapped call.
  struct Answer {
    int listener;
    uint64_t id;
    Notifier* notifier;
    void Error(int err) const;
    void Value(long long val) const;
    void Fd(int fd, bool cloexec) const;  // the call returns a new descriptor for `fd`'s file
    // An error, recorded as syscall.deny (`target`: the path as resolved in the view, if known).
    void Refuse(const char* syscall, const std::string& path, const char* rule, int err,
                const std::string& detail, const std::string& target = "") const;
  };

  void Loop();
  void HandleOne(int listener, const struct seccomp_notif& req);
  // No privilege bits leave a run: set-id modes are performed without those bits.
  void ChangeMode(pid_t tid, const TrappedCall& call, const Answer& answer);
  int FindModeTarget(pid_t tid, const TrappedCall& call, UniqueFd* file) const;
  void NotePrivilegeBitsDropped(const TrappedCall& call) const;
  void CreateOrOpen(const SandboxView& view, pid_t tid, const TrappedCall& call, ViewEntry entry,
                    mode_t mode, const Answer& answer);
  void HandOverCallerFd(pid_t tid, int fdnum, const TrappedCall& call, const Answer& answer);
  void CreateEntry(const TrappedCall& call, const ViewEntry& entry, mode_t mode,
                   const Answer& answer);
  void MoveOrLink(const SandboxView& view, pid_t tid, const TrappedCall& call,
                  const ViewEntry& entry, const Answer& answer);
  void CreateMemfd(const TrappedCall& call, const Answer& answer);
  void Journal(int dirfd, const std::string& name, bool moved);
  void RefuseProtected(const Answer& answer, const char* syscall, const std::string& named,
                       const ViewEntry& entry);
  // `seen`: the path the call named, as resolved in the view (for the record of a refusal).
  void Relay(const Answer& answer, const TrappedCall& call, int result, UniqueFd fd,
             const std::string& seen);
  void RecordRefusedWrite(const TrappedCall& call, int err, const std::string& seen) const;
  // File approvals: true when the open was answered (or left to the creation guard: false).
  bool HandleOpen(int listener, const struct seccomp_notif& req);
  void HandleAnswers(int listener);
  void InjectGrant(int listener, const FileAnswer& a);
  void DenyOpen(int listener, uint64_t id, const std::string& syscall, const std::string& path,
                const std::string& rule, const std::string& detail);

  NotifierConfig cfg_;
  UniqueFd listener_;
  UniqueFd wake_;
  std::optional<GuardChannel> agent_;
  EventSink* events_ = nullptr;
  std::thread thread_;
  std::atomic<int> handled_{0};
  std::atomic<int> denied_{0};
};

}  // namespace ward::supervisor
