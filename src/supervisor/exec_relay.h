// A live sandbox's exec channel, on the supervisor's loop: requests from `ward serve` (the
// client's end) go to the sandbox's exec server (enforce/exec_server.h) and its answers go back.
// The supervisor checks each request before the server sees it and records every exec in the
// sandbox's audit session (exec.start, exec.end with its argv, exit, duration and the denials
// observed while it ran).
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/events.h"
#include "common/unique_fd.h"
#include "enforce/exec_wire.h"
#include "supervisor/denials.h"

namespace ward::supervisor {

class ExecRelay {
 public:
  // `on_end` is called once, when either end closes (the client: the sandbox is closed; the
  // server: it died), with what happened.
  ExecRelay(asio::io_context& io, UniqueFd client, UniqueFd server, EventSink* events,
            std::function<void(const std::string&)> on_end);
  ~ExecRelay();
  void Start();
  // Run after each exec ends, before its end is passed on: the check of what the sandbox left
  // in the workspace (the host may run git there next). What it returns (a JSON object, e.g.
  // {"quarantined": [...]}) goes with the exec's end, in a memfd.
  void CheckAfterEachExec(std::function<nlohmann::json()> check) { check_ = std::move(check); }
  // Where each exec's denials are gathered (a window per exec, open while it runs); they go
  // with its end record and its end.
  void GatherDenialsIn(DenialTee* tee) { denials_ = tee; }
  // Every exec still running gets an end that says why (the sandbox ended under it).
  void FailRunning(const std::string& why);

 private:
  struct Running {
    std::vector<std::string> argv;
    std::chrono::steady_clock::time_point started;
    bool awaits_terminal = false;  // a tty exec whose start (with its master) has not come
  };
  void Wait(asio::posix::stream_descriptor* d, bool client);
  bool OnClientMessage();
  bool OnServerMessage();
  void StartExec(const enforce::ExecMsg& m, UniqueFd fds[4]);
  void Refuse(uint64_t id, const std::string& why);
  nlohmann::json RecordEnd(const enforce::ExecMsg& m);
  void PassEnd(enforce::ExecMsg m, nlohmann::json denials);
  void End(const std::string& why);
  // The denials of exec `id`'s window, at most kMaxExecDenials distinct and the rest as "other".
  nlohmann::json ExecDenials(uint64_t id);
  static constexpr size_t kMaxExecDenials = 100;
  void Emit(std::string_view type, nlohmann::json data);

  asio::posix::stream_descriptor client_, server_;
  EventSink* events_;
  std::function<void(const std::string&)> on_end_;
  std::function<nlohmann::json()> check_;
  DenialTee* denials_ = nullptr;
  std::map<uint64_t, Running> running_;
  bool ended_ = false;
};

}  // namespace ward::supervisor
