#include "supervisor/run_records.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <optional>

#include "audit/sessions.h"
#include "supervisor/explain.h"
#include "supervisor/run_credentials.h"

namespace ward::supervisor {
namespace {

nlohmann::json FeaturesToJson(const enforce::KernelFeatures& f) {
  return {{"kernel", f.kernel_release},
          {"user_namespaces", f.user_ns},
          {"landlock_abi", f.landlock_abi},
          {"seccomp", f.seccomp},
          {"seccomp_user_notif", f.seccomp_user_notif},
          {"pidfd", f.pidfd},
          {"openat2", f.openat2},
          {"mount_api", f.mount_api},
          {"outer_wall", f.outer_wall}};
}

nlohmann::json RusageToJson(const struct rusage& r) {
  return {{"utime_ms", r.ru_utime.tv_sec * 1000 + r.ru_utime.tv_usec / 1000},
          {"stime_ms", r.ru_stime.tv_sec * 1000 + r.ru_stime.tv_usec / 1000},
          {"maxrss_kb", r.ru_maxrss}};
}

// What session.end says of a run in review mode (a member of its own, not another record: a
// second record at the end would start the log's flusher thread for nothing).
nlohmann::json ReviewRecord(const ReviewSession& s, bool changed) {
  return {{"review_session", s.id},
          {"mode", ReviewModeName(s.mode)},
          {"note", s.note},
          {"tree", s.tree()},
          {"workspace", s.workspace},
          {"changes", changed}};
}

}  // namespace

nlohmann::json StartRecord(const RunRequest& req, const enforce::LaunchPlan& plan,
                           const enforce::PlanNotes& notes,
                           const enforce::KernelFeatures& features) {
  const RunAuditOptions& audit = *req.audit;
  ExplainInput in;
  in.policy = &req.policy;
  in.argv = req.argv;
  in.env = req.env;
  in.version = audit.ward_version;
  in.record_only = true;
  in.raw_terminal = req.raw_terminal;
  in.approval_channels =
      ApprovalChannelNames(req.approvals, isatty(0) == 1 && (isatty(1) == 1 || isatty(2) == 1));
  Result<nlohmann::json> ex = ExplainPlan(in, features, plan, notes);
  nlohmann::json start = {{"ward_version", audit.ward_version},
                          {"command", req.argv},
                          {"cwd", audit.cwd},
                          {"uid", getuid()},
                          {"gid", getgid()},
                          {"labels", audit.labels},
                          {"kernel", FeaturesToJson(features)},
                          {"degraded", notes.degraded}};
  if (policy::AnyCredentialEnabled(req.policy)) {
    start["credentials"] = EnabledCredentialsJson(req.policy);
  }
  if (ex.ok()) {
    for (const char* key : {"policy", "layers", "landlock_gaps", "axes", "plan"}) {
      start[key] = std::move((*ex)[key]);
    }
  }
  return start;
}

nlohmann::json EndRecord(const RunRequest& req, const Outcome& out) {
  nlohmann::json end = {
      {"status", OutcomeKindName(out.kind)},
      {"exit_code", out.exit_code},
      {"signal", out.signal == 0 ? nlohmann::json(nullptr) : nlohmann::json(out.signal)},
      {"message", out.message},
      {"duration_ms", static_cast<int64_t>(out.duration_ms)},
      {"rusage", RusageToJson(out.rusage)},
      {"notifications", out.notifications},
      {"protected_denials", out.protected_denials},
      {"limits", LimitsOutcomeToJson(out.limits)},
      {"egress", EgressToJson(out.egress)}};
  if (req.review && out.kind != Outcome::Kind::kRefused) {
    end["review"] = ReviewRecord(*req.review, out.review_changed);
  }
  return end;
}

CommandLookup LookUpRunCommand(const RunRequest& req) {
  // A container's command is found in its image, which has nothing to do with the host's.
  if (req.argv.empty() || req.container) return {};
  std::string inside_path;
  for (const std::string& e : req.env) {
    if (e.starts_with("PATH=")) inside_path = e.substr(5);
  }
  const char* host_path = getenv("PATH");
  return LookUpCommand(req.policy, req.argv[0], inside_path,
                       host_path == nullptr ? "" : host_path);
}

std::string NoteRunCommand(const RunRequest& req, const CommandLookup& found, RunAudit* audit,
                           Outcome* out) {
  const bool not_found = out->kind == Outcome::Kind::kExecFailed && out->err == ENOENT;
  if (found.kind == CommandLookup::Kind::kHiddenHere && not_found) {
    nlohmann::json data = {{"argv0", req.argv[0]},
                           {"host_path", found.host},
                           {"allow_with", found.allow_with}};
    if (std::optional<Denial> d = DenialOf("command.hidden", data)) {
      d->count = 1;
      out->denials.insert(out->denials.begin(), std::move(*d));
    }
    audit->Emit("command.hidden", std::move(data));
    return "";
  }
  if (found.kind != CommandLookup::Kind::kDifferentHere || req.quiet ||
      out->kind == Outcome::Kind::kRefused) {
    return "";
  }
  const std::string key = req.argv[0] + '\0' + found.inside + '\0' + found.host;
  if (!FirstNotice(audit::DefaultStateDir(), key)) return "";
  return "ward: '" + audit::SanitizeForTerminal(req.argv[0]) + "' here is " +
         audit::SanitizeForTerminal(found.inside) + "; on the host it is " +
         audit::SanitizeForTerminal(found.host) + " (hidden here) — add: " +
         audit::SanitizeForTerminal(found.allow_with) + " (said once)";
}

}  // namespace ward::supervisor
