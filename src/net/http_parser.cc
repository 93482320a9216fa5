#include "net/http_parser.h"

#include <algorithm>
#include <cstdio>

#include "net/text_util.h"

namespace ward::net {

namespace {

constexpr int kMaxLeadingEmptyLines = 8;
constexpr size_t kMaxContentLengthDigits = 18;  // < 10^18: no overflow, far beyond real bodies

HttpParse Error(int status, std::string reason) {
  HttpParse r;
  r.kind = HttpParse::Kind::kError;
  r.http_status = status;
  r.reason = std::move(reason);
  return r;
}

bool IsFieldValueChar(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }

bool IsTargetChar(unsigned char c) { return c > 0x20 && c < 0x7f; }

// One "name: value" line (no CRLF). On failure returns a reason.
std::optional<std::string> ParseFieldLine(std::string_view line, HttpHeaders* out) {
  if (line.empty()) return "empty header line";
  if (line.front() == ' ' || line.front() == '\t') return "obsolete line folding";
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return "header line without ':'";
  std::string_view name = line.substr(0, colon);
  if (name.empty()) return "empty header name";
  for (char c : name) {
    if (!IsTokenChar(c)) return "invalid header name " + QuoteUntrusted(name);
  }
  std::string_view value = TrimOws(line.substr(colon + 1));
  for (char c : value) {
    if (!IsFieldValueChar(static_cast<unsigned char>(c))) {
      return "invalid character in header " + QuoteUntrusted(name);
    }
  }
  out->Add(std::string(name), std::string(value));
  return std::nullopt;
}

// A chunk-size line (no CRLF): hex digits, then extensions. On failure returns a reason.
std::optional<std::string> ParseChunkSize(std::string_view l, uint64_t* size) {
  size_t k = 0;
  *size = 0;
  while (k < l.size()) {
    char c = l[k];
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    if (d < 0) break;
    if (k == 15) return "chunk size too large";
    *size = *size * 16 + static_cast<uint64_t>(d);
    ++k;
  }
  if (k == 0) return "missing chunk size";
  // Extensions (ignored; never forwarded): BWS ';' ..., no control characters.
  std::string_view ext = l.substr(k);
  std::string_view trimmed = TrimOws(ext);
  if (!trimmed.empty() && trimmed.front() != ';') return "junk after chunk size";
  if (trimmed.empty() && !ext.empty()) return "whitespace after chunk size";
  for (char c : ext) {
    if (!IsFieldValueChar(static_cast<unsigned char>(c))) {
      return "control character in chunk extension";
    }
  }
  return std::nullopt;
}

// Splits a comma-separated field value into trimmed elements (empty elements kept).
std::vector<std::string_view> SplitList(std::string_view v) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t comma = v.find(',', start);
    std::string_view item =
        v.substr(start, comma == std::string_view::npos ? v.npos : comma - start);
    out.push_back(TrimOws(item));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::optional<uint64_t> ParseDecimal(std::string_view s, size_t max_digits) {
  if (s.empty() || s.size() > max_digits) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::optional<uint16_t> ParsePort(std::string_view s) {
  auto v = ParseDecimal(s, 5);
  if (!v || *v == 0 || *v > 65535) return std::nullopt;
  return static_cast<uint16_t>(*v);
}

// Content-Length: every field and every list element must carry the same valid number.
// Returns nullopt when absent; sets *bad on an invalid or conflicting value.
std::optional<uint64_t> ContentLength(const HttpHeaders& h, bool* bad) {
  std::optional<uint64_t> value;
  for (std::string_view field : h.GetAll("Content-Length")) {
    for (std::string_view item : SplitList(field)) {
      auto v = ParseDecimal(item, kMaxContentLengthDigits);
      if (!v || (value && *value != *v)) {
        *bad = true;
        return std::nullopt;
      }
      value = v;
    }
  }
  return value;
}

// Transfer-Encoding codings, lowercased, in order.
std::vector<std::string> TransferCodings(const HttpHeaders& h) {
  std::vector<std::string> out;
  for (std::string_view field : h.GetAll("Transfer-Encoding")) {
    for (std::string_view item : SplitList(field)) out.push_back(AsciiLower(item));
  }
  return out;
}

bool ParseVersion(std::string_view v, int* minor, bool* looks_like_http) {
  *looks_like_http = v.size() == 8 && v.substr(0, 5) == "HTTP/" && v[5] >= '0' && v[5] <= '9' &&
                     v[6] == '.' && v[7] >= '0' && v[7] <= '9';
  if (v == "HTTP/1.1") {
    *minor = 1;
    return true;
  }
  if (v == "HTTP/1.0") {
    *minor = 0;
    return true;
  }
  return false;
}

bool KeepAlive(const HttpHeaders& h, int version_minor) {
  if (h.HasToken("Connection", "close")) return false;
  if (version_minor == 0) return h.HasToken("Connection", "keep-alive");
  return true;
}

void AppendField(std::string& out, std::string_view name, std::string_view value) {
  out += name;
  out += ": ";
  out += value;
  out += "\r\n";
}

bool IsFramingField(std::string_view name) {
  return EqualsIgnoreCase(name, "Content-Length") || EqualsIgnoreCase(name, "Transfer-Encoding");
}

}  // namespace

// ---------------------------------------------------------------- HttpHeaders

void HttpHeaders::Add(std::string name, std::string value) {
  entries_.push_back({std::move(name), std::move(value)});
}

void HttpHeaders::Set(std::string name, std::string value) {
  auto same = [&](const HttpHeader& h) { return EqualsIgnoreCase(h.name, name); };
  auto first = std::find_if(entries_.begin(), entries_.end(), same);
  if (first == entries_.end()) {
    Add(std::move(name), std::move(value));
    return;
  }
  first->value = std::move(value);
  entries_.erase(std::remove_if(first + 1, entries_.end(), same), entries_.end());
}

size_t HttpHeaders::Remove(std::string_view name) {
  size_t before = entries_.size();
  std::erase_if(entries_, [&](const HttpHeader& h) { return EqualsIgnoreCase(h.name, name); });
  return before - entries_.size();
}

std::optional<std::string_view> HttpHeaders::Get(std::string_view name) const {
  for (const HttpHeader& h : entries_) {
    if (EqualsIgnoreCase(h.name, name)) return std::string_view(h.value);
  }
  return std::nullopt;
}

std::vector<std::string_view> HttpHeaders::GetAll(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const HttpHeader& h : entries_) {
    if (EqualsIgnoreCase(h.name, name)) out.push_back(h.value);
  }
  return out;
}

size_t HttpHeaders::Count(std::string_view name) const {
  size_t n = 0;
  for (const HttpHeader& h : entries_) n += EqualsIgnoreCase(h.name, name) ? 1 : 0;
  return n;
}

bool HttpHeaders::HasToken(std::string_view name, std::string_view token) const {
  for (std::string_view field : GetAll(name)) {
    for (std::string_view item : SplitList(field)) {
      if (EqualsIgnoreCase(item, token)) return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------- HeadReader

namespace internal {

void HeadReader::Reset() {
  buffer_.clear();
  line_start_ = 0;
  start_line_len_ = 0;
  in_start_line_ = true;
  empty_lines_skipped_ = 0;
  header_count_ = 0;
  lines_.clear();
  final_ = HttpParse{};
}

std::string_view HeadReader::start_line() const {
  return std::string_view(buffer_).substr(0, start_line_len_);
}

std::vector<std::string_view> HeadReader::header_lines() const {
  std::vector<std::string_view> out;
  out.reserve(lines_.size());
  for (auto [off, len] : lines_) out.push_back(std::string_view(buffer_).substr(off, len));
  return out;
}

HttpParse HeadReader::Feed(std::string_view data, int too_long_status) {
  if (final_.kind != HttpParse::Kind::kNeedMore) {
    HttpParse again = final_;
    again.consumed = 0;
    return again;
  }
  size_t i = 0;
  while (i < data.size()) {
    size_t nl = data.find('\n', i);
    size_t end = nl == std::string_view::npos ? data.size() : nl + 1;
    size_t piece = end - i;
    size_t line_so_far = buffer_.size() - line_start_ + piece;
    if (in_start_line_) {
      if (line_so_far > limits_.max_start_line + 2) {
        return final_ = Error(too_long_status,
                              "start line longer than " + std::to_string(limits_.max_start_line));
      }
    } else if (buffer_.size() - start_line_len_ - 2 + piece > limits_.max_header_bytes) {
      return final_ = Error(431, "header section larger than " +
                                     std::to_string(limits_.max_header_bytes) + " bytes");
    }
    buffer_.append(data.substr(i, piece));
    i = end;
    if (nl == std::string_view::npos) break;

    size_t line_end = buffer_.size() - 1;  // the '\n'
    if (line_end == line_start_ || buffer_[line_end - 1] != '\r') {
      return final_ = Error(400, "line not terminated by CRLF");
    }
    size_t len = line_end - 1 - line_start_;
    if (in_start_line_ && len == 0) {
      // Tolerate a few empty lines before the request line (RFC 9112 2.2), bounded.
      if (++empty_lines_skipped_ > kMaxLeadingEmptyLines) {
        return final_ = Error(400, "too many empty lines before the start line");
      }
      buffer_.clear();
      line_start_ = 0;
      continue;
    }
    if (in_start_line_) {
      if (len > limits_.max_start_line) {
        return final_ = Error(too_long_status,
                              "start line longer than " + std::to_string(limits_.max_start_line));
      }
      start_line_len_ = len;
      in_start_line_ = false;
    } else if (len == 0) {
      final_.kind = HttpParse::Kind::kDone;
      final_.consumed = i;
      return final_;
    } else {
      if (++header_count_ > limits_.max_headers) {
        return final_ = Error(
                   431, "more than " + std::to_string(limits_.max_headers) + " header fields");
      }
      lines_.emplace_back(line_start_, len);
    }
    line_start_ = buffer_.size();
  }
  HttpParse more;
  more.consumed = data.size();
  return more;
}

}  // namespace internal

// ---------------------------------------------------------------- requests

void HttpRequestParser::Reset() {
  reader_.Reset();
  head_ = HttpRequestHead{};
  result_ = HttpParse{};
}

HttpParse HttpRequestParser::Feed(std::string_view data) {
  if (result_.kind != HttpParse::Kind::kNeedMore) {
    HttpParse again = result_;
    again.consumed = 0;
    return again;
  }
  HttpParse r = reader_.Feed(data, 414);
  if (!r.done()) {
    if (r.error()) result_ = r;
    return r;
  }
  auto fail = [&](int status, std::string reason) { return result_ = Error(status, reason); };

  // Request line: method SP target SP version, single spaces.
  std::string_view line = reader_.start_line();
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return fail(400, "malformed request line");
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (method.empty() || target.empty()) return fail(400, "malformed request line");
  for (char c : method) {
    if (!IsTokenChar(c)) return fail(400, "invalid method");
  }
  for (char c : target) {
    if (!IsTargetChar(static_cast<unsigned char>(c))) return fail(400, "invalid request target");
  }
  bool looks_like_http = false;
  if (!ParseVersion(version, &head_.version_minor, &looks_like_http)) {
    return looks_like_http ? fail(505, "HTTP version not supported")
                           : fail(400, "malformed request line");
  }
  head_.method = method;
  head_.target = target;

  for (std::string_view l : reader_.header_lines()) {
    if (auto err = ParseFieldLine(l, &head_.headers)) return fail(400, *err);
  }
  const HttpHeaders& h = head_.headers;
  const bool is_connect = head_.method == "CONNECT";

  if (target == "*" && head_.method != "OPTIONS") return fail(400, "'*' target without OPTIONS");
  size_t hosts = h.Count("Host");
  if (hosts > 1) return fail(400, "more than one Host header");
  if (hosts == 0 && head_.version_minor == 1 && !is_connect) return fail(400, "missing Host");

  // Framing: the request-smuggling defences.
  bool bad_length = false;
  std::optional<uint64_t> length = ContentLength(h, &bad_length);
  if (bad_length) return fail(400, "invalid or conflicting Content-Length");
  if (h.Count("Transfer-Encoding") > 0) {
    if (length) return fail(400, "both Transfer-Encoding and Content-Length");
    if (head_.version_minor == 0) return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    std::vector<std::string> codings = TransferCodings(h);
    if (codings.empty() || codings.back() != "chunked") {
      return fail(400, "Transfer-Encoding does not end in chunked");
    }
    if (std::count(codings.begin(), codings.end(), "chunked") > 1) {
      return fail(400, "chunked applied more than once");
    }
    if (codings.size() != 1) return fail(501, "transfer codings other than chunked");
    head_.body = {BodyKind::kChunked, 0};
  } else if (length) {
    head_.body = {BodyKind::kContentLength, *length};
  }
  if (is_connect && (head_.body.kind == BodyKind::kChunked || head_.body.length > 0)) {
    return fail(400, "CONNECT with a body");
  }
  head_.keep_alive = KeepAlive(h, head_.version_minor);
  result_ = r;
  return r;
}

// ---------------------------------------------------------------- responses

void HttpResponseParser::Reset(bool request_was_head) {
  reader_.Reset();
  request_was_head_ = request_was_head;
  head_ = HttpResponseHead{};
  result_ = HttpParse{};
}

HttpParse HttpResponseParser::Feed(std::string_view data) {
  if (result_.kind != HttpParse::Kind::kNeedMore) {
    HttpParse again = result_;
    again.consumed = 0;
    return again;
  }
  HttpParse r = reader_.Feed(data, 502);
  if (!r.done()) {
    if (r.error()) {
      r.http_status = 502;  // whatever the upstream did wrong, the client sees a bad gateway
      result_ = r;
    }
    return r;
  }
  auto fail = [&](std::string reason) { return result_ = Error(502, "upstream: " + reason); };

  // Status line: version SP 3DIGIT [SP reason]; some servers omit the reason's space.
  std::string_view line = reader_.start_line();
  if (line.size() < 12 || line[8] != ' ') return fail("malformed status line");
  bool looks_like_http = false;
  if (!ParseVersion(line.substr(0, 8), &head_.version_minor, &looks_like_http)) {
    return fail("unsupported HTTP version");
  }
  auto code = ParseDecimal(line.substr(9, 3), 3);
  if (!code || *code < 100 || *code > 599) return fail("bad status code");
  head_.status = static_cast<int>(*code);
  if (line.size() > 12) {
    if (line[12] != ' ') return fail("malformed status line");
    std::string_view reason = line.substr(13);
    for (char c : reason) {
      if (!IsFieldValueChar(static_cast<unsigned char>(c))) return fail("bad reason phrase");
    }
    head_.reason = reason;
  }
  for (std::string_view l : reader_.header_lines()) {
    if (auto err = ParseFieldLine(l, &head_.headers)) return fail(*err);
  }
  const HttpHeaders& h = head_.headers;

  bool bad_length = false;
  head_.content_length = ContentLength(h, &bad_length);
  if (bad_length) return fail("invalid or conflicting Content-Length");
  bool has_te = h.Count("Transfer-Encoding") > 0;
  if (has_te && head_.content_length) return fail("both Transfer-Encoding and Content-Length");
  if (has_te && head_.version_minor == 0) return fail("Transfer-Encoding in HTTP/1.0");
  if (has_te) {
    std::vector<std::string> codings = TransferCodings(h);
    if (codings.size() != 1 || codings[0] != "chunked") {
      return fail("transfer codings other than chunked");
    }
  }

  int s = head_.status;
  if (request_was_head_ || (s >= 100 && s < 200) || s == 204 || s == 304) {
    head_.body = {BodyKind::kNone, 0};
  } else if (has_te) {
    head_.body = {BodyKind::kChunked, 0};
  } else if (head_.content_length) {
    head_.body = {BodyKind::kContentLength, *head_.content_length};
  } else {
    head_.body = {BodyKind::kUntilClose, 0};
  }
  head_.keep_alive = KeepAlive(h, head_.version_minor) && head_.body.kind != BodyKind::kUntilClose;
  result_ = r;
  return r;
}

// ---------------------------------------------------------------- chunked

void ChunkedDecoder::Reset() {
  state_ = State::kSize;
  line_.clear();
  remaining_ = 0;
  body_bytes_ = 0;
  trailer_bytes_ = 0;
  trailers_ = HttpHeaders{};
  result_ = HttpParse{};
}

HttpParse ChunkedDecoder::Fail(std::string reason) {
  state_ = State::kError;
  return result_ = Error(400, "chunked body: " + reason);
}

HttpParse ChunkedDecoder::Feed(std::string_view data, std::string* out) {
  if (state_ == State::kDone || state_ == State::kError) {
    HttpParse again = result_;
    again.consumed = 0;
    return again;
  }
  size_t i = 0;
  while (i < data.size()) {
    switch (state_) {
      case State::kSize:
      case State::kTrailer:
        if (std::optional<HttpParse> ended = FeedLine(data, &i)) return *ended;
        break;
      case State::kData: {
        uint64_t n = std::min<uint64_t>(remaining_, data.size() - i);
        out->append(data.data() + i, static_cast<size_t>(n));
        i += static_cast<size_t>(n);
        remaining_ -= n;
        body_bytes_ += n;
        if (remaining_ == 0) state_ = State::kDataCr;
        break;
      }
      case State::kDataCr:
        if (data[i++] != '\r') return Fail("chunk data not followed by CRLF");
        state_ = State::kDataLf;
        break;
      case State::kDataLf:
        if (data[i++] != '\n') return Fail("chunk data not followed by CRLF");
        state_ = State::kSize;
        break;
      case State::kDone:
      case State::kError:
        break;
    }
  }
  HttpParse more;
  more.consumed = data.size();
  return more;
}

std::optional<HttpParse> ChunkedDecoder::FeedLine(std::string_view data, size_t* i) {
  size_t nl = data.find('\n', *i);
  size_t end = nl == std::string_view::npos ? data.size() : nl + 1;
  size_t limit = state_ == State::kSize ? kMaxSizeLine : limits_.max_header_bytes;
  if (line_.size() + (end - *i) > limit + 2 ||
      (state_ == State::kTrailer && trailer_bytes_ + (end - *i) > limits_.max_header_bytes)) {
    return Fail(state_ == State::kSize ? "chunk-size line too long" : "trailers too large");
  }
  line_.append(data.substr(*i, end - *i));
  if (state_ == State::kTrailer) trailer_bytes_ += end - *i;
  *i = end;
  if (nl == std::string_view::npos) return std::nullopt;
  if (line_.size() < 2 || line_[line_.size() - 2] != '\r') {
    return Fail("line not terminated by CRLF");
  }
  std::string_view l(line_.data(), line_.size() - 2);
  if (state_ == State::kSize) return SizeLine(l);
  return TrailerLine(l, *i);
}

std::optional<HttpParse> ChunkedDecoder::SizeLine(std::string_view l) {
  uint64_t size = 0;
  if (auto err = ParseChunkSize(l, &size)) return Fail(*err);
  line_.clear();
  if (size == 0) {
    state_ = State::kTrailer;
  } else {
    remaining_ = size;
    state_ = State::kData;
  }
  return std::nullopt;
}

std::optional<HttpParse> ChunkedDecoder::TrailerLine(std::string_view l, size_t consumed) {
  if (l.empty()) {
    state_ = State::kDone;
    result_.kind = HttpParse::Kind::kDone;
    result_.consumed = consumed;
    line_.clear();
    return result_;
  }
  if (trailers_.size() >= limits_.max_headers) return Fail("too many trailer fields");
  if (auto err = ParseFieldLine(l, &trailers_)) return Fail(*err);
  line_.clear();
  return std::nullopt;
}

std::string EncodeChunk(std::string_view data) {
  if (data.empty()) return "";
  char buf[20];
  std::snprintf(buf, sizeof buf, "%zx\r\n", data.size());
  std::string out = buf;
  out += data;
  out += "\r\n";
  return out;
}

// ---------------------------------------------------------------- targets

Result<HostPort> ParseHostPort(std::string_view text, uint16_t default_port) {
  if (text.empty()) return InvalidArgument("empty host");
  std::string_view host = text, port;
  bool has_port = false;
  if (text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return InvalidArgument("unbalanced '['");
    host = text.substr(0, close + 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return InvalidArgument("junk after ']'");
      port = rest.substr(1);
      has_port = true;
    }
  } else if (size_t colon = text.find(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    has_port = true;
  }
  HostPort hp;
  if (has_port) {
    auto p = ParsePort(port);
    if (!p) return InvalidArgument("bad port " + QuoteUntrusted(port));
    hp.port = *p;
  } else {
    hp.port = default_port;
  }
  if (host.empty()) return InvalidArgument("empty host");
  if (host.front() == '[' && host.find(':') == std::string_view::npos) {
    return InvalidArgument("brackets around a non-IPv6 host");
  }
  WARD_ASSIGN_OR_RETURN(hp.host, ParseHost(host));
  return hp;
}

Result<HostPort> ParseAuthorityForm(std::string_view target) {
  // The port is required: "host:port" with the last ':' outside any brackets.
  size_t close = target.rfind(']');
  size_t colon = target.rfind(':');
  if (colon == std::string_view::npos || (close != std::string_view::npos && colon < close)) {
    return InvalidArgument("CONNECT target needs host:port");
  }
  if (target.front() != '[' && target.find(':') != colon) {
    return InvalidArgument("IPv6 CONNECT target needs brackets");
  }
  return ParseHostPort(target, 0);
}

Result<AbsoluteUri> ParseAbsoluteForm(std::string_view target) {
  if (StartsWithIgnoreCase(target, "https://")) {
    return InvalidArgument("https:// targets must use CONNECT");
  }
  if (!StartsWithIgnoreCase(target, "http://")) {
    return InvalidArgument("only http:// targets are forwarded");
  }
  if (target.find('#') != std::string_view::npos) return InvalidArgument("fragment in target");
  std::string_view rest = target.substr(7);
  size_t end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, end);
  if (authority.find('@') != std::string_view::npos) {
    return InvalidArgument("userinfo in target");
  }
  if (authority.empty()) return InvalidArgument("empty host in target");
  AbsoluteUri uri;
  WARD_ASSIGN_OR_RETURN(uri.authority, ParseHostPort(authority, 80));
  size_t close = authority.front() == '[' ? authority.find(']') : std::string_view::npos;
  uri.explicit_port =
      authority.find(':', close == std::string_view::npos ? 0 : close) != std::string_view::npos;
  if (end == std::string_view::npos) {
    uri.origin_form = "/";
  } else if (rest[end] == '?') {
    uri.origin_form = "/" + std::string(rest.substr(end));
  } else {
    uri.origin_form = std::string(rest.substr(end));
  }
  return uri;
}

Status CheckHostHeader(const HttpHeaders& headers, const AbsoluteUri& uri) {
  std::vector<std::string_view> hosts = headers.GetAll("Host");
  if (hosts.empty()) return Ok();
  if (hosts.size() > 1) return InvalidArgument("more than one Host header");
  uint16_t default_port = uri.scheme == "https" ? 443 : 80;
  auto hp = ParseHostPort(hosts[0], default_port);
  if (!hp.ok()) return InvalidArgument("bad Host header: " + hp.status().message());
  if (!(*hp == uri.authority)) {
    return Status(Code::kPermissionDenied,
                  "Host header " + QuoteUntrusted(hosts[0]) + " does not match the target " +
                      uri.authority.host.ToUriString() + ":" + std::to_string(uri.authority.port));
  }
  return Ok();
}

void RemoveHopByHopHeaders(HttpHeaders& headers) {
  std::vector<std::string> named;
  for (std::string_view field : headers.GetAll("Connection")) {
    for (std::string_view item : SplitList(field)) {
      if (!item.empty()) named.emplace_back(item);
    }
  }
  for (std::string_view name :
       {"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
        "TE", "Trailer", "Transfer-Encoding", "Upgrade"}) {
    headers.Remove(name);
  }
  for (const std::string& name : named) headers.Remove(name);
}

std::string SerializeUpstreamRequest(const HttpRequestHead& head, const AbsoluteUri& uri,
                                     bool keep_alive) {
  HttpHeaders h = head.headers;
  RemoveHopByHopHeaders(h);
  h.Remove("Host");
  std::string out = head.method + " " + uri.origin_form + " HTTP/1.1\r\n";
  uint16_t default_port = uri.scheme == "https" ? 443 : 80;
  std::string host = uri.authority.host.ToUriString();
  if (uri.authority.port != default_port) host += ":" + std::to_string(uri.authority.port);
  AppendField(out, "Host", host);
  for (const HttpHeader& f : h.entries()) {
    if (!IsFramingField(f.name)) AppendField(out, f.name, f.value);
  }
  if (head.body.kind == BodyKind::kContentLength) {
    AppendField(out, "Content-Length", std::to_string(head.body.length));
  } else if (head.body.kind == BodyKind::kChunked) {
    AppendField(out, "Transfer-Encoding", "chunked");
  }
  if (!keep_alive) AppendField(out, "Connection", "close");
  out += "\r\n";
  return out;
}

std::string SerializeClientResponse(const HttpResponseHead& head, int client_version_minor,
                                    bool keep_alive) {
  HttpHeaders h = head.headers;
  RemoveHopByHopHeaders(h);
  std::string out = "HTTP/1.1 " + std::to_string(head.status) + " " + head.reason + "\r\n";
  for (const HttpHeader& f : h.entries()) {
    if (!IsFramingField(f.name)) AppendField(out, f.name, f.value);
  }
  bool close = !keep_alive;
  switch (head.body.kind) {
    case BodyKind::kContentLength:
      AppendField(out, "Content-Length", std::to_string(head.body.length));
      break;
    case BodyKind::kChunked:
      if (client_version_minor >= 1) {
        AppendField(out, "Transfer-Encoding", "chunked");
      } else {
        close = true;
      }
      break;
    case BodyKind::kUntilClose:
      close = true;
      break;
    case BodyKind::kNone:
      if (head.content_length && head.status != 204 && head.status >= 200) {
        AppendField(out, "Content-Length", std::to_string(*head.content_length));
      }
      break;
  }
  if (close) {
    AppendField(out, "Connection", "close");
  } else if (client_version_minor == 0) {
    AppendField(out, "Connection", "keep-alive");
  }
  out += "\r\n";
  return out;
}

}  // namespace ward::net
