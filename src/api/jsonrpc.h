// JSON-RPC 2.0 over newline-delimited JSON (one message per line), shared by `ward serve` and
// `ward mcp`: framing with a line cap, strict parsing of untrusted input, and message builders.
// Nothing here throws out: every malformed input becomes an Error.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/error.h"

namespace ward::api {

// A line longer than this is refused (and skipped up to its newline).
inline constexpr size_t kDefaultMaxLineBytes = 4 << 20;
// Nesting deeper than this is refused before parsing (the parser recurses).
inline constexpr int kMaxJsonDepth = 64;

// Splits a byte stream into lines. Feed() appends; Next() returns complete lines without the
// newline (a trailing '\r' is dropped too). A line over the cap is reported once as
// `oversized` and its bytes are discarded up to the next newline.
class LineFramer {
 public:
  explicit LineFramer(size_t max_line = kDefaultMaxLineBytes) : max_(max_line) {}
  struct Item {
    std::string line;
    bool oversized = false;  // `line` is empty; the line was dropped
  };
  void Feed(std::string_view bytes);
  std::optional<Item> Next();
  // Bytes buffered of an incomplete line.
  size_t pending() const { return buf_.size() - pos_; }

 private:
  size_t max_;
  std::string buf_;
  size_t pos_ = 0;         // start of the unconsumed part
  size_t scan_ = 0;        // where the newline search resumes
  bool skipping_ = false;  // inside an oversized line
  size_t oversized_ = 0;   // oversized lines noticed but not yet returned
};

// One incoming message.
struct Message {
  enum class Kind { kRequest, kNotification, kResponse };
  Kind kind = Kind::kRequest;
  nlohmann::json id;  // string or integer (requests and responses); null for notifications
  std::string method;
  nlohmann::json params = nlohmann::json::object();  // object or array as sent
  nlohmann::json result;                             // responses
  nlohmann::json error;                              // responses
};

struct ParseFailure {
  Error error;
  nlohmann::json id;  // the id when it could be recovered, else null
};

// Parses one line. Batches (arrays) are refused as unsupported.
Expected<Message> ParseMessage(std::string_view line, ParseFailure* failure);

// Serialises without throwing (invalid UTF-8 in strings becomes U+FFFD), plus '\n'.
std::string SerializeLine(const nlohmann::json& j);

nlohmann::json MakeResult(const nlohmann::json& id, nlohmann::json result);
nlohmann::json MakeErrorResponse(const nlohmann::json& id, const Error& error);
nlohmann::json MakeNotification(std::string_view method, nlohmann::json params);

// Text for a JSON string: valid UTF-8 kept, every invalid byte replaced by U+FFFD.
std::string ToValidUtf8(std::string_view bytes);

// Base64 (RFC 4648, with padding).
std::string Base64Encode(std::string_view bytes);
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace ward::api
