#include "api/service.h"

#include <signal.h>

#include <cctype>

#include "api/approvals_relay.h"
#include "api/params.h"
#include "api/service_internal.h"

namespace ward::api {

using namespace internal;  // what the service*.cc files share (service_internal.h)

namespace {

// How long exec.run (after yield_ms) and exec.wait (after timeout_ms) spend asking an exec's
// approval socket how many questions are pending before they answer without the count.
constexpr std::chrono::milliseconds kPendingProbeTimeout{500};

using ReplyFn = std::function<void(Expected<nlohmann::json>)>;

// exec.run's parameters after sandbox_id, all read before Finish() refuses unknown ones.
struct ExecRunParams {
  bool has_argv = false;
  bool has_shell = false;
  std::vector<std::string> argv;
  std::optional<std::string> shell;
  std::optional<std::string> cwd;
  std::map<std::string, std::optional<std::string>> env;
  std::optional<std::string> stdin_data;
  std::optional<std::string> stdin_encoding;
  std::optional<bool> stdin_open;
  std::optional<int64_t> timeout_ms;
  std::optional<int64_t> yield;
  std::optional<int64_t> max_output_bytes;
  std::optional<nlohmann::json> exec_policy;
  std::optional<bool> notify;
  std::optional<bool> fresh;
};

ExecRunParams ReadExecRunParams(Params& p) {
  ExecRunParams r;
  r.has_argv = p.Has("argv");
  r.has_shell = p.Has("shell");
  r.argv = p.StringList("argv", 4096);
  r.shell = p.String("shell");
  r.cwd = p.String("cwd", 4096);
  r.env = p.StringMap("env");
  r.stdin_data = p.Bytes("stdin", kMaxDataBytes * 2);
  r.stdin_encoding = p.String("stdin_encoding", 16);
  r.stdin_open = p.Bool("stdin_open");
  r.timeout_ms = p.Int("timeout_ms", 0, kMaxTimeoutMs);
  r.yield = p.Int("yield_ms", 0, kMaxTimeoutMs);
  r.max_output_bytes = p.Int("max_output_bytes", 0, static_cast<int64_t>(kMaxMaxOutputBytes));
  r.exec_policy = p.Object("policy");
  r.notify = p.Bool("notify");
  r.fresh = p.Bool("fresh");
  return r;
}

// The command: argv as given, or the shell line through /bin/sh -c; its cwd in the workspace.
Expected<ExecCommand> MakeCommand(const ExecRunParams& r, const std::string& workspace) {
  if (r.has_argv == r.has_shell) return InvalidError("give exactly one of argv and shell");
  ExecCommand cmd;
  if (r.has_shell) {
    cmd.argv = {"/bin/sh", "-c", *r.shell};
  } else {
    cmd.argv = r.argv;
  }
  if (cmd.argv.empty() || cmd.argv[0].empty()) return InvalidError("argv is empty");
  auto rcwd = ResolveCwd(workspace, r.cwd.value_or(""));
  if (!rcwd.ok()) return rcwd.error();
  cmd.cwd = *rcwd;
  return cmd;
}

// The exec's stdin and bounds.
Expected<Done> FillStartRequest(const ExecRunParams& r, StartRequest* req) {
  if (r.stdin_data) {
    auto d = DecodeData(*r.stdin_data, r.stdin_encoding.value_or("utf8"), "stdin");
    if (!d.ok()) return d.error();
    req->stdin_data = std::move(d).value();
  }
  req->stdin_open = r.stdin_open.value_or(false);
  req->timeout_ms = static_cast<uint64_t>(r.timeout_ms.value_or(0));
  req->max_output_bytes =
      static_cast<uint64_t>(r.max_output_bytes.value_or(kDefaultMaxOutputBytes));
  return Done{};
}

// Answers with the exec as it is and, while it runs, how many approvals it waits for (null
// when its approval socket did not say in time).
void ReplyWithPendingApprovals(asio::io_context& io, const std::string& approval_session,
                               const std::weak_ptr<Exec>& we, const ReplyFn& reply) {
  CountPendingApprovals(io, approval_session, kPendingProbeTimeout,
                        [reply, we](std::optional<uint64_t> pending) {
                          auto e2 = we.lock();
                          if (!e2)
                            return reply(MakeError(ErrorKind::kInterrupted, "the exec is gone"));
                          nlohmann::json j = e2->ToJson(true);
                          if (e2->running()) {
                            j["approvals_pending"] =
                                pending ? nlohmann::json(*pending) : nlohmann::json(nullptr);
                          }
                          reply(std::move(j));
                        });
}

// exec.wait's error for an exec still running when its timeout_ms ran out.
Error StillRunningError(const std::string& id, std::optional<uint64_t> pending) {
  if (pending && *pending > 0) {
    // The wait ran out because the command waits for an answer: say so.
    Error err = MakeError(ErrorKind::kApprovalRequired,
                          "exec " + id + " is waiting for " + std::to_string(*pending) +
                              " approval(s); see approvals.list");
    err.data["exec_id"] = id;
    err.data["approvals_pending"] = *pending;
    return err;
  }
  Error err = MakeError(ErrorKind::kTimeout, "exec " + id + " is still running");
  err.data["exec_id"] = id;
  if (pending) err.data["approvals_pending"] = *pending;
  return err;
}

// exec.wait's answer when its timeout_ms ran out: still running (and how many approvals it
// waits for, with approvals), or the exec if it ended while they were counted.
void AnswerWaitRanOut(asio::io_context& io, const std::string& id, const std::weak_ptr<Exec>& we,
                      const ReplyFn& reply) {
  auto ex = we.lock();
  if (!ex || ex->info().approval_session.empty()) {
    return reply(StillRunningError(id, std::nullopt));
  }
  CountPendingApprovals(io, ex->info().approval_session, kPendingProbeTimeout,
                        [reply, we, id](std::optional<uint64_t> pending) {
                          auto e2 = we.lock();
                          if (e2 && !e2->running()) return reply(e2->ToJson(true));
                          reply(StillRunningError(id, pending));
                        });
}

}  // namespace

std::optional<int> ParseSignal(const nlohmann::json& v) {
  if (v.is_number_integer()) {
    int n = v.get<int>();
    if (n > 0 && n < 65) return n;
    return std::nullopt;
  }
  if (!v.is_string()) return std::nullopt;
  std::string s = v.get<std::string>();
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (s.rfind("SIG", 0) == 0) s = s.substr(3);
  static const std::pair<const char*, int> kNames[] = {
      {"INT", SIGINT},   {"TERM", SIGTERM}, {"HUP", SIGHUP},   {"QUIT", SIGQUIT},
      {"KILL", SIGKILL}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
  };
  for (const auto& [name, num] : kNames) {
    if (s == name) return num;
  }
  return std::nullopt;
}

uint64_t Service::Follow(const std::shared_ptr<Exec>& e, const std::shared_ptr<Peer>& peer,
                         std::shared_ptr<bool> answered) {
  std::weak_ptr<Peer> weak = peer;
  std::string id = e->id();
  std::weak_ptr<Exec> we = e;
  return e->Subscribe(
      [weak, id](Stream s, uint64_t offset, std::string_view data) {
        auto p = weak.lock();
        if (!p || !p->alive()) return;
        p->Send(MakeNotification("exec.output", {{"exec_id", id},
                                                 {"stream", StreamName(s)},
                                                 {"offset", offset},
                                                 {"data", ToValidUtf8(data)}}));
      },
      [weak, we, answered] {
        // After a yield the client learns about the end from a notification.
        auto p = weak.lock();
        auto ex = we.lock();
        if (!p || !p->alive() || !ex || !*answered) return;
        p->Send(MakeNotification("exec.exit", ex->ToJson(false)));
      });
}

void Service::ExecRun(const nlohmann::json& params, const std::shared_ptr<Peer>& peer,
                      Reply reply) {
  Params p(params);
  auto sb = FindSandbox(p);
  if (!sb.ok()) return reply(sb.error());
  Sandbox* s = *sb;
  if (auto failed = AuditFailure(s->log.get())) return reply(*failed);
  ExecRunParams r = ReadExecRunParams(p);
  if (!p.Finish()) return reply(p.error());
  auto cmd = MakeCommand(r, s->spec.workspace);
  if (!cmd.ok()) return reply(cmd.error());
  auto flags = ExecFlags(s, r.exec_policy, r.env, cmd->argv);
  if (!flags.ok()) return reply(flags.error());
  StartRequest req;
  if (s->review) {
    auto review = ExecReviewSession(s);
    if (!review.ok()) return reply(review.error());
    req.review = std::move(review).value();
  }
  req.sandbox_id = s->id;
  req.flags = std::move(flags).value();
  req.workspace = s->spec.workspace;
  req.command = *cmd;
  if (auto filled = FillStartRequest(r, &req); !filled.ok()) return reply(filled.error());
  // With approvals (the sandbox's `ask`, or its profile's [approvals]) the daemon picks the
  // run's session, so it knows where the exec's approval socket is.
  if (s->policy->approvals.enabled) req.approval_session = audit::NewSessionId();
  if (auto live = LiveExec(s, r.fresh.value_or(false), r.exec_policy, r.env, *cmd, &req);
      !live.ok()) {
    return reply(live.error());
  }
  auto started = execs_.Start(std::move(req));
  if (!started.ok()) return reply(started.error());
  std::shared_ptr<Exec> e = *started;
  Emit(s, "exec.start",
       {{"exec_id", e->id()},
        {"argv", cmd->argv},
        {"cwd", cmd->cwd},
        {"narrowed", r.exec_policy ? *r.exec_policy : nlohmann::json(nullptr)}});
  if (auto failed = AuditFailure(s->log.get())) {  // its start is not in the trail: it stops
    execs_.Remove(e->id(), "its start could not be recorded in the sandbox's audit session");
    return reply(*failed);
  }
  RecordExecEnd(s->id, e);
  AnswerExecRun(e, peer, std::move(reply), r.notify.value_or(true), r.yield);
}

// In the sandbox's live sandbox unless the exec asks to be `fresh`, the sandbox is in review
// mode (each exec writes the review session on its own) or the exec narrows the policy: those
// get a throwaway sandbox. A narrowing inside the live sandbox would bind the exec's own system
// calls only (the creation guard creates with the sandbox's authority, and the sandbox's other
// processes can act for the exec), so it gets a sandbox of its own, as narrow as it asked.
Expected<Done> Service::LiveExec(Sandbox* s, bool fresh,
                                 const std::optional<nlohmann::json>& exec_policy,
                                 const std::map<std::string, std::optional<std::string>>& env,
                                 const ExecCommand& cmd, StartRequest* req) {
  if (fresh || s->review || !config_.live) return Done{};
  if (exec_policy) return Done{};
  enforce::ExecRequest live;
  WARD_API_ASSIGN_OR_RETURN(req->live, EnsureLive(s));
  live.argv = cmd.argv;
  live.cwd = cmd.cwd.empty() ? s->spec.workspace : cmd.cwd;
  for (const auto& [k, v] : env) live.env.push_back(k + "=" + *v);
  req->live_request = std::move(live);
  req->approval_session = s->policy->approvals.enabled ? s->live_session : "";
  req->live_session = s->live_session;
  return Done{};
}

Expected<policy::RunFlags> Service::ExecFlags(
    Sandbox* s, const std::optional<nlohmann::json>& exec_policy,
    const std::map<std::string, std::optional<std::string>>& env,
    const std::vector<std::string>& argv) {
  policy::RunFlags flags = s->spec.flags;
  if (exec_policy) {
    auto narrowed = NarrowFlags(s->spec, *s->policy, *exec_policy);
    if (!narrowed.ok()) {
      Emit(s, "exec.deny", {{"argv", argv}, {"reason", narrowed.error().message}});
      return narrowed.error();
    }
    flags = std::move(narrowed).value();
  }
  // The sandbox's own paths in the workspace too: a symlink planted there since sandbox.create
  // is refused here, with the path, rather than by `ward run`.
  if (auto beneath = CheckWorkspacePaths(flags, s->spec.workspace, s->policy->home);
      !beneath.ok()) {
    Emit(s, "exec.deny", {{"argv", argv}, {"reason", beneath.error().message}});
    return beneath.error();
  }
  for (const auto& [k, v] : env) {
    if (!ValidEnvName(k)) return InvalidError("env: invalid variable name \"" + k + "\"");
    flags.env.push_back(k + "=" + *v);
  }
  return flags;
}

Expected<ExecReview> Service::ExecReviewSession(Sandbox* s) {
  // One exec at a time writes a review session (its overlay's upper layer).
  for (const auto& other : execs_.List(s->id)) {
    if (other->running()) {
      return MakeError(ErrorKind::kResourceExhausted,
                       "a review-mode sandbox runs one exec at a time (" + other->id() +
                           " is running): wait for it, then run this one");
    }
  }
  // Applied or discarded meanwhile from outside (`ward apply`): the sandbox goes on with a
  // fresh session, as after review.apply.
  Result<supervisor::ReviewSession> now = supervisor::LoadReviewSession(s->review->dir);
  if (!now.ok() || now->state != supervisor::ReviewState::kOpen) {
    WARD_API_TRY(RenewSandboxReview(s));
  }
  return ExecReview{supervisor::ReviewModeName(s->review->mode), s->review->id};
}

void Service::RecordExecEnd(const std::string& sandbox_id, const std::shared_ptr<Exec>& e) {
  e->Subscribe(nullptr, [this, sandbox_id, we = std::weak_ptr<Exec>(e)] {
    auto ex = we.lock();
    auto it = sandboxes_.find(sandbox_id);
    if (!ex || it == sandboxes_.end()) return;
    const Outcome& o = ex->info().outcome;
    Emit(it->second.get(), "exec.end",
         {{"exec_id", ex->id()},
          {"status", ExecStateName(o.state)},
          {"exit_code", o.exit_code ? nlohmann::json(*o.exit_code) : nlohmann::json(nullptr)},
          {"signal", o.signal ? nlohmann::json(*o.signal) : nlohmann::json(nullptr)}});
  });
}

void Service::AnswerExecRun(const std::shared_ptr<Exec>& e, const std::shared_ptr<Peer>& peer,
                            Reply reply, bool notify, std::optional<int64_t> yield_ms) {
  auto answered = std::make_shared<bool>(false);
  if (notify) Follow(e, peer, answered);
  auto timer = std::make_shared<asio::steady_timer>(io_);
  std::weak_ptr<Exec> we = e;
  asio::io_context* io = &io_;
  auto finish = [reply, we, answered, timer, io] {
    if (*answered) return;
    *answered = true;
    timer->cancel();
    auto ex = we.lock();
    if (!ex) return reply(MakeError(ErrorKind::kInterrupted, "the exec is gone"));
    if (!ex->running() || ex->info().approval_session.empty()) return reply(ex->ToJson(true));
    // Still running after yield_ms: say whether it waits for an answer (approvals.list).
    ReplyWithPendingApprovals(*io, ex->info().approval_session, we, reply);
  };
  e->Subscribe(nullptr, finish);
  if (yield_ms) {
    timer->expires_after(std::chrono::milliseconds(*yield_ms));
    timer->async_wait([finish](const asio::error_code& ec) {
      if (!ec) finish();
    });
  }
}

void Service::ExecWait(const nlohmann::json& params, const std::shared_ptr<Peer>& peer,
                       Reply reply) {
  Params p(params);
  auto found = FindExec(p);
  if (!found.ok()) return reply(found.error());
  auto timeout = p.Int("timeout_ms", 0, kMaxTimeoutMs);
  auto notify = p.Bool("notify");
  if (!p.Finish()) return reply(p.error());
  std::shared_ptr<Exec> e = *found;
  if (!e->running()) return reply(e->ToJson(true));
  auto answered = std::make_shared<bool>(false);
  if (notify.value_or(false)) Follow(e, peer, answered);
  auto timer = std::make_shared<asio::steady_timer>(io_);
  std::weak_ptr<Exec> we = e;
  e->Subscribe(nullptr, [reply, we, answered, timer] {
    if (*answered) return;
    *answered = true;
    timer->cancel();
    auto ex = we.lock();
    if (!ex) return reply(MakeError(ErrorKind::kInterrupted, "the exec is gone"));
    reply(ex->ToJson(true));
  });
  if (!timeout) return;
  timer->expires_after(std::chrono::milliseconds(*timeout));
  std::string id = e->id();
  asio::io_context* io = &io_;
  timer->async_wait([reply, answered, id, we, io](const asio::error_code& ec) {
    if (ec || *answered) return;
    *answered = true;
    AnswerWaitRanOut(*io, id, we, reply);
  });
}

Expected<nlohmann::json> Service::ExecRead(const nlohmann::json& params) {
  Params p(params);
  WARD_API_ASSIGN_OR_RETURN(std::shared_ptr<Exec> e, FindExec(p));
  auto stream_name = p.String("stream", 16);
  auto offset = p.Int("offset", 0, INT64_MAX);
  auto length = p.Int("length", 0, static_cast<int64_t>(kMaxDataBytes));
  auto encoding = p.String("encoding", 16);
  if (!p.Finish()) return p.error();
  auto stream = ParseStream(stream_name.value_or("stdout"));
  if (!stream) return InvalidError("stream must be stdout or stderr");
  std::string enc = encoding.value_or("utf8");
  if (enc != "utf8" && enc != "base64") return InvalidError("encoding must be utf8 or base64");
  uint64_t off = static_cast<uint64_t>(offset.value_or(0));
  WARD_API_ASSIGN_OR_RETURN(
      std::string data,
      e->Read(*stream, off, static_cast<size_t>(length.value_or(kDefaultReadBytes))));
  uint64_t size = e->info().size[*stream == Stream::kStdout ? 0 : 1];
  uint64_t next = off + data.size();
  return nlohmann::json{{"exec_id", e->id()},
                        {"stream", StreamName(*stream)},
                        {"offset", off},
                        {"next_offset", next},
                        {"size", size},
                        {"encoding", enc},
                        {"data", EncodeData(data, enc)},
                        {"status", ExecStateName(e->info().outcome.state)},
                        {"complete", !e->running() && next >= size}};
}

Expected<nlohmann::json> Service::ExecWriteStdin(const nlohmann::json& params) {
  Params p(params);
  WARD_API_ASSIGN_OR_RETURN(std::shared_ptr<Exec> e, FindExec(p));
  auto data = p.Bytes("data", kMaxDataBytes * 2);
  auto encoding = p.String("encoding", 16);
  auto eof = p.Bool("eof");
  if (!p.Finish()) return p.error();
  WARD_API_ASSIGN_OR_RETURN(std::string bytes,
                            DecodeData(data.value_or(""), encoding.value_or("utf8"), "data"));
  size_t n = bytes.size();
  WARD_API_TRY(e->WriteStdin(std::move(bytes), eof.value_or(false)));
  return nlohmann::json{{"exec_id", e->id()}, {"queued", n}, {"eof", eof.value_or(false)}};
}

Expected<nlohmann::json> Service::ExecSignal(const nlohmann::json& params) {
  Params p(params);
  WARD_API_ASSIGN_OR_RETURN(std::shared_ptr<Exec> e, FindExec(p));
  nlohmann::json sig_value = p.Raw("signal").value_or(nlohmann::json("TERM"));
  if (!p.Finish()) return p.error();
  auto sig = ParseSignal(sig_value);
  if (!sig) return InvalidError("unknown signal " + sig_value.dump());
  WARD_API_TRY(e->Signal(*sig));
  auto it = sandboxes_.find(e->info().sandbox_id);
  if (it != sandboxes_.end()) {
    Emit(it->second.get(), "exec.signal", {{"exec_id", e->id()}, {"signal", *sig}});
  }
  return nlohmann::json{{"exec_id", e->id()}, {"signal", *sig}, {"sent", true}};
}

Expected<nlohmann::json> Service::ExecList(const nlohmann::json& params) {
  Params p(params);
  std::string sid;
  if (p.Has("sandbox_id")) {
    WARD_API_ASSIGN_OR_RETURN(Sandbox * s, FindSandbox(p));
    sid = s->id;
  }
  if (!p.Finish()) return p.error();
  nlohmann::json list = nlohmann::json::array();
  for (const auto& e : execs_.List(sid)) list.push_back(e->ToJson(false));
  return nlohmann::json{{"execs", list}};
}

}  // namespace ward::api
