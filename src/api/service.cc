#include "api/service.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "api/approvals_relay.h"
#include "api/audit_query.h"
#include "api/params.h"
#include "enforce/beneath.h"
#include "policy/paths.h"
#include "supervisor/approvals/approval_broker.h"
#include "supervisor/approvals/socket.h"
#include "supervisor/private_dirs.h"
#include "supervisor/review_apply.h"
#include "supervisor/review_changes.h"
#include "supervisor/review_diff.h"
#include "supervisor/runtime_dir.h"

namespace ward::api {

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Fail closed: a sandbox whose audit session could not be written runs and changes nothing
// more (its log's first write error is sticky).
std::optional<Error> AuditFailure(const audit::SessionLog* log) {
  if (log == nullptr) return std::nullopt;
  Status health = log->health();
  if (health.ok()) return std::nullopt;
  return MakeError(ErrorKind::kInterrupted,
                   "the sandbox's audit session cannot be written (" + health.ToString() +
                       "), so it runs and changes nothing more: free space for the audit "
                       "directory, then destroy the sandbox and create a new one");
}

constexpr int64_t kMaxTimeoutMs = int64_t{7} * 24 * 3600 * 1000;
constexpr size_t kMaxDataBytes = 16 << 20;
constexpr size_t kDefaultReadBytes = 1 << 20;

const char* const kMethods[] = {
    "ward.version",      "sandbox.create", "sandbox.get",      "sandbox.list",
    "sandbox.destroy",   "exec.run",       "exec.wait",        "exec.read",
    "exec.write_stdin",  "exec.signal",    "exec.list",        "fs.read",
    "fs.write",          "fs.list",        "fs.stat",          "fs.mkdir",
    "fs.remove",         "fs.rename",      "audit.query",      "approvals.list",
    "approvals.approve", "approvals.deny", "approvals.grants", "approvals.revoke",
    "review.diff",       "review.apply",   "review.discard",
};

// How long exec.run (after yield_ms) and exec.wait (after timeout_ms) spend asking an exec's
// approval socket how many questions are pending before they answer without the count.
constexpr std::chrono::milliseconds kPendingProbeTimeout{500};
constexpr size_t kMaxApprovalReason = 512;

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

nlohmann::json InfoJson(const FileInfo& f) {
  return {{"path", f.path}, {"type", f.type},         {"size", f.size},
          {"mode", f.mode}, {"mtime_ms", f.mtime_ms}, {"writable", f.writable}};
}

// Data of a request: text as is, or base64.
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
  if (DIR* d = opendir(sdir.c_str())) {
    std::vector<std::string> names;
    while (struct dirent* e = readdir(d)) names.push_back(e->d_name);
    closedir(d);
    for (const auto& n : names) {
      if (n.size() < 6 || n.substr(n.size() - 5) != ".json") continue;
      std::string id = n.substr(0, n.size() - 5);
      std::string path = sdir + "/" + n;
      if (!ValidId(id, "sb")) continue;
      auto text = ReadSmall(path);
      nlohmann::json j;
      try {
        if (text) j = nlohmann::json::parse(*text);
      } catch (const std::exception&) {
        j = nullptr;
      }
      bool loaded = false;
      if (j.is_object() && j.contains("spec")) {
        auto spec = ParseSandboxSpec(j["spec"]);
        if (spec.ok()) {
          int64_t created = j.value("created_ms", NowMs());
          auto s = Load(std::move(spec).value(), id, created, j.value("review_session", ""));
          if (s.ok()) {
            loaded = true;
            Emit(*s, "sandbox.resume", {{"sandbox_id", id}});
          } else {
            std::fprintf(stderr, "ward serve: dropping sandbox %s: %s\n", id.c_str(),
                         s.error().message.c_str());
          }
        }
      }
      if (!loaded) unlink(path.c_str());
    }
  }
  for (const auto& e : execs_.Recover()) {
    if (sandboxes_.count(e->info().sandbox_id) == 0) execs_.Remove(e->id(), "");
  }
  return Ok();
}

void Service::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  execs_.KillAll("the daemon stopped");
  for (auto& [id, s] : sandboxes_) {
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

Expected<Done> Service::OpenSandboxReview(Sandbox* s, const std::string& reuse) {
  const std::string state = audit::DefaultStateDir();
  if (!reuse.empty() && audit::IsValidSessionId(reuse)) {
    Result<supervisor::ReviewSession> old =
        supervisor::LoadReviewSession(supervisor::ReviewRoot(state) + "/" + reuse);
    if (old.ok() && old->state == supervisor::ReviewState::kOpen &&
        old->workspace == s->spec.workspace) {
      s->review = std::move(old).value();
      return Done{};
    }
  }
  supervisor::ReviewRequest rq;
  rq.state_dir = state;
  rq.id = audit::NewSessionId();
  rq.workspace = s->spec.workspace;
  rq.force_copy = s->spec.workspace_mode == "copy";
  rq.created_by = "serve";
  for (const policy::ProtectedRule& p : s->policy->protected_paths) {
    rq.protected_relpaths.push_back(p.relpath);
  }
  Result<supervisor::ReviewSession> made = supervisor::CreateReviewSession(rq);
  if (!made.ok()) {
    Error e = FromStatus(made.status());
    e.message = "workspace_mode " + s->spec.workspace_mode + ": " + e.message;
    return e;
  }
  s->review = std::move(made).value();
  Emit(s, "review.session", {{"review_session", s->review->id},
                             {"mode", supervisor::ReviewModeName(s->review->mode)},
                             {"note", s->review->note},
                             {"tree", s->review->tree()}});
  return Done{};
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
  return j;
}

void Service::Destroy(const std::string& id, const std::string& why) {
  auto it = sandboxes_.find(id);
  if (it == sandboxes_.end()) return;
  Sandbox* s = it->second.get();
  for (const auto& e : execs_.List(id)) execs_.Remove(e->id(), "the sandbox was " + why);
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
  bool has_argv = p.Has("argv"), has_shell = p.Has("shell");
  auto argv = p.StringList("argv", 4096);
  auto shell = p.String("shell");
  auto cwd = p.String("cwd", 4096);
  auto env = p.StringMap("env");
  auto stdin_data = p.Bytes("stdin", kMaxDataBytes * 2);
  auto stdin_enc = p.String("stdin_encoding", 16);
  auto stdin_open = p.Bool("stdin_open");
  auto timeout = p.Int("timeout_ms", 0, kMaxTimeoutMs);
  auto yield = p.Int("yield_ms", 0, kMaxTimeoutMs);
  auto max_out = p.Int("max_output_bytes", 0, static_cast<int64_t>(kMaxMaxOutputBytes));
  auto exec_policy = p.Object("policy");
  auto notify = p.Bool("notify");
  if (!p.Finish()) return reply(p.error());
  if (has_argv == has_shell) return reply(InvalidError("give exactly one of argv and shell"));
  ExecCommand cmd;
  if (has_shell) {
    cmd.argv = {"/bin/sh", "-c", *shell};
  } else {
    cmd.argv = argv;
  }
  if (cmd.argv.empty() || cmd.argv[0].empty()) return reply(InvalidError("argv is empty"));
  auto rcwd = ResolveCwd(s->spec.workspace, cwd.value_or(""));
  if (!rcwd.ok()) return reply(rcwd.error());
  cmd.cwd = *rcwd;
  policy::RunFlags flags = s->spec.flags;
  if (exec_policy) {
    auto narrowed = NarrowFlags(s->spec, *s->policy, *exec_policy);
    if (!narrowed.ok()) {
      Emit(s, "exec.deny", {{"argv", cmd.argv}, {"reason", narrowed.error().message}});
      return reply(narrowed.error());
    }
    flags = std::move(narrowed).value();
  }
  // The sandbox's own paths in the workspace too: a symlink planted there since sandbox.create
  // is refused here, with the path, rather than by `ward run`.
  if (auto beneath = CheckWorkspacePaths(flags, s->spec.workspace, s->policy->home);
      !beneath.ok()) {
    Emit(s, "exec.deny", {{"argv", cmd.argv}, {"reason", beneath.error().message}});
    return reply(beneath.error());
  }
  for (const auto& [k, v] : env) {
    if (!ValidEnvName(k)) return reply(InvalidError("env: invalid variable name \"" + k + "\""));
    flags.env.push_back(k + "=" + *v);
  }
  StartRequest req;
  if (s->review) {
    // One exec at a time writes a review session (its overlay's upper layer).
    for (const auto& other : execs_.List(s->id)) {
      if (other->running()) {
        return reply(MakeError(ErrorKind::kResourceExhausted,
                               "a review-mode sandbox runs one exec at a time (" + other->id() +
                                   " is running): wait for it, then run this one"));
      }
    }
    // Applied or discarded meanwhile from outside (`ward apply`): the sandbox goes on with a
    // fresh session, as after review.apply.
    Result<supervisor::ReviewSession> now = supervisor::LoadReviewSession(s->review->dir);
    if (!now.ok() || now->state != supervisor::ReviewState::kOpen) {
      s->review.reset();
      auto fresh = OpenSandboxReview(s, "");
      if (!fresh.ok()) return reply(fresh.error());
      Persist(*s);
    }
    req.review = {supervisor::ReviewModeName(s->review->mode), s->review->id};
  }
  req.sandbox_id = s->id;
  req.flags = std::move(flags);
  req.workspace = s->spec.workspace;
  req.command = cmd;
  if (stdin_data) {
    auto d = DecodeData(*stdin_data, stdin_enc.value_or("utf8"), "stdin");
    if (!d.ok()) return reply(d.error());
    req.stdin_data = std::move(d).value();
  }
  req.stdin_open = stdin_open.value_or(false);
  req.timeout_ms = static_cast<uint64_t>(timeout.value_or(0));
  req.max_output_bytes = static_cast<uint64_t>(max_out.value_or(kDefaultMaxOutputBytes));
  // With approvals (the sandbox's `ask`, or its profile's [approvals]) the daemon picks the
  // run's session, so it knows where the exec's approval socket is.
  if (s->policy->approvals.enabled) req.approval_session = audit::NewSessionId();
  auto started = execs_.Start(std::move(req));
  if (!started.ok()) return reply(started.error());
  std::shared_ptr<Exec> e = *started;
  Emit(s, "exec.start",
       {{"exec_id", e->id()},
        {"argv", cmd.argv},
        {"cwd", cmd.cwd},
        {"narrowed", exec_policy ? *exec_policy : nlohmann::json(nullptr)}});
  if (auto failed = AuditFailure(s->log.get())) {  // its start is not in the trail: it stops
    execs_.Remove(e->id(), "its start could not be recorded in the sandbox's audit session");
    return reply(*failed);
  }
  std::string sid = s->id;
  e->Subscribe(nullptr, [this, sid, we = std::weak_ptr<Exec>(e)] {
    auto ex = we.lock();
    auto it = sandboxes_.find(sid);
    if (!ex || it == sandboxes_.end()) return;
    const Outcome& o = ex->info().outcome;
    Emit(it->second.get(), "exec.end",
         {{"exec_id", ex->id()},
          {"status", ExecStateName(o.state)},
          {"exit_code", o.exit_code ? nlohmann::json(*o.exit_code) : nlohmann::json(nullptr)},
          {"signal", o.signal ? nlohmann::json(*o.signal) : nlohmann::json(nullptr)}});
  });
  auto answered = std::make_shared<bool>(false);
  if (notify.value_or(true)) Follow(e, peer, answered);
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
    CountPendingApprovals(*io, ex->info().approval_session, kPendingProbeTimeout,
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
  };
  e->Subscribe(nullptr, finish);
  if (yield) {
    timer->expires_after(std::chrono::milliseconds(*yield));
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
  if (timeout) {
    timer->expires_after(std::chrono::milliseconds(*timeout));
    std::string id = e->id();
    asio::io_context* io = &io_;
    timer->async_wait([reply, answered, id, we, io](const asio::error_code& ec) {
      if (ec || *answered) return;
      *answered = true;
      auto still_running = [id](std::optional<uint64_t> pending) {
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
      };
      auto ex = we.lock();
      if (!ex || ex->info().approval_session.empty()) return reply(still_running(std::nullopt));
      CountPendingApprovals(*io, ex->info().approval_session, kPendingProbeTimeout,
                            [reply, we, still_running](std::optional<uint64_t> pending) {
                              auto e2 = we.lock();
                              if (e2 && !e2->running()) return reply(e2->ToJson(true));
                              reply(still_running(pending));
                            });
    });
  }
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

Expected<nlohmann::json> Service::Fs(const std::string& op, const nlohmann::json& params) {
  Params p(params);
  WARD_API_ASSIGN_OR_RETURN(Sandbox * s, FindSandbox(p));
  if (auto failed = AuditFailure(s->log.get())) return *failed;
  if (s->review) {
    return MakeError(ErrorKind::kUnsupported,
                     "fs." + op + " in a review-mode sandbox would go around its overlay (the "
                     "workspace the execs see is not the host's): use exec.run, and "
                     "review.diff to see what changed");
  }
  // A change whose record could not be written is reported as such, not as a success.
  auto recorded = [&](nlohmann::json result) -> Expected<nlohmann::json> {
    if (auto failed = AuditFailure(s->log.get())) {
      failed->message = "fs." + op + " was done but not recorded: " + failed->message;
      return *failed;
    }
    return result;
  };
  const WorkspaceFs& fs = *s->fs;
  auto denied = [&](const Error& e, const std::string& path) {
    if (e.kind == ErrorKind::kPolicyDenied) {
      Emit(s, "fs.deny", {{"op", op}, {"path", path}, {"reason", e.message}});
    }
    return e;
  };
  if (op == "read") {
    p.Require("path");
    auto path = p.String("path", 4096);
    auto offset = p.Int("offset", 0, INT64_MAX);
    auto length = p.Int("length", 0, static_cast<int64_t>(kMaxDataBytes));
    auto encoding = p.String("encoding", 16);
    if (!p.Finish()) return p.error();
    std::string enc = encoding.value_or("utf8");
    if (enc != "utf8" && enc != "base64") return InvalidError("encoding must be utf8 or base64");
    auto r = fs.Read(*path, static_cast<uint64_t>(offset.value_or(0)),
                     static_cast<size_t>(length.value_or(kDefaultReadBytes)));
    if (!r.ok()) return denied(r.error(), *path);
    return nlohmann::json{{"path", *path},
                          {"offset", offset.value_or(0)},
                          {"size", r->size},
                          {"eof", r->eof},
                          {"encoding", enc},
                          {"length", r->data.size()},
                          {"data", EncodeData(r->data, enc)}};
  }
  if (op == "write") {
    p.Require("path");
    p.Require("data");
    auto path = p.String("path", 4096);
    auto data = p.Bytes("data", kMaxDataBytes * 2);
    auto encoding = p.String("encoding", 16);
    auto mode = p.Int("mode", 0, 0777);
    auto atomic = p.Bool("atomic");
    if (!p.Finish()) return p.error();
    WARD_API_ASSIGN_OR_RETURN(std::string bytes,
                              DecodeData(*data, encoding.value_or("utf8"), "data"));
    if (bytes.size() > kMaxDataBytes) {
      return MakeError(ErrorKind::kResourceExhausted, "data is larger than 16 MiB");
    }
    std::optional<uint32_t> m;
    if (mode) m = static_cast<uint32_t>(*mode);
    auto r = fs.Write(*path, bytes, m, atomic.value_or(true));
    if (!r.ok()) return denied(r.error(), *path);
    Emit(s, "fs.write", {{"path", r->path}, {"bytes", bytes.size()}});
    return recorded(InfoJson(*r));
  }
  if (op == "list") {
    auto path = p.String("path", 4096);
    auto depth = p.Int("depth", 1, kMaxListDepth);
    auto max_entries = p.Int("max_entries", 1, static_cast<int64_t>(kMaxListEntries));
    if (!p.Finish()) return p.error();
    bool truncated = false;
    auto r = fs.List(path.value_or("."), static_cast<int>(depth.value_or(1)),
                     static_cast<size_t>(max_entries.value_or(kMaxListEntries)), &truncated);
    if (!r.ok()) return denied(r.error(), path.value_or("."));
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& f : *r) entries.push_back(InfoJson(f));
    return nlohmann::json{
        {"path", path.value_or(".")}, {"entries", entries}, {"truncated", truncated}};
  }
  if (op == "stat") {
    p.Require("path");
    auto path = p.String("path", 4096);
    if (!p.Finish()) return p.error();
    auto r = fs.Stat(*path);
    if (!r.ok()) return denied(r.error(), *path);
    return InfoJson(*r);
  }
  if (op == "mkdir") {
    p.Require("path");
    auto path = p.String("path", 4096);
    auto parents = p.Bool("parents");
    if (!p.Finish()) return p.error();
    auto r = fs.Mkdir(*path, parents.value_or(false));
    if (!r.ok()) return denied(r.error(), *path);
    Emit(s, "fs.mkdir", {{"path", r->path}});
    return recorded(InfoJson(*r));
  }
  if (op == "remove") {
    p.Require("path");
    auto path = p.String("path", 4096);
    auto recursive = p.Bool("recursive");
    if (!p.Finish()) return p.error();
    auto r = fs.Remove(*path, recursive.value_or(false));
    if (!r.ok()) return denied(r.error(), *path);
    Emit(s, "fs.remove", {{"path", *path}, {"recursive", recursive.value_or(false)}});
    return recorded({{"path", *path}, {"removed", true}});
  }
  if (op == "rename") {
    p.Require("from");
    p.Require("to");
    auto from = p.String("from", 4096);
    auto to = p.String("to", 4096);
    auto overwrite = p.Bool("overwrite");
    if (!p.Finish()) return p.error();
    auto r = fs.Rename(*from, *to, overwrite.value_or(false));
    if (!r.ok()) return denied(r.error(), *from + " -> " + *to);
    Emit(s, "fs.rename", {{"from", *from}, {"to", *to}});
    return recorded({{"from", *from}, {"to", *to}, {"renamed", true}});
  }
  Error e = MakeError(ErrorKind::kUnsupported, "unknown method \"fs." + op + "\"");
  e.code = kMethodNotFoundCode;
  return e;
}

Expected<nlohmann::json> Service::Review(const std::string& op, const nlohmann::json& params) {
  if (op != "diff" && op != "apply" && op != "discard") {
    Error e = MakeError(ErrorKind::kUnsupported, "unknown method \"review." + op + "\"");
    e.code = kMethodNotFoundCode;
    return e;
  }
  Params p(params);
  WARD_API_ASSIGN_OR_RETURN(Sandbox * s, FindSandbox(p));
  std::vector<std::string> paths, include;
  std::optional<bool> force;
  std::optional<std::string> expect;
  if (op != "discard") paths = p.StringList("paths");
  if (op == "apply") {
    include = p.StringList("include_protected");
    force = p.Bool("force");
    expect = p.String("diff_sha256", 64);
  }
  if (!p.Finish()) return p.error();
  if (!s->review) {
    return InvalidError("sandbox " + s->id +
                        " is not in review mode (create it with workspace_mode \"overlay\")");
  }
  if (op != "diff") {
    if (auto failed = AuditFailure(s->log.get())) return *failed;
  }
  // Paths are relative to the workspace (or absolute inside it), with no "..".
  for (std::vector<std::string>* list : {&paths, &include}) {
    for (std::string& path : *list) {
      std::string rel = path;
      if (!rel.empty() && rel[0] == '/') {
        std::optional<std::string> r = enforce::RelativeBeneath(s->spec.workspace, policy::NormalizePath(rel));
        if (!r) return DeniedError("\"" + path + "\" is outside the workspace");
        rel = *r;
      }
      std::vector<std::string> comps;
      if (!supervisor::SplitRelative(rel, &comps)) {
        return InvalidError("\"" + path + "\" is not a path inside the workspace (no \"..\")");
      }
      path = rel;
    }
  }
  Result<UniqueFd> lock = supervisor::LockReviewSession(*s->review);
  if (!lock.ok()) return MakeError(ErrorKind::kResourceExhausted, lock.status().message());
  Result<supervisor::ReviewSession> now = supervisor::LoadReviewSession(s->review->dir);
  if (!now.ok()) return FromStatus(now.status());
  supervisor::ReviewSession& rs = *now;
  nlohmann::json by = {{"uid", getuid()}, {"via", "ward serve"}};
  if (op == "diff") {
    Result<std::vector<supervisor::ReviewChange>> all = supervisor::CollectChanges(rs);
    if (!all.ok()) return FromStatus(all.status());
    std::vector<supervisor::ReviewChange> chosen = supervisor::SelectChanges(*all, paths, nullptr);
    Result<supervisor::RenderedDiff> d = supervisor::RenderDiff(rs, chosen);
    if (!d.ok()) return FromStatus(d.status());
    nlohmann::json changes = nlohmann::json::array();
    for (const supervisor::ReviewChange& c : chosen) {
      changes.push_back({{"path", c.path},
                         {"change", c.kind == supervisor::ReviewChange::Kind::kAdd      ? "add"
                                    : c.kind == supervisor::ReviewChange::Kind::kDelete ? "delete"
                                                                                        : "modify"},
                         {"old_type", supervisor::EntryTypeName(c.old_type)},
                         {"new_type", supervisor::EntryTypeName(c.new_type)}});
    }
    return nlohmann::json{{"review_session", rs.id}, {"mode", supervisor::ReviewModeName(rs.mode)},
                          {"diff", d->text},       {"diff_sha256", d->sha256},
                          {"files", d->files},     {"changes", changes}};
  }
  if (op == "discard") {
    Result<supervisor::DiscardReport> r = supervisor::DiscardReview(&rs);
    if (!r.ok()) return FromStatus(r.status());
    Emit(s, "review.discard", {{"review_session", rs.id},
                               {"diff_sha256", r->diff_sha256},
                               {"files", r->files},
                               {"by", by}});
    lock->reset();
    s->review.reset();
    WARD_API_ASSIGN_OR_RETURN(Done fresh, OpenSandboxReview(s, ""));
    (void)fresh;
    Persist(*s);
    return nlohmann::json{{"discarded", rs.id},
                          {"diff_sha256", r->diff_sha256},
                          {"files", r->files},
                          {"review_session", s->review->id}};
  }
  supervisor::ApplyOptions ao;
  ao.paths = paths;
  ao.include_protected = include;
  ao.force = force.value_or(false);
  ao.expect_sha256 = expect.value_or("");
  Result<supervisor::ApplyReport> r = supervisor::ApplyReview(&rs, ao);
  if (!r.ok()) return FromStatus(r.status());
  if (!r->refused.empty()) {
    Emit(s, "review.apply_refused", {{"review_session", rs.id},
                                     {"diff_sha256", r->diff_sha256},
                                     {"refused", r->refused},
                                     {"by", by}});
    std::string msg = "nothing was applied:";
    for (const std::string& line : r->refused) msg += "\n" + line;
    Error e = DeniedError(msg);
    e.data["refused"] = r->refused;
    e.data["diff_sha256"] = r->diff_sha256;
    return e;
  }
  nlohmann::json applied = nlohmann::json::array();
  for (const supervisor::AppliedItem& a : r->applied) {
    applied.push_back({{"path", a.path}, {"change", a.change}, {"type", a.type}, {"sha256", a.sha256}});
  }
  Emit(s, "review.apply", {{"review_session", rs.id},
                           {"diff_sha256", r->diff_sha256},
                           {"applied", applied},
                           {"paths", paths},
                           {"include_protected", include},
                           {"force", ao.force},
                           {"complete", r->complete},
                           {"error", r->failed.ok() ? "" : r->failed.ToString()},
                           {"by", by}});
  if (!r->failed.ok()) {
    Error e = FromStatus(r->failed);
    e.data["applied"] = applied;
    return e;
  }
  nlohmann::json out = {{"applied", applied},
                        {"skipped", r->skipped},
                        {"complete", r->complete},
                        {"diff_sha256", r->diff_sha256},
                        {"review_session", rs.id}};
  if (r->complete) {
    lock->reset();
    s->review.reset();
    WARD_API_ASSIGN_OR_RETURN(Done fresh, OpenSandboxReview(s, ""));
    (void)fresh;
    Persist(*s);
    out["review_session"] = s->review->id;
  } else {
    s->review = rs;
  }
  return out;
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
    q.labels["exec"] = *eid;
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

// ---- approvals.* ----
//
// Each exec with approvals is its own `ward run --session-id ID` with its own broker; these
// methods relay to the exec's approval socket (api/approvals_relay.h), asynchronously and with
// a bounded wait, and label what comes back with the exec and sandbox it belongs to.

Expected<std::shared_ptr<Exec>> Service::FindApprovalExec(Params& p) {
  WARD_API_ASSIGN_OR_RETURN(std::shared_ptr<Exec> e, FindExec(p));
  if (e->info().approval_session.empty()) {
    return InvalidError("exec " + e->id() +
                        " runs without approvals (create its sandbox with \"ask\": true)");
  }
  if (!e->running()) {
    return NotFoundError("exec " + e->id() +
                         " has ended: no request is pending and its grants ended with it");
  }
  return e;
}

void Service::RelayToExec(const std::shared_ptr<Exec>& e, nlohmann::json request, Reply reply,
                          std::function<Expected<nlohmann::json>(const nlohmann::json&)> on_ok) {
  std::string path = ApprovalSocketPathFor(e->info().approval_session);
  if (path.empty()) return reply(MakeError(ErrorKind::kInterrupted, "bad approval session"));
  std::string id = e->id();
  std::weak_ptr<int> alive = alive_;
  CallApprovalSocketAsync(
      io_, path, request, kApprovalCallTimeout,
      [reply, id, on_ok, alive](Expected<nlohmann::json> r) {
        if (!r.ok()) {
          Error err = r.error();
          err.message = "exec " + id + ": " + err.message;
          err.data["exec_id"] = id;
          return reply(err);
        }
        if (alive.expired()) {
          return reply(MakeError(ErrorKind::kInterrupted, "the daemon stopped"));
        }
        // The reply comes from another process: a surprise in it must not escape the loop.
        try {
          reply(on_ok(*r));
        } catch (const std::exception& ex) {
          reply(MakeError(ErrorKind::kInterrupted,
                          "exec " + id + ": unexpected reply: " + std::string(ex.what())));
        }
      });
}

void Service::ApprovalsQuery(bool grants, const nlohmann::json& params, Reply reply) {
  const char* key = grants ? "grants" : "requests";
  Params p(params);
  std::string sid;
  if (p.Has("sandbox_id")) {
    auto s = FindSandbox(p);
    if (!s.ok()) return reply(s.error());
    if (!(*s)->policy->approvals.enabled) {
      return reply(InvalidError("sandbox " + (*s)->id +
                                " runs without approvals (create it with \"ask\": true)"));
    }
    sid = (*s)->id;
  }
  std::shared_ptr<Exec> only;
  if (p.Has("exec_id")) {
    auto e = FindExec(p);
    if (!e.ok()) return reply(e.error());
    only = *e;
  }
  if (!p.Finish()) return reply(p.error());
  std::vector<std::shared_ptr<Exec>> candidates;
  if (only) {
    if (only->info().approval_session.empty()) {
      return reply(InvalidError("exec " + only->id() +
                                " runs without approvals (create its sandbox with \"ask\": true)"));
    }
    if (!sid.empty() && only->info().sandbox_id != sid) {
      return reply(InvalidError("exec " + only->id() + " is not in sandbox " + sid));
    }
    candidates.push_back(only);
  } else {
    candidates = execs_.List(sid);
  }
  // Only running execs have a broker; a finished one has nothing pending and no live grant.
  std::vector<std::pair<std::string, std::string>> targets;  // exec, sandbox
  std::vector<std::string> paths;
  for (const auto& e : candidates) {
    if (!e->running() || e->info().approval_session.empty()) continue;
    std::string path = ApprovalSocketPathFor(e->info().approval_session);
    if (path.empty()) continue;
    targets.emplace_back(e->id(), e->info().sandbox_id);
    paths.push_back(std::move(path));
  }
  bool single = static_cast<bool>(only);
  CallApprovalSockets(
      io_, paths, {{"op", grants ? "grants" : "list"}}, kApprovalCallTimeout,
      [reply, targets, single, key](ApprovalResults results) {
        nlohmann::json items = nlohmann::json::array();
        nlohmann::json errors = nlohmann::json::array();
        for (size_t i = 0; i < results.size(); ++i) {
          const auto& [exec_id, sandbox_id] = targets[i];
          const Expected<nlohmann::json>& r = *results[i];
          if (!r.ok()) {
            // No socket: the run has not started asking yet, or is ending; nothing to list.
            if (r.error().kind == ErrorKind::kNotFound) continue;
            if (single) {
              Error err = r.error();
              err.message = "exec " + exec_id + ": " + err.message;
              err.data["exec_id"] = exec_id;
              return reply(err);
            }
            errors.push_back({{"exec_id", exec_id},
                              {"sandbox_id", sandbox_id},
                              {"kind", std::string(ErrorKindName(r.error().kind))},
                              {"message", r.error().message}});
            continue;
          }
          auto list = r->find(key);
          if (list == r->end() || !list->is_array()) {
            errors.push_back({{"exec_id", exec_id},
                              {"sandbox_id", sandbox_id},
                              {"kind", "interrupted"},
                              {"message", std::string("malformed reply: no \"") + key + "\""}});
            continue;
          }
          for (const nlohmann::json& item : *list) {
            if (!item.is_object()) continue;
            nlohmann::json labelled = item;
            labelled["exec_id"] = exec_id;
            labelled["sandbox_id"] = sandbox_id;
            items.push_back(std::move(labelled));
          }
        }
        reply(nlohmann::json{{key, std::move(items)}, {"errors", std::move(errors)}});
      });
}

void Service::ApprovalsAnswer(bool allow, const nlohmann::json& params, Reply reply) {
  Params p(params);
  auto found = FindApprovalExec(p);
  if (!found.ok()) return reply(found.error());
  std::shared_ptr<Exec> e = *found;
  p.Require("id");
  auto id = p.Int("id", 0, INT64_MAX);
  auto reason = p.String("reason", kMaxApprovalReason);
  std::optional<std::string> scope, under;
  std::optional<bool> prefix;
  if (allow) {
    scope = p.String("scope", 64);
    prefix = p.Bool("prefix");
    under = p.String("under", 4096);
  }
  if (!p.Finish()) return reply(p.error());
  nlohmann::json request = {{"op", allow ? "approve" : "deny"}, {"id", *id}};
  if (reason && !reason->empty()) request["reason"] = *reason;
  if (allow) {
    // Checked here too, so that a typo never reaches the run as a default.
    std::string sc = scope.value_or("once");
    Result<supervisor::GrantScope> parsed = supervisor::ParseScope(sc);
    if (!parsed.ok()) return reply(InvalidError("params.scope: " + parsed.status().message()));
    if (prefix.value_or(false) && under) {
      return reply(InvalidError("params.prefix and params.under exclude each other"));
    }
    if (under && under->empty()) return reply(InvalidError("params.under must not be empty"));
    request["scope"] = sc;
    if (prefix.value_or(false)) request["prefix"] = true;
    if (under) request["prefix"] = *under;
  }
  std::string exec_id = e->id(), sandbox_id = e->info().sandbox_id;
  uint64_t rid = static_cast<uint64_t>(*id);
  RelayToExec(e, request, reply,
              [this, exec_id, sandbox_id, rid, allow,
               request](const nlohmann::json& r) -> Expected<nlohmann::json> {
                nlohmann::json out = {{"exec_id", exec_id},
                                      {"sandbox_id", sandbox_id},
                                      {"id", rid},
                                      {"decision", allow ? "allow" : "deny"}};
                nlohmann::json ev = {{"exec_id", exec_id}, {"request", rid}};
                for (const char* k : {"scope", "prefix", "reason"}) {
                  if (request.contains(k)) ev[k] = request[k];
                }
                auto grant = r.find("grant");
                if (grant != r.end() && grant->is_object()) {
                  out["grant"] = *grant;
                  if (grant->contains("id")) ev["grant"] = (*grant)["id"];
                }
                auto it = sandboxes_.find(sandbox_id);
                if (it != sandboxes_.end()) {
                  Emit(it->second.get(), allow ? "approvals.approve" : "approvals.deny",
                       std::move(ev));
                }
                return out;
              });
}

void Service::ApprovalsRevoke(const nlohmann::json& params, Reply reply) {
  Params p(params);
  auto found = FindApprovalExec(p);
  if (!found.ok()) return reply(found.error());
  std::shared_ptr<Exec> e = *found;
  p.Require("grant");
  auto grant = p.Int("grant", 0, INT64_MAX);
  if (!p.Finish()) return reply(p.error());
  std::string exec_id = e->id(), sandbox_id = e->info().sandbox_id;
  uint64_t gid = static_cast<uint64_t>(*grant);
  RelayToExec(
      e, {{"op", "revoke"}, {"grant", gid}}, reply,
      [this, exec_id, sandbox_id, gid](const nlohmann::json&) -> Expected<nlohmann::json> {
        auto it = sandboxes_.find(sandbox_id);
        if (it != sandboxes_.end()) {
          Emit(it->second.get(), "approvals.revoke", {{"exec_id", exec_id}, {"grant", gid}});
        }
        return nlohmann::json{
            {"exec_id", exec_id}, {"sandbox_id", sandbox_id}, {"grant", gid}, {"revoked", true}};
      });
}

}  // namespace ward::api
