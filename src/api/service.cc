#include "api/service.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "api/audit_query.h"
#include "api/params.h"
#include "api/service_internal.h"
#include "supervisor/private_dirs.h"
#include "supervisor/runtime_dir.h"

namespace ward::api {

namespace internal {

std::optional<Error> AuditFailure(const audit::SessionLog* log) {
  if (log == nullptr) return std::nullopt;
  Status health = log->health();
  if (health.ok()) return std::nullopt;
  return MakeError(ErrorKind::kInterrupted,
                   "the sandbox's audit session cannot be written (" + health.ToString() +
                       "), so it runs and changes nothing more: free space for the audit "
                       "directory, then destroy the sandbox and create a new one");
}

Expected<std::string> DecodeData(const std::string& data, const std::string& encoding,
                                 const char* what) {
  if (encoding == "utf8" || encoding.empty()) return data;
  if (encoding == "base64") {
    auto d = Base64Decode(data);
    if (!d) return InvalidError(std::string(what) + " is not valid base64");
    return *d;
  }
  return InvalidError(std::string("unknown encoding \"") + encoding + "\" (utf8 or base64)");
}

nlohmann::json EncodeData(const std::string& bytes, const std::string& encoding) {
  return encoding == "base64" ? Base64Encode(bytes) : ToValidUtf8(bytes);
}

}  // namespace internal

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const char* const kMethods[] = {
    "ward.version",      "sandbox.create", "sandbox.get",      "sandbox.list",
    "sandbox.destroy",   "sandbox.reset",  "exec.run",       "exec.wait",        "exec.read",
    "exec.write_stdin",  "exec.signal",    "exec.list",        "fs.read",
    "fs.write",          "fs.list",        "fs.stat",          "fs.mkdir",
    "fs.remove",         "fs.rename",      "audit.query",      "approvals.list",
    "approvals.approve", "approvals.deny", "approvals.grants", "approvals.revoke",
    "review.diff",       "review.apply",   "review.discard",
};

bool WriteSmall(const std::string& path, const std::string& data) {
  std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  bool ok = write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  close(fd);
  return ok && rename(tmp.c_str(), path.c_str()) == 0;
}

std::optional<std::string> ReadSmall(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0 && out.size() < (1 << 20)) {
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

// The names in `dir`; none when it cannot be opened.
std::vector<std::string> DirNames(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (struct dirent* e = readdir(d)) names.push_back(e->d_name);
  closedir(d);
  return names;
}

// The sandbox id of a record's file name ("<id>.json"); nullopt for anything else.
std::optional<std::string> SandboxRecordId(const std::string& name) {
  if (name.size() < 6 || name.substr(name.size() - 5) != ".json") return std::nullopt;
  std::string id = name.substr(0, name.size() - 5);
  if (!ValidId(id, "sb")) return std::nullopt;
  return id;
}

// A sandbox record; null when it cannot be read or is not JSON.
nlohmann::json ReadRecord(const std::string& path) {
  auto text = ReadSmall(path);
  nlohmann::json j;
  try {
    if (text) j = nlohmann::json::parse(*text);
  } catch (const std::exception&) {
    j = nullptr;
  }
  return j;
}

}  // namespace

Expected<std::string> DefaultSocketPath() {
  Result<std::string> dir = supervisor::MakeWardRuntimeDir();
  if (!dir.ok()) return FromStatus(dir.status());
  return *dir + "/ward.sock";
}

Service::Service(asio::io_context& io, ServiceConfig config)
    : io_(io), config_(std::move(config)), execs_(io, [&] {
        ExecManagerConfig c = config_.exec;
        c.state_dir = config_.state_dir;
        return c;
      }()) {}

Service::~Service() { Shutdown(); }

Status Service::Init() {
  if (config_.state_dir.empty()) return InvalidArgument("no state directory");
  WARD_TRY(OpenDaemonSession());
  WARD_TRY(execs_.Init());
  std::string sdir = config_.state_dir + "/sandboxes";
  if (mkdir(sdir.c_str(), 0700) != 0 && errno != EEXIST) return Errno("creating " + sdir);
  // Sandboxes a previous daemon left: reloaded (their policy is loaded afresh), or dropped.
  for (const auto& n : DirNames(sdir)) {
    std::optional<std::string> id = SandboxRecordId(n);
    if (!id) continue;
    std::string path = sdir + "/" + n;
    if (!Reload(*id, ReadRecord(path))) unlink(path.c_str());
  }
  for (const auto& e : execs_.Recover()) {
    if (sandboxes_.count(e->info().sandbox_id) == 0) execs_.Remove(e->id(), "");
  }
  return Ok();
}

bool Service::Reload(const std::string& id, const nlohmann::json& record) {
  if (!record.is_object() || !record.contains("spec")) return false;
  auto spec = ParseSandboxSpec(record["spec"]);
  if (!spec.ok()) return false;
  int64_t created = record.value("created_ms", NowMs());
  auto s = Load(std::move(spec).value(), id, created, record.value("review_session", ""));
  if (!s.ok()) {
    std::fprintf(stderr, "ward serve: dropping sandbox %s: %s\n", id.c_str(),
                 s.error().message.c_str());
    return false;
  }
  if (config_.live && !(*s)->review) (*s)->live_lost = "the daemon that ran it stopped";
  Emit(*s, "sandbox.resume", {{"sandbox_id", id}});
  return true;
}

void Service::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  execs_.KillAll("the daemon stopped");
  for (auto& [id, s] : sandboxes_) {
    CloseLive(s.get(), "the daemon stopped");
    if (s->log) {
      s->log->Emit("session.end", {{"reason", "the daemon stopped"}});
      (void)s->log->Close();
    }
  }
  if (daemon_log_) {
    daemon_log_->Emit("session.end", {{"reason", "the daemon stopped"}});
    (void)daemon_log_->Close();
  }
}

Status Service::OpenDaemonSession() {
  if (config_.audit_dir.empty() || daemon_log_) return Ok();
  audit::SessionLog::Options o;
  o.state_dir = config_.audit_dir;
  o.session_id = audit::NewSessionId();
  Result<std::unique_ptr<audit::SessionLog>> log = audit::SessionLog::Create(o);
  if (!log.ok()) {
    return Status(log.status().code(),
                  "cannot write the daemon's audit session: " + log.status().ToString());
  }
  daemon_log_ = std::move(log).value();
  daemon_log_->Emit("session.start", {{"command", {"ward", "serve"}},
                                      {"ward_version", config_.version},
                                      {"labels", {{"daemon", "serve"}}}});
  return Ok();
}

void Service::Emit(Sandbox* s, std::string_view type, nlohmann::json data) {
  if (s && s->log) s->log->Emit(type, std::move(data));
}

void Service::Persist(const Sandbox& s) {
  nlohmann::json j = {
      {"sandbox_id", s.id}, {"spec", SandboxSpecToJson(s.spec)}, {"created_ms", s.created_ms}};
  if (s.review) j["review_session"] = s.review->id;
  WriteSmall(config_.state_dir + "/sandboxes/" + s.id + ".json", SerializeLine(j));
}

Expected<Service::Sandbox*> Service::Load(SandboxSpec spec, std::string id, int64_t created_ms,
                                          const std::string& review_session) {
  char buf[PATH_MAX];
  if (realpath(spec.workspace.c_str(), buf) == nullptr) {
    return FromErrno("workspace " + spec.workspace, errno);
  }
  struct stat st;
  if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return InvalidError("workspace " + spec.workspace + " is not a directory");
  }
  spec.workspace = buf;
  spec.flags.workspace_anyway = config_.workspace_anyway;  // the daemon's word, never a client's
  if (!config_.load_policy) return MakeError(ErrorKind::kUnsupported, "no policy loader");
  Result<policy::Policy> pol = config_.load_policy(spec.flags, spec.workspace);
  if (!pol.ok()) {
    Error e = FromStatus(pol.status());
    if (e.kind == ErrorKind::kNotFound || e.kind == ErrorKind::kInterrupted) {
      e.kind = ErrorKind::kInvalidRequest;  // a profile or path named in the request is wrong
    }
    return e;
  }
  auto s = std::make_unique<Sandbox>();
  s->id = std::move(id);
  s->spec = std::move(spec);
  s->policy = std::make_unique<policy::Policy>(std::move(pol).value());
  // What the daemon keeps outside every sandbox must stay out of its view: ward's runtime and
  // state directories (every run's approval socket, every audit trail), the daemon's own state
  // (exec records and output of all sandboxes) and its socket (same uid: a sandbox that reached
  // it could create a wider sandbox).
  std::vector<supervisor::PrivateDir> outside = supervisor::WardPrivateDirs();
  outside.push_back({"the daemon's state directory", config_.state_dir,
                     "start `ward serve` with another --state-dir, or narrow the sandbox"});
  for (const auto& p : config_.private_paths) {  // a directory of the user's choice: itself only
    outside.push_back({"the daemon's socket", p,
                       "start `ward serve` with another --socket, or narrow the sandbox",
                       /*contents_too=*/false});
  }
  if (!config_.audit_dir.empty() && s->policy->audit) {
    outside.push_back({"the audit directory", config_.audit_dir,
                       "start `ward serve` with another --audit-dir, or narrow the sandbox"});
  }
  if (Status hidden = supervisor::CheckOutOfView(*s->policy, outside); !hidden.ok()) {
    return DeniedError(hidden.message());
  }
  auto fs = WorkspaceFs::Open(s->spec.workspace, s->policy.get());
  if (!fs.ok()) return fs.error();
  s->fs.emplace(std::move(fs).value());
  s->created_ms = created_ms;
  s->last_active_ms = NowMs();
  if (!config_.audit_dir.empty()) {
    audit::SessionLog::Options o;
    o.state_dir = config_.audit_dir;
    o.session_id = audit::NewSessionId();
    auto log = audit::SessionLog::Create(o);
    if (!log.ok()) {
      Error e = FromStatus(log.status());
      e.message = "cannot write the sandbox's audit session: " + e.message;
      return e;
    }
    Status reach = audit::RequireReserveOrOwnFileSystem(**log, {s->spec.workspace});
    if (!reach.ok()) {
      (void)(*log)->Discard();
      return FromStatus(reach);
    }
    s->log = std::move(log).value();
    nlohmann::json labels = {{"sandbox", s->id}};
    for (const auto& [k, v] : s->spec.labels) labels[k] = v;
    nlohmann::json start = {{"command", {"ward", "serve", "sandbox", s->id}},
                            {"ward_version", config_.version},
                            {"labels", labels},
                            {"workspace", s->spec.workspace},
                            {"profile", s->spec.flags.profile}};
    // Accepted only because the daemon runs with --workspace-anyway: why it would be refused.
    if (!s->policy->workspace_anyway.empty()) {
      start["workspace_anyway"] = s->policy->workspace_anyway;
    }
    s->log->Emit("session.start", std::move(start));
  }
  if (s->spec.workspace_mode != "direct") {
    WARD_API_ASSIGN_OR_RETURN(Done opened, OpenSandboxReview(s.get(), review_session));
    (void)opened;
  }
  Sandbox* raw = s.get();
  sandboxes_[raw->id] = std::move(s);
  return raw;
}

nlohmann::json Service::SandboxJson(const Sandbox& s) const {
  size_t running = 0, total = 0;
  for (const auto& e : execs_.List(s.id)) {
    ++total;
    if (e->running()) ++running;
  }
  nlohmann::json j = {{"sandbox_id", s.id},
                      {"workspace", s.spec.workspace},
                      {"profile", s.spec.flags.profile},
                      {"labels", s.spec.labels},
                      {"created_ms", s.created_ms},
                      {"last_active_ms", s.last_active_ms},
                      {"ttl_s", s.spec.ttl_s},
                      {"idle_s", s.spec.idle_s},
                      {"execs", {{"running", running}, {"total", total}}},
                      {"spec", SandboxSpecToJson(s.spec)}};
  j["expires_ms"] =
      s.spec.ttl_s ? nlohmann::json(s.created_ms + s.spec.ttl_s * 1000) : nlohmann::json(nullptr);
  j["session"] = s.log ? nlohmann::json(s.log->session_id()) : nlohmann::json(nullptr);
  j["approvals"] = s.policy && s.policy->approvals.enabled;
  j["workspace_mode"] = s.spec.workspace_mode;
  j["review_session"] = s.review ? nlohmann::json(s.review->id) : nlohmann::json(nullptr);
  if (s.review) j["review_mode"] = supervisor::ReviewModeName(s.review->mode);
  if (config_.live && !s.review) {
    const bool up = s.live && !s.live->ended();
    nlohmann::json live = {{"running", up}, {"starts", s.live_starts}};
    live["pid"] = up ? nlohmann::json(s.live->pid()) : nlohmann::json(nullptr);
    const std::string lost = s.live && s.live->ended() ? s.live->end_reason() : s.live_lost;
    live["ended"] = up || lost.empty() ? nlohmann::json(nullptr) : nlohmann::json(lost);
    j["live"] = std::move(live);
  }
  return j;
}

void Service::Destroy(const std::string& id, const std::string& why) {
  auto it = sandboxes_.find(id);
  if (it == sandboxes_.end()) return;
  Sandbox* s = it->second.get();
  for (const auto& e : execs_.List(id)) execs_.Remove(e->id(), "the sandbox was " + why);
  CloseLive(s, "the sandbox was " + why);
  Emit(s, "sandbox.destroy", {{"reason", why}});
  if (s->log) {
    s->log->Emit("session.end", {{"reason", why}});
    (void)s->log->Close();
  }
  unlink((config_.state_dir + "/sandboxes/" + id + ".json").c_str());
  sandboxes_.erase(it);
}

void Service::Tick() {
  int64_t now = NowMs();
  std::vector<std::pair<std::string, std::string>> expired;
  for (const auto& [id, s] : sandboxes_) {
    if (s->spec.ttl_s && now >= s->created_ms + s->spec.ttl_s * 1000) {
      expired.emplace_back(id, "expired (ttl_s)");
      continue;
    }
    if (s->spec.idle_s && now >= s->last_active_ms + s->spec.idle_s * 1000) {
      bool busy = false;
      for (const auto& e : execs_.List(id)) busy = busy || e->running();
      if (!busy) expired.emplace_back(id, "expired (idle_s)");
    }
  }
  for (const auto& [id, why] : expired) Destroy(id, why);
}

void Service::Handle(const Message& m, const std::shared_ptr<Peer>& peer) {
  if (m.kind != Message::Kind::kRequest) return;  // no notifications are defined; ignore them
  std::weak_ptr<Peer> weak = peer;
  auto answered = std::make_shared<bool>(false);
  nlohmann::json id = m.id;
  Reply reply = [weak, id, answered](Expected<nlohmann::json> r) {
    if (*answered) return;
    *answered = true;
    auto p = weak.lock();
    if (!p || !p->alive()) return;
    p->Send(r.ok() ? MakeResult(id, std::move(r).value()) : MakeErrorResponse(id, r.error()));
  };
  bool async = false;
  Expected<nlohmann::json> r = InvalidError("unreachable");
  try {
    r = Dispatch(m, peer, reply, &async);
  } catch (const std::exception& e) {
    // A malformed request must never take the daemon down.
    async = false;
    r = MakeError(ErrorKind::kInterrupted, std::string("internal error: ") + e.what());
  }
  if (!async) reply(std::move(r));
}

Expected<nlohmann::json> Service::Dispatch(const Message& m, const std::shared_ptr<Peer>& peer,
                                           const Reply& reply, bool* async) {
  const std::string& method = m.method;
  const nlohmann::json& params = m.params;
  if (!params.is_object()) return InvalidError("params must be an object");
  if (method == "ward.version") return Version();
  if (method == "sandbox.create") return SandboxCreate(params);
  if (method == "sandbox.get") return SandboxGet(params);
  if (method == "sandbox.list") return SandboxList(params);
  if (method == "sandbox.destroy") return SandboxDestroy(params);
  if (method == "sandbox.reset") return SandboxReset(params);
  if (method == "exec.run") {
    *async = true;
    ExecRun(params, peer, reply);
    return nlohmann::json();
  }
  if (method == "exec.wait") {
    *async = true;
    ExecWait(params, peer, reply);
    return nlohmann::json();
  }
  if (method == "exec.read") return ExecRead(params);
  if (method == "exec.write_stdin") return ExecWriteStdin(params);
  if (method == "exec.signal") return ExecSignal(params);
  if (method == "exec.list") return ExecList(params);
  if (method.rfind("fs.", 0) == 0) return Fs(method.substr(3), params);
  if (method == "audit.query") return AuditQueryMethod(params);
  if (method.rfind("review.", 0) == 0) return Review(method.substr(7), params);
  if (method == "approvals.list" || method == "approvals.grants") {
    *async = true;
    ApprovalsQuery(method == "approvals.grants", params, reply);
    return nlohmann::json();
  }
  if (method == "approvals.approve" || method == "approvals.deny") {
    *async = true;
    ApprovalsAnswer(method == "approvals.approve", params, reply);
    return nlohmann::json();
  }
  if (method == "approvals.revoke") {
    *async = true;
    ApprovalsRevoke(params, reply);
    return nlohmann::json();
  }
  Error e = MakeError(ErrorKind::kUnsupported, "unknown method \"" + method + "\"");
  e.code = kMethodNotFoundCode;
  return e;
}

Expected<nlohmann::json> Service::Version() {
  nlohmann::json methods = nlohmann::json::array();
  for (const char* m : kMethods) methods.push_back(m);
  return nlohmann::json{{"name", "ward"},
                        {"version", config_.version},
                        {"protocol", kServeProtocolVersion},
                        {"methods", methods},
                        {"labels", execs_.config().labels}};
}

Expected<Service::Sandbox*> Service::FindSandbox(Params& p) {
  p.Require("sandbox_id");
  auto id = p.String("sandbox_id", 64);
  if (!p.ok()) return p.error();
  auto it = sandboxes_.find(*id);
  if (it == sandboxes_.end()) return NotFoundError("no sandbox " + *id);
  it->second->last_active_ms = NowMs();
  return it->second.get();
}

Expected<std::shared_ptr<Exec>> Service::FindExec(Params& p) {
  p.Require("exec_id");
  auto id = p.String("exec_id", 64);
  if (!p.ok()) return p.error();
  auto e = execs_.Find(*id);
  if (!e) return NotFoundError("no exec " + *id);
  auto it = sandboxes_.find(e->info().sandbox_id);
  if (it != sandboxes_.end()) it->second->last_active_ms = NowMs();
  return e;
}

Expected<nlohmann::json> Service::SandboxCreate(const nlohmann::json& params) {
  if (sandboxes_.size() >= config_.max_sandboxes) {
    return MakeError(ErrorKind::kResourceExhausted,
                     "too many sandboxes (" + std::to_string(config_.max_sandboxes) + ")");
  }
  WARD_API_ASSIGN_OR_RETURN(SandboxSpec spec, ParseSandboxSpec(params));
  WARD_API_ASSIGN_OR_RETURN(Sandbox * s, Load(std::move(spec), NewId("sb"), NowMs()));
  Persist(*s);
  Emit(s, "sandbox.create", {{"sandbox_id", s->id}, {"spec", SandboxSpecToJson(s->spec)}});
  if (config_.live && !s->review) {
    if (auto live = EnsureLive(s); !live.ok()) {
      const std::string id = s->id;
      Destroy(id, "not started: " + live.error().message);
      return live.error();
    }
  }
  return SandboxJson(*s);
}

Expected<nlohmann::json> Service::SandboxGet(const nlohmann::json& params) {
  Params p(params);
  WARD_API_ASSIGN_OR_RETURN(Sandbox * s, FindSandbox(p));
  if (!p.Finish()) return p.error();
  return SandboxJson(*s);
}

Expected<nlohmann::json> Service::SandboxList(const nlohmann::json& params) {
  Params p(params);
  if (!p.Finish()) return p.error();
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [id, s] : sandboxes_) list.push_back(SandboxJson(*s));
  return nlohmann::json{{"sandboxes", list}};
}

Expected<nlohmann::json> Service::SandboxDestroy(const nlohmann::json& params) {
  Params p(params);
  WARD_API_ASSIGN_OR_RETURN(Sandbox * s, FindSandbox(p));
  if (!p.Finish()) return p.error();
  nlohmann::json interrupted = nlohmann::json::array();
  for (const auto& e : execs_.List(s->id)) {
    if (e->running()) interrupted.push_back(e->id());
  }
  std::string id = s->id;
  Destroy(id, "destroyed");
  return nlohmann::json{{"sandbox_id", id}, {"destroyed", true}, {"interrupted", interrupted}};
}

Expected<nlohmann::json> Service::SandboxReset(const nlohmann::json& params) {
  Params p(params);
  WARD_API_ASSIGN_OR_RETURN(Sandbox * s, FindSandbox(p));
  if (!p.Finish()) return p.error();
  if (s->review || !config_.live) {
    return InvalidError(s->review ? "a review-mode sandbox has no live sandbox to reset"
                                  : "this daemon runs every exec fresh (--fresh-execs)");
  }
  nlohmann::json interrupted = nlohmann::json::array();
  for (const auto& e : execs_.List(s->id)) {
    if (e->running()) interrupted.push_back(e->id());
  }
  CloseLive(s, "the sandbox was reset");
  s->live_lost.clear();
  Emit(s, "sandbox.reset", {{"interrupted", interrupted}});
  WARD_API_ASSIGN_OR_RETURN(std::shared_ptr<LiveSandbox> live, EnsureLive(s));
  (void)live;
  nlohmann::json j = SandboxJson(*s);
  j["interrupted"] = interrupted;
  return j;
}

Expected<std::shared_ptr<LiveSandbox>> Service::EnsureLive(Sandbox* s) {
  if (s->live && !s->live->ended()) return s->live;
  if (s->live) s->live_lost = s->live->end_reason();
  std::vector<std::string> labels;
  if (config_.exec.labels) labels = {"sandbox=" + s->id, "live=" + std::to_string(s->live_starts + 1)};
  s->live_session = audit::NewSessionId();
  RunInvocation inv = BuildLiveInvocation(s->spec.flags, s->spec.workspace, labels, s->live_session);
  WARD_API_ASSIGN_OR_RETURN(std::shared_ptr<LiveSandbox> live,
                            LiveSandbox::Start(io_, config_.exec.ward_binary, std::move(inv.args)));
  ++s->live_starts;
  Emit(s, "sandbox.live", {{"session", s->live_session},
                           {"starts", s->live_starts},
                           {"previous_ended", s->live_lost.empty() ? nlohmann::json(nullptr)
                                                                   : nlohmann::json(s->live_lost)}});
  s->live = std::move(live);
  return s->live;
}

void Service::CloseLive(Sandbox* s, const std::string& why) {
  if (!s->live) return;
  s->live->Close(why);
  s->live_lost = why;
  s->live.reset();
}

Expected<nlohmann::json> Service::AuditQueryMethod(const nlohmann::json& params) {
  Params p(params);
  auto sid = p.String("sandbox_id", 64);
  auto eid = p.String("exec_id", 64);
  auto labels = p.StringMap("labels");
  auto type = p.String("type", 256);
  auto records = p.Bool("records");
  auto limit = p.Int("limit", 1, 1000);
  if (!p.Finish()) return p.error();
  AuditQuery q;
  for (const auto& [k, v] : labels) q.labels[k] = *v;
  if (sid) {
    if (!ValidId(*sid, "sb")) return InvalidError("sandbox_id is not a sandbox id");
    q.labels["sandbox"] = *sid;
  }
  if (eid) {
    if (!ValidId(*eid, "ex")) return InvalidError("exec_id is not an exec id");
    // An exec of a live sandbox is in the live sandbox's session; a fresh one has its own.
    std::shared_ptr<Exec> e = execs_.Find(*eid);
    if (e && !e->info().fresh) {
      q.session = e->info().live_session;
    } else {
      q.labels["exec"] = *eid;
    }
  }
  // What the daemon itself logged must be on disk before it is read back.
  for (auto& [id, s] : sandboxes_) {
    if (s->log) (void)s->log->Flush();
  }
  q.type = type.value_or("");
  q.records = records.value_or(false);
  q.limit = static_cast<size_t>(limit.value_or(50));
  return QueryAudit(config_.audit_dir, q);
}

}  // namespace ward::api
