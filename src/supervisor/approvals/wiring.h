// Approvals in `ward run`: the broker with the policy's standing answers and timeout,
// the per-session socket (outside the sandbox's view), the webhook channel (--approver) or the
// terminal prompt, and the file approvals the notifier consults for every trapped open.
#pragma once

#include <asio/io_context.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/events.h"
#include "common/status.h"
#include "enforce/spec.h"
#include "net/proxy.h"
#include "policy/policy.h"
#include "supervisor/approvals/approval_broker.h"
#include "supervisor/approvals/files.h"
#include "supervisor/approvals/prompt.h"
#include "supervisor/approvals/socket.h"

namespace ward::supervisor {

struct ApprovalRunOptions {
  std::string approver;         // --approver: "https://..." or "unix:/path"
  std::string approver_secret;  // "env:NAME" or "file:PATH" (--approver-secret-env/-file)
  std::string session;          // the audit session's id; a fresh one when empty
};

// The channels a run would use, for explain and session.start: "socket", then "webhook" or
// "terminal" (when `interactive`).
std::vector<std::string> ApprovalChannelNames(const ApprovalRunOptions& opts, bool interactive);
std::string ApprovalChannelsText(const std::vector<std::string>& channels);  // "socket, webhook"

// Before anything starts: the webhook's URL and secret must load. Errors say what to change.
// (That the socket's directory stays out of the sandbox's view is checked with ward's other
// directories, private_dirs.h, by `ward run` before the policy is planned.)
Status CheckApprovalRun(const ApprovalRunOptions& opts);

class ApprovalsRuntime {
 public:
  // On the supervisor's loop. `prompter` (may be null) is the terminal: used only when no
  // --approver is given. `events` is the run's audit trail (questions, answers, and peers the
  // socket refused: every process in a sandbox is, whatever its uid).
  static Result<std::unique_ptr<ApprovalsRuntime>> Start(asio::io_context& io,
                                                         const policy::Policy& policy,
                                                         const enforce::LaunchPlan& plan,
                                                         const ApprovalRunOptions& opts,
                                                         Prompter* prompter, EventSink* events);
  ~ApprovalsRuntime();
  ApprovalsRuntime(const ApprovalsRuntime&) = delete;
  ApprovalsRuntime& operator=(const ApprovalsRuntime&) = delete;

  std::shared_ptr<FileApprovals> files() const { return files_; }
  std::shared_ptr<ApprovalBroker> broker() const { return broker_; }
  const std::string& session() const { return session_; }
  const std::string& socket_path() const { return socket_path_; }
  const std::vector<std::string>& channels() const { return channels_; }
  // The proxy's host hold (ProxyOptions::ask_host): a live grant answers at once, else the
  // broker asks (kind host, the destination's port; kind request, with the method and path,
  // for a request an "ask" method and path rule matched); no answer in time denies.
  net::AskHostFn HostAsker() const;

  // The session ends: pending questions are denied, the socket is removed.
  void Stop();

 private:
  ApprovalsRuntime() = default;
  std::shared_ptr<ApprovalBroker> broker_;
  std::shared_ptr<FileApprovals> files_;
  std::unique_ptr<ApprovalServer> server_;
  std::string session_;
  std::string socket_path_;
  std::vector<std::string> channels_;
};

}  // namespace ward::supervisor
