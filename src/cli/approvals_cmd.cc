// `ward approvals list`, `ward approve`, `ward deny`, `ward grants list|revoke`: the approver's
// side of issue 7, from another terminal. Each talks to one running session over its approval
// socket (supervisor/approvals_socket.h; protocol in docs/approvals.md). This file picks the
// session, sends one request, and prints.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/sessions.h"
#include "cli/commands.h"
#include "supervisor/approvals.h"
#include "supervisor/approvals_socket.h"
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

void PrintError(const std::string& cmd, const std::string& msg) {
  std::fprintf(stderr, "ward %s: %s\n", cmd.c_str(), audit::SanitizeForTerminal(msg).c_str());
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

int RunList(const ApprovalsOptions& o) {
  return WithSession("approvals list", o, [&](const supervisor::ApprovalSession& s) -> Status {
    WARD_ASSIGN_OR_RETURN(nlohmann::json reply, Call(s, {{"op", "list"}}));
    nlohmann::json reqs = reply.value("requests", nlohmann::json::array());
    if (!reqs.is_array()) return InvalidArgument("malformed reply: \"requests\" is not a list");
    if (o.json) {
      PrintJson(reqs);
      return Ok();
    }
    if (reqs.empty()) {
      std::fprintf(stderr, "no pending requests in session %s\n", s.session.c_str());
      return Ok();
    }
    fmt::print("{:>5}  {:<5}  {:<10}  {:<24}  {:>7}  {}\n", "ID", "KIND", "ACCESS", "ASKED", "PID",
               "SUBJECT  (EXE)");
    for (const nlohmann::json& r : reqs) {
      bool host = Field(r, "kind") == "host";
      std::string what = host ? "port " + Field(r, "port") : Field(r, "access");
      fmt::print("{:>5}  {:<5}  {:<10}  {:<24}  {:>7}  {}  ({})\n", Field(r, "id"),
                 Field(r, "kind"), what, Field(r, "when"), Field(r, "pid"), Field(r, "subject"),
                 Field(r, "exe"));
    }
    return Ok();
  });
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

void AddSessionOption(CLI::App* cmd, ApprovalsOptions* o) {
  cmd->add_option("--session", o->session,
                  "Session id or unique prefix (default: the only running session)");
}

}  // namespace

void AddApprovalsCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ApprovalsOptions>();

  CLI::App* approvals = app.add_subcommand(
      "approvals", "Requests waiting for an answer in a running session (see `ward approve`)");
  approvals->require_subcommand(1);
  CLI::App* list = approvals->add_subcommand("list", "Pending requests: id, kind, subject, pid");
  AddSessionOption(list, o.get());
  list->add_flag("--json", o->json, "One JSON array (the socket's request objects)");
  list->callback([o, exit_code] { *exit_code = RunList(*o); });

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
