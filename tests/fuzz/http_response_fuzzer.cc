// Response heads: whole vs. split feeding must agree; what we send to the client must parse
// again with the framing we promised.
#include "fuzz_util.h"
#include "net/http_parser.h"

using namespace ward::net;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  bool head_request = data[0] & 1;
  std::string_view in = ward::fuzz::AsText(data + 1, size - 1);
  HttpResponseParser whole(head_request);
  HttpParse a = whole.Feed(in);
  FUZZ_CHECK(a.consumed <= in.size());

  HttpResponseParser split(head_request);
  HttpParse b;
  size_t consumed = 0;
  size_t step = ward::fuzz::StepFor(in);
  for (size_t i = 0; i < in.size(); i += step) {
    b = split.Feed(in.substr(i, step));
    consumed += b.consumed;
    if (!b.need_more()) break;
  }
  if (in.empty()) b = split.Feed(in);
  FUZZ_CHECK(a.kind == b.kind);
  if (a.error()) FUZZ_CHECK(a.http_status == 502 && b.http_status == 502);
  if (!a.done()) return 0;
  FUZZ_CHECK(consumed == a.consumed);
  const HttpResponseHead& h = whole.head();
  FUZZ_CHECK(h.status >= 100 && h.status <= 599);
  FUZZ_CHECK(h.body == split.head().body);

  std::string out = SerializeClientResponse(h, 1, data[0] & 2);
  HttpResponseParser again(head_request, HttpLimits{16 * 1024, 128 * 1024, 200});
  HttpParse r = again.Feed(out);
  FUZZ_CHECK(r.done());
  FUZZ_CHECK(r.consumed == out.size());
  FUZZ_CHECK(again.head().status == h.status);
  FUZZ_CHECK(again.head().body == h.body);
  (void)SerializeClientResponse(h, 0, true);
  return 0;
}
