// The durable audit sink: one hash-chained JSON-lines log per session, written only by the
// supervisor, in a directory the sandbox cannot see. Format and guarantees: docs/audit.md.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "audit/redactor.h"
#include "common/events.h"
#include "common/status.h"
#include "common/unique_fd.h"

namespace ward::audit {

// $XDG_STATE_HOME/ward when XDG_STATE_HOME is absolute, else $HOME/.local/state/ward (HOME
// from the environment, else the password database). Empty when neither is known.
std::string DefaultStateDir();
// <state_dir>/sessions
std::string SessionsDir(const std::string& state_dir);
// Sortable by time: "20261130T162233Z-3f9a1c2e" (UTC, then 32 random bits).
std::string NewSessionId();
// 1..128 characters of [A-Za-z0-9._-], not starting with '.'.
bool IsValidSessionId(std::string_view id);
// Exactly what NewSessionId produces: "YYYYMMDDTHHMMSSZ-" and 8 lower-case hex digits (for ids
// handed in from outside, e.g. `ward run --session-id`).
bool IsNewSessionIdFormat(std::string_view id);

inline constexpr std::string_view kEventsFile = "events.jsonl";
inline constexpr std::string_view kHeadFile = "head";

class SessionLog final : public ward::EventSink {
 public:
  struct Options {
    std::string state_dir;   // created (0700) when missing
    std::string session_id;  // must not exist yet
    // A record reaches the file (write(2)) at most this long after Emit; a SIGKILL loses at
    // most the records of the last interval (stated bound: <= 100 ms with the default).
    std::chrono::milliseconds flush_interval{50};
    // Whether Create starts the background flusher. A process that will still clone (the
    // supervisor before the sandbox starts) must stay single-threaded: it passes false, gets
    // write-through records until it calls StartFlusher() after the clone.
    bool start_flusher = true;
    // Close() also fsyncs the log, the head and the directory (survives a host crash; costs
    // milliseconds). Records reach the kernel with write(2) either way.
    bool fsync_on_close = false;
  };

  // Creates <state_dir>/sessions/<session_id>/ (0700) with `events.jsonl` and `head` (0600)
  // and writes the head as a probe, so an unwritable directory or a full disk is refused
  // here. On failure nothing of the session is left behind.
  static Result<std::unique_ptr<SessionLog>> Create(const Options& options);

  ~SessionLog() override;
  SessionLog(const SessionLog&) = delete;
  SessionLog& operator=(const SessionLog&) = delete;

  // Thread-safe, never throws. `data` should be an object; anything else is wrapped as
  // {"value": data} (null becomes {}). session.start, setup.error and session.end are
  // written before Emit returns. After a write error or Close, records are dropped.
  void Emit(std::string_view type, nlohmann::json data) override;

  // Starts the background flusher if it is not running (idempotent). Until then every Emit
  // writes through.
  void StartFlusher();
  // Lets the flusher start when it has work: records keep being written through until one
  // comes within flush_interval of the last one written through (a burst), which starts the
  // flusher and is batched. A short run (a few records far apart) never makes a thread, and
  // Close() has none to wake and join.
  void StartFlusherOnDemand();

  // Everything emitted so far reaches the file (write(2)) and the head. Returns health().
  Status Flush();
  // Flush (and with Options::fsync_on_close, fsync the log, the head and the directory), stop
  // the flusher. Emit afterwards drops the record. Idempotent.
  Status Close();
  // For a session created ahead of the decision to run (ward run makes the files while it
  // loads the policy): removes the session's files and directory, as if Create had never
  // run. Only before anything was emitted; the log is closed afterwards.
  Status Discard();
  // The first write error (sticky), ok otherwise.
  Status health() const;
  // Called once, on the first write error, from whichever thread hit it (the flusher or an
  // emitter), without internal locks held; it must not call Close(). Registered after a
  // failure that no callback has been told of yet, it is called at once.
  void OnFailure(std::function<void(const Status&)> callback);

  Redactor& redactor() { return redactor_; }
  const std::string& dir() const { return dir_; }
  const std::string& session_id() const { return session_id_; }
  // Records accepted by Emit so far (the next seq) and records dropped after a failure.
  int64_t emitted() const;
  int64_t dropped() const;

 private:
  struct Mark {
    size_t end;  // offset in the batch just after this record's newline
    int64_t seq;
    std::string hash;
  };

  SessionLog(std::string dir, std::string session_id, UniqueFd dir_fd, UniqueFd log_fd,
             std::chrono::milliseconds flush_interval, bool start_flusher);
  void FlusherLoop();
  Status WriteHead(int64_t seq, const std::string& hash);
  // Records the first error; returns true when this call made the log fail.
  bool Fail(Status st);
  void FireFailure();

  const std::string dir_;
  const std::string session_id_;
  const UniqueFd dir_fd_;
  const UniqueFd log_fd_;
  UniqueFd head_fd_;     // the head file, rewritten in place; guarded by write_mu_
  size_t head_len_ = 0;  // guarded by write_mu_
  const std::chrono::milliseconds flush_interval_;
  Redactor redactor_;

  // Held while writing; taken before mu_. Serialises batches so they reach the file in order.
  std::mutex write_mu_;
  off_t file_size_ = 0;  // guarded by write_mu_

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t next_seq_ = 0;
  std::string last_hash_;
  std::string batch_;
  std::vector<Mark> marks_;
  std::chrono::steady_clock::time_point batch_since_;
  Status health_;
  bool closed_ = false;
  bool flusher_running_ = false;
  bool flusher_on_demand_ = false;                      // see StartFlusherOnDemand
  std::chrono::steady_clock::time_point last_through_;  // the last write-through Emit
  bool fsync_on_close_ = false;
  bool stop_ = false;
  int64_t dropped_ = 0;
  std::function<void(const Status&)> on_failure_;
  bool failure_fired_ = false;

  std::thread flusher_;
};

}  // namespace ward::audit
