// Content codings decoded for the credential broker's scan: gzip (one or several members),
// deflate (zlib-wrapped or raw), stacked codings, any split of the input; unknown codings
// refused by name; corrupt and truncated streams, bodies past the size bound and decompression
// bombs end in errors, never in output that skipped decoding.
#include "net/content_decoder.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <string>

namespace ward::net {
namespace {

std::string Deflate(std::string_view data, int window_bits, int level = 6) {
  z_stream z{};
  deflateInit2(&z, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}
std::string Gzip(std::string_view d) { return Deflate(d, MAX_WBITS + 16); }

std::unique_ptr<ContentDecoder> Make(std::vector<std::string_view> fields,
                                     ContentDecodeLimits limits = {}) {
  auto d = ContentDecoder::ForFields(fields, limits);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? std::move(d).value() : nullptr;
}

// Feeds `encoded` in pieces of `piece` bytes, pulling at most `pull` at a time.
Result<std::string> Decode(ContentDecoder& d, std::string_view encoded, size_t piece,
                           size_t pull = 4096) {
  std::string out;
  for (size_t i = 0; i < encoded.size(); i += piece) {
    d.Push(encoded.substr(i, piece));
    while (true) {
      size_t before = out.size();
      WARD_TRY(d.Pull(&out, pull));
      if (out.size() == before) break;
      EXPECT_LE(out.size() - before, pull);
    }
  }
  WARD_TRY(d.Finish());
  return out;
}

std::string Text(size_t n) {
  std::mt19937 rng(1);
  std::string s;
  while (s.size() < n) s += "line " + std::to_string(rng() % 1000) + " of some echoed text\n";
  return s.substr(0, n);
}

TEST(ContentDecoderTest, IdentityNeedsNoDecoder) {
  auto d = ContentDecoder::ForFields({});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, nullptr);
  d = ContentDecoder::ForFields({"identity", " Identity "});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, nullptr);
}

TEST(ContentDecoderTest, GzipAndDeflateInAnyPieces) {
  const std::string text = Text(300000);
  struct Case {
    const char* field;
    std::string encoded;
  } cases[] = {{"gzip", Gzip(text)},
               {"x-gzip", Gzip(text)},
               {"GZIP", Gzip(text)},
               {"deflate", Deflate(text, MAX_WBITS)},
               {"deflate", Deflate(text, -MAX_WBITS)}};  // raw, as some servers send it
  for (const Case& c : cases) {
    for (size_t piece : {1, 7, 4096, 1 << 20}) {
      SCOPED_TRACE(std::string(c.field) + " in pieces of " + std::to_string(piece));
      auto d = Make({c.field});
      ASSERT_NE(d, nullptr);
      auto out = Decode(*d, c.encoded, piece, piece == 1 ? 1 : 4096);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ(*out, text);
      EXPECT_EQ(d->decoded_bytes(), text.size());
    }
  }
}

TEST(ContentDecoderTest, StackedCodingsAndGzipMembers) {
  const std::string text = Text(50000);
  // Applied deflate first, then gzip: listed in that order, in one field or two.
  for (auto fields : {std::vector<std::string_view>{"deflate, gzip"},
                      std::vector<std::string_view>{"deflate", "gzip"}}) {
    auto d = Make(fields);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->codings(), (std::vector<std::string>{"deflate", "gzip"}));
    auto out = Decode(*d, Gzip(Deflate(text, MAX_WBITS)), 333);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(*out, text);
  }
  // Two gzip members in a row (RFC 1952) decode to both texts.
  auto d = Make({"gzip"});
  auto out = Decode(*d, Gzip("first;") + Gzip("second"), 5);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "first;second");
}

TEST(ContentDecoderTest, CodingsItCannotDecodeAreRefusedByName) {
  for (const char* field : {"br", "zstd", "compress", "gzip, br", "x-custom"}) {
    auto d = ContentDecoder::ForFields({field});
    ASSERT_FALSE(d.ok()) << field;
    EXPECT_EQ(d.status().code(), Code::kFailedPrecondition);
    EXPECT_NE(d.status().message().find("cannot be decoded"), std::string::npos);
  }
  auto d = ContentDecoder::ForFields({"gzip", "br"});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("'br'"), std::string::npos) << d.status().message();
}

TEST(ContentDecoderTest, CorruptAndTruncatedStreamsAreErrors) {
  const std::string text = Text(20000);
  std::string g = Gzip(text);
  std::string bad = g;
  for (size_t i = 12; i < bad.size(); i += 5) bad[i] = static_cast<char>(bad[i] ^ 0x33);
  auto d = Make({"gzip"});
  auto out = Decode(*d, bad, 1000);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);

  d = Make({"gzip"});
  out = Decode(*d, g.substr(0, g.size() / 2), 1000);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("ends before"), std::string::npos);

  d = Make({"gzip"});
  out = Decode(*d, "not gzip at all", 100);
  ASSERT_FALSE(out.ok());

  // An empty body is empty, whatever it claims.
  d = Make({"gzip"});
  out = Decode(*d, "", 1);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "");
}

TEST(ContentDecoderTest, BombsAndOversizedBodiesStopEarly) {
  // About a thousand to one: a bomb.
  std::string zeros(32 << 20, '\0');
  std::string bomb = Deflate(zeros, MAX_WBITS + 16, 9);
  auto d = Make({"gzip"});
  auto out = Decode(*d, bomb, 16384, 64 << 10);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kResourceExhausted);
  EXPECT_NE(out.status().message().find("bomb"), std::string::npos);
  EXPECT_LT(d->decoded_bytes(), size_t{8} << 20) << "stopped once past the ratio";

  // Past the size bound.
  ContentDecodeLimits small;
  small.max_decoded = 100000;
  d = Make({"gzip"}, small);
  out = Decode(*d, Gzip(Text(300000)), 4096);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kResourceExhausted);
  EXPECT_LE(d->decoded_bytes(), 100000u + 4096u);

  // Control: ordinary text compresses far less than the ratio allows.
  d = Make({"gzip"});
  out = Decode(*d, Gzip(Text(8 << 20)), 65536, 65536);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->size(), size_t{8} << 20);
}

}  // namespace
}  // namespace ward::net
