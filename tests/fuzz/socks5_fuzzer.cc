// SOCKS5 greeting and request: consumed is within the input and within the protocol's maximum;
// every strict prefix of a complete message is kNeedMore; replies have the fixed shape.
#include "fuzz_util.h"
#include "net/egress_rules.h"
#include "net/socks5.h"

using namespace ward::net;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in = ward::fuzz::AsText(data, size);

  Socks5Greeting g;
  Socks5Parse pg = ParseSocks5Greeting(in, &g);
  if (pg.kind == Socks5Parse::Kind::kDone) {
    FUZZ_CHECK(pg.consumed <= in.size() && pg.consumed <= kSocks5MaxGreeting);
    FUZZ_CHECK(g.methods.size() + 2 == pg.consumed);
    Socks5Greeting p;
    FUZZ_CHECK(ParseSocks5Greeting(in.substr(0, pg.consumed - 1), &p).kind ==
               Socks5Parse::Kind::kNeedMore);
  }

  Socks5Request req;
  Socks5Parse pr = ParseSocks5Request(in, &req);
  if (pr.kind == Socks5Parse::Kind::kDone) {
    FUZZ_CHECK(pr.consumed <= in.size() && pr.consumed <= kSocks5MaxRequest);
    FUZZ_CHECK(req.port != 0);
    FUZZ_CHECK(req.address_type != Socks5AddressType::kDomain ||
               (!req.domain.empty() && req.domain.size() <= 255));
    for (size_t n = 0; n < pr.consumed; n += 1 + n / 8) {
      Socks5Request p;
      FUZZ_CHECK(ParseSocks5Request(in.substr(0, n), &p).kind == Socks5Parse::Kind::kNeedMore);
    }
    // What the proxy does next: check the destination.
    EgressRules none;
    FUZZ_CHECK(!none.CheckName(req.HostText(), req.port).allowed);
  }
  if (pr.kind == Socks5Parse::Kind::kError && pr.send_reply) {
    std::string reply = BuildSocks5Reply(pr.reply);
    FUZZ_CHECK(reply.size() == 10 && reply[0] == 5);
  }
  return 0;
}
