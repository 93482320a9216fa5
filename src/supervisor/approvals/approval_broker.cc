#include "supervisor/approvals/approval_broker.h"

#include <algorithm>
#include <asio/post.hpp>
#include <utility>

#include "audit/record.h"
#include "net/idna.h"
#include "policy/loader.h"
#include "policy/paths.h"

namespace ward::supervisor {
namespace {

using std::chrono::milliseconds;

constexpr size_t kMaxPathBytes = 4096;
constexpr milliseconds kMaxScope = std::chrono::hours(24 * 30);

// Dynamic programming over (pattern component, path component): linear in their product, so a
// long path from the sandbox cannot make several "**" explode.
bool GlobMatch(const std::vector<std::string>& pat, const std::vector<std::string>& comps) {
  const size_t n = comps.size();
  // next[j]: whether pat[i+1..] matches comps[j..]; cur[j] the same for pat[i..].
  std::vector<char> next(n + 1, 0), cur(n + 1, 0);
  next[n] = 1;
  for (size_t i = pat.size(); i-- > 0;) {
    const bool any = pat[i] == "**";
    cur[n] = any ? next[n] : 0;
    for (size_t j = n; j-- > 0;) {
      if (any) {
        cur[j] = next[j] || cur[j + 1];
      } else {
        cur[j] = next[j + 1] && policy::MatchComponent(pat[i], comps[j]);
      }
    }
    std::swap(next, cur);
  }
  return next[0] != 0;
}

std::string FormatDuration(milliseconds d) {
  uint64_t ms = static_cast<uint64_t>(d.count());
  if (ms % 1000 != 0) return std::to_string(ms) + "ms";
  uint64_t s = ms / 1000;
  std::string out;
  if (s >= 86400 && s % 3600 == 0 && (s / 3600) % 24 == 0) return std::to_string(s / 86400) + "d";
  if (s >= 3600) {
    out += std::to_string(s / 3600) + "h";
    s %= 3600;
  }
  if (s >= 60) {
    out += std::to_string(s / 60) + "m";
    s %= 60;
  }
  if (s > 0 || out.empty()) out += std::to_string(s) + "s";
  return out;
}

// A host for display in "host:port" form.
std::string HostPort(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

// The subject of a request as far as it is safe to record: bounded.
std::string BoundedSubject(std::string_view s) {
  if (s.size() <= kMaxPathBytes) return std::string(s);
  return std::string(s.substr(0, kMaxPathBytes)) + "...";
}

bool HostMatchesPattern(const net::Host& host, const std::string& pattern) {
  // pattern: "*.suffix" (suffix normalised)
  if (host.is_address() || pattern.size() < 3) return false;
  std::string_view suffix = std::string_view(pattern).substr(1);  // ".suffix"
  const std::string& name = host.name;
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(),
                                                     suffix.data(), suffix.size()) == 0;
}

ApprovalDecision Deny(std::string channel, std::string reason) {
  ApprovalDecision d;
  d.allow = false;
  d.channel = std::move(channel);
  d.reason = std::move(reason);
  return d;
}

// A standing path pattern as an absolute path: `~/...` below HOME (not ~user), `/...` as written.
Result<std::string> ExpandStandingPath(const std::string& text, const std::string& where,
                                       const std::string& home) {
  if (text[0] != '~') return text;
  if (text.size() > 1 && text[1] != '/') {
    return InvalidArgument(where + ": ~user is not supported; write the path");
  }
  if (home.empty() || home[0] != '/') {
    return InvalidArgument(where + ": no HOME to expand ~ with");
  }
  return home + text.substr(1);
}

// A standing host pattern, parsed as a network.allow rule of the same origin would be.
Result<net::HostRule> CompileStandingHost(const std::string& text, const std::string& where,
                                          const policy::Origin& origin) {
  policy::HostRule rule;
  rule.pattern = text;
  rule.origin = origin;
  Result<net::HostRule> hr = net::HostRule::Parse(rule);
  if (!hr.ok()) return std::move(hr).take_status().With(where);
  return hr;
}

// A file grant widened to a directory: the one asked for (absolute, containing the path), or
// the path's parent when none was named; never / (it would allow every path).
Status WidenToPathPrefix(const ApprovalRequest& r, const std::string& asked, GrantSpec* spec) {
  std::string prefix;
  if (asked.empty()) {
    prefix = policy::ParentPath(r.subject);
  } else {
    if (asked[0] != '/') return InvalidArgument("a path prefix must be absolute");
    prefix = policy::NormalizePath(asked);
    if (!policy::PathIsWithin(r.subject, prefix)) {
      return InvalidArgument("the prefix " + prefix + " does not contain " + r.subject);
    }
  }
  if (prefix == "/") {
    return InvalidArgument("a prefix grant of / would allow every path; give a narrower prefix");
  }
  spec->match = SubjectMatch::kPathPrefix;
  spec->subject = prefix;
  return Ok();
}

// A connect grant widened to a domain: the pattern asked for (*.example.com, matching the
// host), or the host's parent domain when none was named; never a top-level domain.
Status WidenToHostPattern(const ApprovalRequest& r, const std::string& asked, GrantSpec* spec) {
  Result<net::Host> host = net::ParseHost(r.subject);
  if (!host.ok() || host->is_address()) {
    return InvalidArgument("an address cannot be widened to a pattern");
  }
  std::string suffix;
  if (asked.empty()) {
    size_t dot = host->name.find('.');
    if (dot == std::string::npos) {
      return InvalidArgument(host->name + " has no parent domain to widen to");
    }
    suffix = host->name.substr(dot + 1);
  } else {
    if (asked.rfind("*.", 0) != 0) {
      return InvalidArgument("a host pattern must look like *.example.com");
    }
    Result<std::string> s = net::NormalizeHost(asked.substr(2));
    if (!s.ok()) return std::move(s).take_status().With("host pattern");
    suffix = *s;
  }
  if (suffix.find('.') == std::string::npos) {
    return InvalidArgument("*." + suffix + " is too broad (a top-level domain)");
  }
  if (!HostMatchesPattern(*host, "*." + suffix)) {
    return InvalidArgument("*." + suffix + " does not match " + host->name);
  }
  spec->match = SubjectMatch::kHostPattern;
  spec->subject = "*." + suffix;
  return Ok();
}

// A request's grant widened to a prefix of its path, for the same method, host and port: the
// path up to its last '/' when `asked` is empty.
Status WidenToRequestPrefix(const ApprovalRequest& r, const std::string& asked, GrantSpec* spec) {
  const std::string path = r.path.substr(0, r.path.find('?'));
  std::string prefix = asked.empty() ? path.substr(0, path.rfind('/') + 1) : asked;
  if (prefix.empty() || prefix[0] != '/') {
    return InvalidArgument("a request prefix starts with / (\"/repos/acme/\")");
  }
  if (prefix == "/") return InvalidArgument("a prefix grant of / would allow every path");
  if (prefix.back() != '/') prefix += '/';  // whole components: /repos/acme is not /repos/acme-x
  if (r.path.compare(0, prefix.size(), prefix) != 0) {
    return InvalidArgument(prefix + " is not a prefix of " + r.path);
  }
  spec->match = SubjectMatch::kRequestPrefix;
  spec->path = std::move(prefix);
  return Ok();
}

// What an allowing answer grants: the request's exact subject, or (a prefix in the answer)
// the directory or domain it is widened to.
Result<GrantSpec> GrantSpecFor(const ApprovalRequest& r, const ChannelAnswer& answer) {
  GrantSpec spec;
  spec.kind = r.kind;
  spec.access = r.access;
  spec.port = r.port;
  spec.scope = answer.scope;
  spec.subject = r.subject;
  spec.match = r.kind == RequestKind::kFile ? SubjectMatch::kExactPath : SubjectMatch::kExactHost;
  if (r.kind == RequestKind::kRequest) {
    spec.match = SubjectMatch::kRequestPath;
    spec.method = r.method;
    spec.path = r.path;
  }
  if (!answer.prefix) return spec;
  if (r.kind == RequestKind::kFile) {
    WARD_TRY(WidenToPathPrefix(r, *answer.prefix, &spec));
  } else if (r.kind == RequestKind::kRequest) {
    WARD_TRY(WidenToRequestPrefix(r, *answer.prefix, &spec));
  } else {
    WARD_TRY(WidenToHostPattern(r, *answer.prefix, &spec));
  }
  return spec;
}

// A once-grant is spent on the request that asked for it: the kept grant says so, and `g`
// becomes its copy.
void SpendOnceGrant(std::vector<Grant>* grants, Grant* g) {
  for (Grant& kept : *grants) {
    if (kept.id != g->id) continue;
    kept.uses = 1;
    kept.state = Grant::State::kUsed;
    *g = kept;
  }
}

}  // namespace

const char* RequestKindName(RequestKind k) {
  switch (k) {
    case RequestKind::kFile:
      return "file";
    case RequestKind::kHost:
      return "host";
    case RequestKind::kRequest:
      return "request";
  }
  return "?";
}

const char* FileAccessName(FileAccess a) {
  switch (a) {
    case FileAccess::kRead:
      return "read";
    case FileAccess::kWrite:
      return "write";
    case FileAccess::kReadWrite:
      return "read-write";
    case FileAccess::kCreate:
      return "create";
  }
  return "?";
}

std::optional<FileAccess> ParseFileAccess(std::string_view name) {
  for (FileAccess a :
       {FileAccess::kRead, FileAccess::kWrite, FileAccess::kReadWrite, FileAccess::kCreate}) {
    if (name == FileAccessName(a)) return a;
  }
  return std::nullopt;
}

bool AccessCovers(FileAccess granted, FileAccess wanted) {
  auto bits = [](FileAccess a) -> unsigned {
    switch (a) {
      case FileAccess::kRead:
        return 1;
      case FileAccess::kWrite:
        return 2;
      case FileAccess::kReadWrite:
        return 3;
      case FileAccess::kCreate:
        return 7;
    }
    return 0;
  };
  return (bits(wanted) & ~bits(granted)) == 0;
}

Result<GrantScope> ParseScope(std::string_view text) {
  GrantScope s;
  if (text == "once") return s;
  if (text == "session") {
    s.lifetime = Lifetime::kSession;
    return s;
  }
  Result<uint64_t> ms = policy::ParseDurationMs(text);
  if (!ms.ok()) {
    return InvalidArgument("scope must be once, session or a duration such as 10m, not \"" +
                           std::string(text.substr(0, 64)) + "\"");
  }
  if (*ms == 0) return InvalidArgument("a duration scope must be longer than 0");
  if (*ms > static_cast<uint64_t>(kMaxScope.count())) {
    return InvalidArgument("a duration scope is at most 30 days (use session)");
  }
  s.lifetime = Lifetime::kDuration;
  s.duration = milliseconds(*ms);
  return s;
}

std::string ScopeName(const GrantScope& s) {
  switch (s.lifetime) {
    case Lifetime::kOnce:
      return "once";
    case Lifetime::kSession:
      return "session";
    case Lifetime::kDuration:
      return FormatDuration(s.duration);
  }
  return "?";
}

const char* SubjectMatchName(SubjectMatch m) {
  switch (m) {
    case SubjectMatch::kExactPath:
      return "path";
    case SubjectMatch::kPathPrefix:
      return "prefix";
    case SubjectMatch::kExactHost:
      return "host";
    case SubjectMatch::kHostPattern:
      return "host_pattern";
    case SubjectMatch::kRequestPath:
      return "request";
    case SubjectMatch::kRequestPrefix:
      return "request_prefix";
  }
  return "?";
}

const char* GrantStateName(Grant::State s) {
  switch (s) {
    case Grant::State::kLive:
      return "live";
    case Grant::State::kUsed:
      return "used";
    case Grant::State::kExpired:
      return "expired";
    case Grant::State::kRevoked:
      return "revoked";
  }
  return "?";
}

nlohmann::json RequestToJson(const ApprovalRequest& r) {
  nlohmann::json j = {{"id", r.id}, {"kind", RequestKindName(r.kind)}, {"subject", r.subject}};
  if (r.kind == RequestKind::kFile) {
    j["access"] = FileAccessName(r.access);
  } else {
    j["port"] = r.port;
  }
  if (r.kind == RequestKind::kRequest) {
    j["method"] = r.method;
    j["path"] = r.path;
    j["rule"] = r.rule;
  }
  j["pid"] = r.pid;
  j["exe"] = r.exe;
  j["when"] = audit::FormatTimestamp(r.when);
  return j;
}

nlohmann::json GrantToJson(const Grant& g) {
  nlohmann::json j = {{"id", g.id},
                      {"kind", RequestKindName(g.spec.kind)},
                      {"match", SubjectMatchName(g.spec.match)},
                      {"subject", g.spec.subject}};
  if (g.spec.kind == RequestKind::kFile) {
    j["access"] = FileAccessName(g.spec.access);
  } else {
    j["port"] = g.spec.port;
  }
  if (g.spec.kind == RequestKind::kRequest) {
    j["method"] = g.spec.method;
    j["path"] = g.spec.path;
  }
  j["scope"] = ScopeName(g.spec.scope);
  j["uses"] = g.uses;
  j["request"] = g.request_id;
  j["channel"] = g.channel;
  j["created"] = audit::FormatTimestamp(g.created);
  j["expires"] = g.expires ? nlohmann::json(audit::FormatTimestamp(*g.expires)) : nullptr;
  j["state"] = GrantStateName(g.state);
  return j;
}

Result<std::string> NormalizeSubject(RequestKind kind, std::string_view subject) {
  if (subject.empty()) return InvalidArgument("empty subject");
  if (subject.find('\0') != std::string_view::npos) {
    return InvalidArgument("subject contains a NUL byte");
  }
  if (kind == RequestKind::kFile) {
    if (subject[0] != '/') return InvalidArgument("not an absolute path");
    if (subject.size() > kMaxPathBytes) return InvalidArgument("path too long");
    return policy::NormalizePath(subject);
  }
  Result<net::Host> host = net::ParseHost(subject);
  if (!host.ok()) return std::move(host).take_status();
  return host->ToString();
}

bool MatchPathGlob(const std::vector<std::string>& pattern, std::string_view path) {
  return GlobMatch(pattern, policy::PathComponents(path));
}

std::string DescribeRequest(const ApprovalRequest& r) {
  if (r.kind == RequestKind::kFile) return std::string(FileAccessName(r.access)) + " " + r.subject;
  if (r.kind == RequestKind::kRequest) return r.method + " " + HostPort(r.subject, r.port) + r.path;
  return "connect " + HostPort(r.subject, r.port);
}

// ---------------------------------------------------------------------------------------------

Result<std::shared_ptr<ApprovalBroker>> ApprovalBroker::Create(asio::io_context& io,
                                                               BrokerOptions options,
                                                               EventSink* events) {
  std::shared_ptr<ApprovalBroker> b(new ApprovalBroker(io, std::move(options), events));
  const policy::ApprovalsPolicy& p = b->options_.policy;
  auto compile = [&](const std::vector<std::string>& list, const char* key,
                     Standing* out) -> Status {
    for (const std::string& text : list) {
      std::string where = "approvals." + std::string(key) + " pattern \"" + text + "\"";
      if (!p.origin.source.empty()) where += " (" + p.origin.ToString() + ")";
      if (text.empty()) return InvalidArgument(where + ": empty");
      if (text[0] == '~' || text[0] == '/') {
        WARD_ASSIGN_OR_RETURN(std::string path, ExpandStandingPath(text, where, b->options_.home));
        PathPattern pp;
        pp.text = text;
        pp.components = policy::PathComponents(policy::NormalizePath(path));
        out->paths.push_back(std::move(pp));
        continue;
      }
      WARD_ASSIGN_OR_RETURN(net::HostRule rule, CompileStandingHost(text, where, p.origin));
      out->hosts.push_back(std::move(rule));
    }
    return Ok();
  };
  WARD_TRY(compile(p.auto_deny, "auto_deny", &b->deny_));
  WARD_TRY(compile(p.auto_allow_once, "auto_allow_once", &b->allow_once_));
  return b;
}

ApprovalBroker::ApprovalBroker(asio::io_context& io, BrokerOptions options, EventSink* events)
    : io_(io), options_(std::move(options)), events_(events) {}

ApprovalBroker::~ApprovalBroker() {
  // Callbacks of requests still pending are dropped (Shutdown() first runs them all).
  for (auto& [id, p] : pending_) {
    if (p.timer) p.timer->cancel();
  }
}

std::chrono::steady_clock::time_point ApprovalBroker::Now() const {
  return options_.now ? options_.now() : std::chrono::steady_clock::now();
}

void ApprovalBroker::AddChannel(std::unique_ptr<ApprovalChannel> channel) {
  if (channel) channels_.push_back(std::move(channel));
}

void ApprovalBroker::EmitAll(std::vector<Emitted> events) {
  if (!events_) return;
  for (Emitted& e : events) {
    try {
      events_->Emit(e.type, std::move(e.data));
    } catch (...) {
      // A sink must not throw; if one does, the decision still stands.
    }
  }
}

uint64_t ApprovalBroker::Ask(ApprovalRequest request, Callback done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    request.id = next_request_++;
  }
  request.when = std::chrono::system_clock::now();
  uint64_t id = request.id;
  asio::post(io_, [weak = weak_from_this(), request = std::move(request),
                   done = std::move(done)]() mutable {
    if (auto self = weak.lock()) {
      self->StartAsk(std::move(request), std::move(done));
    } else if (done) {
      done(Deny("broker", "the approval broker is gone"));
    }
  });
  return id;
}

void ApprovalBroker::StartAsk(ApprovalRequest request, Callback done) {
  std::vector<Emitted> ev;
  Result<std::string> subject = NormalizeSubject(request.kind, request.subject);
  if (!subject.ok()) {
    request.subject = BoundedSubject(request.subject);
    ev.push_back({"approval.request", RequestToJson(request)});
    EmitAll(std::move(ev));
    Finish(std::move(done), nullptr, request.id,
           Deny("broker", "invalid subject: " + subject.status().ToString()));
    return;
  }
  request.subject = std::move(subject).value();
  ev.push_back({"approval.request", RequestToJson(request)});

  std::optional<ApprovalDecision> decided;
  std::shared_ptr<asio::steady_timer> timer;
  milliseconds timeout(options_.policy.timeout_ms);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ExpireLocked(&ev);
    if (closed_) {
      decided = Deny("broker", "the session is ending");
    } else if (std::optional<Grant> g =
                   MatchLocked(request.kind, request.subject, request.access, request.port, &ev,
                               request.method, request.path)) {
      ApprovalDecision d;
      d.allow = true;
      d.channel = "grant";
      d.reason = "grant " + std::to_string(g->id) + " (" + ScopeName(g->spec.scope) + ")";
      d.grant = std::move(g);
      decided = std::move(d);
    } else if (auto rule = StandingMatch(deny_.paths, deny_.hosts, true, request)) {
      decided = Deny("policy", "auto_deny \"" + *rule + "\"");
    } else if (auto rule = StandingMatch(allow_once_.paths, allow_once_.hosts, false, request)) {
      ApprovalDecision d;
      d.allow = true;
      d.channel = "policy";
      d.reason = "auto_allow_once \"" + *rule + "\"";
      decided = std::move(d);
    } else if (pending_.size() >= options_.max_pending) {
      decided = Deny("broker",
                     "too many pending questions (" + std::to_string(options_.max_pending) + ")");
    } else if (timeout.count() == 0) {
      decided = Deny("timeout", "no answer within 0 ms");
    } else {
      timer = std::make_shared<asio::steady_timer>(io_, timeout);
      pending_.emplace(request.id, PendingAsk{request, std::move(done), timer});
    }
  }
  EmitAll(std::move(ev));
  if (decided) {
    Finish(std::move(done), nullptr, request.id, std::move(*decided));
    return;
  }
  uint64_t id = request.id;
  timer->async_wait([weak = weak_from_this(), id, timeout](const asio::error_code& ec) {
    if (ec) return;
    if (auto self = weak.lock()) {
      self->Resolve(id, Deny("timeout", "no answer within " + FormatDuration(timeout)));
    }
  });
  for (auto& ch : channels_) {
    if (!IsPending(id)) break;  // a channel answered at once
    std::string name(ch->name());
    ch->Ask(request, timeout, [weak = weak_from_this(), id, name](ChannelAnswer a) {
      auto self = weak.lock();
      if (!self) return;
      Result<ApprovalDecision> r = self->Answer(id, a, name);
      if (!r.ok() && r.status().code() == Code::kInvalidArgument) {
        self->Resolve(id, Deny(name, "invalid answer: " + r.status().ToString()));
      }
    });
  }
}

void ApprovalBroker::Resolve(uint64_t id, ApprovalDecision decision) {
  Callback done;
  std::shared_ptr<asio::steady_timer> timer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    done = std::move(it->second.done);
    timer = std::move(it->second.timer);
    pending_.erase(it);
  }
  Finish(std::move(done), std::move(timer), id, std::move(decision));
}

void ApprovalBroker::Finish(Callback done, std::shared_ptr<asio::steady_timer> timer, uint64_t id,
                            ApprovalDecision decision) {
  nlohmann::json data = {{"id", id},
                         {"decision", decision.allow ? "allow" : "deny"},
                         {"channel", decision.channel},
                         {"reason", decision.reason}};
  if (decision.grant) {
    data["grant"] = decision.grant->id;
    data["scope"] = ScopeName(decision.grant->spec.scope);
    data["match"] = SubjectMatchName(decision.grant->spec.match);
    data["subject"] = decision.grant->spec.subject;
  } else if (decision.allow) {
    data["scope"] = "once";
  }
  EmitAll({{"approval.answer", std::move(data)}});
  // The callback, the timer and the channels belong to the loop thread.
  asio::post(io_, [weak = weak_from_this(), id, done = std::move(done), timer = std::move(timer),
                   decision = std::move(decision)]() {
    if (timer) timer->cancel();
    if (auto self = weak.lock()) {
      for (auto& ch : self->channels_) ch->Cancel(id);
    }
    if (done) done(decision);
  });
}

Result<ApprovalDecision> ApprovalBroker::Answer(uint64_t request_id, const ChannelAnswer& answer,
                                                std::string_view channel) {
  std::vector<Emitted> ev;
  ApprovalDecision decision;
  Callback done;
  std::shared_ptr<asio::steady_timer> timer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(request_id);
    if (it == pending_.end()) {
      return NotFound("no pending request " + std::to_string(request_id) +
                      " (unknown, or already decided)");
    }
    const ApprovalRequest& r = it->second.request;
    decision.channel = std::string(channel);
    decision.allow = answer.allow;
    if (answer.allow) {
      WARD_ASSIGN_OR_RETURN(GrantSpec spec, GrantSpecFor(r, answer));
      WARD_ASSIGN_OR_RETURN(Grant g, CreateGrantLocked(spec, channel, request_id, &ev));
      if (g.spec.scope.lifetime == Lifetime::kOnce) {
        SpendOnceGrant(&grants_, &g);
        ev.push_back({"grant.use", {{"grant", g.id}, {"request", request_id}, {"uses", g.uses}}});
      }
      decision.reason = answer.reason.empty() ? "allowed through " + std::string(channel) + " (" +
                                                    ScopeName(g.spec.scope) + ")"
                                              : answer.reason;
      decision.grant = std::move(g);
    } else {
      decision.reason =
          answer.reason.empty() ? "denied through " + std::string(channel) : answer.reason;
    }
    done = std::move(it->second.done);
    timer = std::move(it->second.timer);
    pending_.erase(it);
  }
  EmitAll(std::move(ev));
  Finish(std::move(done), std::move(timer), request_id, decision);
  return decision;
}

Result<Grant> ApprovalBroker::CreateGrant(const GrantSpec& spec, std::string_view channel,
                                          uint64_t request_id) {
  std::vector<Emitted> ev;
  Result<Grant> g = [&]() -> Result<Grant> {
    std::lock_guard<std::mutex> lock(mu_);
    return CreateGrantLocked(spec, channel, request_id, &ev);
  }();
  EmitAll(std::move(ev));
  return g;
}

Result<Grant> ApprovalBroker::CreateGrantLocked(const GrantSpec& spec_in, std::string_view channel,
                                                uint64_t request_id, std::vector<Emitted>* ev) {
  GrantSpec spec = spec_in;
  switch (spec.match) {
    case SubjectMatch::kExactPath:
    case SubjectMatch::kPathPrefix: {
      if (spec.kind != RequestKind::kFile)
        return InvalidArgument("a path grant must be a file grant");
      WARD_ASSIGN_OR_RETURN(spec.subject, NormalizeSubject(RequestKind::kFile, spec.subject));
      if (spec.match == SubjectMatch::kPathPrefix && spec.subject == "/") {
        return InvalidArgument("a prefix grant of / would allow every path");
      }
      break;
    }
    case SubjectMatch::kRequestPath:
    case SubjectMatch::kRequestPrefix: {
      if (spec.kind != RequestKind::kRequest || spec.method.empty() || spec.path.empty() ||
          spec.path[0] != '/') {
        return InvalidArgument("a request grant names a method and a path starting with /");
      }
      if (spec.match == SubjectMatch::kRequestPrefix &&
          (spec.path == "/" || spec.path.back() != '/')) {
        return InvalidArgument("a request prefix grant is a directory other than / "
                               "(\"/repos/acme/\")");
      }
      WARD_ASSIGN_OR_RETURN(spec.subject, NormalizeSubject(RequestKind::kHost, spec.subject));
      break;
    }
    case SubjectMatch::kExactHost: {
      if (spec.kind != RequestKind::kHost)
        return InvalidArgument("a host grant must be a host grant");
      WARD_ASSIGN_OR_RETURN(spec.subject, NormalizeSubject(RequestKind::kHost, spec.subject));
      break;
    }
    case SubjectMatch::kHostPattern: {
      if (spec.kind != RequestKind::kHost)
        return InvalidArgument("a host grant must be a host grant");
      if (spec.subject.rfind("*.", 0) != 0) {
        return InvalidArgument("a host pattern must look like *.example.com");
      }
      WARD_ASSIGN_OR_RETURN(std::string suffix, net::NormalizeHost(spec.subject.substr(2)));
      if (suffix.find('.') == std::string::npos) {
        return InvalidArgument("*." + suffix + " is too broad (a top-level domain)");
      }
      spec.subject = "*." + suffix;
      break;
    }
  }
  if (spec.scope.lifetime == Lifetime::kDuration &&
      (spec.scope.duration.count() <= 0 || spec.scope.duration > kMaxScope)) {
    return InvalidArgument("a duration grant lasts more than 0 and at most 30 days");
  }
  if (grants_.size() >= options_.max_grants) {
    // Forget the oldest grant that can no longer be used.
    auto dead = std::find_if(grants_.begin(), grants_.end(),
                             [](const Grant& g) { return g.state != Grant::State::kLive; });
    if (dead == grants_.end()) {
      return Error(Code::kResourceExhausted,
                   "too many live grants (" + std::to_string(options_.max_grants) + ")");
    }
    grants_.erase(dead);
  }
  Grant g;
  g.id = next_grant_++;
  g.spec = std::move(spec);
  g.request_id = request_id;
  g.channel = std::string(channel);
  g.created = std::chrono::system_clock::now();
  if (g.spec.scope.lifetime == Lifetime::kDuration) {
    g.expires = g.created + g.spec.scope.duration;
    g.expires_at = Now() + g.spec.scope.duration;
  }
  nlohmann::json data = GrantToJson(g);
  data.erase("uses");
  data.erase("state");
  data["grant"] = data["id"];
  data.erase("id");
  ev->push_back({"grant.create", std::move(data)});
  grants_.push_back(g);
  return g;
}

void ApprovalBroker::ExpireLocked(std::vector<Emitted>* ev) {
  auto now = Now();
  for (Grant& g : grants_) {
    if (g.state == Grant::State::kLive && g.spec.scope.lifetime == Lifetime::kDuration &&
        now >= g.expires_at) {
      g.state = Grant::State::kExpired;
      ev->push_back(
          {"grant.expire", {{"grant", g.id}, {"subject", g.spec.subject}, {"uses", g.uses}}});
    }
  }
}

std::optional<Grant> ApprovalBroker::MatchLocked(RequestKind kind, const std::string& subject,
                                                 FileAccess access, uint16_t port,
                                                 std::vector<Emitted>* ev, std::string_view method,
                                                 std::string_view path) {
  std::optional<net::Host> host;
  if (kind != RequestKind::kFile) {
    Result<net::Host> h = net::ParseHost(subject);
    if (!h.ok()) return std::nullopt;
    host = std::move(h).value();
  }
  std::string host_text = host ? host->ToString() : std::string();
  auto covers = [&](const Grant& g) {
    if (g.state != Grant::State::kLive || g.spec.kind != kind) return false;
    switch (g.spec.match) {
      case SubjectMatch::kExactPath:
        return g.spec.subject == subject && AccessCovers(g.spec.access, access);
      case SubjectMatch::kPathPrefix:
        return policy::PathIsWithin(subject, g.spec.subject) && AccessCovers(g.spec.access, access);
      case SubjectMatch::kExactHost:
        return g.spec.port == port && g.spec.subject == host_text;
      case SubjectMatch::kHostPattern:
        return g.spec.port == port && HostMatchesPattern(*host, g.spec.subject);
      case SubjectMatch::kRequestPath:
      case SubjectMatch::kRequestPrefix:
        return g.spec.port == port && g.spec.subject == host_text && g.spec.method == method &&
               (g.spec.match == SubjectMatch::kRequestPath
                    ? g.spec.path == path
                    : path.substr(0, g.spec.path.size()) == g.spec.path);
    }
    return false;
  };
  // Grants that are not spent by a use first, so a once-grant is kept for when it is needed.
  Grant* chosen = nullptr;
  for (Grant& g : grants_) {
    if (!covers(g)) continue;
    if (g.spec.scope.lifetime != Lifetime::kOnce) {
      chosen = &g;
      break;
    }
    if (!chosen) chosen = &g;
  }
  if (!chosen) return std::nullopt;
  ++chosen->uses;
  if (chosen->spec.scope.lifetime == Lifetime::kOnce) chosen->state = Grant::State::kUsed;
  ev->push_back(
      {"grant.use", {{"grant", chosen->id}, {"subject", subject}, {"uses", chosen->uses}}});
  return *chosen;
}

std::optional<Grant> ApprovalBroker::Match(RequestKind kind, std::string_view subject,
                                           FileAccess access, uint16_t port) {
  Result<std::string> norm = NormalizeSubject(kind, subject);
  if (!norm.ok()) return std::nullopt;
  std::vector<Emitted> ev;
  std::optional<Grant> g;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ExpireLocked(&ev);
    g = MatchLocked(kind, *norm, access, port, &ev);
  }
  EmitAll(std::move(ev));
  return g;
}

std::optional<Grant> ApprovalBroker::MatchRequest(std::string_view host, uint16_t port,
                                                  std::string_view method,
                                                  std::string_view path) {
  Result<std::string> norm = NormalizeSubject(RequestKind::kRequest, host);
  if (!norm.ok()) return std::nullopt;
  std::vector<Emitted> ev;
  std::optional<Grant> g;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ExpireLocked(&ev);
    g = MatchLocked(RequestKind::kRequest, *norm, FileAccess::kRead, port, &ev, method, path);
  }
  EmitAll(std::move(ev));
  return g;
}

std::optional<std::string> ApprovalBroker::StandingMatch(const std::vector<PathPattern>& paths,
                                                         const std::vector<net::HostRule>& hosts,
                                                         bool deny_rules,
                                                         const ApprovalRequest& r) const {
  if (r.kind == RequestKind::kFile) {
    for (const PathPattern& p : paths) {
      if (MatchPathGlob(p.components, r.subject)) return p.text;
    }
    return std::nullopt;
  }
  Result<net::Host> host = net::ParseHost(r.subject);
  if (!host.ok()) return std::nullopt;
  for (const net::HostRule& rule : hosts) {
    bool name_ok =
        host->is_address() ? rule.MatchesAddress(*host->address) : rule.MatchesName(host->name);
    if (name_ok && rule.MatchesPort(r.port, deny_rules)) return rule.text;
  }
  return std::nullopt;
}

Status ApprovalBroker::Revoke(uint64_t grant_id, std::string_view by) {
  std::vector<Emitted> ev;
  Status st = [&]() -> Status {
    std::lock_guard<std::mutex> lock(mu_);
    ExpireLocked(&ev);
    for (Grant& g : grants_) {
      if (g.id != grant_id) continue;
      if (g.state != Grant::State::kLive) {
        return Error(Code::kFailedPrecondition, "grant " + std::to_string(grant_id) + " is " +
                                                    GrantStateName(g.state) + ", not live");
      }
      g.state = Grant::State::kRevoked;
      ev.push_back({"grant.revoke",
                    {{"grant", g.id},
                     {"subject", g.spec.subject},
                     {"uses", g.uses},
                     {"by", std::string(by)}}});
      return Ok();
    }
    return NotFound("no grant " + std::to_string(grant_id));
  }();
  EmitAll(std::move(ev));
  return st;
}

std::vector<ApprovalRequest> ApprovalBroker::Pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ApprovalRequest> out;
  for (const auto& [id, p] : pending_) out.push_back(p.request);
  return out;
}

std::vector<Grant> ApprovalBroker::Grants() {
  std::vector<Emitted> ev;
  std::vector<Grant> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ExpireLocked(&ev);
    out = grants_;
  }
  EmitAll(std::move(ev));
  return out;
}

bool ApprovalBroker::IsPending(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.count(id) != 0;
}

void ApprovalBroker::Shutdown() {
  std::vector<uint64_t> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    for (const auto& [id, p] : pending_) ids.push_back(id);
  }
  for (uint64_t id : ids) Resolve(id, Deny("broker", "the session is ending"));
}

}  // namespace ward::supervisor
