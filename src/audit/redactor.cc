#include "audit/redactor.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <mutex>

#include "audit/record.h"

namespace ward::audit {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Marks the password of "scheme://user:password@host" in [begin, end) ranges.
void MarkUrlPasswords(std::string_view s, std::vector<bool>& mask) {
  size_t pos = 0;
  while ((pos = s.find("://", pos)) != std::string_view::npos) {
    size_t start = pos + 3;
    size_t auth_end = s.find_first_of("/?#@ \t\r\n\"'<>", start);
    pos = start;
    if (auth_end == std::string_view::npos || s[auth_end] != '@') continue;
    size_t colon = s.find(':', start);
    if (colon == std::string_view::npos || colon >= auth_end) continue;
    for (size_t i = colon + 1; i < auth_end; ++i) mask[i] = true;
    pos = auth_end;
  }
}

}  // namespace

void Redactor::AddSecret(std::string value) {
  if (value.empty()) return;
  std::unique_lock lock(mu_);
  if (std::find(secrets_.begin(), secrets_.end(), value) == secrets_.end()) {
    secrets_.push_back(std::move(value));
  }
}

bool Redactor::NameLooksSecret(std::string_view env_name) {
  std::string n = Upper(env_name);
  static constexpr std::array<std::string_view, 12> kParts = {
      "TOKEN",      "SECRET", "PASSWORD", "PASSWD",     "PASSPHRASE", "KEY",
      "CREDENTIAL", "COOKIE", "PRIVATE",  "SESSION_ID", "SIGNATURE",  "CERT_PASS"};
  for (std::string_view part : kParts) {
    if (n.find(part) != std::string::npos) return true;
  }
  // AUTH covers *_AUTH, AUTHORIZATION, AUTH_TOKEN; AUTHOR (GIT_AUTHOR_NAME) is not a secret.
  for (size_t p = n.find("AUTH"); p != std::string::npos; p = n.find("AUTH", p + 1)) {
    if (n.compare(p, 6, "AUTHOR") != 0 || n.compare(p, 13, "AUTHORIZATION") == 0) return true;
  }
  for (std::string_view suffix : {"_DSN", "_PASS", "_PW"}) {
    if (n.ends_with(suffix)) return true;
  }
  // Connection strings that usually embed a password.
  for (std::string_view known : {"DATABASE_URL", "REDIS_URL", "MONGODB_URI", "MONGO_URL"}) {
    if (n == known) return true;
  }
  return false;
}

std::string Redactor::Scrub(std::string_view s) const {
  std::shared_lock lock(mu_);
  return ScrubLocked(s);
}

std::string Redactor::ScrubLocked(std::string_view s) const {
  // Mark every byte covered by any occurrence of any secret on the original string, then
  // replace each marked run once: overlapping or nested secrets leave no fragment behind.
  std::vector<bool> mask;
  auto ensure_mask = [&] {
    if (mask.empty()) mask.assign(s.size(), false);
  };
  for (const std::string& secret : secrets_) {
    if (secret.size() > s.size()) continue;
    for (size_t p = s.find(secret); p != std::string_view::npos; p = s.find(secret, p + 1)) {
      ensure_mask();
      std::fill(mask.begin() + static_cast<ptrdiff_t>(p),
                mask.begin() + static_cast<ptrdiff_t>(p + secret.size()), true);
    }
  }
  if (s.find("://") != std::string_view::npos) {
    ensure_mask();
    MarkUrlPasswords(s, mask);
  }
  if (mask.empty() || std::find(mask.begin(), mask.end(), true) == mask.end()) {
    return std::string(s);
  }
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (!mask[i]) {
      out += s[i++];
      continue;
    }
    out += kRedacted;
    while (i < s.size() && mask[i]) ++i;
  }
  return out;
}

nlohmann::json Redactor::Apply(nlohmann::json j) const {
  std::shared_lock lock(mu_);
  ApplyLocked(j, 0);
  return j;
}

void Redactor::RedactEnv(nlohmann::json& env, int depth) const {
  if (env.is_object()) {
    for (auto it = env.begin(); it != env.end(); ++it) {
      if (NameLooksSecret(it.key()) && !it.value().is_null()) it.value() = kRedacted;
    }
  } else if (env.is_array()) {
    for (auto& item : env) {
      if (!item.is_string()) continue;
      const std::string& s = item.get_ref<const std::string&>();
      size_t eq = s.find('=');
      if (eq != std::string::npos && NameLooksSecret(std::string_view(s).substr(0, eq))) {
        item = s.substr(0, eq + 1) + std::string(kRedacted);
      }
    }
  }
  ApplyLocked(env, depth);
}

bool Redactor::NeedsScrubLocked(std::string_view s) const {
  for (const std::string& secret : secrets_) {
    if (secret.size() <= s.size() && s.find(secret) != std::string_view::npos) return true;
  }
  // A "://" without a password in it leaves the string as it is; ScrubLocked decides.
  return s.find("://") != std::string_view::npos;
}

void Redactor::ApplyLocked(nlohmann::json& j, int depth) const {
  if (depth > kMaxJsonDepth) {
    j = "[too deep]";
    return;
  }
  switch (j.type()) {
    case nlohmann::json::value_t::string: {
      const std::string& s = j.get_ref<const std::string&>();
      if (NeedsScrubLocked(s)) j = ScrubLocked(s);
      return;
    }
    case nlohmann::json::value_t::array:
      for (auto& item : j) ApplyLocked(item, depth + 1);
      return;
    case nlohmann::json::value_t::object:
      ApplyObjectLocked(j, depth);
      return;
    case nlohmann::json::value_t::binary:
      j = "[binary]";  // never serialised into the log as raw bytes
      return;
    case nlohmann::json::value_t::discarded:
      j = nullptr;
      return;
    default:
      return;
  }
}

// An object's values, and its keys when a key holds a secret (then the object is rebuilt).
void Redactor::ApplyObjectLocked(nlohmann::json& j, int depth) const {
  bool keys_change = false;
  for (auto it = j.begin(); it != j.end() && !keys_change; ++it) {
    keys_change = NeedsScrubLocked(it.key()) && ScrubLocked(it.key()) != it.key();
  }
  if (!keys_change) {
    for (auto it = j.begin(); it != j.end(); ++it) ApplyMemberLocked(it.key(), it.value(), depth);
    return;
  }
  nlohmann::json out = nlohmann::json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string key = ScrubLocked(it.key());
    nlohmann::json value = std::move(it.value());
    ApplyMemberLocked(it.key(), value, depth);
    // Two keys that scrub to the same text must not overwrite each other.
    std::string unique = key;
    for (int n = 2; out.contains(unique); ++n) unique = key + "#" + std::to_string(n);
    out[unique] = std::move(value);
  }
  j = std::move(out);
}

// The value of an object's member `key` (an "env" member names variables: RedactEnv).
void Redactor::ApplyMemberLocked(const std::string& key, nlohmann::json& value, int depth) const {
  if (key == "env") {
    RedactEnv(value, depth + 1);
  } else {
    ApplyLocked(value, depth + 1);
  }
}

}  // namespace ward::audit
