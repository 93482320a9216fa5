// Phantom values: what the sandbox holds instead of a real secret. Random per session and
// unguessable (at least 128 bits of randomness), and shaped like the real token where tools
// check the shape: a recognised vendor prefix ("sk-ant-api03-", "ghp_", "github_pat_", "xoxb-",
// ...) is kept, and so are the length and the alphabet of the rest. Nothing else about the real
// value carries over: every other character is drawn at random from the whole alphabet.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ward::net {

struct PhantomShape {
  std::string prefix;    // kept as is
  std::string alphabet;  // the random part's characters
  size_t length = 0;     // of the random part
  std::string suffix;    // kept as is (base64 '=' padding)
  bool generic = false;  // the real value had no recognisable shape
};

inline constexpr size_t kMinPhantomBits = 128;
inline constexpr std::string_view kGenericPhantomPrefix = "ward-phantom-";

// What a phantom for `real` looks like. The random part is lengthened when the real one is too
// short to give kMinPhantomBits.
PhantomShape DescribePhantomShape(std::string_view real);

// A fresh phantom for `real` (from OpenSSL's CSPRNG); never equal to it, never containing it
// nor contained in it.
Result<std::string> MakePhantom(std::string_view real);

// The part of a phantom that is random (without prefix and suffix), for loose matching.
std::string_view PhantomRandomPart(std::string_view phantom, const PhantomShape& shape);

}  // namespace ward::net
