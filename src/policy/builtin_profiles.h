// Profiles shipped inside the ward binary (generated from profiles/*.toml at build time).
#pragma once

#include <string_view>
#include <vector>

namespace ward::policy {

struct BuiltinProfile {
  std::string_view name;
  std::string_view text;
};

const std::vector<BuiltinProfile>& BuiltinProfiles();

}  // namespace ward::policy
