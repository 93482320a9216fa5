// The audit record format: one canonical JSON object per line, hash-chained. Shared by the
// writer (SessionLog), the verifier and the readers so that all agree on the bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace ward::audit {

// `prev` of the first record.
inline constexpr std::string_view kZeroHash =
    "0000000000000000000000000000000000000000000000000000000000000000";
// A record whose canonical line would be longer is replaced by a short error record, so that
// one huge event cannot blow up the log or the verifier.
inline constexpr size_t kMaxRecordBytes = 1 << 20;
// The verifier refuses lines longer than this (ward never writes one).
inline constexpr size_t kMaxLineBytes = kMaxRecordBytes + 4096;

// Lowercase hex SHA-256.
std::string Sha256Hex(std::string_view bytes);

// RFC 3339, UTC, milliseconds: "2026-11-30T16:22:33.123Z".
std::string FormatTimestamp(std::chrono::system_clock::time_point t);
bool IsValidTimestamp(std::string_view ts);

// The canonical serialisation (docs/audit.md): sorted keys, no whitespace, UTF-8 unescaped,
// invalid UTF-8 replaced by U+FFFD. May throw std::bad_alloc only.
std::string CanonicalJson(const nlohmann::json& j);
// nlohmann's dump() in those settings, which CanonicalJson reproduces byte for byte (faster).
std::string CanonicalJsonReferenceForTesting(const nlohmann::json& j);

struct BuiltRecord {
  std::string line;  // canonical record including "hash", without the trailing newline
  std::string hash;
};
// `data` must be an object (SessionLog guarantees it).
BuiltRecord BuildRecord(int64_t seq, std::string_view ts, std::string_view type,
                        const nlohmann::json& data, std::string_view prev);
// The same from the canonical serialisation of `data` (lets SessionLog serialise outside its
// lock). Splices the members in canonical key order: data, hash, prev, seq, ts, type.
BuiltRecord BuildRecordFromCanonicalData(int64_t seq, std::string_view ts, std::string_view type,
                                         std::string_view data_canonical, std::string_view prev);

// Nesting deeper than this is refused (parsing, redaction and serialisation recurse).
inline constexpr int kMaxJsonDepth = 64;
// Whether the JSON text nests arrays/objects at most `max_depth` deep (a cheap scan that
// runs before parsing untrusted lines).
bool JsonDepthWithin(std::string_view text, int max_depth);

// Lenient parse for display: the line as a JSON object, or nullopt (also when nested too
// deeply).
std::optional<nlohmann::json> ParseRecordLine(std::string_view line);

// Whether `ward audit list` counts an event of this type as a denial: types ending in ".deny",
// ".denied" or "leak_attempt", and "limit.hit".
bool IsDenialType(std::string_view type);

// Types that SessionLog writes before Emit returns.
bool IsSyncType(std::string_view type);

}  // namespace ward::audit
