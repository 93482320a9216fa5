#include "api/audit_query.h"

#include <fcntl.h>
#include <unistd.h>

#include "audit/record.h"
#include "audit/session_log.h"
#include "audit/sessions.h"

namespace ward::api {

namespace {

// The first line of a session's log (its session.start), up to the record cap.
std::optional<nlohmann::json> FirstRecord(const std::string& session_dir) {
  std::string path = session_dir + "/" + std::string(audit::kEventsFile);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  std::string line;
  char buf[8192];
  while (line.size() < audit::kMaxLineBytes) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
    if (line.find('\n') != std::string::npos) break;
  }
  close(fd);
  size_t nl = line.find('\n');
  if (nl == std::string::npos) return std::nullopt;
  line.resize(nl);
  return audit::ParseRecordLine(line);
}

// Whether `labels` has each of `wanted`, with its value.
bool LabelsMatch(const std::map<std::string, std::string>& labels,
                 const std::map<std::string, std::string>& wanted) {
  for (const auto& [k, v] : wanted) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

// What one pass over a session's log finds: its outcome, denials and (maybe) records.
struct SessionScan {
  bool ended = false;
  bool setup_error = false;
  int64_t denials = 0;
  nlohmann::json exit_code = nullptr;
  nlohmann::json signal = nullptr;
  nlohmann::json recs = nlohmann::json::array();
  bool cut = false;

  void Add(nlohmann::json rec, const AuditQuery& q) {
    const std::string& type = rec["type"].get_ref<const std::string&>();
    const nlohmann::json& data = rec["data"];
    if (type == "session.end") {
      ended = true;
      if (data.is_object() && data.contains("exit_code")) exit_code = data["exit_code"];
      if (data.is_object() && data.contains("signal")) signal = data["signal"];
    } else if (type == "setup.error") {
      setup_error = true;
    }
    if (audit::IsDenialType(type)) ++denials;
    if (!q.records || !audit::TypeMatches(q.type, type)) return;
    if (recs.size() >= q.max_records) {
      cut = true;
      return;
    }
    recs.push_back(std::move(rec));
  }
};

// A matching session as audit.query lists it.
nlohmann::json SessionJson(const audit::SessionSummary& s,
                           const std::map<std::string, std::string>& labels, const AuditQuery& q) {
  nlohmann::json j = {
      {"id", s.id}, {"start", s.start}, {"command", s.command}, {"labels", labels}};
  SessionScan scan;
  audit::LogTail tail(s.dir);
  auto lines = tail.Poll();
  if (lines.ok()) {
    for (const auto& line : *lines) {
      auto rec = audit::ParseRecordLine(line);
      if (!rec || !(*rec)["type"].is_string()) continue;
      scan.Add(std::move(*rec), q);
    }
  }
  j["ended"] = scan.ended;
  j["setup_error"] = scan.setup_error;
  j["denials"] = scan.denials;
  j["exit_code"] = scan.exit_code;
  j["signal"] = scan.signal;
  if (q.records) {
    j["records"] = std::move(scan.recs);
    j["records_truncated"] = scan.cut;
  }
  return j;
}

}  // namespace

std::map<std::string, std::string> LabelsOf(const nlohmann::json& data) {
  std::map<std::string, std::string> out;
  if (!data.is_object() || !data.contains("labels")) return out;
  const auto& l = data["labels"];
  if (l.is_object()) {
    for (const auto& [k, v] : l.items()) {
      if (v.is_string()) out[k] = v.get<std::string>();
    }
  } else if (l.is_array()) {
    for (const auto& v : l) {
      if (!v.is_string()) continue;
      const auto& s = v.get_ref<const std::string&>();
      size_t eq = s.find('=');
      if (eq != std::string::npos) out[s.substr(0, eq)] = s.substr(eq + 1);
    }
  }
  return out;
}

Expected<nlohmann::json> QueryAudit(const std::string& state_dir, const AuditQuery& q) {
  if (state_dir.empty()) {
    return MakeError(ErrorKind::kUnsupported,
                     "no audit state directory (set XDG_STATE_HOME or HOME)");
  }
  nlohmann::json sessions = nlohmann::json::array();
  bool truncated = false;
  for (const auto& s : audit::ListSessions(state_dir, /*brief=*/true)) {
    if (!q.session.empty() && s.id != q.session) continue;
    auto first = FirstRecord(s.dir);
    if (!first || !first->is_object() || (*first)["type"] != "session.start") continue;
    auto labels = LabelsOf((*first)["data"]);
    if (!LabelsMatch(labels, q.labels)) continue;
    if (sessions.size() >= q.limit) {
      truncated = true;
      break;
    }
    sessions.push_back(SessionJson(s, labels, q));
  }
  return nlohmann::json{{"sessions", std::move(sessions)}, {"truncated", truncated}};
}

}  // namespace ward::api
