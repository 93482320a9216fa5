// audit.query: the audit sessions of a sandbox or an exec, found by the labels recorded in
// their session.start record (`sandbox=<id>`, `exec=<id>`, and the sandbox's own labels).
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "api/error.h"

namespace ward::api {

struct AuditQuery {
  std::map<std::string, std::string> labels;  // all must match
  std::string session;                        // not empty: only this session
  std::string type;           // with records: only this type, or a prefix ending in '.'
  bool records = false;       // include the records of each session
  size_t limit = 50;          // sessions, newest first
  size_t max_records = 1000;  // per session
};

// The labels of a session.start record's data: an object of strings, or an array of
// "KEY=VALUE" strings. Anything else yields none.
std::map<std::string, std::string> LabelsOf(const nlohmann::json& start_data);

// {"sessions": [{id, start, command, labels, ended, exit_code, signal, denials, records?}],
//  "truncated": bool}
Expected<nlohmann::json> QueryAudit(const std::string& state_dir, const AuditQuery& q);

}  // namespace ward::api
