// Request heads: whole vs. split feeding must agree; a parsed absolute-form request must
// serialize into a head that parses again with the same framing.
#include "fuzz_util.h"
#include "net/http_parser.h"

using namespace ward::net;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in = ward::fuzz::AsText(data, size);
  HttpRequestParser whole;
  HttpParse a = whole.Feed(in);
  FUZZ_CHECK(a.consumed <= in.size());

  HttpRequestParser split;
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
  if (a.error()) FUZZ_CHECK(a.http_status == b.http_status && a.http_status >= 400);
  if (!a.done()) return 0;
  FUZZ_CHECK(consumed == a.consumed);
  const HttpRequestHead& h = whole.head();
  FUZZ_CHECK(h.method == split.head().method && h.target == split.head().target);
  FUZZ_CHECK(h.body == split.head().body);
  FUZZ_CHECK(h.headers.size() == split.head().headers.size());

  if (h.method == "CONNECT") {
    (void)ParseAuthorityForm(h.target);
    return 0;
  }
  auto uri = ParseAbsoluteForm(h.target);
  if (!uri.ok()) return 0;
  (void)CheckHostHeader(h.headers, *uri);
  std::string up = SerializeUpstreamRequest(h, *uri, size % 2 == 0);
  // Our own output is well-formed; limits are doubled since Host/framing fields are added.
  HttpRequestParser again(HttpLimits{16 * 1024, 128 * 1024, 200});
  HttpParse r = again.Feed(up);
  FUZZ_CHECK(r.done());
  FUZZ_CHECK(r.consumed == up.size());
  FUZZ_CHECK(again.head().body == h.body);
  FUZZ_CHECK(again.head().target == uri->origin_form);
  FUZZ_CHECK(again.head().headers.Count("Host") == 1);
  return 0;
}
