// ParseUserConfig: the user's config.toml. toml++ is included here as well as in loader.cc:
// this file is small and changes rarely.
#include "policy/user_config.h"

#include "policy/toml.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <string_view>
#include <vector>

namespace ward::policy {
namespace {

const std::vector<std::string> kConfigTables = {"audit", "oci"};
const std::vector<std::string> kAuditKeys = {"keep_days", "keep_sessions"};
const std::vector<std::string> kOciKeys = {"profile", "audit_dir", "credentials_dir", "approver",
                                           "upstream_ca"};

Status ConfigError(const std::string& path, const toml::source_region& at, std::string_view key,
                   std::string_view what) {
  std::string m = path;
  if (at.begin.line > 0) m += ":" + std::to_string(at.begin.line);
  if (!key.empty()) m += ": " + std::string(key);
  m += ": ";
  m += what;
  return InvalidArgument(std::move(m));
}

// " (did you mean 'x'?)" for a key one or two edits away from a known one.
std::string NearestKey(std::string_view word, const std::vector<std::string>& known) {
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
      }
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  for (const std::string& k : known) {
    if (word.size() <= 64 && distance(word, k) <= 2) return " (did you mean '" + k + "'?)";
  }
  return "";
}

std::string KnownList(const std::vector<std::string>& known) {
  std::string out;
  for (const std::string& k : known) out += (out.empty() ? "" : ", ") + k;
  return out;
}

Result<uint64_t> Count(const toml::node& v, const std::string& path, const std::string& key) {
  std::optional<int64_t> n = v.value_exact<int64_t>();
  if (!n || *n < 0) {
    return ConfigError(path, v.source(), key,
                       "expected a whole number >= 0 (0 turns this bound off)");
  }
  return static_cast<uint64_t>(*n);
}

Status ApplyAudit(const toml::node& node, const std::string& path, AuditRetention* out) {
  const toml::table* t = node.as_table();
  if (t == nullptr) return ConfigError(path, node.source(), "audit", "expected a table ([audit])");
  for (auto&& [k, v] : *t) {
    const std::string key = "audit." + std::string(k.str());
    if (k.str() == "keep_days") {
      WARD_ASSIGN_OR_RETURN(out->keep_days, Count(v, path, key));
    } else if (k.str() == "keep_sessions") {
      WARD_ASSIGN_OR_RETURN(out->keep_sessions, Count(v, path, key));
    } else {
      return ConfigError(path, k.source(), key,
                         "unknown key" + NearestKey(k.str(), kAuditKeys) +
                             " (known: " + KnownList(kAuditKeys) + ")");
    }
  }
  return Ok();
}

Result<std::string> Text(const toml::node& v, const std::string& path, const std::string& key,
                         bool absolute_path) {
  std::optional<std::string> s = v.value_exact<std::string>();
  if (!s || s->find('\0') != std::string::npos) {
    return ConfigError(path, v.source(), key, "expected a string");
  }
  if (absolute_path && (s->empty() || (*s)[0] != '/')) {
    return ConfigError(path, v.source(), key, "expected an absolute path");
  }
  return *s;
}

Status ApplyOci(const toml::node& node, const std::string& path, OciDefaults* out) {
  const toml::table* t = node.as_table();
  if (t == nullptr) return ConfigError(path, node.source(), "oci", "expected a table ([oci])");
  for (auto&& [k, v] : *t) {
    const std::string key = "oci." + std::string(k.str());
    if (k.str() == "profile") {
      WARD_ASSIGN_OR_RETURN(out->profile, Text(v, path, key, false));
      if (out->profile.empty()) return ConfigError(path, v.source(), key, "names no profile");
    } else if (k.str() == "audit_dir") {
      WARD_ASSIGN_OR_RETURN(out->audit_dir, Text(v, path, key, true));
    } else if (k.str() == "credentials_dir") {
      WARD_ASSIGN_OR_RETURN(out->credentials_dir, Text(v, path, key, true));
    } else if (k.str() == "approver") {
      WARD_ASSIGN_OR_RETURN(out->approver, Text(v, path, key, false));
      if (!out->approver.starts_with("https://") && !out->approver.starts_with("http://")) {
        return ConfigError(path, v.source(), key,
                           "expected a webhook URL (https://...): a node has no terminal");
      }
    } else if (k.str() == "upstream_ca") {
      const toml::array* files = v.as_array();
      if (files == nullptr) {
        return ConfigError(path, v.source(), key, "expected an array of CA files (absolute paths)");
      }
      for (const toml::node& f : *files) {
        WARD_ASSIGN_OR_RETURN(std::string file, Text(f, path, key, true));
        out->upstream_ca.push_back(std::move(file));
      }
    } else {
      return ConfigError(path, k.source(), key,
                         "unknown key" + NearestKey(k.str(), kOciKeys) +
                             " (known: " + KnownList(kOciKeys) + ")");
    }
  }
  return Ok();
}

// The top-level tables of the file, each into its part of `out`.
Status ApplyTables(const toml::table& tbl, const std::string& path, UserConfig* out) {
  for (auto&& [k, v] : tbl) {
    if (k.str() == "audit") {
      WARD_TRY(ApplyAudit(v, path, &out->audit));
    } else if (k.str() == "oci") {
      WARD_TRY(ApplyOci(v, path, &out->oci));
    } else {
      return ConfigError(path, k.source(), k.str(),
                         "unknown key" + NearestKey(k.str(), kConfigTables) +
                             " (known: " + KnownList(kConfigTables) + ")");
    }
  }
  return Ok();
}

}  // namespace

std::string UserConfigPath(const std::string& config_dir) {
  return config_dir + "/" + kUserConfigFileName;
}

Result<UserConfig> ParseUserConfig(const std::string& text, const std::string& path) {
  UserConfig config;
  try {
    toml::table tbl;
    try {
      tbl = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
      return ConfigError(path, e.source(), "", "invalid TOML: " + std::string(e.description()));
    }
    WARD_TRY(ApplyTables(tbl, path, &config));
  } catch (const std::exception& e) {
    return Status(Code::kInternal, "reading " + path + ": " + e.what());
  }
  return config;
}

}  // namespace ward::policy
