#include "api/jsonrpc.h"

#include <cstdint>

#include "audit/record.h"

namespace ward::api {

void LineFramer::Feed(std::string_view bytes) {
  // Compact before growing so a long-lived connection does not keep consumed bytes.
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    scan_ = pos_ = 0;
  } else if (pos_ > (1 << 16) && pos_ * 2 > buf_.size()) {
    buf_.erase(0, pos_);
    scan_ -= pos_;
    pos_ = 0;
  }
  buf_.append(bytes.data(), bytes.size());
}

std::optional<LineFramer::Item> LineFramer::Next() {
  while (true) {
    if (oversized_ > 0) {
      --oversized_;
      return Item{"", true};
    }
    size_t nl = buf_.find('\n', scan_);
    if (nl == std::string::npos) {
      scan_ = buf_.size();
      if (!skipping_ && buf_.size() - pos_ > max_) {
        // Too long already: report it now and drop what we hold.
        skipping_ = true;
        ++oversized_;
      }
      if (skipping_) {
        buf_.clear();
        pos_ = scan_ = 0;
      }
      if (oversized_ > 0) continue;
      return std::nullopt;
    }
    size_t start = pos_;
    pos_ = scan_ = nl + 1;
    if (skipping_) {
      skipping_ = false;  // the rest of the oversized line ends here
      continue;
    }
    if (nl - start > max_) return Item{"", true};
    size_t end = nl;
    if (end > start && buf_[end - 1] == '\r') --end;
    return Item{buf_.substr(start, end - start), false};
  }
}

namespace {

bool ValidId(const nlohmann::json& id) {
  return id.is_string() || id.is_number_integer() || id.is_number_unsigned();
}

}  // namespace

Expected<Message> ParseMessage(std::string_view line, ParseFailure* failure) {
  auto fail = [&](ErrorKind kind, int code, std::string msg, nlohmann::json id) -> Error {
    Error e = MakeError(kind, std::move(msg));
    e.code = code;
    if (failure) failure->id = std::move(id);
    return e;
  };
  if (failure) failure->id = nullptr;
  if (!audit::JsonDepthWithin(line, kMaxJsonDepth)) {
    return fail(ErrorKind::kInvalidRequest, kParseErrorCode, "JSON nested too deeply", nullptr);
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line.begin(), line.end());
  } catch (const std::exception& e) {
    return fail(ErrorKind::kInvalidRequest, kParseErrorCode, "parse error: not valid JSON",
                nullptr);
  }
  if (j.is_array()) {
    return fail(ErrorKind::kUnsupported, kInvalidRequestCode, "batch requests are not supported",
                nullptr);
  }
  if (!j.is_object()) {
    return fail(ErrorKind::kInvalidRequest, kInvalidRequestCode, "a message must be an object",
                nullptr);
  }
  nlohmann::json id = nullptr;
  bool has_id = j.contains("id");
  if (has_id) {
    if (!ValidId(j["id"])) {
      return fail(ErrorKind::kInvalidRequest, kInvalidRequestCode,
                  "id must be a string or an integer", nullptr);
    }
    id = j["id"];
  }
  auto v = j.find("jsonrpc");
  if (v == j.end() || !v->is_string() || v->get_ref<const std::string&>() != "2.0") {
    return fail(ErrorKind::kInvalidRequest, kInvalidRequestCode, "jsonrpc must be \"2.0\"", id);
  }
  Message m;
  m.id = id;
  auto method = j.find("method");
  if (method == j.end()) {
    if (!has_id || (!j.contains("result") && !j.contains("error"))) {
      return fail(ErrorKind::kInvalidRequest, kInvalidRequestCode, "method is missing", id);
    }
    m.kind = Message::Kind::kResponse;
    if (j.contains("result")) m.result = j["result"];
    if (j.contains("error")) m.error = j["error"];
    return m;
  }
  if (!method->is_string()) {
    return fail(ErrorKind::kInvalidRequest, kInvalidRequestCode, "method must be a string", id);
  }
  m.method = method->get<std::string>();
  m.kind = has_id ? Message::Kind::kRequest : Message::Kind::kNotification;
  auto params = j.find("params");
  if (params != j.end()) {
    if (!params->is_object() && !params->is_array()) {
      return fail(ErrorKind::kInvalidRequest, kInvalidRequestCode,
                  "params must be an object or an array", id);
    }
    m.params = std::move(*params);
  }
  return m;
}

std::string SerializeLine(const nlohmann::json& j) {
  std::string s;
  try {
    s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const std::exception&) {
    s = R"({"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"unserialisable"}})";
  }
  s.push_back('\n');
  return s;
}

nlohmann::json MakeResult(const nlohmann::json& id, nlohmann::json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

nlohmann::json MakeErrorResponse(const nlohmann::json& id, const Error& error) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", error.ToJson()}};
}

nlohmann::json MakeNotification(std::string_view method, nlohmann::json params) {
  return {{"jsonrpc", "2.0"}, {"method", std::string(method)}, {"params", std::move(params)}};
}

std::string ToValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  while (i < s.size()) {
    unsigned char c = p[i];
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid too.
    if (ok && ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
               (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)) {
      ok = false;
    }
    if (ok) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

namespace {
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string Base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
    out.push_back(kB64[v >> 18]);
    out.push_back(kB64[(v >> 12) & 63]);
    out.push_back(kB64[(v >> 6) & 63]);
    out.push_back(kB64[v & 63]);
  }
  if (i < in.size()) {
    uint32_t v = p[i] << 16;
    if (i + 1 < in.size()) v |= p[i + 1] << 8;
    out.push_back(kB64[v >> 18]);
    out.push_back(kB64[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kB64[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    int a = val(in[i]), b = val(in[i + 1]);
    if (a < 0 || b < 0) return std::nullopt;
    bool last = i + 4 == in.size();
    bool pad2 = last && in[i + 2] == '=' && in[i + 3] == '=';
    bool pad1 = last && !pad2 && in[i + 3] == '=';
    int c = pad2 ? 0 : val(in[i + 2]);
    int d = (pad1 || pad2) ? 0 : val(in[i + 3]);
    if (c < 0 || d < 0) return std::nullopt;
    uint32_t v = (a << 18) | (b << 12) | (c << 6) | d;
    out.push_back(static_cast<char>(v >> 16));
    if (!pad2) out.push_back(static_cast<char>((v >> 8) & 0xFF));
    if (!pad1 && !pad2) out.push_back(static_cast<char>(v & 0xFF));
  }
  return out;
}

}  // namespace ward::api
