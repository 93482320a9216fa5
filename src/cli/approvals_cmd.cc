// `ward approvals list`, `ward approve`, `ward deny`, `ward grants list|revoke`: the approver's
// side of approvals, from another terminal. Each talks to one running session over its approval
// socket (supervisor/approvals/socket.h; protocol in docs/approvals.md). This file picks the
// session, sends one request, and prints.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/sessions.h"
#include "cli/commands.h"
#include "supervisor/approvals/approval_broker.h"
#include "supervisor/approvals/socket.h"
#include "supervisor/runtime_dir.h"

namespace ward::cli {
namespace {

constexpr auto kCallTimeout = std::chrono::seconds(10);

struct ApprovalsOptions {
  std::string session;
  bool json = false;
  uint64_t id = 0;
  std::string scope = "once";
  bool prefix = false;
  std::string under;
  std::string reason;
};

// Everything printed from the socket may come from the sandbox (paths, host names, exe names):
// never let it reach the terminal raw.
std::string Safe(const nlohmann::json& v) {
  if (v.is_null()) return "-";
  return audit::SanitizeForTerminal(v.is_string() ? v.get<std::string>() : v.dump());
}

std::string Field(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return "-";
  auto it = obj.find(key);
  return it == obj.end() ? "-" : Safe(*it);
}

// Line by line: a message that lists sessions keeps its line breaks (each line sanitised).
void PrintError(const std::string& cmd, const std::string& msg) {
  std::string shown;
  for (size_t start = 0; start <= msg.size();) {
    size_t nl = msg.find('\n', start);
    if (nl == std::string::npos) nl = msg.size();
    if (start > 0) shown += "\n";
    shown += audit::SanitizeForTerminal(msg.substr(start, nl - start));
    start = nl + 1;
  }
  std::fprintf(stderr, "ward %s: %s\n", cmd.c_str(), shown.c_str());
}

// The session to talk to: --session (an id or a unique prefix of a live one), or the only live
// session. Errors list the live sessions.
Result<supervisor::ApprovalSession> PickSession(const std::string& wanted) {
  // The same runtime directory `ward run` chose (the same environment gives the same answer).
  std::string dir = supervisor::WardRuntimeDir();
  if (dir.empty()) {
    return NotFound(
        "cannot tell where ward's runtime directory is: set XDG_RUNTIME_DIR as the run had it");
  }
  WARD_ASSIGN_OR_RETURN(std::vector<supervisor::ApprovalSession> live,
                        supervisor::FindApprovalSessions(dir));
  auto names = [&] {
    std::string s;
    for (const auto& l : live) s += "\n  " + l.session;
    return s;
  };
  if (wanted.empty()) {
    if (live.size() == 1) return live[0];
    if (live.empty()) {
      return NotFound("no running session accepts approvals (no live socket in " + dir +
                      "; is `ward run` started with --ask or [approvals]?)");
    }
    return Error(
        Code::kFailedPrecondition,
        std::to_string(live.size()) + " sessions are running; pick one with --session:" + names());
  }
  std::vector<supervisor::ApprovalSession> matches;
  for (const auto& l : live) {
    if (l.session == wanted) return l;
    if (l.session.compare(0, wanted.size(), wanted) == 0) matches.push_back(l);
  }
  if (matches.size() == 1) return matches[0];
  if (matches.empty()) {
    return NotFound("no running session " + wanted +
                    (live.empty() ? std::string(" (none is running)") : "; running:" + names()));
  }
  return Error(Code::kFailedPrecondition, "session prefix " + wanted + " is ambiguous:" + names());
}

// The live sessions: --session's one, or every one (none is an error saying where ward looked).
Result<std::vector<supervisor::ApprovalSession>> LiveSessions(const std::string& wanted,
                                                              bool none_is_error = true) {
  if (!wanted.empty()) {
    WARD_ASSIGN_OR_RETURN(supervisor::ApprovalSession s, PickSession(wanted));
    return std::vector<supervisor::ApprovalSession>{s};
  }
  std::string dir = supervisor::WardRuntimeDir();
  if (dir.empty()) {
    return NotFound(
        "cannot tell where ward's runtime directory is: set XDG_RUNTIME_DIR as the run had it");
  }
  WARD_ASSIGN_OR_RETURN(std::vector<supervisor::ApprovalSession> live,
                        supervisor::FindApprovalSessions(dir));
  if (live.empty() && none_is_error) {
    return NotFound("no running session accepts approvals (no live socket in " + dir +
                    "; is `ward run` started with --ask or [approvals]?)");
  }
  return live;
}

// One request to the session; a refusal ({"ok": false}) becomes a Status with its code.
Result<nlohmann::json> Call(const supervisor::ApprovalSession& s, const nlohmann::json& request) {
  WARD_ASSIGN_OR_RETURN(nlohmann::json reply,
                        supervisor::CallApprovalSocket(s.path, request, kCallTimeout));
  WARD_TRY(supervisor::ApprovalReplyStatus(reply));
  return reply;
}

// Connects, runs `body` with the session; prints any error as `ward <cmd>: ...`.
template <typename Body>
int WithSession(const std::string& cmd, const ApprovalsOptions& o, Body body) {
  Result<supervisor::ApprovalSession> s = PickSession(o.session);
  if (!s.ok()) {
    PrintError(cmd, s.status().ToString());
    return kExitFailed;
  }
  Status st = body(*s);
  if (!st.ok()) {
    PrintError(cmd, st.ToString());
    return kExitFailed;
  }
  return kExitOk;
}

void PrintJson(const nlohmann::json& j) {
  std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

// The pending requests of one session, each tagged with its session.
Result<std::vector<nlohmann::json>> PendingRequests(const supervisor::ApprovalSession& s) {
  WARD_ASSIGN_OR_RETURN(nlohmann::json reply, Call(s, {{"op", "list"}}));
  nlohmann::json reqs = reply.value("requests", nlohmann::json::array());
  if (!reqs.is_array()) return InvalidArgument("malformed reply: \"requests\" is not a list");
  std::vector<nlohmann::json> out;
  for (nlohmann::json& r : reqs) {
    if (!r.is_object()) continue;
    r["session"] = s.session;
    out.push_back(std::move(r));
  }
  return out;
}

std::string RequestAccess(const nlohmann::json& r) {
  return Field(r, "kind") == "host" ? "port " + Field(r, "port") : Field(r, "access");
}

// Every live session's pending requests (or --session's), in one table: a SESSION column when
// there are several sessions (each request id is its session's own).
int RunList(const ApprovalsOptions& o) {
  const std::string cmd = "approvals list";
  Result<std::vector<supervisor::ApprovalSession>> live = LiveSessions(o.session);
  if (!live.ok()) {
    PrintError(cmd, live.status().ToString());
    return kExitFailed;
  }
  std::vector<nlohmann::json> all;
  int status = kExitOk;
  for (const supervisor::ApprovalSession& s : *live) {
    Result<std::vector<nlohmann::json>> reqs = PendingRequests(s);
    if (!reqs.ok()) {  // one session that does not answer does not hide the others
      PrintError(cmd, "session " + s.session + ": " + reqs.status().ToString());
      status = kExitFailed;
      continue;
    }
    for (nlohmann::json& r : *reqs) all.push_back(std::move(r));
  }
  if (o.json) {
    PrintJson(nlohmann::json(all));
    return status;
  }
  if (all.empty()) {
    if (live->size() == 1) {
      std::fprintf(stderr, "no pending requests in session %s\n", (*live)[0].session.c_str());
    } else {
      std::fprintf(stderr, "no pending requests in the %zu running sessions\n", live->size());
    }
    return status;
  }
  const bool several = live->size() > 1;
  if (several) fmt::print("{:<26}  ", "SESSION");
  fmt::print("{:>5}  {:<5}  {:<10}  {:<24}  {:>7}  {}\n", "ID", "KIND", "ACCESS", "ASKED", "PID",
             "SUBJECT  (EXE)");
  for (const nlohmann::json& r : all) {
    if (several) fmt::print("{:<26}  ", Field(r, "session"));
    fmt::print("{:>5}  {:<5}  {:<10}  {:<24}  {:>7}  {}  ({})\n", Field(r, "id"),
               Field(r, "kind"), RequestAccess(r), Field(r, "when"), Field(r, "pid"),
               Field(r, "subject"), Field(r, "exe"));
  }
  return status;
}

// Not pending: say whether it was already answered when the grants tell.
Status ExplainNotPending(const supervisor::ApprovalSession& s, uint64_t id, Status st) {
  if (st.code() != Code::kNotFound) return st;
  Result<nlohmann::json> grants = Call(s, {{"op", "grants"}});
  if (grants.ok() && (*grants)["grants"].is_array()) {
    for (const nlohmann::json& g : (*grants)["grants"]) {
      if (g.is_object() && g.value("request", uint64_t{0}) == id) {
        return Error(Code::kFailedPrecondition, "request " + std::to_string(id) +
                                                    " was already approved (grant " +
                                                    Field(g, "id") + ")");
      }
    }
  }
  return Error(Code::kNotFound, "no pending request " + std::to_string(id) + " in session " +
                                    s.session +
                                    ": unknown, or already answered (or timed out); see `ward "
                                    "approvals list`");
}

int RunAnswer(const ApprovalsOptions& o, bool allow) {
  const std::string cmd = allow ? "approve" : "deny";
  if (allow) {
    // Checked here too, so a typo never reaches a session as a default.
    Result<supervisor::GrantScope> scope = supervisor::ParseScope(o.scope);
    if (!scope.ok()) {
      PrintError(cmd, "--scope: " + scope.status().ToString());
      return kExitUsage;
    }
    if (o.prefix && !o.under.empty()) {
      PrintError(cmd, "--prefix and --under exclude each other");
      return kExitUsage;
    }
  }
  return WithSession(cmd, o, [&](const supervisor::ApprovalSession& s) -> Status {
    nlohmann::json req = {{"op", allow ? "approve" : "deny"}, {"id", o.id}};
    if (!o.reason.empty()) req["reason"] = o.reason;
    if (allow) {
      req["scope"] = o.scope;
      if (o.prefix) req["prefix"] = true;
      if (!o.under.empty()) req["prefix"] = o.under;
    }
    Result<nlohmann::json> reply = Call(s, req);
    if (!reply.ok()) return ExplainNotPending(s, o.id, reply.status());
    const nlohmann::json& grant = (*reply)["grant"];
    if (!allow) {
      fmt::print("denied request {} (session {})\n", o.id, s.session);
    } else if (grant.is_object()) {
      fmt::print("approved request {}: grant {} for {} {} ({})\n", o.id, Field(grant, "id"),
                 Field(grant, "match"), Field(grant, "subject"), Field(grant, "scope"));
    } else {
      fmt::print("approved request {} (session {})\n", o.id, s.session);
    }
    return Ok();
  });
}

// The answers typed for `ward approvals watch`: lines read from stdin (the terminal, or a
// script's pipe) without blocking the watch while no question is asked.
class AnswerInput {
 public:
  // Waits at most `wait` for input, queueing whole lines.
  void Poll(std::chrono::milliseconds wait) {
    if (closed_) {
      std::this_thread::sleep_for(wait);
      return;
    }
    pollfd p{0, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(wait.count())) <= 0) return;
    char buf[4096];
    ssize_t n = read(0, buf, sizeof buf);
    if (n <= 0) {
      if (n == 0 || (errno != EINTR && errno != EAGAIN)) closed_ = true;
      return;
    }
    partial_.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = partial_.find('\n')) != std::string::npos;) {
      lines_.push_back(partial_.substr(0, nl));
      partial_.erase(0, nl + 1);
    }
  }
  // The next line, waiting for it; nullopt once the input has ended.
  std::optional<std::string> Line() {
    while (lines_.empty() && !closed_) Poll(std::chrono::milliseconds(1000));
    if (lines_.empty()) return std::nullopt;
    std::string l = std::move(lines_.front());
    lines_.pop_front();
    return l;
  }
  bool ended() const { return closed_ && lines_.empty(); }

 private:
  std::deque<std::string> lines_;
  std::string partial_;
  bool closed_ = false;
};

// Asks what to do with one request; sends the answer. false: the input ended (stop watching).
bool AnswerRequest(const supervisor::ApprovalSession& s, const nlohmann::json& r,
                   AnswerInput* input) {
  const uint64_t id = r.value("id", uint64_t{0});
  for (;;) {
    fmt::print("  approve once [a], deny [d], skip [s]? ");
    std::fflush(stdout);
    std::optional<std::string> line = input->Line();
    if (!line) {
      fmt::print("\n");
      return false;
    }
    std::string a = *line;
    while (!a.empty() && (a.back() == '\r' || a.back() == ' ')) a.pop_back();
    if (a == "s" || a == "skip" || a.empty()) {
      fmt::print("skipped request {} (session {})\n", id, s.session);
      return true;
    }
    if (a != "a" && a != "approve" && a != "d" && a != "deny") continue;
    const bool allow = a[0] == 'a';
    nlohmann::json req = {{"op", allow ? "approve" : "deny"}, {"id", id}};
    if (allow) req["scope"] = "once";
    Result<nlohmann::json> reply = Call(s, req);
    if (!reply.ok()) {
      PrintError("approvals watch", ExplainNotPending(s, id, reply.status()).ToString());
    } else {
      fmt::print("{} request {} (session {})\n", allow ? "approved" : "denied", id, s.session);
    }
    return true;
  }
}

void PrintRequestLine(const nlohmann::json& r) {
  fmt::print("session {} request {}: {} {} {}  ({}, pid {})\n", Field(r, "session"),
             Field(r, "id"), Field(r, "kind"), RequestAccess(r), Field(r, "subject"),
             Field(r, "exe"), Field(r, "pid"));
}

// Each request of the live sessions not seen before: printed (with --json, as JSON) and asked
// about. false: the input ended (stop watching).
bool ShowNewRequests(const ApprovalsOptions& o,
                     const std::vector<supervisor::ApprovalSession>& live,
                     std::set<std::pair<std::string, uint64_t>>* seen, AnswerInput* input) {
  for (const supervisor::ApprovalSession& s : live) {
    Result<std::vector<nlohmann::json>> reqs = PendingRequests(s);
    if (!reqs.ok()) continue;  // ended meanwhile
    for (const nlohmann::json& r : *reqs) {
      if (!seen->emplace(s.session, r.value("id", uint64_t{0})).second) continue;
      if (o.json) {
        PrintJson(r);
        std::fflush(stdout);
        continue;
      }
      PrintRequestLine(r);
      if (!AnswerRequest(s, r, input)) return false;
    }
  }
  return true;
}

// Prints each request of every live session (or --session's) once, as it comes, and asks for
// an answer on stdin; with --json one JSON object per line and no questions. Ends when the
// input ends (Ctrl-D), when --session's run ends, or on a signal.
int RunWatch(const ApprovalsOptions& o) {
  const std::string cmd = "approvals watch";
  constexpr auto kEvery = std::chrono::milliseconds(300);
  if (!o.session.empty()) {
    Result<supervisor::ApprovalSession> first = PickSession(o.session);
    if (!first.ok()) {
      PrintError(cmd, first.status().ToString());
      return kExitFailed;
    }
  }
  if (!o.json) {
    std::fprintf(stderr,
                 "ward approvals watch: requests of every running session as they come; answer "
                 "a (approve once), d (deny) or s (skip); Ctrl-D ends\n");
  }
  AnswerInput input;
  std::set<std::pair<std::string, uint64_t>> seen;
  for (;;) {
    Result<std::vector<supervisor::ApprovalSession>> live =
        LiveSessions(o.session.empty() ? "" : o.session, /*none_is_error=*/false);
    if (!live.ok()) {
      if (!o.session.empty() && live.status().code() == Code::kNotFound) return kExitOk;  // ended
      PrintError(cmd, live.status().ToString());
      return kExitFailed;
    }
    if (!ShowNewRequests(o, *live, &seen, &input)) return kExitOk;
    std::fflush(stdout);
    if (o.json) {
      std::this_thread::sleep_for(kEvery);
      continue;
    }
    if (input.ended()) return kExitOk;
    input.Poll(kEvery);
  }
}

int RunGrants(const ApprovalsOptions& o) {
  return WithSession("grants list", o, [&](const supervisor::ApprovalSession& s) -> Status {
    WARD_ASSIGN_OR_RETURN(nlohmann::json reply, Call(s, {{"op", "grants"}}));
    nlohmann::json grants = reply.value("grants", nlohmann::json::array());
    if (!grants.is_array()) return InvalidArgument("malformed reply: \"grants\" is not a list");
    if (o.json) {
      PrintJson(grants);
      return Ok();
    }
    if (grants.empty()) {
      std::fprintf(stderr, "no grants in session %s\n", s.session.c_str());
      return Ok();
    }
    fmt::print("{:>5}  {:<7}  {:<12}  {:<10}  {:<8}  {:>4}  {:<24}  {}\n", "ID", "STATE", "MATCH",
               "ACCESS", "SCOPE", "USES", "EXPIRES", "SUBJECT");
    for (const nlohmann::json& g : grants) {
      bool host = Field(g, "kind") == "host";
      std::string what = host ? "port " + Field(g, "port") : Field(g, "access");
      fmt::print("{:>5}  {:<7}  {:<12}  {:<10}  {:<8}  {:>4}  {:<24}  {}\n", Field(g, "id"),
                 Field(g, "state"), Field(g, "match"), what, Field(g, "scope"), Field(g, "uses"),
                 Field(g, "expires"), Field(g, "subject"));
    }
    return Ok();
  });
}

int RunRevoke(const ApprovalsOptions& o) {
  return WithSession("grants revoke", o, [&](const supervisor::ApprovalSession& s) -> Status {
    WARD_ASSIGN_OR_RETURN(nlohmann::json reply, Call(s, {{"op", "revoke"}, {"grant", o.id}}));
    (void)reply;
    // An fd already handed over stays open: revocation stops new uses (docs/approvals.md).
    fmt::print("revoked grant {} (session {}); descriptors already handed over stay open\n", o.id,
               s.session);
    return Ok();
  });
}

void AddSessionOption(CLI::App* cmd, ApprovalsOptions* o,
                      const char* help = "Session id or unique prefix (default: the only running "
                                         "session)") {
  cmd->add_option("--session", o->session, help);
}

}  // namespace

void AddApprovalsCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ApprovalsOptions>();

  CLI::App* approvals = app.add_subcommand(
      "approvals", "Requests waiting for an answer in the running sessions (see `ward approve`)");
  approvals->require_subcommand(1);
  CLI::App* list = approvals->add_subcommand(
      "list", "Pending requests of every running session: id, kind, subject, pid");
  AddSessionOption(list, o.get(), "Only this session (id or unique prefix; default: every one)");
  list->add_flag("--json", o->json, "One JSON array (the socket's request objects)");
  list->callback([o, exit_code] { *exit_code = RunList(*o); });
  CLI::App* watch = approvals->add_subcommand(
      "watch", "Print requests as they come (every running session) and answer each");
  AddSessionOption(watch, o.get(), "Only this session (id or unique prefix; default: every one)");
  watch->add_flag("--json", o->json, "One JSON object per request and line; asks nothing");
  watch->callback([o, exit_code] { *exit_code = RunWatch(*o); });

  CLI::App* approve = app.add_subcommand("approve", "Approve a pending request (creates a grant)");
  approve->add_option("ID", o->id, "Request id (from `ward approvals list`)")->required();
  approve->add_option("--scope", o->scope, "once | session | a duration (10m, 1h); default once");
  approve->add_flag("--prefix", o->prefix,
                    "Widen: files, the parent directory; hosts, *.<parent domain>");
  approve->add_option("--under", o->under,
                      "Widen to this path prefix or host pattern (*.example.com) instead");
  approve->add_option("--reason", o->reason, "Recorded in the audit trail");
  AddSessionOption(approve, o.get());
  approve->callback([o, exit_code] { *exit_code = RunAnswer(*o, true); });

  CLI::App* deny = app.add_subcommand("deny", "Deny a pending request");
  deny->add_option("ID", o->id, "Request id (from `ward approvals list`)")->required();
  deny->add_option("--reason", o->reason, "Recorded in the audit trail");
  AddSessionOption(deny, o.get());
  deny->callback([o, exit_code] { *exit_code = RunAnswer(*o, false); });

  CLI::App* grants = app.add_subcommand("grants", "Grants of a running session");
  grants->require_subcommand(1);
  CLI::App* glist =
      grants->add_subcommand("list", "Every grant kept: live, used, expired, revoked");
  AddSessionOption(glist, o.get());
  glist->add_flag("--json", o->json, "One JSON array (the socket's grant objects)");
  glist->callback([o, exit_code] { *exit_code = RunGrants(*o); });
  CLI::App* revoke =
      grants->add_subcommand("revoke", "Stop a grant now (open descriptors stay valid)");
  revoke->add_option("ID", o->id, "Grant id (from `ward grants list`)")->required();
  AddSessionOption(revoke, o.get());
  revoke->callback([o, exit_code] { *exit_code = RunRevoke(*o); });
}

}  // namespace ward::cli
