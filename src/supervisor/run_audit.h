// The audit session of one run (docs/audit.md), kept by the supervisor: its files are made
// right after the clone, while sandbox init builds the root (an unwritable directory, a full
// disk, or a file system the sandbox could fill refuses the run before the command started);
// session.start is built on a thread of its own and stays first in the hash chain; a write
// error of the log from then on stops the run (fail closed); session.end closes it. A run
// refused before the clone still leaves a session that says what was refused and why.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "audit/session_log.h"
#include "common/events.h"
#include "common/status.h"

namespace ward::supervisor {

struct RunAuditOptions {
  std::string state_dir;   // where the trail goes; "" when it cannot be told (refused)
  std::string session_id;  // audit::NewSessionId's format
  bool fsync_on_close = false;
  uint64_t reserve_bytes = audit::kDefaultReserveBytes;
  nlohmann::json labels = nlohmann::json::object();  // --label KEY=VALUE
  std::string cwd;                                   // where the run was started
  std::string ward_version;                          // said in session.start
};

// Records emitted while session.start is being built are queued and follow it, in order, so it
// stays first in the hash chain and no emitter waits for it.
class StartRecordFirst final : public EventSink {
 public:
  explicit StartRecordFirst(audit::SessionLog* log) : log_(log) {}
  ~StartRecordFirst() override { Wait(); }
  StartRecordFirst(const StartRecordFirst&) = delete;
  StartRecordFirst& operator=(const StartRecordFirst&) = delete;

  // Builds and writes the start record on a thread (here when no thread can be had).
  void Start(std::function<void()> build);
  // Returns once the start record and everything queued behind it reached the log.
  void Wait();
  void Emit(std::string_view type, nlohmann::json data) override;

 private:
  void Release();

  audit::SessionLog* log_;
  std::mutex mu_;  // building_ and queued_
  bool building_ = false;
  std::vector<std::pair<std::string, nlohmann::json>> queued_;
  std::mutex join_mu_;
  std::thread thread_;
};

class RunAudit {
 public:
  explicit RunAudit(std::optional<RunAuditOptions> options) : options_(std::move(options)) {}

  const std::string& session_id() const;

  // After the clone: the session's files, and the check that none of `sandbox_writable` (the
  // host paths the sandbox can write) can fill their file system past the reserve.
  Status Open(const std::vector<std::string>& sandbox_writable);
  // No trail for this run (ward's directories in the sandbox's view: it could be seen there).
  void Forgo() { tried_ = true; }
  bool open() const { return log_ != nullptr; }
  // The run's sink (null without a trail), the redactor's secrets, and the run's stop on the
  // trail's first write error (called once, from any thread, maybe after the run returned).
  EventSink* events() { return events_ ? &*events_ : nullptr; }
  void AddSecret(const std::string& secret);
  void OnFailure(std::function<void(const Status&)> stop);
  // session.start, built by `build` off the supervisor's thread.
  void WriteStart(std::function<nlohmann::json()> build);
  // The start record and what queued behind it are written.
  void WaitForStart();
  // A run refused before the clone: the session is made now, to say so.
  void OpenForRefusal();
  // Emits `type` with `data` directly (after the run).
  void Emit(std::string_view type, nlohmann::json data);
  // The last records (a refused run's start record first: `refused` is the refusal's
  // message, "" when the run ran), then the log closed. Returns the log's first write error.
  Status Close(const std::vector<std::string>& argv, const std::string& refused,
               nlohmann::json end);
  // Said after a write error `st` of the trail: what was not recorded, and what to do.
  std::string FailureAdvice(const Status& st) const;

 private:
  Result<std::unique_ptr<audit::SessionLog>> CreateSession() const;

  std::optional<RunAuditOptions> options_;
  bool tried_ = false;  // opened, or forgone
  std::unique_ptr<audit::SessionLog> log_;
  std::optional<StartRecordFirst> events_;  // log's sink during the run (dies before log_)
};

}  // namespace ward::supervisor
