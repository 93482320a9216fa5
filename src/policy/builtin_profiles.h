// Profiles shipped inside the ward binary (generated from profiles/*.toml at build time).
#pragma once

#include <string_view>
#include <vector>

namespace ward::policy {

struct BuiltinProfile {
  std::string_view name;
  std::string_view text;
  std::string_view sha256;  // of text, lowercase hex, computed when the binary was built
};

const std::vector<BuiltinProfile>& BuiltinProfiles();

}  // namespace ward::policy
