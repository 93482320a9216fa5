#include "api/service.h"

#include "api/approvals_relay.h"
#include "api/params.h"
#include "supervisor/approvals/approval_broker.h"
#include "supervisor/approvals/socket.h"

namespace ward::api {

namespace {

constexpr size_t kMaxApprovalReason = 512;

// The execs whose approval socket is asked, and the sockets' paths, in the same order.
struct ApprovalTargets {
  std::vector<std::pair<std::string, std::string>> execs;  // exec, sandbox
  std::vector<std::string> paths;
};

// Only running execs have a broker; a finished one has nothing pending and no live grant.
ApprovalTargets AskableExecs(const std::vector<std::shared_ptr<Exec>>& candidates) {
  ApprovalTargets t;
  for (const auto& e : candidates) {
    if (!e->running() || e->info().approval_session.empty()) continue;
    std::string path = ApprovalSocketPathFor(e->info().approval_session);
    if (path.empty()) continue;
    t.execs.emplace_back(e->id(), e->info().sandbox_id);
    t.paths.push_back(std::move(path));
  }
  return t;
}

nlohmann::json ErrorItem(const std::string& exec_id, const std::string& sandbox_id,
                         const std::string& kind, const std::string& message) {
  return {{"exec_id", exec_id}, {"sandbox_id", sandbox_id}, {"kind", kind}, {"message", message}};
}

// The `key` list ("requests" or "grants") of every exec's answer, each item labelled with its
// exec and sandbox, and what could not be asked in "errors"; an exec asked alone (`single`)
// answers with its error.
Expected<nlohmann::json> MergeApprovalResults(
    const ApprovalResults& results, const std::vector<std::pair<std::string, std::string>>& execs,
    bool single, const char* key) {
  nlohmann::json items = nlohmann::json::array();
  nlohmann::json errors = nlohmann::json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& [exec_id, sandbox_id] = execs[i];
    const Expected<nlohmann::json>& r = *results[i];
    // No socket: the run has not started asking yet, or is ending; nothing to list.
    if (!r.ok() && r.error().kind == ErrorKind::kNotFound) continue;
    if (!r.ok() && single) {
      Error err = r.error();
      err.message = "exec " + exec_id + ": " + err.message;
      err.data["exec_id"] = exec_id;
      return err;
    }
    if (!r.ok()) {
      errors.push_back(ErrorItem(exec_id, sandbox_id, std::string(ErrorKindName(r.error().kind)),
                                 r.error().message));
      continue;
    }
    auto list = r->find(key);
    if (list == r->end() || !list->is_array()) {
      errors.push_back(ErrorItem(exec_id, sandbox_id, "interrupted",
                                 std::string("malformed reply: no \"") + key + "\""));
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
  return nlohmann::json{{key, std::move(items)}, {"errors", std::move(errors)}};
}

}  // namespace

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
  bool single = false;
  auto candidates = ApprovalQueryExecs(p, &single);
  if (!candidates.ok()) return reply(candidates.error());
  ApprovalTargets targets = AskableExecs(*candidates);
  CallApprovalSockets(io_, targets.paths, {{"op", grants ? "grants" : "list"}},
                      kApprovalCallTimeout,
                      [reply, execs = targets.execs, single, key](ApprovalResults results) {
                        reply(MergeApprovalResults(results, execs, single, key));
                      });
}

Expected<std::vector<std::shared_ptr<Exec>>> Service::ApprovalQueryExecs(Params& p,
                                                                          bool* single) {
  std::string sid;
  if (p.Has("sandbox_id")) {
    WARD_API_ASSIGN_OR_RETURN(Sandbox * s, FindSandbox(p));
    if (!s->policy->approvals.enabled) {
      return InvalidError("sandbox " + s->id +
                          " runs without approvals (create it with \"ask\": true)");
    }
    sid = s->id;
  }
  std::shared_ptr<Exec> only;
  if (p.Has("exec_id")) {
    WARD_API_ASSIGN_OR_RETURN(only, FindExec(p));
  }
  if (!p.Finish()) return p.error();
  *single = static_cast<bool>(only);
  if (!only) return execs_.List(sid);
  if (only->info().approval_session.empty()) {
    return InvalidError("exec " + only->id() +
                        " runs without approvals (create its sandbox with \"ask\": true)");
  }
  if (!sid.empty() && only->info().sandbox_id != sid) {
    return InvalidError("exec " + only->id() + " is not in sandbox " + sid);
  }
  return std::vector<std::shared_ptr<Exec>>{only};
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
