// Shared helpers for the libFuzzer targets: inputs as text, and invariant checks that abort
// (so libFuzzer records the input) when a parser contradicts itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#define FUZZ_CHECK(cond)                                                                      \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)

namespace ward::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// A split step derived from the input, so that each input is also fed in pieces.
inline size_t StepFor(std::string_view in) {
  if (in.empty()) return 1;
  return static_cast<size_t>(static_cast<uint8_t>(in.back()) % 23) + 1;
}

}  // namespace ward::fuzz
