// The chunked decoder: whole vs. split feeding must give the same bytes and verdict; decoded
// output never exceeds the input; re-encoding the body decodes back to it.
#include <string>

#include "fuzz_util.h"
#include "net/http_parser.h"

using namespace ward::net;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in = ward::fuzz::AsText(data, size);
  ChunkedDecoder whole;
  std::string out_a;
  HttpParse a = whole.Feed(in, &out_a);
  FUZZ_CHECK(out_a.size() <= in.size());

  ChunkedDecoder split;
  std::string out_b;
  HttpParse b;
  size_t consumed = 0;
  size_t step = ward::fuzz::StepFor(in);
  for (size_t i = 0; i < in.size(); i += step) {
    b = split.Feed(in.substr(i, step), &out_b);
    consumed += b.consumed;
    if (!b.need_more()) break;
  }
  if (in.empty()) b = split.Feed(in, &out_b);
  FUZZ_CHECK(a.kind == b.kind);
  if (a.error()) return 0;  // output before the error may differ by where the split fell
  FUZZ_CHECK(out_a == out_b);
  FUZZ_CHECK(whole.body_bytes() == out_a.size());
  if (!a.done()) return 0;
  FUZZ_CHECK(consumed == a.consumed);

  std::string wire = EncodeChunk(out_a) + std::string(kLastChunk);
  ChunkedDecoder again;
  std::string round;
  HttpParse r = again.Feed(wire, &round);
  FUZZ_CHECK(r.done() && r.consumed == wire.size());
  FUZZ_CHECK(round == out_a);
  return 0;
}
