// Execs of the agent API: every command is its own process-tree sandbox, started by spawning
// the ward binary itself (`ward run ... --json-status 3 -- argv`) with pipes for stdin, stdout
// and stderr; the daemon never clones sandboxes in-process. Output is kept in files (for replay
// by offset, also after a client reconnects) up to a cap; the outcome comes from the JSON
// status `ward run` writes, and a command whose `ward run` died without one is `interrupted`,
// never a made-up exit 0. Everything runs on one asio event loop.
#pragma once

#include <sys/types.h>

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/error.h"
#include "api/live_sandbox.h"
#include "api/sandbox_spec.h"
#include "common/unique_fd.h"
#include "policy/loader.h"

namespace ward::api {

enum class Stream { kStdout, kStderr };
const char* StreamName(Stream s);
std::optional<Stream> ParseStream(std::string_view name);

enum class ExecState { kRunning, kExited, kDenied, kTimedOut, kInterrupted };
const char* ExecStateName(ExecState s);  // "running", "exited", "denied", "timed_out", ...

inline constexpr uint64_t kDefaultMaxOutputBytes = 1 << 20;
inline constexpr uint64_t kMaxMaxOutputBytes = 64 << 20;
inline constexpr size_t kMaxPendingStdin = 8 << 20;

// The final word on one exec, from what `ward run` reported and what the daemon did to it.
struct ExitFacts {
  std::optional<nlohmann::json> status;    // the --json-status object, when one arrived
  int wait_status = 0;                     // of the `ward run` process (waitpid)
  bool timed_out = false;                  // the daemon's timeout fired
  bool kill_requested = false;             // exec.signal KILL
  std::optional<std::string> interrupted;  // destroyed sandbox, stopping daemon
};
struct Outcome {
  ExecState state = ExecState::kInterrupted;
  std::optional<int> exit_code;
  std::optional<int> signal;
  nlohmann::json reason;  // null, or {"stage", "errno", "message"}
  // What the check after the run moved to the quarantine (ward quarantine), as ward run said.
  nlohmann::json quarantined = nlohmann::json::array();
  // What ward refused while the exec ran (supervisor/denials.h): a fresh exec's own; a live
  // exec's, whichever of the sandbox's processes asked.
  nlohmann::json denials = nlohmann::json::array();
};
Outcome ClassifyExit(const ExitFacts& facts);

// "ex-" / "sb-" + 16 hex digits; anything else is never used to build a path.
std::string NewId(std::string_view prefix);
bool ValidId(std::string_view id, std::string_view prefix);

class ExecManager;
struct StartRequest;

class Exec : public std::enable_shared_from_this<Exec> {
 public:
  struct Info {
    std::string id;
    std::string sandbox_id;
    std::vector<std::string> argv;
    std::string cwd;
    int64_t started_ms = 0;  // Unix epoch
    int64_t ended_ms = 0;
    uint64_t timeout_ms = 0;
    uint64_t max_output_bytes = kDefaultMaxOutputBytes;
    Outcome outcome;               // state kRunning until the end
    uint64_t size[2] = {0, 0};     // bytes kept per stream
    uint64_t dropped[2] = {0, 0};  // bytes past the cap
    // The session of `ward run --session-id` when the exec runs with approvals: its approval
    // socket is ApprovalSocketPathFor(approval_session) while it runs. Empty otherwise.
    std::string approval_session;
    bool fresh = true;  // a throwaway sandbox of its own; else forked in its live sandbox
    std::string live_session;  // the live sandbox's audit session (not fresh)
  };

  ~Exec();
  const std::string& id() const { return info_.id; }
  const Info& info() const { return info_; }
  bool running() const { return info_.outcome.state == ExecState::kRunning; }

  // Up to `max` bytes kept for `stream` from `offset`.
  Expected<std::string> Read(Stream stream, uint64_t offset, size_t max) const;
  // Queues data for the command's stdin; `eof` closes it after the data.
  Expected<Done> WriteStdin(std::string data, bool eof);
  // INT, TERM, HUP, QUIT, USR1, USR2 are forwarded into the sandbox by `ward run`; KILL ends
  // `ward run` itself, and with it the whole sandbox.
  Expected<Done> Signal(int sig);

  using OutputFn = std::function<void(Stream, uint64_t offset, std::string_view data)>;
  using ExitFn = std::function<void()>;
  // Callbacks run on the event loop. on_exit also fires when the exec has already ended
  // (posted, not inline).
  uint64_t Subscribe(OutputFn on_output, ExitFn on_exit);
  void Unsubscribe(uint64_t token);

  // {exec_id, sandbox_id, status, exit_code, signal, reason, argv, cwd, started_ms, ended_ms,
  //  duration_ms, truncated, offsets{stdout,stderr}, dropped{...}, approval_session (null
  //  without approvals)} plus, with inline_output,
  // stdout/stderr as text (invalid UTF-8 replaced; up to max_inline bytes each).
  nlohmann::json ToJson(bool inline_output, size_t max_inline = kMaxMaxOutputBytes) const;

 private:
  friend class ExecManager;
  Exec(ExecManager* mgr, asio::io_context& io, std::string dir);
  void StartIo();
  void ReadOutput(Stream s);
  // One read of the stream's pipe: kept and passed to the subscribers, then the next read; at
  // its end the pipe closes.
  void TakeOutput(Stream s);
  // Appends what max_output_bytes leaves room for to the stream's file (the rest counts as
  // dropped); returns how much it kept.
  size_t KeepOutput(Stream s, const char* buf, size_t n);
  void PassOutput(Stream s, uint64_t offset, std::string_view data);
  void ReadStatus();
  // A live sandbox's exec: its stdio pipes, then its end from the exec server's messages.
  Expected<Done> StartLive(StartRequest& req, uint64_t live_id);
  void OnLiveMessage(const enforce::ExecMsg& m, const nlohmann::json& checked);
  void OnLiveEnd(std::optional<nlohmann::json> status);
  // The process ended: stdin closes, timers stop, and the exec finishes once its pipes are
  // drained, or after `drain` whoever still holds them.
  void Ended(std::chrono::milliseconds drain);
  void PumpStdin();
  void OnProcessExit();
  void MaybeFinish();
  void Finish();
  // At the end: what the pipe of stream `i` (or the status pipe) still holds, then it closes.
  void DrainOutput(int i);
  void DrainStatus();
  void ArmTimeout();
  void KillNow();
  void WriteMeta();
  bool OutputFile(Stream s);  // opens (creating) the output file of `s`
  void CloseStdin();
  std::string StreamPath(Stream s) const;

  ExecManager* mgr_;
  asio::io_context& io_;
  std::string dir_;
  Info info_;
  pid_t pid_ = -1;
  std::shared_ptr<LiveSandbox> live_;  // a live sandbox's exec, else null
  uint64_t live_id_ = 0;
  std::optional<asio::posix::stream_descriptor> out_[2];
  std::optional<asio::posix::stream_descriptor> status_;
  std::optional<asio::posix::stream_descriptor> pidfd_;
  std::optional<asio::posix::stream_descriptor> stdin_;
  UniqueFd files_[2];
  size_t meta_size_ = 0;  // bytes of meta.json as last written
  std::string status_buf_;
  std::string stdin_buf_;
  bool stdin_eof_ = false;
  bool stdin_writing_ = false;
  bool eof_[2] = {false, false};
  bool status_eof_ = false;
  bool exited_ = false;
  int wait_status_ = 0;
  ExitFacts facts_;
  bool remove_when_done_ = false;
  asio::steady_timer timeout_timer_;
  asio::steady_timer kill_timer_;
  asio::steady_timer drain_timer_;
  std::chrono::steady_clock::time_point started_;
  struct Sub {
    OutputFn on_output;
    ExitFn on_exit;
  };
  std::map<uint64_t, Sub> subs_;
  uint64_t next_sub_ = 1;
};

struct ExecManagerConfig {
  std::string ward_binary = "/proc/self/exe";  // what runs `run ...`
  std::string state_dir;                       // execs/<id>/ live below (created 0700)
  size_t max_running = 32;
  bool labels = true;  // pass --label sandbox=ID --label exec=ID to `ward run`
  std::chrono::milliseconds kill_grace{2000};  // after SIGTERM on timeout, before SIGKILL
  size_t keep_finished_per_sandbox = 256;
};

struct StartRequest {
  std::string sandbox_id;
  policy::RunFlags flags;
  std::string workspace;
  ExecCommand command;
  std::string stdin_data;
  bool stdin_open = false;  // keep stdin open after stdin_data (exec.write_stdin)
  uint64_t timeout_ms = 0;  // 0: none
  uint64_t max_output_bytes = kDefaultMaxOutputBytes;
  // Non-empty: passed as `ward run --session-id` (NewSessionId's format; anything else is
  // refused by Start), so the daemon can reach the exec's approval socket.
  std::string approval_session;
  // Review mode: the sandbox's review session, which the exec's writes go to.
  ExecReview review;
  // Forked inside this live sandbox instead of a throwaway one: `live_request` has its
  // narrowing and its own environment ("NAME=VALUE" set over the sandbox's); `flags` is unused.
  std::shared_ptr<LiveSandbox> live;
  enforce::ExecRequest live_request;
  std::string live_session;
};

class ExecManager {
 public:
  ExecManager(asio::io_context& io, ExecManagerConfig config);
  ~ExecManager();
  ExecManager(const ExecManager&) = delete;
  ExecManager& operator=(const ExecManager&) = delete;

  // Creates the state directory. Called once before anything else.
  Status Init();
  // Loads the records a previous daemon left; those still running become interrupted.
  std::vector<std::shared_ptr<Exec>> Recover();

  Expected<std::shared_ptr<Exec>> Start(StartRequest req);
  std::shared_ptr<Exec> Find(const std::string& id) const;
  // Oldest first.
  std::vector<std::shared_ptr<Exec>> List(const std::string& sandbox_id = "") const;
  // Ends a running exec as interrupted (with `why`), or forgets a finished one and its files.
  void Remove(const std::string& id, const std::string& why);
  // Shutdown: every running exec is killed and recorded as interrupted, synchronously.
  void KillAll(const std::string& why);
  size_t running() const { return running_; }
  const ExecManagerConfig& config() const { return config_; }

 private:
  friend class Exec;
  void OnFinished(Exec* e);
  void Prune(const std::string& sandbox_id);
  std::string ExecDir(const std::string& id) const;

  asio::io_context& io_;
  ExecManagerConfig config_;
  std::map<std::string, std::shared_ptr<Exec>> execs_;
  std::vector<std::string> order_;  // ids, oldest first
  size_t running_ = 0;
  uint64_t next_live_id_ = 1;
};

// Removes a directory tree below a trusted state directory (no symlinks followed).
void RemoveTree(const std::string& path);

}  // namespace ward::api
