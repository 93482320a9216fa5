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
#include <optional>
#include <utility>
#include <vector>

#include "audit/session_log.h"
#include "audit/sessions.h"
#include "cli/commands.h"
#include "cli/run_options.h"
#include "common/trace.h"
#include "enforce/probe.h"
#include "policy/decide.h"
#include "policy/env.h"
#include "supervisor/denials.h"
#include "supervisor/private_dirs.h"
#include "supervisor/review_store.h"
#include "supervisor/run.h"
#include "supervisor/run_credentials.h"

namespace ward::cli {
namespace {

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

// Where the audit trail goes: --audit-dir, else the state directory ("" when unknown).
std::string AuditStateDir(const RunCommandOptions& opts) {
  return opts.audit_dir.empty() ? audit::DefaultStateDir() : opts.audit_dir;
}

// ward's own directories (its runtime and state directories, the audit directory when there is
// one, and the user's configuration): none may be in the sandbox's view.
std::vector<supervisor::PrivateDir> WardDirsOutOfView(const RunCommandOptions& opts,
                                                      const policy::Policy& pol) {
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
  return dirs;
}

// The end of a run in review mode: a session made for it goes again when the run was refused or
// wrote nothing; else one line says where its changes wait and what to do with them.
void EndRunReview(RunReview* r, const supervisor::Outcome& out) {
  const bool ran = out.kind != supervisor::Outcome::Kind::kRefused;
  r->lock.reset();  // before a spare goes back: the next run takes it with its lock
  if (r->own && (!ran || !out.review_changed)) {
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
      {"egress", supervisor::EgressToJson(o.egress)},
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

// What one run leaves for its report.
struct RunState {
  supervisor::Outcome out;
  std::optional<RunReview> review;  // review mode (--workspace=overlay|copy)
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
  req->quiet = opts.quiet;
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
  req->review = st->review->session;
  if (st->review->session.mode == supervisor::ReviewMode::kCopy && st->review->own &&
      opts.workspace_mode != "copy") {
    std::fprintf(stderr,
                 "ward: review mode: overlayfs cannot be used here (%s); the workspace was "
                 "copied instead\n",
                 st->review->session.note.c_str());
  }
  return true;
}

std::string CurrentDirectory() {
  char cwd[4096] = "";
  if (getcwd(cwd, sizeof cwd) == nullptr) cwd[0] = '\0';
  return cwd;
}

// The audit trail's settings (--audit-dir, --audit-fsync, --audit-reserve, --label): its
// session id is fixed now (the approval channel is named after it); the supervisor makes its
// files after the clone, while sandbox init builds the root.
supervisor::RunAuditOptions AuditOptions(const RunCommandOptions& opts, nlohmann::json labels) {
  supervisor::RunAuditOptions a;
  a.state_dir = AuditStateDir(opts);
  a.session_id = opts.session_id.empty() ? audit::NewSessionId() : opts.session_id;
  a.fsync_on_close = opts.audit_fsync;
  a.reserve_bytes = opts.audit_reserve_bytes;
  a.labels = std::move(labels);
  a.cwd = CurrentDirectory();
  a.ward_version = WARD_VERSION;
  return a;
}

// A run whose policy loaded: its request (command, environment, audit trail, review session),
// the run, and the audit trail's prune when one is due.
void RunUnderPolicy(const RunCommandOptions& opts, policy::Policy policy, RunState* st) {
  TraceMark("policy loaded");
  supervisor::RunRequest req;
  req.policy = std::move(policy);
  FillRunRequest(opts, &req);
  BuildSandboxEnvironment(&req);
  nlohmann::json labels;
  if (std::string bad = ParseLabels(opts.labels, &labels); !bad.empty()) {
    Refuse(&st->out, std::move(bad));
    return;
  }
  if (req.policy.audit) {
    req.audit = AuditOptions(opts, std::move(labels));
    req.approvals.session = req.audit->session_id;
  }
  req.out_of_view = WardDirsOutOfView(opts, req.policy);
  if (!OpenReviewForRun(opts, req.audit ? req.audit->session_id : "", &req, st)) return;
  // On this thread: a run is bound by CPU time, and a thread of its own for these few
  // syscalls and file reads costs more than it overlaps (docs/performance.md).
  req.features = enforce::ProbeKernel(/*probe_user_ns=*/false);
  TraceMark("kernel probed");
  st->out = supervisor::Run(req);
  if (!st->out.audit_session.empty() && st->out.kind != supervisor::Outcome::Kind::kAuditFailed) {
    StartAuditPruneIfDue(AuditStateDir(opts));
  }
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
    PrintDenialSummary(out, out.audit_session, opts.audit_dir);
    if (!out.command_note.empty()) std::fprintf(stderr, "%s\n", out.command_note.c_str());
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
