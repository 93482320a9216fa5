// The text of `ward --version`.
#pragma once

#include <string>

namespace ward::cli {

std::string VersionText();

}  // namespace ward::cli
