// ClientHello peeking: never reads beyond the bound; prefixes of an input that yields a Hello
// need more; the SNI it reports is already normalised.
#include "fuzz_util.h"
#include "net/idna.h"
#include "net/tls_client_hello.h"

using namespace ward::net;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in = ward::fuzz::AsText(data, size);
  ClientHelloParse r = ParseClientHello(in);
  if (r.kind == ClientHelloParse::Kind::kNeedMore) {
    FUZZ_CHECK(in.size() < kMaxClientHelloPeek);
    return 0;
  }
  if (r.kind != ClientHelloParse::Kind::kHello) {
    FUZZ_CHECK(!r.reason.empty());
    return 0;
  }
  if (r.hello.sni) {
    FUZZ_CHECK(!r.hello.sni->is_address());
    auto again = NormalizeHost(r.hello.sni->name);
    FUZZ_CHECK(again.ok() && *again == r.hello.sni->name);
  }
  for (const auto& p : r.hello.alpn) FUZZ_CHECK(!p.empty() && p.size() <= 255);
  // A prefix cut by the input's last byte must not already be a verdict other than NeedMore,
  // unless the Hello was complete before the cut.
  size_t cut = static_cast<size_t>(in.back()) * in.size() / 256;
  ClientHelloParse p = ParseClientHello(in.substr(0, cut));
  FUZZ_CHECK(p.kind == ClientHelloParse::Kind::kNeedMore ||
             p.kind == ClientHelloParse::Kind::kHello);
  return 0;
}
