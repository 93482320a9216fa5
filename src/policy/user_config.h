// The user's own settings for ward itself (not for a sandbox): <config dir>/config.toml, next
// to the user's profiles. Pure: the text arrives as a string; the CLI finds and reads the file.
// Keys and defaults are documented in docs/audit.md ("Retention"); [oci] holds a node's
// defaults for `ward oci` (in progress), which a container's run.ward/ annotations override.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ward::policy {

inline constexpr const char* kUserConfigFileName = "config.toml";

// How much of the audit trail is kept. 0 turns a bound off; both 0 turns automatic pruning off.
struct AuditRetention {
  uint64_t keep_days = 30;
  uint64_t keep_sessions = 10000;
};

// `ward oci` on a node ([oci]): what a container that says nothing gets. Its annotations
// (run.ward/...) choose otherwise per container.
struct OciDefaults {
  std::string profile = "default";
  std::string audit_dir;        // absolute; "" = ward's state directory
  std::string credentials_dir;  // absolute: where the node keeps credential sources
  std::string approver;         // a webhook URL; "" = no approvals unless annotated
  // CA files the credential broker trusts for upstreams besides the system's (a corporate CA),
  // as `ward run --upstream-ca`.
  std::vector<std::string> upstream_ca;
};

struct UserConfig {
  AuditRetention audit;
  OciDefaults oci;
};

// The node's configuration file for `ward oci` (the same format, read by root).
inline constexpr const char* kNodeConfigPath = "/etc/ward/config.toml";

// <config_dir>/config.toml
std::string UserConfigPath(const std::string& config_dir);

// Parses the file's text (`path` only names it in errors: "FILE:LINE: KEY: what is wrong").
// Unknown keys are errors, like in profiles; absent keys keep their defaults.
Result<UserConfig> ParseUserConfig(const std::string& text, const std::string& path);

}  // namespace ward::policy
