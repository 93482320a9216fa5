// What the files of Service (service*.cc) share: the bounds of a request's data, its text or
// base64 encoding, and the fail-closed check of a sandbox's audit session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/error.h"
#include "audit/session_log.h"

namespace ward::api::internal {

inline constexpr int64_t kMaxTimeoutMs = int64_t{7} * 24 * 3600 * 1000;
inline constexpr size_t kMaxDataBytes = 16 << 20;
inline constexpr size_t kDefaultReadBytes = 1 << 20;

// Fail closed: a sandbox whose audit session could not be written runs and changes nothing
// more (its log's first write error is sticky).
std::optional<Error> AuditFailure(const audit::SessionLog* log);

// Data of a request: text as is, or base64.
Expected<std::string> DecodeData(const std::string& data, const std::string& encoding,
                                 const char* what);
nlohmann::json EncodeData(const std::string& bytes, const std::string& encoding);

}  // namespace ward::api::internal
