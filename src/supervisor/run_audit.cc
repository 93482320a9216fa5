#include "supervisor/run_audit.h"

#include <unistd.h>

#include <cstdio>
#include <system_error>

#include "common/trace.h"

namespace ward::supervisor {

void StartRecordFirst::Start(std::function<void()> build) {
  {
    std::lock_guard lock(mu_);
    building_ = true;
  }
  try {
    thread_ = std::thread([this, build] {
      build();
      Release();
    });
  } catch (const std::system_error&) {
    build();  // no thread to be had: built here, before anything else is emitted
    Release();
  }
}

void StartRecordFirst::Wait() {
  std::lock_guard lock(join_mu_);
  if (thread_.joinable()) thread_.join();
}

void StartRecordFirst::Emit(std::string_view type, nlohmann::json data) {
  {
    std::lock_guard lock(mu_);
    if (building_) {
      queued_.emplace_back(std::string(type), std::move(data));
      return;
    }
  }
  log_->Emit(type, std::move(data));
}

// The start record is written: what was queued follows it, then Emit writes directly.
void StartRecordFirst::Release() {
  std::lock_guard lock(mu_);
  for (auto& [type, data] : queued_) log_->Emit(type, std::move(data));
  queued_.clear();
  building_ = false;
}

const std::string& RunAudit::session_id() const {
  static const std::string kNone;
  return options_ ? options_->session_id : kNone;
}

// The session's files: an unwritable directory or a full disk refuses the run.
Result<std::unique_ptr<audit::SessionLog>> RunAudit::CreateSession() const {
  if (options_->state_dir.empty()) {
    return Error(Code::kFailedPrecondition,
                 "cannot tell where the audit trail goes (set XDG_STATE_HOME or HOME), or run "
                 "with --no-audit");
  }
  audit::SessionLog::Options o;
  o.state_dir = options_->state_dir;
  o.session_id = options_->session_id;
  o.start_flusher = false;  // the supervisor must stay single-threaded until the clone
  o.fsync_on_close = options_->fsync_on_close;
  o.reserve_bytes = options_->reserve_bytes;
  Result<std::unique_ptr<audit::SessionLog>> log = audit::SessionLog::Create(o);
  if (!log.ok()) {
    return Status(log.status().code(), "cannot write the audit trail: " + log.status().ToString() +
                                           " (fix it, or run with --no-audit to go without one)");
  }
  return log;
}

Status RunAudit::Open(const std::vector<std::string>& sandbox_writable) {
  if (!options_) return Ok();
  tried_ = true;
  Result<std::unique_ptr<audit::SessionLog>> made = CreateSession();
  if (!made.ok()) return made.status();
  Status reach = audit::RequireReserveOrOwnFileSystem(**made, sandbox_writable);
  if (!reach.ok()) {
    (void)(*made)->Discard();
    return Status(reach.code(), reach.ToString() +
                                    " (XDG_STATE_HOME or --audit-dir), or run with "
                                    "--no-audit to go without one");
  }
  log_ = std::move(made).value();
  events_.emplace(log_.get());
  TraceMark("audit session opened");
  return Ok();
}

void RunAudit::AddSecret(const std::string& secret) {
  if (log_) log_->redactor().AddSecret(secret);
}

void RunAudit::OnFailure(std::function<void(const Status&)> stop) {
  if (log_) log_->OnFailure(std::move(stop));
}

void RunAudit::WriteStart(std::function<nlohmann::json()> build) {
  if (!log_) return;
  log_->StartFlusherOnDemand();
  events_->Start([log = log_.get(), build = std::move(build)] {
    log->Emit("session.start", build());
    TraceMark("session.start written");
    log->LeaveReserveToLaterSessions();
  });
}

void RunAudit::WaitForStart() {
  if (events_) events_->Wait();
}

void RunAudit::OpenForRefusal() {
  if (!options_ || tried_ || log_) return;
  tried_ = true;
  Result<std::unique_ptr<audit::SessionLog>> made = CreateSession();
  if (made.ok()) {
    log_ = std::move(made).value();
  } else {
    std::fprintf(stderr, "ward: %s\n", made.status().ToString().c_str());
  }
}

void RunAudit::Emit(std::string_view type, nlohmann::json data) {
  if (log_) log_->Emit(type, std::move(data));
}

Status RunAudit::Close(const std::vector<std::string>& argv, const std::string& refused,
                       nlohmann::json end) {
  if (!log_) return Ok();
  if (!refused.empty()) {
    // Nothing ran: the log still says what was refused and why.
    log_->Emit("session.start", {{"ward_version", options_->ward_version},
                                 {"command", argv},
                                 {"cwd", options_->cwd},
                                 {"uid", getuid()},
                                 {"labels", options_->labels},
                                 {"refused", refused}});
  }
  TraceMark("run finished");
  log_->Emit("session.end", std::move(end));
  TraceMark("session.end emitted");
  Status closed = log_->Close();
  TraceMark("audit session closed");
  return closed;
}

std::string RunAudit::FailureAdvice(const Status& st) const {
  std::string what;
  if (log_) {
    std::string dropped = log_->DescribeDropped();
    if (!dropped.empty()) what += "; not recorded: " + dropped;
  }
  const std::string state = options_ ? options_->state_dir : "";
  if (st.err() == ENOSPC || st.err() == EDQUOT) {
    what += "; free space on the file system of " + state +
            ", or move the audit trail to a file system the sandbox cannot write "
            "(XDG_STATE_HOME or --audit-dir); a larger --audit-reserve keeps it writable longer";
  } else {
    what += "; check the file system of " + state +
            ", or move the audit trail elsewhere (XDG_STATE_HOME or --audit-dir)";
  }
  return what;
}

}  // namespace ward::supervisor
