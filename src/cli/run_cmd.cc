// `ward run [OPTIONS] -- COMMAND [ARGS...]`: runs COMMAND inside every layer the policy needs.
// Exit status: the command's own, 128+N for a signal, 125 when ward refused or failed to set
// up (the message names the stage and errno) or the audit trail could not be written (the
// sandbox is stopped: docs/audit.md), 126/127 like a shell when COMMAND cannot run.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <climits>
#include <functional>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "audit/session_log.h"
#include "audit/sessions.h"
#include "cli/commands.h"
#include "cli/run_options.h"
#include "common/cpu.h"
#include "common/trace.h"
#include "enforce/probe.h"
#include "libssl/on_use.h"
#include "policy/decide.h"
#include "policy/env.h"
#include "supervisor/command_lookup.h"
#include "supervisor/denials.h"
#include "supervisor/explain.h"
#include "supervisor/private_dirs.h"
#include "supervisor/review_changes.h"
#include "supervisor/review_store.h"
#include "supervisor/run.h"
#include "supervisor/run_credentials.h"

namespace ward::cli {
namespace {

// The audit session's first record (session.start: the whole effective policy, the plan and the
// eight axes, ~20 KB) takes the supervisor about a millisecond to build. It is built on a thread
// of its own while the supervisor serves the sandbox; records emitted meanwhile are queued and
// follow it, in order, so it stays first in the hash chain and no emitter waits for it.
class StartRecordFirst final : public EventSink {
 public:
  explicit StartRecordFirst(audit::SessionLog* log) : log_(log) {}
  ~StartRecordFirst() override { Wait(); }
  StartRecordFirst(const StartRecordFirst&) = delete;
  StartRecordFirst& operator=(const StartRecordFirst&) = delete;

  void Start(std::function<void()> build) {
    {
      std::lock_guard lock(mu_);
      building_ = true;
    }
    try {
      thread_ = std::thread([this, build] {
        build();
        Release();
      });
    } catch (const std::system_error&) {
      build();  // no thread to be had: built here, before anything else is emitted
      Release();
    }
  }
  // Returns once the start record and everything queued behind it reached the log.
  void Wait() {
    std::lock_guard lock(join_mu_);
    if (thread_.joinable()) thread_.join();
  }
  void Emit(std::string_view type, nlohmann::json data) override {
    {
      std::lock_guard lock(mu_);
      if (building_) {
        queued_.emplace_back(std::string(type), std::move(data));
        return;
      }
    }
    log_->Emit(type, std::move(data));
  }

 private:
  // The start record is written: what was queued follows it, then Emit writes directly.
  void Release() {
    std::lock_guard lock(mu_);
    for (auto& [type, data] : queued_) log_->Emit(type, std::move(data));
    queued_.clear();
    building_ = false;
  }

  audit::SessionLog* log_;
  std::mutex mu_;  // building_ and queued_
  bool building_ = false;
  std::vector<std::pair<std::string, nlohmann::json>> queued_;
  std::mutex join_mu_;
  std::thread thread_;
};

struct RunCommandOptions {
  RunOptions run;
  int json_status_fd = -1;
  // Internal: `ward serve`'s end of a live sandbox's exec channel (supervisor/exec_relay.h).
  int exec_channel_fd = -1;
  std::vector<std::string> command;
  std::vector<std::string> labels;       // KEY=VALUE, recorded in the audit session
  std::string audit_dir;                 // overrides the state directory
  bool audit_fsync = false;              // fsync the log when the run ends
  std::string audit_reserve;             // --audit-reserve SIZE ("" = the default)
  std::vector<std::string> resolve;      // HOST:ADDR[,ADDR] for the proxy's resolution
  std::vector<std::string> upstream_ca;  // extra CAs for the credential broker's upstreams
  // The session id to use (audit session and approval socket) instead of a fresh one; set by
  // `ward serve` so it knows each exec's approval socket. Only NewSessionId's format.
  std::string session_id;
  // The space kept ahead of the audit log (audit_reserve, parsed).
  uint64_t audit_reserve_bytes = audit::kDefaultReserveBytes;
  // --workspace: direct (the host's directory), overlay (review mode) or copy (review mode
  // without overlayfs).
  std::string workspace_mode = "direct";
  // Internal: the review session a `ward serve` sandbox keeps across its execs.
  std::string review_session;
  // --quiet: no end-of-run summary of what was blocked (and no note of a different binary).
  bool quiet = false;
};

// A run in review mode: its session (made for this run, or a `ward serve` sandbox's) and the
// session's lock, held until the run is over.
struct RunReview {
  supervisor::ReviewSession session;
  UniqueFd lock;
  bool own = false;  // made for this run: removed when the run is refused or changed nothing
  bool changed = false;  // once the run is over: it left something in the session's tree
};

// The review session of a run with --workspace=overlay|copy: a new one named after the run's
// session, or (`ward serve`) the sandbox's, which must be open and of this workspace.
Result<RunReview> OpenRunReview(const RunCommandOptions& opts, const policy::Policy& pol,
                                const std::string& id) {
  char buf[PATH_MAX];
  if (realpath(pol.workspace.c_str(), buf) == nullptr) {
    return ErrnoError("workspace " + pol.workspace, errno);
  }
  const std::string workspace = buf;
  const std::string state = audit::DefaultStateDir();
  RunReview r;
  if (!opts.review_session.empty()) {
    if (!audit::IsNewSessionIdFormat(opts.review_session)) {
      return InvalidArgument("--review-session: not a session id");
    }
    WARD_ASSIGN_OR_RETURN(r.session, supervisor::LoadReviewSession(
                                         supervisor::ReviewRoot(state) + "/" + opts.review_session));
    if (r.session.workspace != workspace || r.session.state != supervisor::ReviewState::kOpen) {
      return Error(Code::kFailedPrecondition,
                   "review session " + r.session.id + " is " +
                       supervisor::ReviewStateName(r.session.state) + " and of the workspace " +
                       r.session.workspace + ": it cannot take this run's writes");
    }
  } else {
    supervisor::ReviewRequest rq;
    rq.state_dir = state;
    rq.id = id;
    rq.workspace = workspace;
    rq.force_copy = opts.workspace_mode == "copy";
    for (const policy::ProtectedRule& p : pol.protected_paths) {
      rq.protected_relpaths.push_back(p.relpath);
    }
    WARD_ASSIGN_OR_RETURN(r.session, supervisor::CreateReviewSession(rq));
    r.own = true;
  }
  Result<UniqueFd> lock = supervisor::LockReviewSession(r.session);
  if (!lock.ok()) {
    if (r.own) (void)supervisor::RetireEmptyReviewSession(r.session);
    return lock.status();
  }
  r.lock = std::move(lock).value();
  supervisor::SetAsideOverlayWork(r.session);
  return r;
}

enforce::WorkspaceLayer LayerOf(const supervisor::ReviewSession& s) {
  enforce::WorkspaceLayer l;
  if (s.mode == supervisor::ReviewMode::kOverlay) {
    l.kind = enforce::WorkspaceLayer::Kind::kOverlay;
    l.upper = s.upper();
    l.work = s.work();
  } else {
    l.kind = enforce::WorkspaceLayer::Kind::kCopy;
    l.copy = s.copy();
  }
  return l;
}

nlohmann::json EgressToJson(const supervisor::Outcome::Egress& e) {
  if (!e.enabled) return nullptr;
  nlohmann::json j = {{"connections", e.connections},
                      {"allowed", e.allowed},
                      {"denied", e.denied},
                      {"bytes_up", e.bytes_up},
                      {"bytes_down", e.bytes_down},
                      {"dns_queries", e.dns_queries},
                      {"dns_answered", e.dns_answered},
                      {"dns_nxdomain", e.dns_nxdomain}};
  if (e.credentials) {
    j["credentials"] = {{"intercepted", e.intercepted},
                        {"uses", e.credential_uses},
                        {"leak_attempts", e.leak_attempts}};
  }
  return j;
}

nlohmann::json FeaturesToJson(const enforce::KernelFeatures& f) {
  return {{"kernel", f.kernel_release},
          {"user_namespaces", f.user_ns},
          {"landlock_abi", f.landlock_abi},
          {"seccomp", f.seccomp},
          {"seccomp_user_notif", f.seccomp_user_notif},
          {"pidfd", f.pidfd},
          {"openat2", f.openat2},
          {"mount_api", f.mount_api},
          {"outer_wall", f.outer_wall}};
}

nlohmann::json RusageToJson(const struct rusage& r) {
  return {{"utime_ms", r.ru_utime.tv_sec * 1000 + r.ru_utime.tv_usec / 1000},
          {"stime_ms", r.ru_stime.tv_sec * 1000 + r.ru_stime.tv_usec / 1000},
          {"maxrss_kb", r.ru_maxrss}};
}

// Where the audit trail goes: --audit-dir, else the state directory ("" when unknown).
std::string AuditStateDir(const RunCommandOptions& opts) {
  return opts.audit_dir.empty() ? audit::DefaultStateDir() : opts.audit_dir;
}

// The audit session's files: made while the policy loads (an unwritable directory or a full
// disk refuses the run), kept only once the policy says the directory stays out of sight.
Result<std::unique_ptr<audit::SessionLog>> CreateAuditSession(const RunCommandOptions& opts,
                                                              const std::string& session_id) {
  std::string state = AuditStateDir(opts);
  if (state.empty()) {
    return Error(Code::kFailedPrecondition,
                 "cannot tell where the audit trail goes (set XDG_STATE_HOME or HOME), or run "
                 "with --no-audit");
  }
  audit::SessionLog::Options o;
  o.state_dir = state;
  o.session_id = session_id;
  o.start_flusher = false;  // the supervisor must stay single-threaded until the clone
  o.fsync_on_close = opts.audit_fsync;
  o.reserve_bytes = opts.audit_reserve_bytes;
  Result<std::unique_ptr<audit::SessionLog>> log = audit::SessionLog::Create(o);
  if (!log.ok()) {
    return Status(log.status().code(), "cannot write the audit trail: " + log.status().ToString() +
                                           " (fix it, or run with --no-audit to go without one)");
  }
  return log;
}

// The host paths the sandbox can write (its HOME and /tmp are tmpfs of its own; in review mode
// the upper layer or the copy, in ward's state directory).
std::vector<std::string> SandboxWritablePaths(const policy::Policy& pol,
                                              const std::optional<RunReview>& review) {
  std::vector<std::string> paths;
  if (review) paths.push_back(review->session.tree());
  if (pol.workspace_access == policy::Access::kWrite) paths.push_back(pol.workspace);
  for (const policy::PathRule& r : pol.paths) {
    if (r.access == policy::Access::kWrite) paths.push_back(r.path);
  }
  return paths;
}

// A log that cannot be written ends the run with 125 (fail closed): the message says what
// failed, what was not recorded, and what to do about it.
void ReportAuditFailure(const Status& st, const audit::SessionLog& log,
                        const RunCommandOptions& opts, supervisor::Outcome* out) {
  std::string what;
  if (out->kind == supervisor::Outcome::Kind::kAuditFailed) {
    what = out->message;  // the supervisor stopped the sandbox for it
  } else if (out->kind == supervisor::Outcome::Kind::kRefused) {
    what = out->message + "; and the audit trail could not be written: " + st.ToString();
  } else {
    what = "the audit trail could not be written (the command's own outcome: " +
           std::string(supervisor::OutcomeKindName(out->kind)) + ", exit status " +
           std::to_string(out->exit_code) + "): " + st.ToString();
  }
  std::string dropped = log.DescribeDropped();
  if (!dropped.empty()) what += "; not recorded: " + dropped;
  std::string state = AuditStateDir(opts);
  if (st.err() == ENOSPC || st.err() == EDQUOT) {
    what += "; free space on the file system of " + state +
            ", or move the audit trail to a file system the sandbox cannot write "
            "(XDG_STATE_HOME or --audit-dir); a larger --audit-reserve keeps it writable longer";
  } else {
    what += "; check the file system of " + state +
            ", or move the audit trail elsewhere (XDG_STATE_HOME or --audit-dir)";
  }
  if (out->kind != supervisor::Outcome::Kind::kRefused) {
    out->kind = supervisor::Outcome::Kind::kAuditFailed;
    out->stage = "audit";
    out->err = st.err();
    out->signal = 0;
  }
  out->exit_code = 125;
  out->message = what;
}

// The policy's word on ward's own directories (its runtime and state directories, and the
// audit directory when there is one): none may be visible inside the sandbox.
Status CheckWardDirsHidden(const RunCommandOptions& opts, const policy::Policy& pol) {
  std::vector<supervisor::PrivateDir> dirs = supervisor::WardPrivateDirs();
  if (pol.audit && !opts.audit_dir.empty()) {
    dirs.push_back({"the audit directory", opts.audit_dir,
                    "choose another --audit-dir, or run with --no-audit"});
  }
  supervisor::PrivateDir config{"ward's configuration directory (your profiles and settings)",
                                UserConfigDir(),
                                "make it read-only inside (-r instead of -w), or deny it"};
  config.writable_only = true;
  dirs.push_back(std::move(config));
  return supervisor::CheckOutOfView(pol, dirs);
}

// Whether a run left anything in its review session: an overlay's upper directory holds what it
// wrote; a copy has to be compared (its cost is the copy's order, which this mode pays anyway).
bool RunLeftChanges(const supervisor::ReviewSession& s) {
  if (s.mode == supervisor::ReviewMode::kOverlay) return !supervisor::ReviewTreeEmpty(s);
  Result<std::vector<supervisor::ReviewChange>> changes = supervisor::CollectChanges(s);
  return !changes.ok() || !changes->empty();
}

// What session.end says of a run in review mode (a member of its own, not another record: a
// second record at the end would start the log's flusher thread for nothing).
nlohmann::json ReviewRecord(const RunReview& r) {
  return {{"review_session", r.session.id},
          {"mode", supervisor::ReviewModeName(r.session.mode)},
          {"note", r.session.note},
          {"tree", r.session.tree()},
          {"workspace", r.session.workspace},
          {"changes", r.changed}};
}

// The end of a run in review mode: a session made for it goes again when the run was refused or
// wrote nothing; else one line says where its changes wait and what to do with them.
void EndRunReview(RunReview* r, const supervisor::Outcome& out) {
  const bool ran = out.kind != supervisor::Outcome::Kind::kRefused;
  r->lock.reset();  // before a spare goes back: the next run takes it with its lock
  if (r->own && (!ran || !r->changed)) {
    (void)supervisor::RetireEmptyReviewSession(r->session);
    return;
  }
  if (!r->own) return;
  const std::string& id = r->session.id;
  std::fprintf(stderr,
               "ward: review mode: the run's changes to the workspace wait in session %s: "
               "ward diff %s; ward apply %s; ward discard %s\n",
               id.c_str(), id.c_str(), id.c_str(), id.c_str());
}

void WriteJsonStatus(int fd, const supervisor::Outcome& o) {
  nlohmann::json j = {
      {"status", supervisor::OutcomeKindName(o.kind)},
      {"exit_code", o.exit_code},
      {"signal", o.signal == 0 ? nlohmann::json(nullptr) : nlohmann::json(o.signal)},
      {"stage", o.stage.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.stage)},
      {"errno", o.err == 0 ? nlohmann::json(nullptr) : nlohmann::json(o.err)},
      {"message", o.message},
      {"degraded", o.notes.degraded},
      {"duration_ms", o.duration_ms},
      {"limits", supervisor::LimitsOutcomeToJson(o.limits)},
      {"egress", EgressToJson(o.egress)},
  };
  nlohmann::json quarantined = nlohmann::json::array();
  for (const supervisor::QuarantineItem& q : o.workspace.quarantined) quarantined.push_back(q.ToJson());
  j["quarantined"] = std::move(quarantined);
  j["denials"] = supervisor::DenialsToJson(o.denials);
  std::string s = j.dump() + "\n";
  const char* p = s.data();
  size_t n = s.size();
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) break;
    p += w;
    n -= w;
  }
}

// `s` as one shell word (single-quoted unless it is plainly safe).
std::string QuotedForShell(const std::string& s) {
  bool plain = !s.empty();
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("/._-+:@,=").find(c) ==
                                                            std::string_view::npos) {
      plain = false;
    }
  }
  if (plain) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The number of summary lines before "and N more".
constexpr size_t kSummaryLines = 10;

// The end-of-run summary on ward's stderr: one line per distinct target that was refused, most
// frequent first, and where the rest are ("and N more"); nothing when nothing was denied.
void PrintDenialSummary(const supervisor::Outcome& out, const std::string& session_id,
                        const std::string& audit_dir) {
  const std::string state = audit_dir.empty() ? "" : " --state-dir " + QuotedForShell(audit_dir);
  const std::string more = session_id.empty()
                               ? "--json-status has them all (this run kept no audit trail)"
                               : "ward audit" + state + " show " + session_id + " --denials";
  for (const std::string& line : supervisor::SummaryLines(out.denials, kSummaryLines, more)) {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

// What the command's name finds on the host's PATH and on the sandbox's (within the policy's
// view). Looked up while sandbox init builds the root, when the supervisor only waits.
supervisor::CommandLookup LookUpRunCommand(const supervisor::RunRequest& req) {
  if (req.argv.empty()) return {};
  std::string inside_path;
  for (const std::string& e : req.env) {
    if (e.starts_with("PATH=")) inside_path = e.substr(5);
  }
  const char* host_path = getenv("PATH");
  return supervisor::LookUpCommand(req.policy, req.argv[0], inside_path,
                                   host_path == nullptr ? "" : host_path);
}

// After the run: a command missing inside but on the host becomes a "command" denial (and a
// record); one that found another binary inside is said once per pair (a marker in the state
// directory). Returns that line, or "".
std::string NoteRunCommand(const supervisor::RunRequest& req,
                           const supervisor::CommandLookup& found, bool quiet,
                           audit::SessionLog* log, supervisor::Outcome* out) {
  const bool not_found =
      out->kind == supervisor::Outcome::Kind::kExecFailed && out->err == ENOENT;
  if (found.kind == supervisor::CommandLookup::Kind::kHiddenHere && not_found) {
    nlohmann::json data = {{"argv0", req.argv[0]},
                           {"host_path", found.host},
                           {"allow_with", found.allow_with}};
    if (std::optional<supervisor::Denial> d = supervisor::DenialOf("command.hidden", data)) {
      d->count = 1;
      out->denials.insert(out->denials.begin(), std::move(*d));
    }
    if (log) log->Emit("command.hidden", std::move(data));
    return "";
  }
  if (found.kind != supervisor::CommandLookup::Kind::kDifferentHere || quiet ||
      out->kind == supervisor::Outcome::Kind::kRefused) {
    return "";
  }
  const std::string key = req.argv[0] + '\0' + found.inside + '\0' + found.host;
  if (!supervisor::FirstNotice(audit::DefaultStateDir(), key)) return "";
  return "ward: '" + audit::SanitizeForTerminal(req.argv[0]) + "' here is " +
         audit::SanitizeForTerminal(found.inside) + "; on the host it is " +
         audit::SanitizeForTerminal(found.host) + " (hidden here) — add: " +
         audit::SanitizeForTerminal(found.allow_with) + " (said once)";
}

// What the check after the run moved to the quarantine, and how to review and restore it.
void ReportWorkspaceCheck(const supervisor::Outcome& out) {
  for (const supervisor::QuarantineItem& q : out.workspace.quarantined) {
    std::fprintf(stderr,
                 "ward: quarantined %s: %s; review: ward quarantine show %s; restore: ward "
                 "quarantine restore %s\n",
                 audit::SanitizeForTerminal(q.path).c_str(),
                 audit::SanitizeForTerminal(q.reason).c_str(), q.id.c_str(), q.id.c_str());
  }
  for (const std::string& p : out.workspace.privilege_bits) {
    std::fprintf(stderr, "ward: took the setuid/setgid bits off %s\n",
                 audit::SanitizeForTerminal(p).c_str());
  }
  for (const std::string& e : out.workspace.errors) {
    std::fprintf(stderr, "ward: workspace check: %s\n", audit::SanitizeForTerminal(e).c_str());
  }
}

// What one run leaves for its report. The members die in reverse order: events before log (it
// writes to the log).
struct RunState {
  supervisor::Outcome out;
  supervisor::CommandLookup command_found;  // the command on the host's PATH and inside
  std::string command_note;                 // said after the summary, once
  std::string audit_session;                // the trail the summary points to ("" without one)
  std::optional<RunReview> review;          // review mode (--workspace=overlay|copy)
  std::unique_ptr<audit::SessionLog> log;
  std::optional<StartRecordFirst> events;  // log's sink during the run (after log: dies first)
};

void Refuse(supervisor::Outcome* out, std::string message) {
  out->kind = supervisor::Outcome::Kind::kRefused;
  out->exit_code = 125;
  out->message = std::move(message);
}

// The options checked before anything else; false: refused (the message is printed).
bool CheckRunOptions(RunCommandOptions& opts) {
  // The outcome must have somewhere to go: a descriptor that is not open, or not for writing,
  // refuses the run before anything ran, rather than losing the status at the end.
  if (opts.json_status_fd >= 0) {
    int flags = fcntl(opts.json_status_fd, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
      std::fprintf(stderr, "ward: --json-status %d: %s\n", opts.json_status_fd,
                   flags < 0 ? "not an open file descriptor" : "not open for writing");
      return false;
    }
  }
  if (opts.exec_channel_fd >= 0) {
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt(opts.exec_channel_fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
        type != SOCK_SEQPACKET || !opts.command.empty()) {
      std::fprintf(stderr, "ward: --exec-channel %d: %s\n", opts.exec_channel_fd,
                   opts.command.empty() ? "not a SOCK_SEQPACKET socket"
                                        : "a live sandbox takes no command");
      return false;
    }
  } else if (opts.command.empty()) {
    std::fprintf(stderr,
                 "ward: no command given (usage: ward run [OPTIONS] -- COMMAND [ARGS...])\n");
    return false;
  }
  if (!opts.audit_reserve.empty()) {
    Result<uint64_t> reserve = policy::ParseSize(opts.audit_reserve);
    if (!reserve.ok()) {
      std::fprintf(stderr, "ward: --audit-reserve %s: %s (e.g. 1M, 256k, 0 for none)\n",
                   opts.audit_reserve.c_str(), reserve.status().ToString().c_str());
      return false;
    }
    opts.audit_reserve_bytes = *reserve;
  }
  return true;
}

// A run that brokers credentials or asks a webhook needs OpenSSL: opening it overlaps with
// the planning, on a thread joined before the clone (a clone copies only this thread).
void StartTlsPreload(const policy::Policy& pol, const RunCommandOptions& opts,
                     std::optional<ElsewhereThread>* preload) {
  if (!supervisor::AnyCredentialEnabled(pol) && opts.run.approver.empty()) return;
  try {
    preload->emplace([] { (void)libssl::Load(); });
  } catch (const std::system_error&) {
    // No thread to be had: the broker or the webhook loads it when it starts.
  }
}

// The request's command, proxy and approval settings, from the options.
void FillRunRequest(const RunCommandOptions& opts, supervisor::RunRequest* req) {
  req->argv = opts.command;
  req->exec_channel = opts.exec_channel_fd;
  req->resolve = opts.resolve;
  req->raw_terminal = opts.run.raw_terminal;
  req->approvals.approver = opts.run.approver;
  if (!opts.run.approver_secret_env.empty()) {
    req->approvals.approver_secret = "env:" + opts.run.approver_secret_env;
  } else if (!opts.run.approver_secret_file.empty()) {
    req->approvals.approver_secret = "file:" + opts.run.approver_secret_file;
  }
  req->upstream_ca = opts.upstream_ca;
  req->approvals.session = opts.session_id;  // empty: the audit session's, or a fresh one
}

// The sandbox's environment, as the policy builds it from the caller's. Copies of the caller's
// environment (API keys included) are wiped once used: sandbox init is a copy of this process's
// memory, and must not hold what it was not given.
void BuildSandboxEnvironment(supervisor::RunRequest* req) {
  std::vector<std::pair<std::string, std::string>> caller = CallerEnvironment();
  std::vector<std::pair<std::string, std::string>> built =
      policy::BuildEnvironment(req->policy, caller);
  for (const auto& [k, v] : built) {
    std::string e;
    e.reserve(k.size() + 1 + v.size());
    e.append(k).append("=").append(v);
    req->env.push_back(std::move(e));
  }
  policy::WipeEnvironment(&built);
  policy::WipeEnvironment(&caller);
  supervisor::WithholdCredentialValues(req->policy, &req->env);
}

// --label KEY=VALUE, as the audit session's labels. Returns the refusal ("" when all parse).
std::string ParseLabels(const std::vector<std::string>& given, nlohmann::json* labels) {
  *labels = nlohmann::json::object();
  for (const auto& l : given) {
    size_t eq = l.find('=');
    if (eq == std::string::npos || eq == 0) return "--label " + l + ": expected KEY=VALUE";
    (*labels)[l.substr(0, eq)] = l.substr(eq + 1);
  }
  return "";
}

// Review mode: the session that takes the run's writes, named after the run's. False: refused.
bool OpenReviewForRun(const RunCommandOptions& opts, const std::string& session_id,
                      supervisor::RunRequest* req, RunState* st) {
  if (!opts.review_session.empty() && opts.workspace_mode == "direct") {
    Refuse(&st->out, "--review-session needs --workspace=overlay or --workspace=copy");
    return false;
  }
  if (opts.workspace_mode == "direct") return true;
  Result<RunReview> opened =
      OpenRunReview(opts, req->policy, session_id.empty() ? audit::NewSessionId() : session_id);
  if (!opened.ok()) {
    Refuse(&st->out, "--workspace=" + opts.workspace_mode + ": " + opened.status().ToString());
    return false;
  }
  st->review = std::move(opened).value();
  TraceMark("review session opened");
  req->workspace_layer = LayerOf(st->review->session);
  if (st->review->session.mode == supervisor::ReviewMode::kCopy && st->review->own &&
      opts.workspace_mode != "copy") {
    std::fprintf(stderr,
                 "ward: review mode: overlayfs cannot be used here (%s); the workspace was "
                 "copied instead\n",
                 st->review->session.note.c_str());
  }
  return true;
}

// What the run's hooks (called by the supervisor during the run) and the code after the run
// share.
struct AuditedRun {
  const RunCommandOptions& opts;
  supervisor::RunRequest& req;
  RunState& st;
  std::string session_id;  // the audit session's ("" without one)
  nlohmann::json labels;
  std::string cwd;
  bool audit_tried = false;  // the trail was opened, or must not be (ward's dirs in view)
};

// The audit session, opened by the supervisor after the clone: its files, the check that the
// sandbox cannot fill their file system, and the sink the run's events go to.
Result<supervisor::AuditAttachment> OpenRunAudit(AuditedRun* run) {
  run->audit_tried = true;
  Result<std::unique_ptr<audit::SessionLog>> made = CreateAuditSession(run->opts, run->session_id);
  if (!made.ok()) return made.status();
  Status reach = audit::RequireReserveOrOwnFileSystem(
      **made, SandboxWritablePaths(run->req.policy, run->st.review));
  if (!reach.ok()) {
    (void)(*made)->Discard();
    return Status(reach.code(), reach.ToString() +
                                    " (XDG_STATE_HOME or --audit-dir), or run with "
                                    "--no-audit to go without one");
  }
  run->st.log = std::move(made).value();
  TraceMark("audit session opened");
  audit::SessionLog* sink = run->st.log.get();
  run->st.events.emplace(sink);
  return supervisor::AuditAttachment{
      &*run->st.events, [sink](const std::string& s) { sink->redactor().AddSecret(s); },
      [sink](std::function<void(const Status&)> stop) { sink->OnFailure(std::move(stop)); }};
}

void WireAuditHooks(AuditedRun* run) {
  // ward's own directories out of the view: checked while init builds the root. A run
  // refused for it writes no session (the trail could be where the sandbox would see it).
  run->req.check_after_clone = [run] {
    Status hidden = CheckWardDirsHidden(run->opts, run->req.policy);
    if (!hidden.ok()) run->audit_tried = true;
    return hidden;
  };
  if (!run->req.policy.audit) return;
  run->req.approvals.session = run->session_id;
  run->req.open_audit = [run] { return OpenRunAudit(run); };
}

// session.start: the command, who ran it and where, the kernel, and what `ward explain` says of
// the sandbox (the effective policy, its layers, gaps, axes and plan).
nlohmann::json StartRecord(const AuditedRun& run, const enforce::LaunchPlan& plan,
                           const enforce::PlanNotes& notes,
                           const enforce::KernelFeatures& features) {
  const supervisor::RunRequest& req = run.req;
  supervisor::ExplainInput in;
  in.policy = &req.policy;
  in.argv = req.argv;
  in.env = req.env;
  in.version = WARD_VERSION;
  in.record_only = true;
  in.raw_terminal = req.raw_terminal;
  in.approval_channels = supervisor::ApprovalChannelNames(
      req.approvals, isatty(0) == 1 && (isatty(1) == 1 || isatty(2) == 1));
  Result<nlohmann::json> ex = supervisor::ExplainPlan(in, features, plan, notes);
  nlohmann::json start = {{"ward_version", WARD_VERSION},
                          {"command", req.argv},
                          {"cwd", run.cwd},
                          {"uid", getuid()},
                          {"gid", getgid()},
                          {"labels", run.labels},
                          {"kernel", FeaturesToJson(features)},
                          {"degraded", notes.degraded}};
  if (supervisor::AnyCredentialEnabled(req.policy)) {
    start["credentials"] = supervisor::EnabledCredentialsJson(req.policy);
  }
  if (ex.ok()) {
    for (const char* key : {"policy", "layers", "landlock_gaps", "axes", "plan"}) {
      start[key] = std::move((*ex)[key]);
    }
  }
  return start;
}

void WireStartRecord(AuditedRun* run) {
  run->req.on_started = [run](const enforce::LaunchPlan& run_plan,
                              const enforce::PlanNotes& run_notes,
                              const enforce::KernelFeatures& run_features) {
    // Here the supervisor has sent init all it needs and waits for it: the lookup's stats
    // are off the path of the sandbox's own setup.
    run->st.command_found = LookUpRunCommand(run->req);
    audit::SessionLog* sink = run->st.log.get();
    if (sink == nullptr || !run->st.events) return;
    sink->StartFlusherOnDemand();
    // Copies: the thread may outlive the supervisor's plan; the request outlives it.
    run->st.events->Start([run, sink, plan = run_plan, notes = run_notes, features = run_features] {
      sink->Emit("session.start", StartRecord(*run, plan, notes, features));
      TraceMark("session.start written");
      sink->LeaveReserveToLaterSessions();
    });
  };
}

std::string CurrentDirectory() {
  char cwd[4096] = "";
  if (getcwd(cwd, sizeof cwd) == nullptr) cwd[0] = '\0';
  return cwd;
}

nlohmann::json EndRecord(const RunState& st) {
  const supervisor::Outcome& out = st.out;
  nlohmann::json end = {
      {"status", supervisor::OutcomeKindName(out.kind)},
      {"exit_code", out.exit_code},
      {"signal", out.signal == 0 ? nlohmann::json(nullptr) : nlohmann::json(out.signal)},
      {"message", out.message},
      {"duration_ms", static_cast<int64_t>(out.duration_ms)},
      {"rusage", RusageToJson(out.rusage)},
      {"notifications", out.notifications},
      {"protected_denials", out.protected_denials},
      {"limits", supervisor::LimitsOutcomeToJson(out.limits)},
      {"egress", EgressToJson(out.egress)}};
  if (st.review && out.kind != supervisor::Outcome::Kind::kRefused) {
    end["review"] = ReviewRecord(*st.review);
  }
  return end;
}

// The trail's last records (a refused run's start record too), then the log closed: a log that
// cannot be written turns the outcome into its failure.
void CloseRunAudit(AuditedRun* run) {
  RunState& st = run->st;
  if (st.out.kind == supervisor::Outcome::Kind::kRefused) {
    // Nothing ran: the log still says what was refused and why.
    st.log->Emit("session.start", {{"ward_version", WARD_VERSION},
                                   {"command", run->req.argv},
                                   {"cwd", run->cwd},
                                   {"uid", getuid()},
                                   {"labels", run->labels},
                                   {"refused", st.out.message}});
  }
  TraceMark("run finished");
  st.log->Emit("session.end", EndRecord(st));
  TraceMark("session.end emitted");
  Status closed = st.log->Close();
  TraceMark("audit session closed");
  if (!closed.ok()) ReportAuditFailure(closed, *st.log, run->opts, &st.out);
  if (closed.ok()) StartAuditPruneIfDue(AuditStateDir(run->opts));
}

// After the run: what it left for review, the note on its command, and the audit trail closed.
void FinishRun(AuditedRun* run) {
  RunState& st = run->st;
  // Everything inside is gone: what the run left in the session's tree is final.
  if (st.review) st.review->changed = RunLeftChanges(st.review->session);
  if (st.events) st.events->Wait();
  st.command_note =
      NoteRunCommand(run->req, st.command_found, run->opts.quiet, st.log.get(), &st.out);
  st.audit_session = st.log ? run->session_id : "";
  if (!st.log && !run->audit_tried && run->req.open_audit &&
      st.out.kind == supervisor::Outcome::Kind::kRefused) {
    // Refused before the clone: the trail still records what was refused and why.
    Result<std::unique_ptr<audit::SessionLog>> made =
        CreateAuditSession(run->opts, run->session_id);
    if (made.ok()) {
      st.log = std::move(made).value();
    } else {
      std::fprintf(stderr, "ward: %s\n", made.status().ToString().c_str());
    }
  }
  if (st.log) CloseRunAudit(run);
}

// A run whose policy loaded: its request, labels, audit session id and review session, the
// hooks the supervisor calls, the run, and what follows it.
void RunUnderPolicy(const RunCommandOptions& opts, policy::Policy policy, RunState* st) {
  TraceMark("policy loaded");
  supervisor::RunRequest req;
  req.policy = std::move(policy);
  std::optional<ElsewhereThread> tls_preload;
  StartTlsPreload(req.policy, opts, &tls_preload);
  FillRunRequest(opts, &req);
  BuildSandboxEnvironment(&req);
  nlohmann::json labels;
  if (std::string bad = ParseLabels(opts.labels, &labels); !bad.empty()) {
    Refuse(&st->out, std::move(bad));
    return;
  }
  // The audit session's id is fixed now (the approval channel is named after it); its files
  // are made by the supervisor after the clone, while sandbox init builds the root.
  std::string session_id;
  if (req.policy.audit) {
    session_id = opts.session_id.empty() ? audit::NewSessionId() : opts.session_id;
  }
  if (!OpenReviewForRun(opts, session_id, &req, st)) return;
  AuditedRun run{opts, req, *st, session_id, std::move(labels)};
  WireAuditHooks(&run);
  run.cwd = CurrentDirectory();
  WireStartRecord(&run);
  // On this thread: a run is bound by CPU time, and a thread of its own for these few
  // syscalls and file reads costs more than it overlaps (docs/performance.md).
  req.features = enforce::ProbeKernel(/*probe_user_ns=*/false);
  req.before_clone = [&tls_preload] {
    if (tls_preload) tls_preload->Settle();
  };
  TraceMark("kernel probed");
  st->out = supervisor::Run(req);
  FinishRun(&run);
}

// What the user reads once the run is over (on stderr), and the outcome on --json-status.
void ReportRun(const RunCommandOptions& opts, RunState* st) {
  const supervisor::Outcome& out = st->out;
  if (st->review) {
    EndRunReview(&*st->review, out);
    TraceMark("review session ended");
  }
  if (!out.message.empty() && out.kind != supervisor::Outcome::Kind::kExited &&
      out.kind != supervisor::Outcome::Kind::kSignaled) {
    std::fprintf(stderr, "ward: %s\n", out.message.c_str());
  }
  for (const auto& d : out.notes.degraded) std::fprintf(stderr, "ward: degraded: %s\n", d.c_str());
  for (const auto& hit : out.limits.hits) {
    if (out.kind != supervisor::Outcome::Kind::kTimedOut || hit.limit != "timeout") {
      std::fprintf(stderr, "ward: limit: %s\n", hit.message.c_str());
    }
  }
  if (!opts.quiet) {
    TraceMark("summary start");
    PrintDenialSummary(out, st->audit_session, opts.audit_dir);
    if (!st->command_note.empty()) std::fprintf(stderr, "%s\n", st->command_note.c_str());
    TraceMark("summary printed");
  }
  ReportWorkspaceCheck(out);
  if (opts.json_status_fd >= 0) WriteJsonStatus(opts.json_status_fd, out);
}

int RunCommand(RunCommandOptions& opts) {
  if (!CheckRunOptions(opts)) return 125;
  RunState st;
  Result<policy::Policy> pol = LoadEffectivePolicy(opts.run);
  if (!opts.session_id.empty() && !audit::IsNewSessionIdFormat(opts.session_id)) {
    Refuse(&st.out, "--session-id: \"" + audit::SanitizeForTerminal(opts.session_id.substr(0, 64)) +
                        "\" is not a session id (expected YYYYMMDDTHHMMSSZ-xxxxxxxx)");
  } else if (!pol.ok()) {
    Refuse(&st.out, pol.status().ToString());
  } else {
    RunUnderPolicy(opts, std::move(pol).value(), &st);
  }
  ReportRun(opts, &st);
  return st.out.exit_code;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<RunCommandOptions>();
  CLI::App* sub = app.add_subcommand("run", "Run COMMAND inside the sandbox");
  AddRunOptions(sub, &opts->run);
  AddTerminalOptions(sub, &opts->run);
  AddCreateOption(sub, &opts->run);
  sub->add_option("--json-status", opts->json_status_fd,
                  "Write the outcome as one JSON object to file descriptor FD (open for writing)")
      ->check(CLI::Range(0, INT_MAX));
  sub->add_option("--label", opts->labels, "KEY=VALUE recorded in the audit session (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  sub->add_option("--audit-dir", opts->audit_dir,
                  "Where the audit trail goes (default: $XDG_STATE_HOME/ward or "
                  "~/.local/state/ward)");
  sub->add_option("--resolve", opts->resolve,
                  "HOST:ADDR[,ADDR]: the proxy resolves HOST to ADDR (like curl --resolve)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  sub->add_option("--upstream-ca", opts->upstream_ca,
                  "FILE: a PEM CA the credential broker also trusts for upstream TLS (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  // Internal (hidden from --help): `ward serve` picks each exec's session so it can reach the
  // exec's approval socket (docs/agents.md).
  sub->add_option("--session-id", opts->session_id,
                  "Use this session id (YYYYMMDDTHHMMSSZ-xxxxxxxx) for the audit session and the "
                  "approval socket")
      ->group("");
  sub->add_option("--workspace", opts->workspace_mode,
                  "direct (default): the command writes the workspace itself; overlay: review "
                  "mode, its writes land in an overlay kept by ward until `ward apply` (see "
                  "docs/review.md); copy: review mode with a copy of the workspace")
      ->check(CLI::IsMember({"direct", "overlay", "copy"}));
  // Internal (hidden): a live sandbox of `ward serve`, which sends its execs on this socket.
  sub->add_option("--exec-channel", opts->exec_channel_fd,
                  "Run no command: start a live sandbox that runs the execs sent on socket FD")
      ->check(CLI::Range(3, INT_MAX))
      ->group("");
  // Internal (hidden): the review session of a `ward serve` sandbox, shared by its execs.
  sub->add_option("--review-session", opts->review_session,
                  "Use this open review session (with --workspace=overlay|copy)")
      ->group("");
  sub->add_option("--audit-reserve", opts->audit_reserve,
                  "SIZE of disk space kept ahead of the audit log, so that a sandbox that fills "
                  "the file system cannot stop the trail (default 1M; 0: none, refused when the "
                  "sandbox can write that file system)");
  sub->add_flag("-q,--quiet", opts->quiet,
                "No end-of-run summary of what ward blocked (the audit trail and --json-status "
                "still have it)");
  sub->add_flag("--audit-fsync", opts->audit_fsync,
                "fsync the audit log when the run ends (survives a host crash; slower)");
  sub->add_option("command", opts->command, "COMMAND [ARGS...] (after --)");
  sub->positionals_at_end();
  sub->callback([opts, exit_code] { *exit_code = RunCommand(*opts); });
}

bool RunTakesLabels() {
  CLI::App probe;
  int ignored = 0;
  AddRunCommand(probe, &ignored);
  try {
    return probe.get_subcommand("run")->get_option_no_throw("--label") != nullptr;
  } catch (const CLI::Error&) {
    return false;
  }
}

}  // namespace ward::cli
