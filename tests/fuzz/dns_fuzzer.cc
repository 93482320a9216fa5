// DNS queries: parse hostile messages, then build every kind of answer the stub gives for
// what parsed; answers respect the transport limit; TCP framing round-trips.
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "net/dns_message.h"

using namespace ward::net;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in = ward::fuzz::AsText(data, size);

  DnsTcpFrame f = ExtractDnsTcpFrame(in);
  if (f.kind == DnsTcpFrame::Kind::kFrame) {
    FUZZ_CHECK(f.consumed == f.message.size() + 2 && f.consumed <= in.size());
    auto framed = FrameDnsTcp(f.message);
    FUZZ_CHECK(framed.ok() && std::string_view(*framed) == in.substr(0, f.consumed));
  }

  DnsQueryParse p = ParseDnsQuery(in);
  switch (p.kind) {
    case DnsQueryParse::Kind::kDrop:
      return 0;
    case DnsQueryParse::Kind::kFormErr:
    case DnsQueryParse::Kind::kNotImp:
      FUZZ_CHECK(BuildDnsErrorResponse(in, DnsRcode::kFormErr).size() == 12);
      return 0;
    case DnsQueryParse::Kind::kQuery:
      break;
  }
  const DnsQuery& q = p.query;
  FUZZ_CHECK(q.question.labels.size() <= 127);
  size_t limit = q.MaxUdpResponse();
  FUZZ_CHECK(limit >= 512 && limit <= 1232);
  for (DnsRcode rc :
       {DnsRcode::kNxDomain, DnsRcode::kRefused, DnsRcode::kServFail, DnsRcode::kNoError}) {
    auto r = BuildDnsResponse(q, rc, {}, limit);
    FUZZ_CHECK(r.ok());
    FUZZ_CHECK(r->size() <= limit);
    FUZZ_CHECK(r->substr(0, 2) == in.substr(0, 2));  // the ID is echoed
  }
  auto bad = BuildDnsResponse(q, DnsRcode::kBadVers, {}, limit);
  FUZZ_CHECK(bad.ok() == q.has_edns);
  std::vector<IpAddress> addrs;
  for (size_t i = 0; i < size % 40; ++i) {
    addrs.push_back(i % 2 ? IpAddress::V4(static_cast<uint32_t>(i)) : IpAddress::MappedV6(7));
  }
  auto a = BuildDnsAddressResponse(q, {"cdn.example", "edge.cdn.example"}, addrs, 60, limit);
  FUZZ_CHECK(a.ok());
  FUZZ_CHECK(a->size() <= limit);
  auto tcp = BuildDnsAddressResponse(q, {}, addrs, 60, kDnsMaxMessage);
  FUZZ_CHECK(tcp.ok());
  FUZZ_CHECK(FrameDnsTcp(*tcp).ok());
  return 0;
}
