#include "net/dns_message.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ward::net {
namespace {

void U16(std::string& s, uint16_t v) {
  s += static_cast<char>(v >> 8);
  s += static_cast<char>(v & 0xff);
}

uint16_t Get16(const std::string& s, size_t i) {
  return static_cast<uint16_t>((static_cast<uint8_t>(s[i]) << 8) | static_cast<uint8_t>(s[i + 1]));
}

std::string Name(const std::string& dotted) {
  std::string out;
  size_t start = 0;
  while (start < dotted.size()) {
    size_t end = dotted.find('.', start);
    if (end == std::string::npos) end = dotted.size();
    out += static_cast<char>(end - start);
    out += dotted.substr(start, end - start);
    start = end + 1;
  }
  return out + '\0';
}

std::string Header(uint16_t id, uint16_t flags, uint16_t qd, uint16_t an, uint16_t ns,
                   uint16_t ar) {
  std::string h;
  U16(h, id);
  U16(h, flags);
  U16(h, qd);
  U16(h, an);
  U16(h, ns);
  U16(h, ar);
  return h;
}

std::string Opt(uint16_t udp, uint8_t version = 0, bool dnssec_ok = false) {
  std::string o("\0", 1);
  U16(o, kDnsTypeOpt);
  U16(o, udp);
  o += '\0';  // extended rcode
  o += static_cast<char>(version);
  U16(o, dnssec_ok ? 0x8000 : 0);
  U16(o, 0);
  return o;
}

std::string Query(const std::string& name, uint16_t qtype, uint16_t id = 0x1234,
                  uint16_t flags = 0x0100, const std::string& additional = "", uint16_t ar = 0) {
  std::string q = Header(id, flags, 1, 0, 0, ar) + Name(name);
  U16(q, qtype);
  U16(q, kDnsClassIn);
  return q + additional;
}

DnsQuery MustParse(const std::string& m) {
  DnsQueryParse p = ParseDnsQuery(m);
  EXPECT_EQ(p.kind, DnsQueryParse::Kind::kQuery) << p.reason;
  return p.query;
}

TEST(DnsQueryTest, ParsesAQuery) {
  DnsQuery q = MustParse(Query("WwW.Example.com", kDnsTypeAaaa));
  EXPECT_EQ(q.id, 0x1234);
  EXPECT_TRUE(q.rd);
  EXPECT_FALSE(q.cd);
  EXPECT_EQ(q.question.name, "WwW.Example.com");  // case kept: it is echoed
  EXPECT_EQ(q.question.labels.size(), 3u);
  EXPECT_EQ(q.question.qtype, kDnsTypeAaaa);
  EXPECT_EQ(q.question.qclass, kDnsClassIn);
  EXPECT_FALSE(q.has_edns);
  EXPECT_EQ(q.MaxUdpResponse(), 512u);

  DnsQuery root = MustParse(Query("", 2));
  EXPECT_EQ(root.question.name, "");
  EXPECT_TRUE(root.question.labels.empty());
}

TEST(DnsQueryTest, Edns) {
  DnsQuery q = MustParse(Query("example.com", kDnsTypeA, 1, 0x0110, Opt(4096, 0, true), 1));
  EXPECT_TRUE(q.has_edns);
  EXPECT_TRUE(q.cd);
  EXPECT_EQ(q.edns_udp_size, 4096);
  EXPECT_TRUE(q.edns_do);
  EXPECT_EQ(q.MaxUdpResponse(), 1232u);
  EXPECT_EQ(MustParse(Query("example.com", kDnsTypeA, 1, 0, Opt(100), 1)).MaxUdpResponse(), 512u);
  DnsQuery v1 = MustParse(Query("example.com", kDnsTypeA, 1, 0, Opt(1232, 1), 1));
  EXPECT_EQ(v1.edns_version, 1);
  auto badvers = BuildDnsResponse(v1, DnsRcode::kBadVers, {}, 512);
  ASSERT_TRUE(badvers.ok());
  EXPECT_EQ(Get16(*badvers, 2) & 0xf, 0);                               // low bits 0
  EXPECT_EQ(static_cast<uint8_t>((*badvers)[badvers->size() - 6]), 1);  // extended rcode 1
  // Other additional records (e.g. TSIG) are tolerated and ignored.
  std::string tsig = Name("key.example");
  U16(tsig, 250);
  U16(tsig, 255);
  tsig += std::string(4, '\0');
  U16(tsig, 3);
  tsig += "abc";
  EXPECT_FALSE(MustParse(Query("example.com", kDnsTypeA, 1, 0, tsig + Opt(1232), 2)).edns_do);
}

TEST(DnsQueryTest, DropsAndErrors) {
  using K = DnsQueryParse::Kind;
  struct Case {
    const char* what;
    std::string msg;
    K kind;
  } cases[] = {
      {"empty", "", K::kDrop},
      {"short header", std::string(11, '\0'), K::kDrop},
      {"response", Query("example.com", 1, 1, 0x8100), K::kDrop},
      {"opcode NOTIFY", Query("example.com", 1, 1, 0x2000), K::kNotImp},
      {"opcode UPDATE", Query("example.com", 1, 1, 0x2800), K::kNotImp},
      {"qdcount 0", Header(1, 0, 0, 0, 0, 0), K::kFormErr},
      {"qdcount 2",
       Header(1, 0, 2, 0, 0, 0) + Name("a") + std::string("\0\1\0\1", 4) + Name("b") +
           std::string("\0\1\0\1", 4),
       K::kFormErr},
      {"answers in query", Header(1, 0, 1, 1, 0, 0) + Name("a") + std::string("\0\1\0\1", 4),
       K::kFormErr},
      {"truncated name", Header(1, 0, 1, 0, 0, 0) + "\x05" + "abc", K::kFormErr},
      {"truncated question", Header(1, 0, 1, 0, 0, 0) + Name("a") + std::string("\0", 1),
       K::kFormErr},
      {"trailing bytes", Query("a", 1) + "x", K::kFormErr},
      {"label type 0x40", Header(1, 0, 1, 0, 0, 0) + "\x41" + std::string(4, '\0'), K::kFormErr},
      {"label type 0x80", Header(1, 0, 1, 0, 0, 0) + "\x81" + std::string(4, '\0'), K::kFormErr},
      {"two OPTs", Query("a", 1, 1, 0, Opt(512) + Opt(512), 2), K::kFormErr},
      {"OPT not at root", Query("a", 1, 1, 0, Name("x") + Opt(512).substr(1), 1), K::kFormErr},
      {"missing additional", Query("a", 1, 1, 0, "", 1), K::kFormErr},
      {"rdata overrun", Query("a", 1, 1, 0, Opt(512).substr(0, 9) + "\x00\x09", 1), K::kFormErr},
  };
  for (const auto& c : cases) {
    DnsQueryParse p = ParseDnsQuery(c.msg);
    EXPECT_EQ(p.kind, c.kind) << c.what << ": " << p.reason;
    EXPECT_FALSE(p.reason.empty()) << c.what;
  }
}

TEST(DnsQueryTest, CompressionLoopsAndLengths) {
  // The question name is a pointer to itself: a loop.
  std::string self = Header(1, 0, 1, 0, 0, 0) + "\xc0\x0c" + std::string("\0\1\0\1", 4);
  EXPECT_EQ(ParseDnsQuery(self).kind, DnsQueryParse::Kind::kFormErr);
  // A forward pointer (past the end, or ahead of itself).
  std::string fwd = Header(1, 0, 1, 0, 0, 0) + "\xc0\x20" + std::string("\0\1\0\1", 4);
  EXPECT_EQ(ParseDnsQuery(fwd).kind, DnsQueryParse::Kind::kFormErr);
  // Two pointers bouncing between each other inside the header area.
  std::string ping = Header(0xc002, 0xc000, 1, 0, 0, 0);  // id and flags look like pointers
  ping += "\xc0\x00" + std::string("\0\1\0\1", 4);
  EXPECT_EQ(ParseDnsQuery(ping).kind, DnsQueryParse::Kind::kDrop);  // QR bit set by the flags
  std::string pong = Header(0xc002, 0x00c0, 1, 0, 0, 0) + "\xc0\x00" + std::string("\0\1\0\1", 4);
  EXPECT_EQ(ParseDnsQuery(pong).kind, DnsQueryParse::Kind::kFormErr);
  // A pointer truncated at the end.
  std::string cut = Header(1, 0, 1, 0, 0, 0) + "\xc0";
  EXPECT_EQ(ParseDnsQuery(cut).kind, DnsQueryParse::Kind::kFormErr);
  // A backwards pointer in an additional record's owner name is fine (but not for OPT).
  std::string opt_owner = Query("example.com", 1, 1, 0, "\xc0\x0c" + Opt(512).substr(1), 1);
  EXPECT_EQ(ParseDnsQuery(opt_owner).kind, DnsQueryParse::Kind::kFormErr);
  std::string other("\xc0\x0c", 2);
  U16(other, 16);
  U16(other, 1);
  other += std::string(4, '\0');
  U16(other, 0);
  EXPECT_EQ(ParseDnsQuery(Query("example.com", 1, 1, 0, other, 1)).kind,
            DnsQueryParse::Kind::kQuery);
  // 255 octets is the limit for a name: 4 labels of 63 = 4*64+1 = 257.
  std::string l63(63, 'a');
  EXPECT_EQ(ParseDnsQuery(Query(l63 + "." + l63 + "." + l63 + "." + l63, 1)).kind,
            DnsQueryParse::Kind::kFormErr);
  EXPECT_EQ(ParseDnsQuery(Query(l63 + "." + l63 + "." + l63 + "." + std::string(61, 'b'), 1)).kind,
            DnsQueryParse::Kind::kQuery);
}

TEST(DnsQueryTest, OddLabelBytesCannotPassForSeparators) {
  std::string weird = Header(1, 0, 1, 0, 0, 0) + std::string(
                                                     "\x0b"
                                                     "example.com\x03"
                                                     "net\0",
                                                     17);
  U16(weird, 1);
  U16(weird, 1);
  DnsQuery q = MustParse(weird);
  EXPECT_EQ(q.question.labels.size(), 2u);
  EXPECT_EQ(q.question.name, "example\\046com.net");
  std::string bin = Header(1, 0, 1, 0, 0, 0) + std::string(
                                                   "\x03"
                                                   "a\0 \0",
                                                   5);
  U16(bin, 1);
  U16(bin, 1);
  EXPECT_EQ(MustParse(bin).question.name, "a\\000\\032");
}

TEST(DnsResponseTest, AddressAnswersEchoTheQuestion) {
  std::string raw = Query("WwW.Example.com", kDnsTypeA, 0xbeef, 0x0100);
  DnsQuery q = MustParse(raw);
  auto r = BuildDnsAddressResponse(
      q, {}, {*IpAddress::Parse("93.184.216.34"), *IpAddress::Parse("2606:4700::1")}, 300, 512);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string& m = *r;
  EXPECT_EQ(Get16(m, 0), 0xbeef);
  uint16_t flags = Get16(m, 2);
  EXPECT_TRUE(flags & 0x8000);  // QR
  EXPECT_TRUE(flags & 0x0100);  // RD echoed
  EXPECT_TRUE(flags & 0x0080);  // RA
  EXPECT_EQ(flags & 0xf, 0);    // NOERROR
  EXPECT_EQ(Get16(m, 4), 1);    // question
  EXPECT_EQ(Get16(m, 6), 1);    // only the IPv4 answer fits an A question
  EXPECT_EQ(m.substr(12, raw.size() - 12), raw.substr(12));  // question echoed byte for byte
  std::string answer = m.substr(raw.size());
  EXPECT_EQ(Get16(answer, 0), 0xc00c);  // owner compressed to the question
  EXPECT_EQ(Get16(answer, 2), kDnsTypeA);
  EXPECT_EQ(Get16(answer, 4), kDnsClassIn);
  EXPECT_EQ((Get16(answer, 6) << 16) | Get16(answer, 8), 300);  // TTL
  EXPECT_EQ(Get16(answer, 10), 4);                              // rdlength
  EXPECT_EQ(answer.substr(12), std::string("\x5d\xb8\xd8\x22", 4));

  DnsQuery q6 = MustParse(Query("example.com", kDnsTypeAaaa));
  auto r6 = BuildDnsAddressResponse(
      q6, {}, {*IpAddress::Parse("93.184.216.34"), *IpAddress::Parse("2606:4700::1")}, 60, 512);
  ASSERT_TRUE(r6.ok());
  EXPECT_EQ(Get16(*r6, 6), 1);
  EXPECT_EQ(r6->size(), 12 + 17 + 12 + 16u);
}

TEST(DnsResponseTest, CnameChain) {
  DnsQuery q = MustParse(Query("www.example.com", kDnsTypeA));
  auto r = BuildDnsAddressResponse(q, {"edge.cdn.example", "e1.cdn.example"},
                                   {*IpAddress::Parse("192.0.2.1")}, 30, 512);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Get16(*r, 6), 3);  // two CNAMEs and one A
  // The A record's owner repeats the last CNAME target: compressed to a pointer.
  size_t a_owner = r->size() - 16;
  EXPECT_EQ(static_cast<uint8_t>((*r)[a_owner]) & 0xc0, 0xc0);
  // No matching address: the chain alone (NOERROR, no data).
  auto nodata = BuildDnsAddressResponse(q, {"x.example"}, {}, 30, 512);
  ASSERT_TRUE(nodata.ok());
  EXPECT_EQ(Get16(*nodata, 6), 1);
  // Invalid chain names are refused rather than written.
  EXPECT_FALSE(BuildDnsAddressResponse(q, {"bad..name"}, {}, 30, 512).ok());
  EXPECT_FALSE(BuildDnsAddressResponse(q, {std::string(64, 'a') + ".x"}, {}, 30, 512).ok());
  EXPECT_FALSE(BuildDnsAddressResponse(q, {"a b.example"}, {}, 30, 512).ok());
}

TEST(DnsResponseTest, RcodesAndEmptyAnswers) {
  DnsQuery q = MustParse(Query("blocked.example", kDnsTypeA, 7, 0x0000, Opt(1232), 1));
  for (DnsRcode rc :
       {DnsRcode::kNxDomain, DnsRcode::kRefused, DnsRcode::kServFail, DnsRcode::kNoError}) {
    auto r = BuildDnsResponse(q, rc, {}, 512);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(Get16(*r, 0), 7);
    EXPECT_EQ(Get16(*r, 2) & 0xf, static_cast<uint16_t>(rc));
    EXPECT_FALSE(Get16(*r, 2) & 0x0100);  // RD was clear
    EXPECT_EQ(Get16(*r, 6), 0);
    EXPECT_EQ(Get16(*r, 10), 1);  // our OPT
  }
  DnsQuery plain = MustParse(Query("x.example", kDnsTypeA));
  EXPECT_FALSE(BuildDnsResponse(plain, DnsRcode::kBadVers, {}, 512).ok());
  DnsRecord wrong;
  wrong.name = plain.question.name;
  wrong.type = kDnsTypeA;
  wrong.address = *IpAddress::Parse("::1");
  EXPECT_FALSE(BuildDnsResponse(plain, DnsRcode::kNoError, {wrong}, 512).ok());
}

TEST(DnsResponseTest, TruncatesToTheTransportLimit) {
  DnsQuery q = MustParse(Query("many.example", kDnsTypeA));
  std::vector<IpAddress> addrs;
  for (int i = 0; i < 60; ++i) addrs.push_back(IpAddress::V4(10, 0, 0, static_cast<uint8_t>(i)));
  auto udp = BuildDnsAddressResponse(q, {}, addrs, 60, q.MaxUdpResponse());
  ASSERT_TRUE(udp.ok());
  EXPECT_LE(udp->size(), 512u);
  EXPECT_TRUE(Get16(*udp, 2) & 0x0200);  // TC
  EXPECT_EQ(Get16(*udp, 6), 0);
  auto tcp = BuildDnsAddressResponse(q, {}, addrs, 60, kDnsMaxMessage);
  ASSERT_TRUE(tcp.ok());
  EXPECT_FALSE(Get16(*tcp, 2) & 0x0200);
  EXPECT_EQ(Get16(*tcp, 6), 60);
}

TEST(DnsErrorResponseTest, HeaderOnly) {
  std::string raw = Query("x", 1, 0xabcd, 0x2100);  // opcode 4 (NOTIFY), RD
  std::string r = BuildDnsErrorResponse(raw, DnsRcode::kNotImp);
  ASSERT_EQ(r.size(), 12u);
  EXPECT_EQ(Get16(r, 0), 0xabcd);
  EXPECT_EQ(Get16(r, 2), 0x8000 | 0x2000 | 0x0100 | 0x0080 | 4);
  EXPECT_EQ(Get16(r, 4), 0);
  EXPECT_EQ(BuildDnsErrorResponse("", DnsRcode::kFormErr), "");
  EXPECT_EQ(BuildDnsErrorResponse("\x12", DnsRcode::kFormErr), "");
  EXPECT_EQ(Get16(BuildDnsErrorResponse("\x12\x34", DnsRcode::kFormErr), 0), 0x1234);
}

TEST(DnsTcpTest, Framing) {
  auto f = FrameDnsTcp("hello");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f, std::string("\0\5hello", 7));
  EXPECT_FALSE(FrameDnsTcp("").ok());
  EXPECT_FALSE(FrameDnsTcp(std::string(70000, 'x')).ok());

  std::string two = *f + *FrameDnsTcp("abc");
  for (size_t n = 0; n < 7; ++n) {
    EXPECT_EQ(ExtractDnsTcpFrame(two.substr(0, n)).kind, DnsTcpFrame::Kind::kNeedMore) << n;
  }
  DnsTcpFrame a = ExtractDnsTcpFrame(two);
  ASSERT_EQ(a.kind, DnsTcpFrame::Kind::kFrame);
  EXPECT_EQ(a.message, "hello");
  EXPECT_EQ(a.consumed, 7u);
  DnsTcpFrame b = ExtractDnsTcpFrame(std::string_view(two).substr(a.consumed));
  ASSERT_EQ(b.kind, DnsTcpFrame::Kind::kFrame);
  EXPECT_EQ(b.message, "abc");
  EXPECT_EQ(ExtractDnsTcpFrame(std::string("\0\0", 2)).kind, DnsTcpFrame::Kind::kError);
}

}  // namespace
}  // namespace ward::net
