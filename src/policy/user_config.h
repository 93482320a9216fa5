// The user's own settings for ward itself (not for a sandbox): <config dir>/config.toml, next
// to the user's profiles. Pure: the text arrives as a string; the CLI finds and reads the file.
// Keys and defaults are documented in docs/audit.md ("Retention").
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace ward::policy {

inline constexpr const char* kUserConfigFileName = "config.toml";

// How much of the audit trail is kept. 0 turns a bound off; both 0 turns automatic pruning off.
struct AuditRetention {
  uint64_t keep_days = 30;
  uint64_t keep_sessions = 10000;
};

struct UserConfig {
  AuditRetention audit;
};

// <config_dir>/config.toml
std::string UserConfigPath(const std::string& config_dir);

// Parses the file's text (`path` only names it in errors: "FILE:LINE: KEY: what is wrong").
// Unknown keys are errors, like in profiles; absent keys keep their defaults.
Result<UserConfig> ParseUserConfig(const std::string& text, const std::string& path);

}  // namespace ward::policy
