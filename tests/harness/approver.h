// A scripted approver for the approvals tests: a thread that plays the human at the other end
// of a run's approval socket (`$XDG_RUNTIME_DIR/ward/approvals-<session>.sock`), through the
// same blocking client the CLI uses. Header-only: the integration and escape binaries use it.
#pragma once

#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "supervisor/approvals/socket.h"

namespace ward::test {

class Approver {
 public:
  // Called for each new pending request; returns the message to send ({"op":"approve",...}
  // without "id") or nullopt to leave the request unanswered.
  using Decide = std::function<std::optional<nlohmann::json>(const nlohmann::json& request)>;
  // Called every round with the session's socket path (revocations, checks).
  using Tick = std::function<void(const std::string& socket)>;

  Approver(std::string runtime_dir, Decide decide, Tick tick = nullptr)
      : dir_(std::move(runtime_dir) + "/ward"), decide_(std::move(decide)), tick_(std::move(tick)) {
    // The socket refuses a peer whose namespaces it cannot read (it could be a sandbox). A test
    // binary that dropped from root to the test user is non-dumpable, which hides its
    // /proc/<pid>/ns from the supervisor (the harness undoes that too); a user's own
    // `ward approve` is dumpable.
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    thread_ = std::thread([this] { Loop(); });
  }
  ~Approver() {
    stop_ = true;
    thread_.join();
  }
  Approver(const Approver&) = delete;
  Approver& operator=(const Approver&) = delete;

  // Distinct errors met while polling (for failure messages).
  std::string errors() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const std::string& e : errors_) out += e + "\n";
    return out;
  }

  std::vector<nlohmann::json> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

  // One request on a socket; null on any error.
  static nlohmann::json Call(const std::string& socket, const nlohmann::json& msg) {
    Result<nlohmann::json> r =
        supervisor::CallApprovalSocket(socket, msg, std::chrono::milliseconds(2000));
    return r.ok() ? *r : nlohmann::json();
  }

 private:
  void Loop() {
    while (!stop_) {
      Result<std::vector<supervisor::ApprovalSession>> sessions =
          supervisor::FindApprovalSessions(dir_);
      if (sessions.ok()) {
        for (const supervisor::ApprovalSession& s : *sessions) Serve(s.path);
      } else {
        Note("sessions: " + sessions.status().ToString());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  void Serve(const std::string& socket) {
    if (tick_) tick_(socket);
    Result<nlohmann::json> listed =
        supervisor::CallApprovalSocket(socket, {{"op", "list"}}, std::chrono::milliseconds(2000));
    if (!listed.ok()) {
      Note("list: " + listed.status().ToString());
      return;
    }
    nlohmann::json list = *listed;
    if (!list.is_object() || !list.contains("requests")) return;
    for (const nlohmann::json& r : list["requests"]) {
      uint64_t id = r.value("id", uint64_t{0});
      if (!answered_.insert({socket, id}).second) continue;  // ids restart in every session
      {
        std::lock_guard<std::mutex> lock(mu_);
        seen_.push_back(r);
      }
      std::optional<nlohmann::json> answer = decide_(r);
      if (!answer) continue;
      (*answer)["id"] = id;
      Call(socket, *answer);
    }
  }

  void Note(const std::string& e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (errors_.size() < 8) errors_.insert(e);
  }

  std::string dir_;
  Decide decide_;
  Tick tick_;
  std::set<std::pair<std::string, uint64_t>> answered_;
  mutable std::mutex mu_;
  std::vector<nlohmann::json> seen_;
  std::set<std::string> errors_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ward::test
