// HTTP/1.1 for the egress proxy: incremental request/response head parsers with hard limits,
// target parsing (CONNECT authority-form, absolute-form), the request-smuggling defences
// (framing rules), hop-by-hop removal, a streaming chunked decoder, and the serializers that
// write what goes upstream and back. Pure; untrusted bytes only ever produce an error value.
//
// The proxy re-frames every body it forwards (Content-Length or its own chunked encoding, from
// BodyFraming), so an upstream never sees the client's framing bytes and cannot disagree with
// this parser about where a message ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "net/idna.h"

namespace ward::net {

struct HttpHeader {
  std::string name;   // as received
  std::string value;  // without surrounding whitespace
};

// Ordered, duplicates kept; lookups ignore ASCII case.
class HttpHeaders {
 public:
  void Add(std::string name, std::string value);
  // Replaces every field of that name by one at the position of the first (or at the end).
  void Set(std::string name, std::string value);
  size_t Remove(std::string_view name);  // every field of that name; returns how many
  std::optional<std::string_view> Get(std::string_view name) const;  // the first
  std::vector<std::string_view> GetAll(std::string_view name) const;
  size_t Count(std::string_view name) const;
  // Whether any field of that name lists `token` in its comma-separated value (ignoring case).
  bool HasToken(std::string_view name, std::string_view token) const;

  const std::vector<HttpHeader>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<HttpHeader> entries_;
};

struct HttpLimits {
  size_t max_start_line = 8 * 1024;     // request line / status line, without CRLF
  size_t max_header_bytes = 64 * 1024;  // all header lines with their CRLFs
  size_t max_headers = 100;
};

enum class BodyKind : uint8_t {
  kNone,           // no body (no framing headers; HEAD/1xx/204/304 responses)
  kContentLength,  // exactly `length` bytes (possibly 0)
  kChunked,        // chunked transfer coding: use ChunkedDecoder
  kUntilClose,     // responses only: everything until the server closes
};

struct BodyFraming {
  BodyKind kind = BodyKind::kNone;
  uint64_t length = 0;  // kContentLength
  friend bool operator==(const BodyFraming&, const BodyFraming&) = default;
};

struct HttpRequestHead {
  std::string method;     // case-sensitive token
  std::string target;     // raw request-target
  int version_minor = 1;  // HTTP/1.<minor>; only 1.0 and 1.1 parse
  HttpHeaders headers;
  BodyFraming body;         // validated: see HttpRequestParser
  bool keep_alive = false;  // the client's wish (version default, Connection header)
};

struct HttpResponseHead {
  int version_minor = 1;
  int status = 0;  // 100..599
  std::string reason;
  HttpHeaders headers;
  BodyFraming body;
  std::optional<uint64_t> content_length;  // the valid Content-Length, even where body is kNone
  bool keep_alive = false;                 // the server allows another request after this one
};

struct HttpParse {
  enum class Kind : uint8_t { kNeedMore, kDone, kError };
  Kind kind = Kind::kNeedMore;
  // kDone: how many bytes of the last Feed's input belong to the message head (or the chunked
  // body); what follows is body / the next message. kNeedMore: all input was consumed.
  size_t consumed = 0;
  int http_status = 0;  // kError: what to answer (400, 414, 431, 501, 505; 502 for responses)
  std::string reason;   // kError: one line, safe to show (untrusted bytes escaped)

  bool need_more() const { return kind == Kind::kNeedMore; }
  bool done() const { return kind == Kind::kDone; }
  bool error() const { return kind == Kind::kError; }
};

namespace internal {
// Accumulates a head (start line, header lines, empty line) under the limits.
class HeadReader {
 public:
  explicit HeadReader(const HttpLimits& limits) : limits_(limits) {}
  HttpParse Feed(std::string_view data, int too_long_status);
  void Reset();
  std::string_view start_line() const;
  std::vector<std::string_view> header_lines() const;

 private:
  HttpLimits limits_;
  std::string buffer_;  // start line + header lines, each with its CRLF
  size_t line_start_ = 0;
  size_t start_line_len_ = 0;  // without CRLF; 0 while still reading it
  bool in_start_line_ = true;
  int empty_lines_skipped_ = 0;
  size_t header_count_ = 0;
  std::vector<std::pair<size_t, size_t>> lines_;  // header lines: offset, length without CRLF
  HttpParse final_;
};
}  // namespace internal

// Request heads. Beyond syntax, a head is kDone only when it is safe to forward:
//  - exactly one Host (none only for HTTP/1.0 or CONNECT);
//  - Transfer-Encoding and Content-Length not both; Transfer-Encoding only in HTTP/1.1 and
//    exactly "chunked" (other codings: 501); Content-Length a decimal number, repeated only
//    with the same value;
//  - CONNECT carries no body; "*" only with OPTIONS; obs-fold, bare CR/LF, NUL, whitespace
//    before ':' are errors.
class HttpRequestParser {
 public:
  explicit HttpRequestParser(HttpLimits limits = {}) : reader_(limits) {}
  // After kDone or kError, further calls return the same result with consumed = 0.
  HttpParse Feed(std::string_view data);
  const HttpRequestHead& head() const { return head_; }  // complete after kDone
  void Reset();                                          // for the next (pipelined) request

 private:
  internal::HeadReader reader_;
  HttpRequestHead head_;
  HttpParse result_;
};

class HttpResponseParser {
 public:
  // The framing of a response depends on the request: a reply to HEAD has no body.
  explicit HttpResponseParser(bool request_was_head, HttpLimits limits = {})
      : reader_(limits), request_was_head_(request_was_head) {}
  HttpParse Feed(std::string_view data);
  const HttpResponseHead& head() const { return head_; }
  // For the next response on the connection (after a 1xx interim response, too).
  void Reset(bool request_was_head);

 private:
  internal::HeadReader reader_;
  bool request_was_head_;
  HttpResponseHead head_;
  HttpParse result_;
};

// Streaming decoder for the chunked transfer coding (RFC 9112 7.1): bounded chunk-size lines
// (hex size of at most 15 digits, extensions ignored), exact CRLF after data, trailers bounded
// by the header limits.
class ChunkedDecoder {
 public:
  explicit ChunkedDecoder(HttpLimits limits = {}) : limits_(limits) {}
  // Appends decoded body bytes to *out (never more than data.size()). kDone: the last chunk
  // and trailer section ended `consumed` bytes into data.
  HttpParse Feed(std::string_view data, std::string* out);
  const HttpHeaders& trailers() const { return trailers_; }
  uint64_t body_bytes() const { return body_bytes_; }
  void Reset();

  static constexpr size_t kMaxSizeLine = 4096;

 private:
  enum class State : uint8_t { kSize, kData, kDataCr, kDataLf, kTrailer, kDone, kError };
  HttpParse Fail(std::string reason);
  // A chunk-size or trailer line, up to its LF; *i moves past what it took. A result when the
  // body ended there (kDone) or failed.
  std::optional<HttpParse> FeedLine(std::string_view data, size_t* i);
  std::optional<HttpParse> SizeLine(std::string_view line);
  std::optional<HttpParse> TrailerLine(std::string_view line, size_t consumed);

  HttpLimits limits_;
  State state_ = State::kSize;
  std::string line_;
  uint64_t remaining_ = 0;
  uint64_t body_bytes_ = 0;
  size_t trailer_bytes_ = 0;
  HttpHeaders trailers_;
  HttpParse result_;
};

// "data" as one chunk; empty data gives "" (an empty chunk would end the body).
std::string EncodeChunk(std::string_view data);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

struct HostPort {
  Host host;
  uint16_t port = 0;
  friend bool operator==(const HostPort&, const HostPort&) = default;
};

// CONNECT's authority-form: "host:port" or "[v6]:port"; the port is required (1..65535).
Result<HostPort> ParseAuthorityForm(std::string_view target);

// A Host header (or any "host[:port]"); default_port when the port is absent.
Result<HostPort> ParseHostPort(std::string_view text, uint16_t default_port);

struct AbsoluteUri {
  std::string scheme = "http";  // lowercase
  HostPort authority;
  bool explicit_port = false;
  std::string origin_form = "/";  // path and query for the upstream request line
};

// Absolute-form targets for plain forwarding: "http://host[:port][/path][?query]". https://
// (use CONNECT), other schemes, userinfo, fragments, empty hosts and bad ports are errors.
Result<AbsoluteUri> ParseAbsoluteForm(std::string_view target);

// The Host header, when present, must name the target's host and port (default 80/443 by
// scheme). kPermissionDenied on a mismatch (answer 403), kInvalidArgument when malformed.
Status CheckHostHeader(const HttpHeaders& headers, const AbsoluteUri& uri);

// Removes Connection, Keep-Alive, Proxy-Connection, Proxy-Authenticate, Proxy-Authorization,
// TE, Trailer, Transfer-Encoding, Upgrade and every field named in a Connection header.
void RemoveHopByHopHeaders(HttpHeaders& headers);

// The head to send upstream for a forwarded request: "METHOD origin-form HTTP/1.1", Host from
// the URI (first), the client's fields minus hop-by-hop and framing fields, framing written from
// head.body (Content-Length, or "Transfer-Encoding: chunked" that the proxy re-encodes), and
// "Connection: close" unless keep_alive.
std::string SerializeUpstreamRequest(const HttpRequestHead& head, const AbsoluteUri& uri,
                                     bool keep_alive);

// The head to send to the client: "HTTP/1.1 status reason", the fields minus hop-by-hop and
// framing fields, then framing for what the proxy will send: Content-Length (also for
// HEAD/304 replies, where it describes the entity), "Transfer-Encoding: chunked" for a chunked
// body to an HTTP/1.1 client; for a chunked body to an HTTP/1.0 client and for kUntilClose, no
// framing and "Connection: close" (the proxy then sends the decoded body and closes).
std::string SerializeClientResponse(const HttpResponseHead& head, int client_version_minor,
                                    bool keep_alive);

}  // namespace ward::net
