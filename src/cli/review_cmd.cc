// `ward diff`, `ward apply`, `ward discard`: what a run in review mode (`ward run
// --workspace=overlay`) changed, shown, applied to the host's workspace, or dropped. The logic
// lives in src/supervisor/review_*.h; this file picks the session, parses flags, prints, and
// records apply and discard in the audit trail (a small session of their own). Docs:
// docs/review.md.
#include <fmt/core.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/session_log.h"
#include "audit/sessions.h"
#include "cli/commands.h"
#include "enforce/beneath.h"
#include "policy/paths.h"
#include "supervisor/review_apply.h"
#include "supervisor/review_changes.h"
#include "supervisor/review_diff.h"
#include "supervisor/review_store.h"

namespace ward::cli {
namespace {

struct ReviewOptions {
  std::vector<std::string> args;  // [SESSION] [PATHS...]
  std::string workdir;            // -C
  bool sessions = false;          // diff --sessions
  bool stat = false;              // diff --stat
  bool force = false;
  std::vector<std::string> include_protected;
  std::string expect_sha256;
  std::vector<std::string> argv;  // the command line, for the audit record
};

void ReviewError(const char* cmd, const std::string& msg) {
  std::fprintf(stderr, "ward %s: %s\n", cmd, audit::SanitizeForTerminal(msg).c_str());
}

// Whether a positional argument names a session rather than a path: "last", or the start of an
// id (its UTC date, "YYYYMMDDT..."). A path that looks like one is written ./PATH.
bool LooksLikeSession(const std::string& a) {
  if (a == "last") return true;
  if (a.size() < 9) return false;
  for (size_t i = 0; i < 8; ++i) {
    if (a[i] < '0' || a[i] > '9') return false;
  }
  return a[8] == 'T' && a.find('/') == std::string::npos;
}

std::string Cwd() {
  char buf[PATH_MAX];
  return getcwd(buf, sizeof buf) ? buf : "/";
}

// The directory the user means: -C DIR, else the current one, canonical.
std::string Here(const ReviewOptions& o) {
  std::string d = o.workdir.empty() ? Cwd() : o.workdir;
  char buf[PATH_MAX];
  return realpath(d.c_str(), buf) ? buf : policy::NormalizePath(d);
}

// SESSION, or the newest open session of the workspace the user is in (at or above Here()).
Result<supervisor::ReviewSession> PickReviewSession(const ReviewOptions& o,
                                                    const std::string& name) {
  const std::string state = audit::DefaultStateDir();
  if (!name.empty()) return supervisor::ResolveReviewSession(state, name, "");
  const std::string here = Here(o);
  for (supervisor::ReviewSession& s : supervisor::ListReviewSessions(state)) {
    if (s.state == supervisor::ReviewState::kOpen && policy::PathIsWithin(here, s.workspace)) {
      return std::move(s);
    }
  }
  return NotFound("no open review session for " + here +
                  " (a run in review mode: ward run --workspace=overlay; every session: ward diff "
                  "--sessions)");
}

// Splits the positionals into SESSION and PATHS.
void SplitArgs(const std::vector<std::string>& args, std::string* session,
               std::vector<std::string>* paths) {
  size_t i = 0;
  if (!args.empty() && LooksLikeSession(args[0])) *session = args[i++];
  for (; i < args.size(); ++i) paths->push_back(args[i]);
}

// A PATH as typed (relative to the current directory, or absolute) as a path relative to the
// workspace; an error when it is outside.
Result<std::string> WorkspaceRelative(const std::string& workspace, const std::string& typed) {
  std::string abs = typed.empty() || typed[0] != '/' ? policy::JoinPath(Cwd(), typed) : typed;
  abs = policy::NormalizePath(abs);
  std::optional<std::string> rel = enforce::RelativeBeneath(workspace, abs);
  if (!rel || rel->empty()) {
    return InvalidArgument(typed + " is not a path inside the workspace " + workspace);
  }
  return *rel;
}

// A small audit session of its own for an apply or discard: who did what to which session.
void RecordReviewAction(const ReviewOptions& o, const supervisor::ReviewSession& s,
                        const char* type, nlohmann::json data, int exit_code) {
  data["review_session"] = s.id;
  data["workspace"] = s.workspace;
  data["uid"] = getuid();
  Status st = audit::WriteShortSession(
      audit::DefaultStateDir(),
      {{"command", o.argv}, {"cwd", Cwd()}, {"uid", getuid()}, {"labels", {{"review", s.id}}}},
      {{type, std::move(data)}}, exit_code);
  if (!st.ok()) {
    std::fprintf(stderr, "ward: the audit trail could not be written: %s\n",
                 st.ToString().c_str());
  }
}

int ListReviewSessionsCmd() {
  std::vector<supervisor::ReviewSession> all =
      supervisor::ListReviewSessions(audit::DefaultStateDir());
  if (all.empty()) {
    std::fprintf(stderr, "no review sessions\n");
    return kExitOk;
  }
  for (const supervisor::ReviewSession& s : all) {
    fmt::print("{}  {:<9}  {:<7}  {}\n", s.id, supervisor::ReviewStateName(s.state),
               supervisor::ReviewModeName(s.mode), audit::SanitizeForTerminal(s.workspace));
  }
  return kExitOk;
}

int RunDiff(const ReviewOptions& o) {
  if (o.sessions) return ListReviewSessionsCmd();
  std::string name;
  std::vector<std::string> paths;
  SplitArgs(o.args, &name, &paths);
  Result<supervisor::ReviewSession> s = PickReviewSession(o, name);
  if (!s.ok()) {
    ReviewError("diff", s.status().ToString());
    return kExitFailed;
  }
  if (s->state != supervisor::ReviewState::kOpen) {
    ReviewError("diff", "review session " + s->id + " was " +
                            supervisor::ReviewStateName(s->state) + " at " + s->ended +
                            ": nothing left to show");
    return kExitFailed;
  }
  Result<UniqueFd> lock = supervisor::LockReviewSession(*s);
  if (!lock.ok()) {
    ReviewError("diff", lock.status().ToString());
    return kExitFailed;
  }
  // What the session is now, under its lock (another apply may have closed it meanwhile).
  s = supervisor::LoadReviewSession(s->dir);
  if (!s.ok()) {
    ReviewError("diff", s.status().ToString());
    return kExitFailed;
  }
  Result<std::vector<supervisor::ReviewChange>> all = supervisor::CollectChanges(*s);
  if (!all.ok()) {
    ReviewError("diff", all.status().ToString());
    return kExitFailed;
  }
  std::vector<std::string> rel;
  for (const std::string& p : paths) {
    Result<std::string> r = WorkspaceRelative(s->workspace, p);
    if (!r.ok()) {
      ReviewError("diff", r.status().ToString());
      return kExitUsage;
    }
    rel.push_back(*r);
  }
  std::vector<supervisor::ReviewChange> chosen = supervisor::SelectChanges(*all, rel, nullptr);
  if (o.stat) {
    for (const supervisor::ReviewChange& c : chosen) {
      const char* k = c.kind == supervisor::ReviewChange::Kind::kAdd      ? "A"
                      : c.kind == supervisor::ReviewChange::Kind::kDelete ? "D"
                                                                          : "M";
      fmt::print("{}\t{}\n", k, supervisor::QuotePath(c.path));
    }
  }
  Result<supervisor::RenderedDiff> d = supervisor::RenderDiff(*s, chosen);
  if (!d.ok()) {
    ReviewError("diff", d.status().ToString());
    return kExitFailed;
  }
  if (!o.stat) std::fwrite(d->text.data(), 1, d->text.size(), stdout);
  std::fflush(stdout);
  if (d->files == 0) {
    std::fprintf(stderr, "ward: review session %s: no changes\n", s->id.c_str());
  } else {
    std::fprintf(stderr, "ward: review session %s (%s): %zu change%s, diff sha256 %s\n",
                 s->id.c_str(), supervisor::ReviewModeName(s->mode), d->files,
                 d->files == 1 ? "" : "s", d->sha256.c_str());
  }
  return kExitOk;
}

int RunApply(const ReviewOptions& o) {
  std::string name;
  std::vector<std::string> typed;
  SplitArgs(o.args, &name, &typed);
  Result<supervisor::ReviewSession> s = PickReviewSession(o, name);
  if (!s.ok()) {
    ReviewError("apply", s.status().ToString());
    return kExitFailed;
  }
  Result<UniqueFd> lock = supervisor::LockReviewSession(*s);
  if (!lock.ok()) {
    ReviewError("apply", lock.status().ToString());
    return kExitFailed;
  }
  // What the session is now, under its lock (another apply may have closed it meanwhile).
  s = supervisor::LoadReviewSession(s->dir);
  if (!s.ok()) {
    ReviewError("apply", s.status().ToString());
    return kExitFailed;
  }
  supervisor::ApplyOptions ao;
  ao.force = o.force;
  ao.expect_sha256 = o.expect_sha256;
  using Paths = std::pair<const std::vector<std::string>*, std::vector<std::string>*>;
  for (const auto& [from, to] : {Paths{&typed, &ao.paths},
                                 Paths{&o.include_protected, &ao.include_protected}}) {
    for (const std::string& p : *from) {
      Result<std::string> r = WorkspaceRelative(s->workspace, p);
      if (!r.ok()) {
        ReviewError("apply", r.status().ToString());
        return kExitUsage;
      }
      to->push_back(*r);
    }
  }
  Result<supervisor::ApplyReport> r = supervisor::ApplyReview(&*s, ao);
  if (!r.ok()) {
    ReviewError("apply", r.status().ToString());
    return kExitFailed;
  }
  for (const std::string& line : r->refused) ReviewError("apply", "refused: " + line);
  for (const std::string& line : r->skipped) ReviewError("apply", "left out: " + line);
  nlohmann::json applied = nlohmann::json::array();
  for (const supervisor::AppliedItem& a : r->applied) {
    fmt::print("{} {}\n", a.change, audit::SanitizeForTerminal(supervisor::QuotePath(a.path)));
    applied.push_back({{"path", a.path}, {"change", a.change}, {"type", a.type}, {"sha256", a.sha256}});
  }
  int rc = r->refused.empty() && r->failed.ok() ? kExitOk : kExitFailed;
  if (!r->failed.ok()) ReviewError("apply", r->failed.ToString());
  if (r->refused.empty()) {
    RecordReviewAction(o, *s, "review.apply",
                       {{"diff_sha256", r->diff_sha256},
                        {"applied", applied},
                        {"paths", ao.paths},
                        {"include_protected", ao.include_protected},
                        {"force", ao.force},
                        {"complete", r->complete},
                        {"error", r->failed.ok() ? "" : r->failed.ToString()}},
                       rc);
  } else {
    RecordReviewAction(o, *s, "review.apply_refused",
                       {{"diff_sha256", r->diff_sha256}, {"refused", r->refused}}, rc);
    std::fprintf(stderr, "ward: nothing was applied\n");
    return rc;
  }
  std::fprintf(stderr, "ward: applied %zu change%s of review session %s%s (diff sha256 %s)\n",
               r->applied.size(), r->applied.size() == 1 ? "" : "s", s->id.c_str(),
               r->complete ? "; the session is closed" : "", r->diff_sha256.c_str());
  return rc;
}

int RunDiscard(const ReviewOptions& o) {
  std::string name;
  std::vector<std::string> paths;
  SplitArgs(o.args, &name, &paths);
  if (!paths.empty()) {
    ReviewError("discard", "discard takes a session, not paths (ward discard [SESSION])");
    return kExitUsage;
  }
  Result<supervisor::ReviewSession> s = PickReviewSession(o, name);
  if (!s.ok()) {
    ReviewError("discard", s.status().ToString());
    return kExitFailed;
  }
  Result<UniqueFd> lock = supervisor::LockReviewSession(*s);
  if (!lock.ok()) {
    ReviewError("discard", lock.status().ToString());
    return kExitFailed;
  }
  // What the session is now, under its lock (another apply may have closed it meanwhile).
  s = supervisor::LoadReviewSession(s->dir);
  if (!s.ok()) {
    ReviewError("discard", s.status().ToString());
    return kExitFailed;
  }
  Result<supervisor::DiscardReport> r = supervisor::DiscardReview(&*s);
  if (!r.ok()) {
    ReviewError("discard", r.status().ToString());
    return kExitFailed;
  }
  RecordReviewAction(o, *s, "review.discard",
                     {{"diff_sha256", r->diff_sha256}, {"files", r->files}}, kExitOk);
  std::fprintf(stderr, "ward: discarded review session %s (%zu change%s, diff sha256 %s)\n",
               s->id.c_str(), r->files, r->files == 1 ? "" : "s", r->diff_sha256.c_str());
  return kExitOk;
}

}  // namespace

void AddReviewCommands(CLI::App& app, int* exit_code, int argc, char** argv) {
  auto o = std::make_shared<ReviewOptions>();
  for (int i = 0; i < argc; ++i) o->argv.emplace_back(argv[i]);
  auto common = [&](CLI::App* sub) {
    sub->add_option("-C,--workdir", o->workdir,
                    "The workspace whose newest open session is meant (default: the current "
                    "directory)");
  };
  CLI::App* diff = app.add_subcommand(
      "diff", "Show what a run in review mode changed (default: the newest open session here)");
  diff->add_option("args", o->args, "[SESSION] [PATHS...]");
  diff->add_flag("--sessions", o->sessions, "List the review sessions");
  diff->add_flag("--stat", o->stat, "Only list the changed paths (A, M, D)");
  common(diff);
  diff->callback([o, exit_code] { *exit_code = RunDiff(*o); });

  CLI::App* apply = app.add_subcommand(
      "apply", "Apply a review session's changes (or those of PATHS) to the workspace");
  apply->add_option("args", o->args, "[SESSION] [PATHS...]");
  apply->add_flag("--force", o->force,
                  "Apply over host files that changed since the run began");
  apply->add_option("--include-protected", o->include_protected,
                    "PATH: apply host-executed content there too (hooks, .envrc, editor and "
                    "agent settings...), once reviewed (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  apply->add_option("--expect-sha256", o->expect_sha256,
                    "Refuse unless the session's diff is still the one with this sha256 (as "
                    "`ward diff` printed it)");
  common(apply);
  apply->callback([o, exit_code] { *exit_code = RunApply(*o); });

  CLI::App* discard =
      app.add_subcommand("discard", "Drop a review session's changes (its upper layer)");
  discard->add_option("args", o->args, "[SESSION]");
  common(discard);
  discard->callback([o, exit_code] { *exit_code = RunDiscard(*o); });
}

}  // namespace ward::cli
