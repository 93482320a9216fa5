// The durable audit sink: one hash-chained JSON-lines log per session, written only by the
// supervisor, in a directory the sandbox cannot see. Format and guarantees: docs/audit.md.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
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

// The log's reserve by default (SessionLog::Options::reserve_bytes): with half of it always
// ahead, a full file system still leaves room for about a thousand denials.
inline constexpr uint64_t kDefaultReserveBytes = 1 << 20;

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
    // Space allocated ahead of the log (fallocate with FALLOC_FL_KEEP_SIZE: the file's size
    // stays its content) and kept at least half this far ahead of the last record while the
    // file system has room, so that a sandbox that fills a file system it shares with the
    // trail leaves the trail this much to write into. Rounded up to whole pages; 0: none.
    // Create refuses a file system that has less free space than this.
    uint64_t reserve_bytes = kDefaultReserveBytes;
  };

  // Creates <state_dir>/sessions/<session_id>/ (0700) with `events.jsonl` and `head` (0600),
  // writes the head as a probe and allocates the log's reserve, so an unwritable directory or
  // a full disk is refused here. A file system that cannot preallocate (no fallocate) gets no
  // reserve: reserved() says so. On failure nothing of the session is left behind.
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
  // the flusher, give back what is left of the reserve. Emit afterwards drops the record.
  // Idempotent.
  Status Close();
  // For a session created ahead of the decision to run (ward run makes the files while it
  // loads the policy): removes the session's files and directory, as if Create had never
  // run. Only before anything was emitted; the log is closed afterwards.
  Status Discard();
  // The first write error (sticky), ok otherwise.
  Status health() const;
  // Called once, on the first write error, from whichever thread hit it (the flusher or an
  // emitter), without internal locks held; it must not call Close(). Registered after a
  // failure that no callback has been told of yet, it is called at once. The callback (and
  // what it holds) may be called until the log is closed.
  void OnFailure(std::function<void(const Status&)> callback);

  Redactor& redactor() { return redactor_; }
  const std::string& dir() const { return dir_; }
  const std::string& session_id() const { return session_id_; }
  // Whether a reserve is allocated ahead of the log (Options::reserve_bytes), and when one was
  // asked for but not made, whether that is because the file system cannot preallocate.
  bool reserved() const;
  // Giving the reserve back costs a truncation (a journal transaction, often a few tenths of a
  // millisecond), which Close would add to the end of every run. Called once the run is under
  // way, off its path: the reserve is left to a later session instead (registered, and kept
  // from release while this log is open), and this session gives back those of up to two
  // sessions that have ended. Without this call Close gives the reserve back itself.
  void LeaveReserveToLaterSessions();
  bool cannot_preallocate() const { return cannot_preallocate_; }
  // Records accepted by Emit so far (the next seq).
  int64_t emitted() const;
  // Records that never reached the file: those of the write that failed, those waiting for a
  // write then, and every one emitted after a failure (or after Close).
  int64_t dropped() const;
  // The same for people: "3 records (from seq 57 on): 2 net.deny, 1 session.end"; "" when
  // nothing was dropped.
  std::string DescribeDropped() const;

 private:
  struct Mark {
    size_t end;  // offset in the batch just after this record's newline
    int64_t seq;
    std::string hash;
    std::string type;
  };

  SessionLog(std::string dir, std::string session_id, UniqueFd dir_fd, UniqueFd log_fd,
             std::chrono::milliseconds flush_interval, bool start_flusher);
  void FlusherLoop();
  // Chains a record (its type and data already redacted) to the log's batch; whether to flush
  // now.
  bool Chain(std::string_view type, const std::string& type_s, const std::string& data);
  // Appends the record to the batch; whether the batch was empty. mu_ held.
  bool AppendLocked(const std::string& type_s, const std::string& data);
  // Starts the flusher when StartFlusherOnDemand asked for it and records come often enough;
  // whether it tried. mu_ held.
  bool StartFlusherIfDueLocked(bool sync, std::chrono::steady_clock::time_point now);
  // Writes a batch taken from batch_ and its marks; write_mu_ held.
  Status WriteBatch(const std::string& batch, const std::vector<Mark>& marks);
  // After a write that reached the file only in part (`written` bytes); write_mu_ held.
  void KeepCompleteRecords(const std::vector<Mark>& marks, size_t written);
  Status WriteHead(int64_t seq, const std::string& hash);
  void KeepReserveAhead(size_t incoming);
  void ReleaseReserve();
  // Registers the log in <sessions>/.reserved. False: not registered (Close gives it back).
  bool RegisterReserve();
  // Counts records that will never reach the file; mu_ held.
  void DropLocked(const std::string& type, int64_t seq);
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
  // The reserve: its chunk (0: none), and where the allocated extent ends.
  off_t reserve_ = 0;                // set by Create
  off_t reserved_end_ = 0;           // guarded by write_mu_
  bool cannot_preallocate_ = false;  // set by Create: no reserve, for want of fallocate
  bool reserve_registered_ = false;  // guarded by write_mu_: a later session gives it back
  std::string state_dir_;            // set by Create

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
  int64_t first_dropped_seq_ = -1;                  // of the records that had a seq
  std::map<std::string, int64_t> dropped_by_type_;  // type -> records
  std::function<void(const Status&)> on_failure_;
  bool failure_fired_ = false;

  std::thread flusher_;
};

// Gives back the reserves of sessions that have ended (closed, or their supervisor killed), at
// most `limit` of them: each is registered in <sessions>/.reserved by a hard link, and a log
// still in use is locked by its writer. What a run calls at its start, and `ward audit`.
void ReleaseFinishedReserves(const std::string& state_dir, int limit);

// A log without a reserve (its file system cannot preallocate, or Options::reserve_bytes was 0)
// is blinded by whoever fills its file system: refuses when its directory is on the same file
// system as one of `sandbox_writable` (host paths a sandbox may write), naming both. Ok when
// the log has a reserve.
Status RequireReserveOrOwnFileSystem(const SessionLog& log,
                                     const std::vector<std::string>& sandbox_writable);

// A short session of its own for one host-side action outside any run (a review applied, a
// quarantined entry restored, a hook's decisions): session.start with `start`, the records in
// order, session.end with status "exited" and `exit_code`. No reserve, no flusher thread.
Status WriteShortSession(const std::string& state_dir, nlohmann::json start,
                         std::vector<std::pair<std::string, nlohmann::json>> records,
                         int exit_code);

}  // namespace ward::audit
