#include "audit/record.h"

#include <time.h>
#include "common/sha256.h"

#include <charconv>
#include <cstdio>

namespace ward::audit {

std::string Sha256Hex(std::string_view bytes) { return ward::Sha256Hex(bytes); }

std::string FormatTimestamp(std::chrono::system_clock::time_point t) {
  // By calendar arithmetic, not gmtime_r: its first call initialises the time zone, which reads
  // /etc/localtime.
  using namespace std::chrono;
  const auto ms = floor<milliseconds>(t);  // before 1970: floor, not truncate
  const auto day = floor<days>(ms);
  const year_month_day ymd{day};
  const hh_mm_ss<milliseconds> hms{ms - day};
  char buf[96];  // large enough for any fields, which silences -Wformat-truncation
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02ld:%02ld:%02ld.%03ldZ",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<long>(hms.hours().count()),
                static_cast<long>(hms.minutes().count()), static_cast<long>(hms.seconds().count()),
                static_cast<long>(hms.subseconds().count()));
  return buf;
}

bool IsValidTimestamp(std::string_view ts) {
  // YYYY-MM-DDTHH:MM:SS.mmmZ
  static constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (ts.size() != kShape.size()) return false;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (kShape[i] == 'd') {
      if (ts[i] < '0' || ts[i] > '9') return false;
    } else if (ts[i] != kShape[i]) {
      return false;
    }
  }
  return true;
}

namespace {

// nlohmann's own serialisation in the canonical settings: the reference the fast path below
// must match byte for byte.
std::string ReferenceDump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Printable ASCII other than '"' and '\\': what the reference writes between quotes as it is.
bool WrittenAsIs(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return false;
  }
  return true;
}

void AppendString(const std::string& s, std::string* out) {
  if (WrittenAsIs(s)) {
    *out += '"';
    *out += s;
    *out += '"';
  } else {
    *out += ReferenceDump(nlohmann::json(s));  // escapes, UTF-8, invalid bytes
  }
}

template <typename Int>
void AppendInteger(Int v, std::string* out) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, ec == std::errc() ? end : buf);
}

// The walk of nlohmann's serialiser (objects in key order, arrays in order), with strings
// written as they are and integers formatted directly where the result is the same; every
// other value (escaped strings, floating point, binary) is written by the reference itself.
// A session's start record (~20 KB) takes less than half the time nlohmann's dump does.
void AppendCanonical(const nlohmann::json& j, std::string* out) {
  using V = nlohmann::json::value_t;
  switch (j.type()) {
    case V::object: {
      *out += '{';
      bool first = true;
      for (const auto& [key, value] : j.get_ref<const nlohmann::json::object_t&>()) {
        if (!first) *out += ',';
        first = false;
        AppendString(key, out);
        *out += ':';
        AppendCanonical(value, out);
      }
      *out += '}';
      return;
    }
    case V::array: {
      *out += '[';
      bool first = true;
      for (const nlohmann::json& value : j.get_ref<const nlohmann::json::array_t&>()) {
        if (!first) *out += ',';
        first = false;
        AppendCanonical(value, out);
      }
      *out += ']';
      return;
    }
    case V::string:
      AppendString(j.get_ref<const std::string&>(), out);
      return;
    case V::number_integer:
      AppendInteger(j.get<int64_t>(), out);
      return;
    case V::number_unsigned:
      AppendInteger(j.get<uint64_t>(), out);
      return;
    case V::boolean:
      *out += j.get<bool>() ? "true" : "false";
      return;
    case V::null:
      *out += "null";
      return;
    default:  // floating point, binary, discarded
      *out += ReferenceDump(j);
      return;
  }
}

}  // namespace

std::string CanonicalJson(const nlohmann::json& j) {
  std::string out;
  AppendCanonical(j, &out);
  return out;
}

std::string CanonicalJsonReferenceForTesting(const nlohmann::json& j) { return ReferenceDump(j); }

BuiltRecord BuildRecord(int64_t seq, std::string_view ts, std::string_view type,
                        const nlohmann::json& data, std::string_view prev) {
  return BuildRecordFromCanonicalData(seq, ts, type, CanonicalJson(data), prev);
}

BuiltRecord BuildRecordFromCanonicalData(int64_t seq, std::string_view ts, std::string_view type,
                                         std::string_view data_canonical, std::string_view prev) {
  // Sorted keys: data < hash < prev < seq < ts < type. ts and prev need no escaping (fixed
  // alphabets); type goes through the serialiser.
  std::string type_json = CanonicalJson(std::string(type));
  std::string tail;
  tail.reserve(160 + type_json.size());
  tail += "\"prev\":\"";
  tail += prev;
  tail += "\",\"seq\":";
  tail += std::to_string(seq);
  tail += ",\"ts\":\"";
  tail += ts;
  tail += "\",\"type\":";
  tail += type_json;
  tail += '}';

  // The hash covers the record without its "hash" member: the same bytes as the line below
  // less that member, fed to the hash in pieces instead of copied into a string of their own.
  Sha256 h;
  h.Update("{\"data\":");
  h.Update(data_canonical);
  h.Update(",");
  h.Update(tail);

  BuiltRecord out;
  out.hash = h.FinalHex();
  out.line.reserve(10 + data_canonical.size() + 80 + tail.size());
  out.line += "{\"data\":";
  out.line += data_canonical;
  out.line += ",\"hash\":\"";
  out.line += out.hash;
  out.line += "\",";
  out.line += tail;
  return out;
}

bool JsonDepthWithin(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (ch == '\\') {
        escaped = true;
      } else if (ch == '"') {
        in_string = false;
      }
      continue;
    }
    if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > max_depth) return false;
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  return true;
}

std::optional<nlohmann::json> ParseRecordLine(std::string_view line) {
  // +2: the record object and its data object come before the producer's nesting.
  if (!JsonDepthWithin(line, kMaxJsonDepth + 2)) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  return j;
}

bool IsDenialType(std::string_view type) {
  auto ends_with = [&](std::string_view s) { return type.ends_with(s); };
  return ends_with(".deny") || ends_with(".denied") || ends_with("leak_attempt") ||
         type == "limit.hit";
}

// An exec's end is written through: its result reaches the client only after the record does,
// so a client that reads the trail right after the result finds it.
bool IsSyncType(std::string_view type) {
  return type == "session.start" || type == "setup.error" || type == "session.end" ||
         type == "exec.end";
}

}  // namespace ward::audit
