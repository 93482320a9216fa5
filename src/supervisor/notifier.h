// The creation guard: answers the sandbox's trapped creation syscalls (open with O_CREAT,
// mkdir, mknod, symlink, link, rename) by performing them itself, in the sandbox's own mount
// view, after refusing any that would create a protected path (".envrc", ".git/hooks", ...)
// below a writable root or a nested repository. It never lets a checked call continue on the
// sandbox's own authority: the path it checked is the path it acts on (no TOCTOU).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/events.h"
#include "common/unique_fd.h"
#include "enforce/mount.h"
#include "enforce/spec.h"
#include "supervisor/file_approvals.h"

namespace ward::supervisor {

struct NotifierConfig {
  std::vector<std::vector<std::string>> relpaths;  // components of each protected path
  std::set<std::pair<unsigned long long, unsigned long long>> bases;  // (dev, ino) of roots
  bool privileged = false;  // supervisor is root: act with no capabilities, like the sandbox
  // File approvals (--ask): every open is trapped and decided here; null when off.
  std::shared_ptr<FileApprovals> approvals;
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

 private:
  void Loop();
  void HandleOne(int listener, const struct seccomp_notif& req);
  // File approvals: true when the open was answered (or left to the creation guard: false).
  bool HandleOpen(int listener, const struct seccomp_notif& req);
  void HandleAnswers(int listener);
  void InjectGrant(int listener, const FileAnswer& a);
  void DenyOpen(int listener, uint64_t id, const std::string& syscall, const std::string& path,
                const std::string& rule, const std::string& detail);

  NotifierConfig cfg_;
  UniqueFd listener_;
  UniqueFd wake_;
  EventSink* events_ = nullptr;
  std::thread thread_;
  std::atomic<int> handled_{0};
  std::atomic<int> denied_{0};
};

}  // namespace ward::supervisor
