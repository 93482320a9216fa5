#include "net/content_decoder.h"

#include <zlib.h>

#include <algorithm>

#include "net/text_util.h"

namespace ward::net {

namespace {

constexpr size_t kLayerPull = 64 << 10;  // what an inner coding asks of the one around it
constexpr size_t kCompactAfter = 64 << 10;

enum class Coding { kIdentity, kGzip, kDeflate, kUnsupported };

Coding Classify(std::string_view name) {
  if (name == "identity") return Coding::kIdentity;
  if (name == "gzip" || name == "x-gzip") return Coding::kGzip;
  if (name == "deflate") return Coding::kDeflate;
  return Coding::kUnsupported;
}

// Whether two bytes open a zlib stream (RFC 1950): deflate method, a window zlib accepts, and
// the header check. Servers that say "deflate" send raw deflate often enough to tell them apart.
bool IsZlibHeader(uint8_t cmf, uint8_t flg) {
  return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && ((cmf << 8) | flg) % 31 == 0;
}

}  // namespace

// One coding's decoder: zlib's inflate over the bytes the coding around it produced.
class ContentDecoder::Layer {
 public:
  explicit Layer(Coding coding) : coding_(coding) {}
  ~Layer() {
    if (started_) inflateEnd(&z_);
  }
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  void Append(std::string_view data) {
    if (pos_ >= kCompactAfter || pos_ == in_.size()) {
      in_.erase(0, pos_);
      pos_ = 0;
    }
    in_.append(data);
  }
  bool has_input() const { return pos_ < in_.size(); }
  bool ended() const { return ended_; }

  // Decodes what it can into *out (at most max bytes).
  Status Inflate(std::string* out, size_t max, bool* consumed) {
    *consumed = false;
    if (ended_) {
      SkipAfterEnd();
      if (ended_) return Ok();
    }
    if (!started_) {
      WARD_TRY(Start());
      if (!started_) return Ok();  // not enough bytes yet to tell zlib from raw deflate
    }
    const size_t old = out->size();
    out->resize(old + max);
    z_.next_in = reinterpret_cast<Bytef*>(in_.data() + pos_);
    z_.avail_in = static_cast<uInt>(std::min<size_t>(in_.size() - pos_, UINT32_MAX));
    z_.next_out = reinterpret_cast<Bytef*>(out->data() + old);
    z_.avail_out = static_cast<uInt>(max);
    const uInt avail_in = z_.avail_in;
    int rc = inflate(&z_, Z_NO_FLUSH);
    pos_ += avail_in - z_.avail_in;
    *consumed = z_.avail_in != avail_in;
    out->resize(old + (max - z_.avail_out));
    switch (rc) {
      case Z_OK:
      case Z_BUF_ERROR:  // no progress without more input (or more room)
        return Ok();
      case Z_STREAM_END:
        ended_ = true;
        SkipAfterEnd();
        return Ok();
      default:
        return InvalidArgument(std::string("corrupt ") + Name() + " data" +
                               (z_.msg != nullptr ? std::string(": ") + z_.msg : ""));
    }
  }

  // Inflates the input it holds while that consumes input without output (a header going by);
  // *produced: *out grew. Otherwise it needs more input.
  Status InflateBuffered(std::string* out, size_t max, bool* produced) {
    *produced = false;
    while (has_input()) {
      const size_t had = out->size();
      bool consumed = false;
      WARD_TRY(Inflate(out, max, &consumed));
      *produced = out->size() > had;
      if (*produced || !consumed) return Ok();
    }
    return Ok();
  }

 private:
  const char* Name() const { return coding_ == Coding::kGzip ? "gzip" : "deflate"; }

  Status Start() {
    int window = MAX_WBITS + 16;  // gzip
    if (coding_ == Coding::kDeflate) {
      if (in_.size() - pos_ < 2) return Ok();
      bool zlib =
          IsZlibHeader(static_cast<uint8_t>(in_[pos_]), static_cast<uint8_t>(in_[pos_ + 1]));
      window = zlib ? MAX_WBITS : -MAX_WBITS;
    }
    z_ = {};
    if (inflateInit2(&z_, window) != Z_OK) {
      return Error(Code::kResourceExhausted, std::string("cannot start a ") + Name() + " decoder");
    }
    started_ = true;
    return Ok();
  }

  // After a complete stream: another gzip member goes on (RFC 1952 allows several); anything
  // else is dropped, never passed on undecoded.
  void SkipAfterEnd() {
    if (!has_input()) return;
    if (coding_ == Coding::kGzip && static_cast<uint8_t>(in_[pos_]) == 0x1f) {
      inflateReset(&z_);
      ended_ = false;
      return;
    }
    pos_ = in_.size();
  }

  const Coding coding_;
  z_stream z_{};
  bool started_ = false;
  bool ended_ = false;
  std::string in_;
  size_t pos_ = 0;
};

ContentDecoder::~ContentDecoder() = default;

Result<std::unique_ptr<ContentDecoder>> ContentDecoder::ForFields(
    const std::vector<std::string_view>& fields, ContentDecodeLimits limits) {
  std::vector<std::string> names;
  for (std::string_view field : fields) {
    while (!field.empty()) {
      size_t comma = field.find(',');
      std::string name = AsciiLower(TrimOws(field.substr(0, comma)));
      field = comma == std::string_view::npos ? std::string_view() : field.substr(comma + 1);
      if (name.empty()) continue;
      Coding c = Classify(name);
      if (c == Coding::kUnsupported) {
        return Error(Code::kFailedPrecondition, "content coding '" + QuoteUntrusted(name, 32) +
                                                    "' cannot be decoded (gzip and deflate can)");
      }
      if (c != Coding::kIdentity) names.push_back(std::move(name));
    }
  }
  if (names.empty()) return std::unique_ptr<ContentDecoder>();
  std::unique_ptr<ContentDecoder> d(new ContentDecoder());
  d->limits_ = limits;
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    d->layers_.push_back(std::make_unique<Layer>(Classify(*it)));
  }
  d->names_ = std::move(names);
  return d;
}

void ContentDecoder::Push(std::string_view encoded) {
  encoded_ += encoded.size();
  layers_.front()->Append(encoded);
}

Status ContentDecoder::Pull(std::string* out, size_t max) {
  if (max == 0) return Ok();
  const size_t before = out->size();
  // The innermost coding produces the body; each layer refills from the one around it.
  auto pull = [&](auto& self, size_t i, std::string* dst, size_t room) -> Status {
    Layer& layer = *layers_[i];
    while (true) {
      bool produced = false;
      WARD_TRY(layer.InflateBuffered(dst, room, &produced));
      if (produced || i == 0) return Ok();
      std::string more;
      WARD_TRY(self(self, i - 1, &more, kLayerPull));
      if (more.empty()) return Ok();
      layer.Append(more);
    }
  };
  WARD_TRY(pull(pull, layers_.size() - 1, out, max));
  decoded_ += out->size() - before;
  return CheckLimits();
}

Status ContentDecoder::CheckLimits() const {
  if (decoded_ > limits_.max_decoded) {
    return Error(Code::kResourceExhausted, "the decoded body is larger than " +
                                               std::to_string(limits_.max_decoded) + " bytes");
  }
  if (decoded_ > limits_.ratio_after &&
      decoded_ / std::max<uint64_t>(encoded_, 1) > limits_.max_ratio) {
    return Error(Code::kResourceExhausted, "the body decodes to more than " +
                                               std::to_string(limits_.max_ratio) +
                                               " times its size (a decompression bomb)");
  }
  return Ok();
}

Status ContentDecoder::Finish() {
  if (encoded_ == 0) return Ok();  // an empty body, whatever it claims to be encoded with
  for (const auto& layer : layers_) {
    if (!layer->ended()) return InvalidArgument("the encoded body ends before its stream does");
  }
  return Ok();
}

}  // namespace ward::net
