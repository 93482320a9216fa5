// Keeps secrets out of the audit log: registered secret values are scrubbed wherever they
// occur, environment values of secret-looking names are replaced, and passwords in URLs
// ("scheme://user:password@host") are removed.
#pragma once

#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace ward::audit {

inline constexpr std::string_view kRedacted = "[redacted]";

class Redactor {
 public:
  // Every occurrence of `value` in any string (values and keys, at any depth) becomes
  // "[redacted]". Empty values are ignored. Thread-safe.
  void AddSecret(std::string value);

  // Case-insensitive: names containing TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE, KEY,
  // CREDENTIAL, AUTH (but not AUTHOR), COOKIE, PRIVATE, SESSION_ID, SIGNATURE, or ending
  // in _DSN / _PASS / _PW; plus a few known names (DATABASE_URL, ...).
  static bool NameLooksSecret(std::string_view env_name);

  // Returns a redacted copy: strings scrubbed recursively; under a key "env" holding an
  // object (name -> value) or an array of "NAME=VALUE" strings, the values of secret-looking
  // names become "[redacted]". Nesting deeper than kMaxJsonDepth is replaced by
  // "[too deep]". Never throws except std::bad_alloc.
  nlohmann::json Apply(nlohmann::json j) const;

  // Scrubs one string (registered secrets, URL passwords).
  std::string Scrub(std::string_view s) const;

 private:
  // In place: a session.start record holds ~1000 values, nearly all of which stay as they are.
  void ApplyLocked(nlohmann::json& j, int depth) const;
  void ApplyObjectLocked(nlohmann::json& j, int depth) const;
  void ApplyMemberLocked(const std::string& key, nlohmann::json& value, int depth) const;
  std::string ScrubLocked(std::string_view s) const;
  bool NeedsScrubLocked(std::string_view s) const;  // ScrubLocked would change s
  void RedactEnv(nlohmann::json& env, int depth) const;

  mutable std::shared_mutex mu_;
  std::vector<std::string> secrets_;
};

}  // namespace ward::audit
