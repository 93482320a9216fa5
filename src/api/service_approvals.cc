#include "api/service.h"

#include "api/approvals_relay.h"
#include "api/params.h"
#include "supervisor/approvals.h"
#include "supervisor/approvals_socket.h"

namespace ward::api {

namespace {

constexpr size_t kMaxApprovalReason = 512;

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
