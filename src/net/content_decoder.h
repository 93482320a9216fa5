// Content codings of HTTP bodies (RFC 9110 8.4) that the credential broker must see through:
// a response that may echo a real secret is decoded before it is scanned, so that a gzip'd echo
// cannot carry the secret past the masker. gzip (and x-gzip) and deflate (zlib-wrapped, or raw
// as some servers send it) are decoded, stacked codings in reverse order; anything else (br,
// zstd, compress, unknown names) is refused, never passed on undecoded. Bounded: the decoded
// size and the ratio of decoded to encoded bytes have limits, so a decompression bomb ends as an
// error instead of as memory or endless output. Pure (zlib only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ward::net {

struct ContentDecodeLimits {
  uint64_t max_decoded = uint64_t{1} << 30;  // bytes of one body, decoded
  // Decoded bytes per encoded byte, checked once `ratio_after` bytes were decoded. Text and
  // JSON compress far less than this; gzip's own ceiling is about 1032.
  uint64_t max_ratio = 256;
  uint64_t ratio_after = uint64_t{1} << 20;
};

class ContentDecoder {
 public:
  // The codings named by a message's Content-Encoding fields, in the order they were applied.
  // Empty (or only "identity"): nullptr, nothing to decode. A coding that cannot be decoded:
  // kFailedPrecondition naming it.
  static Result<std::unique_ptr<ContentDecoder>> ForFields(
      const std::vector<std::string_view>& fields, ContentDecodeLimits limits = {});
  ~ContentDecoder();
  ContentDecoder(const ContentDecoder&) = delete;
  ContentDecoder& operator=(const ContentDecoder&) = delete;

  // Encoded bytes of the body, in order. Call Pull until it gives nothing before pushing more.
  void Push(std::string_view encoded);
  // Appends at most `max` decoded bytes to *out; appending nothing means it needs more input.
  // Errors: corrupt data (kInvalidArgument), a limit passed (kResourceExhausted).
  Status Pull(std::string* out, size_t max);
  // At the end of the body (after Pull gave nothing): every coding's stream must be complete.
  Status Finish();

  const std::vector<std::string>& codings() const { return names_; }
  uint64_t decoded_bytes() const { return decoded_; }

 private:
  class Layer;
  ContentDecoder() = default;
  Status CheckLimits() const;

  std::vector<std::string> names_;
  std::vector<std::unique_ptr<Layer>> layers_;  // the outermost coding first
  ContentDecodeLimits limits_;
  uint64_t encoded_ = 0;
  uint64_t decoded_ = 0;
};

}  // namespace ward::net
