#include "api/service.h"

#include <unistd.h>

#include "api/params.h"
#include "api/service_internal.h"
#include "enforce/beneath.h"
#include "policy/paths.h"
#include "supervisor/review_apply.h"
#include "supervisor/review_changes.h"
#include "supervisor/review_diff.h"

namespace ward::api {

using namespace internal;  // what the service*.cc files share (service_internal.h)

namespace {

// review.*'s parameters after sandbox_id: the paths (diff, apply) and apply's options.
supervisor::ApplyOptions ReadReviewParams(const std::string& op, Params& p) {
  supervisor::ApplyOptions o;
  if (op != "discard") o.paths = p.StringList("paths");
  if (op == "apply") {
    o.include_protected = p.StringList("include_protected");
    o.force = p.Bool("force").value_or(false);
    o.expect_sha256 = p.String("diff_sha256", 64).value_or("");
  }
  return o;
}

// Paths are relative to the workspace (or absolute inside it), with no "..": each made
// relative.
Expected<Done> MakeWorkspaceRelative(const std::string& workspace,
                                     std::vector<std::string>* list) {
  for (std::string& path : *list) {
    std::string rel = path;
    if (!rel.empty() && rel[0] == '/') {
      std::optional<std::string> r =
          enforce::RelativeBeneath(workspace, policy::NormalizePath(rel));
      if (!r) return DeniedError("\"" + path + "\" is outside the workspace");
      rel = *r;
    }
    std::vector<std::string> comps;
    if (!supervisor::SplitRelative(rel, &comps)) {
      return InvalidError("\"" + path + "\" is not a path inside the workspace (no \"..\")");
    }
    path = rel;
  }
  return Done{};
}

const char* ChangeName(supervisor::ReviewChange::Kind kind) {
  switch (kind) {
    case supervisor::ReviewChange::Kind::kAdd:
      return "add";
    case supervisor::ReviewChange::Kind::kDelete:
      return "delete";
    default:
      return "modify";
  }
}

// review.diff: the diff of `paths` (or every change) and what each change is.
Expected<nlohmann::json> ReviewDiff(const supervisor::ReviewSession& rs,
                                    const std::vector<std::string>& paths) {
  Result<std::vector<supervisor::ReviewChange>> all = supervisor::CollectChanges(rs);
  if (!all.ok()) return FromStatus(all.status());
  std::vector<supervisor::ReviewChange> chosen = supervisor::SelectChanges(*all, paths, nullptr);
  Result<supervisor::RenderedDiff> d = supervisor::RenderDiff(rs, chosen);
  if (!d.ok()) return FromStatus(d.status());
  nlohmann::json changes = nlohmann::json::array();
  for (const supervisor::ReviewChange& c : chosen) {
    changes.push_back({{"path", c.path},
                       {"change", ChangeName(c.kind)},
                       {"old_type", supervisor::EntryTypeName(c.old_type)},
                       {"new_type", supervisor::EntryTypeName(c.new_type)}});
  }
  return nlohmann::json{{"review_session", rs.id}, {"mode", supervisor::ReviewModeName(rs.mode)},
                        {"diff", d->text},       {"diff_sha256", d->sha256},
                        {"files", d->files},     {"changes", changes}};
}

// Who applied or discarded, for the audit record.
nlohmann::json ReviewedBy() { return {{"uid", getuid()}, {"via", "ward serve"}}; }

// review.apply refused as a whole: why, line by line.
Error ApplyRefusedError(const supervisor::ApplyReport& r) {
  std::string msg = "nothing was applied:";
  for (const std::string& line : r.refused) msg += "\n" + line;
  Error e = DeniedError(msg);
  e.data["refused"] = r.refused;
  e.data["diff_sha256"] = r.diff_sha256;
  return e;
}

nlohmann::json AppliedJson(const std::vector<supervisor::AppliedItem>& items) {
  nlohmann::json applied = nlohmann::json::array();
  for (const supervisor::AppliedItem& a : items) {
    applied.push_back(
        {{"path", a.path}, {"change", a.change}, {"type", a.type}, {"sha256", a.sha256}});
  }
  return applied;
}

}  // namespace

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

Expected<Done> Service::RenewSandboxReview(Sandbox* s) {
  s->review.reset();
  WARD_API_ASSIGN_OR_RETURN(Done fresh, OpenSandboxReview(s, ""));
  (void)fresh;
  Persist(*s);
  return Done{};
}

Expected<nlohmann::json> Service::Review(const std::string& op, const nlohmann::json& params) {
  if (op != "diff" && op != "apply" && op != "discard") {
    Error e = MakeError(ErrorKind::kUnsupported, "unknown method \"review." + op + "\"");
    e.code = kMethodNotFoundCode;
    return e;
  }
  Params p(params);
  WARD_API_ASSIGN_OR_RETURN(Sandbox * s, FindSandbox(p));
  supervisor::ApplyOptions o = ReadReviewParams(op, p);
  if (!p.Finish()) return p.error();
  if (!s->review) {
    return InvalidError("sandbox " + s->id +
                        " is not in review mode (create it with workspace_mode \"overlay\")");
  }
  if (op != "diff") {
    if (auto failed = AuditFailure(s->log.get())) return *failed;
  }
  WARD_API_TRY(MakeWorkspaceRelative(s->spec.workspace, &o.paths));
  WARD_API_TRY(MakeWorkspaceRelative(s->spec.workspace, &o.include_protected));
  Result<UniqueFd> lock = supervisor::LockReviewSession(*s->review);
  if (!lock.ok()) return MakeError(ErrorKind::kResourceExhausted, lock.status().message());
  Result<supervisor::ReviewSession> now = supervisor::LoadReviewSession(s->review->dir);
  if (!now.ok()) return FromStatus(now.status());
  if (op == "diff") return ReviewDiff(*now, o.paths);
  if (op == "discard") return ReviewDiscard(s, &*now, &*lock);
  return ReviewApply(s, &*now, &*lock, o);
}

Expected<nlohmann::json> Service::ReviewDiscard(Sandbox* s, supervisor::ReviewSession* rs,
                                                UniqueFd* lock) {
  Result<supervisor::DiscardReport> r = supervisor::DiscardReview(rs);
  if (!r.ok()) return FromStatus(r.status());
  Emit(s, "review.discard", {{"review_session", rs->id},
                             {"diff_sha256", r->diff_sha256},
                             {"files", r->files},
                             {"by", ReviewedBy()}});
  lock->reset();
  WARD_API_TRY(RenewSandboxReview(s));
  return nlohmann::json{{"discarded", rs->id},
                        {"diff_sha256", r->diff_sha256},
                        {"files", r->files},
                        {"review_session", s->review->id}};
}

Expected<nlohmann::json> Service::ReviewApply(Sandbox* s, supervisor::ReviewSession* rs,
                                              UniqueFd* lock, const supervisor::ApplyOptions& ao) {
  Result<supervisor::ApplyReport> r = supervisor::ApplyReview(rs, ao);
  if (!r.ok()) return FromStatus(r.status());
  if (!r->refused.empty()) {
    Emit(s, "review.apply_refused", {{"review_session", rs->id},
                                     {"diff_sha256", r->diff_sha256},
                                     {"refused", r->refused},
                                     {"by", ReviewedBy()}});
    return ApplyRefusedError(*r);
  }
  nlohmann::json applied = AppliedJson(r->applied);
  Emit(s, "review.apply", {{"review_session", rs->id},
                           {"diff_sha256", r->diff_sha256},
                           {"applied", applied},
                           {"paths", ao.paths},
                           {"include_protected", ao.include_protected},
                           {"force", ao.force},
                           {"complete", r->complete},
                           {"error", r->failed.ok() ? "" : r->failed.ToString()},
                           {"by", ReviewedBy()}});
  if (!r->failed.ok()) {
    Error e = FromStatus(r->failed);
    e.data["applied"] = applied;
    return e;
  }
  nlohmann::json out = {{"applied", applied},
                        {"skipped", r->skipped},
                        {"complete", r->complete},
                        {"diff_sha256", r->diff_sha256},
                        {"review_session", rs->id}};
  if (r->complete) {
    lock->reset();
    WARD_API_TRY(RenewSandboxReview(s));
    out["review_session"] = s->review->id;
  } else {
    s->review = *rs;
  }
  return out;
}

}  // namespace ward::api
