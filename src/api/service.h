// The methods of `ward serve` (JSON-RPC 2.0): sandboxes, execs, files, approvals and audit
// queries, independent of the transport. Handle() answers through the Peer that asked, possibly
// later (exec.run waits for the command or its yield). Documented in docs/agents.md.
// One file per family of methods: service.cc (the core, dispatch, sandbox.*, audit.query),
// service_execs.cc, service_fs.cc, service_review.cc, service_approvals.cc.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/error.h"
#include "api/exec.h"
#include "api/jsonrpc.h"
#include "api/live_sandbox.h"
#include "api/params.h"
#include "api/sandbox_spec.h"
#include "api/workspace_fs.h"
#include "audit/session_log.h"
#include "common/status.h"
#include "policy/loader.h"
#include "policy/policy.h"
#include "supervisor/review_apply.h"
#include "supervisor/review_store.h"

namespace ward::api {

// The protocol version of `ward serve` (bumped on incompatible changes).
inline constexpr int kServeProtocolVersion = 1;

// One connected client.
class Peer {
 public:
  virtual ~Peer() = default;
  virtual void Send(const nlohmann::json& message) = 0;
  virtual bool alive() const = 0;
};

// Loads the effective policy the way `ward run` would for these flags and workspace.
using PolicyLoader =
    std::function<Result<policy::Policy>(const policy::RunFlags& flags, const std::string& ws)>;

struct ServiceConfig {
  std::string version;    // ward's version
  std::string state_dir;  // the daemon's own records: sandboxes/, execs/
  std::string audit_dir;  // where audit sessions live ("" = no audit.query, no sandbox logs)
  // Paths no sandbox may see (the socket and its directory: a sandbox that could connect to
  // the daemon could ask for a wider sandbox). The state directory, the audit directory and
  // ward's own runtime and state directories (supervisor/private_dirs.h) always are.
  std::vector<std::string> private_paths;
  size_t max_sandboxes = 64;
  ExecManagerConfig exec;  // exec.state_dir is set from state_dir
  PolicyLoader load_policy;
  // `ward serve --workspace-anyway`: sandboxes may use a workspace ward would refuse (/, a
  // system directory...; policy/workspace_choice.h). Only the daemon's own flag decides: a
  // client cannot ask for it.
  bool workspace_anyway = false;
  // Each sandbox is live (its execs fork inside one running sandbox, state persists between
  // them); false: every exec runs in a sandbox of its own (`ward serve --fresh-execs`).
  bool live = true;
};

class Service {
 public:
  Service(asio::io_context& io, ServiceConfig config);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Creates the state directory and reloads what a previous daemon left.
  Status Init();
  // One parsed message from `peer`.
  void Handle(const Message& m, const std::shared_ptr<Peer>& peer);
  // Expires sandboxes past their ttl_s / idle_s. Called about once a second.
  void Tick();
  // Kills every running exec (recorded as interrupted) and closes the audit sessions.
  void Shutdown();
  // The daemon's own audit session (refused peers of its socket, its start and end); null
  // without an audit directory.
  EventSink* daemon_events() { return daemon_log_.get(); }

  size_t sandbox_count() const { return sandboxes_.size(); }

 private:
  struct Sandbox {
    std::string id;
    SandboxSpec spec;
    std::unique_ptr<policy::Policy> policy;  // stable address for fs
    std::optional<WorkspaceFs> fs;
    int64_t created_ms = 0;
    int64_t last_active_ms = 0;
    std::unique_ptr<audit::SessionLog> log;
    // Review mode (spec.workspace_mode overlay or copy): the session every exec writes to, until
    // review.apply or review.discard closes it and a fresh one takes its place.
    std::optional<supervisor::ReviewSession> review;
    // The live sandbox the execs run in (not in review mode): started with the sandbox, and
    // again by the next exec after it ended (`live_lost` says why it did; `live_starts` counts).
    std::shared_ptr<LiveSandbox> live;
    std::string live_session;  // its audit and approval session
    std::string live_lost;
    int live_starts = 0;
  };
  using Reply = std::function<void(Expected<nlohmann::json>)>;

  Expected<nlohmann::json> Dispatch(const Message& m, const std::shared_ptr<Peer>& peer,
                                    const Reply& reply, bool* async);
  Expected<nlohmann::json> Version();
  Expected<nlohmann::json> SandboxCreate(const nlohmann::json& params);
  Expected<nlohmann::json> SandboxGet(const nlohmann::json& params);
  Expected<nlohmann::json> SandboxList(const nlohmann::json& params);
  Expected<nlohmann::json> SandboxDestroy(const nlohmann::json& params);
  // sandbox.reset: the live sandbox ends (everything running in it) and a new one starts.
  Expected<nlohmann::json> SandboxReset(const nlohmann::json& params);
  // The sandbox's live sandbox, started when there is none or it ended.
  Expected<std::shared_ptr<LiveSandbox>> EnsureLive(Sandbox* s);
  void CloseLive(Sandbox* s, const std::string& why);
  // Fills req->live when the exec runs in the live sandbox (exec.run's choice).
  Expected<Done> LiveExec(Sandbox* s, bool fresh, const std::optional<nlohmann::json>& exec_policy,
                          const std::map<std::string, std::optional<std::string>>& env,
                          const ExecCommand& cmd, StartRequest* req);
  void ExecRun(const nlohmann::json& params, const std::shared_ptr<Peer>& peer, Reply reply);
  // exec.run's phases: the sandbox's flags narrowed by the exec's policy, with its env (a
  // refusal recorded as exec.deny); a review-mode sandbox's session for the exec; the exec's
  // end in the sandbox's audit session; the answer at its end or after yield_ms.
  Expected<policy::RunFlags> ExecFlags(Sandbox* s, const std::optional<nlohmann::json>& exec_policy,
                                       const std::map<std::string, std::optional<std::string>>& env,
                                       const std::vector<std::string>& argv);
  Expected<ExecReview> ExecReviewSession(Sandbox* s);
  void RecordExecEnd(const std::string& sandbox_id, const std::shared_ptr<Exec>& e);
  void AnswerExecRun(const std::shared_ptr<Exec>& e, const std::shared_ptr<Peer>& peer,
                     Reply reply, bool notify, std::optional<int64_t> yield_ms);
  void ExecWait(const nlohmann::json& params, const std::shared_ptr<Peer>& peer, Reply reply);
  Expected<nlohmann::json> ExecRead(const nlohmann::json& params);
  Expected<nlohmann::json> ExecWriteStdin(const nlohmann::json& params);
  Expected<nlohmann::json> ExecSignal(const nlohmann::json& params);
  Expected<nlohmann::json> ExecList(const nlohmann::json& params);
  Expected<nlohmann::json> Fs(const std::string& op, const nlohmann::json& params);
  Expected<nlohmann::json> AuditQueryMethod(const nlohmann::json& params);
  // review.diff / review.apply / review.discard of a review-mode sandbox.
  Expected<nlohmann::json> Review(const std::string& op, const nlohmann::json& params);
  // A review-mode sandbox's session: `reuse` when it is still open for this workspace (a
  // reloaded sandbox), else a new one.
  Expected<Done> OpenSandboxReview(Sandbox* s, const std::string& reuse);
  // Closes a review-mode sandbox's session and opens a fresh one (after an apply or a discard).
  Expected<Done> RenewSandboxReview(Sandbox* s);
  // review.discard and review.apply of the sandbox's session `rs`, locked by `lock`.
  Expected<nlohmann::json> ReviewDiscard(Sandbox* s, supervisor::ReviewSession* rs,
                                         UniqueFd* lock);
  Expected<nlohmann::json> ReviewApply(Sandbox* s, supervisor::ReviewSession* rs, UniqueFd* lock,
                                       const supervisor::ApplyOptions& ao);
  // approvals.list / approvals.grants ("requests" / "grants" of the execs' approval sockets).
  void ApprovalsQuery(bool grants, const nlohmann::json& params, Reply reply);
  // The execs approvals.list / approvals.grants asks: the one named by exec_id (`single`), or
  // every exec, of the sandbox named by sandbox_id if any.
  Expected<std::vector<std::shared_ptr<Exec>>> ApprovalQueryExecs(Params& p, bool* single);
  // approvals.approve / approvals.deny.
  void ApprovalsAnswer(bool allow, const nlohmann::json& params, Reply reply);
  void ApprovalsRevoke(const nlohmann::json& params, Reply reply);
  // The exec named by exec_id whose approval socket can be asked (running, with approvals).
  Expected<std::shared_ptr<Exec>> FindApprovalExec(Params& p);
  // Relays `request` to the approval socket of `e`; on success `on_ok` shapes the result.
  void RelayToExec(const std::shared_ptr<Exec>& e, nlohmann::json request, Reply reply,
                   std::function<Expected<nlohmann::json>(const nlohmann::json&)> on_ok);

  Status OpenDaemonSession();
  // A sandbox a previous daemon recorded, loaded again; false when it cannot be.
  bool Reload(const std::string& id, const nlohmann::json& record);
  Expected<Sandbox*> Load(SandboxSpec spec, std::string id, int64_t created_ms,
                          const std::string& review_session = "");
  Expected<Sandbox*> FindSandbox(Params& p);
  Expected<std::shared_ptr<Exec>> FindExec(Params& p);
  nlohmann::json SandboxJson(const Sandbox& s) const;
  void Destroy(const std::string& id, const std::string& why);
  void Emit(Sandbox* s, std::string_view type, nlohmann::json data);
  void Persist(const Sandbox& s);
  // Sends exec.output / exec.exit notifications of `e` to `peer`.
  uint64_t Follow(const std::shared_ptr<Exec>& e, const std::shared_ptr<Peer>& peer,
                  std::shared_ptr<bool> answered);

  asio::io_context& io_;
  ServiceConfig config_;
  ExecManager execs_;
  std::map<std::string, std::unique_ptr<Sandbox>> sandboxes_;
  std::unique_ptr<audit::SessionLog> daemon_log_;
  bool shut_down_ = false;
  // Handlers that outlive a request (approval socket replies) check that the Service is still
  // there through this token.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

// "TERM", "SIGTERM", "term" or 15 -> 15; nullopt when unknown.
std::optional<int> ParseSignal(const nlohmann::json& v);

// `ward serve`'s default socket: ward.sock in ward's runtime directory (supervisor/runtime_dir.h:
// $XDG_RUNTIME_DIR/ward, /run/user/<uid>/ward, or under the state directory; never /tmp),
// which is made a private directory (0700, ours) first.
Expected<std::string> DefaultSocketPath();

}  // namespace ward::api
