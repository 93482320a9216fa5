// A live sandbox of `ward serve`: one `ward run --exec-channel` process tree that stays up
// between execs (its processes, /tmp, HOME and loopback services persist), and runs each exec
// sent on its exec channel (enforce/exec_wire.h) inside it. The sandbox ends when the daemon
// closes the channel (sandbox.close, expiry, shutdown) or dies: `ward run` dies with the daemon
// and everything inside with `ward run`.
#pragma once

#include <sys/types.h>

#include <asio.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/error.h"
#include "common/unique_fd.h"
#include "enforce/exec_wire.h"

namespace ward::api {

class LiveSandbox : public std::enable_shared_from_this<LiveSandbox> {
 public:
  // An exec's message, and what the supervisor added to its end (the check after it:
  // {"quarantined": [...]}; null when nothing).
  using OnMessage = std::function<void(const enforce::ExecMsg&, const nlohmann::json& checked)>;
  // Called once per exec that will get no more messages: the sandbox ended (`why`).
  using OnGone = std::function<void(const std::string& why)>;

  // Starts `ward run` with `run_args` (everything after "ward", the exec channel appended).
  static Expected<std::shared_ptr<LiveSandbox>> Start(asio::io_context& io,
                                                     const std::string& ward_binary,
                                                     std::vector<std::string> run_args);
  ~LiveSandbox();

  // Sends one exec; its messages (started, failed, exited) go to `on_message`, or `on_gone`
  // when the sandbox ends first. `stdio` are the exec's stdin, stdout, stderr (sent, not kept).
  Expected<Done> Exec(uint64_t id, const enforce::ExecRequest& req, const int stdio[3],
                      OnMessage on_message, OnGone on_gone);
  // A signal to the exec's process group; nothing when it has ended.
  void Signal(uint64_t id, int sig);
  // Ends the sandbox: everything inside is killed. Waits for `ward run` (bounded).
  void Close(const std::string& why);

  bool ended() const { return ended_; }
  // Why it ended ("" while it runs), with what `ward run` said when it said something.
  const std::string& end_reason() const { return end_reason_; }
  pid_t pid() const { return pid_; }
  size_t running() const { return execs_.size(); }

 private:
  explicit LiveSandbox(asio::io_context& io);
  void WaitChannel();
  void OnChannel();
  void WaitExit();
  // Keeps what `d` says in *into (its end), as it comes, so `ward run` never blocks on it.
  void Drain(asio::posix::stream_descriptor* d, std::string* into);
  void End(const std::string& why);

  asio::io_context& io_;
  pid_t pid_ = -1;
  std::optional<asio::posix::stream_descriptor> channel_;
  std::optional<asio::posix::stream_descriptor> pidfd_;
  // `ward run`'s --json-status and stderr, kept for the reason its sandbox ended.
  std::optional<asio::posix::stream_descriptor> status_, stderr_;
  std::string status_text_, stderr_text_;
  struct Pending {
    OnMessage on_message;
    OnGone on_gone;
  };
  std::map<uint64_t, Pending> execs_;
  bool ended_ = false;
  std::string end_reason_;
};

}  // namespace ward::api
