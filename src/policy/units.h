// Sizes and durations as people write them in profiles and on the command line. Strict,
// overflow-checked and exception-free: the text is untrusted.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace ward::policy {

// Sizes: "8G", "512M", "1.5G", "64k", "1024" (bytes; binary multiples k/M/G/T, case-insensitive,
// optionally followed by "B" or "iB").
Result<uint64_t> ParseSize(std::string_view text);

// Durations: "500ms", "30s", "10m", "1h", "1h30m", "2d"; a bare number means seconds.
Result<uint64_t> ParseDurationMs(std::string_view text);

// The limits on memory, /tmp and file size are sizes where a number without a unit means
// bytes: "--memory 5" is five bytes, which only gets the command killed. Such a number below
// kSmallestBareSize is refused, with how to write MiB and GiB; a unit ("512k", "100B") says
// the small figure is meant. `written` is the value as the user wrote it (a TOML integer's
// digits, or the command line's text), `bytes` what it parsed to.
inline constexpr uint64_t kSmallestBareSize = 1ull << 20;
Status CheckBareSize(std::string_view written, uint64_t bytes);

}  // namespace ward::policy
