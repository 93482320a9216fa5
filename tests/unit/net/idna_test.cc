#include "net/idna.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ward::net {
namespace {

std::string Norm(std::string_view in) {
  auto r = NormalizeHost(in);
  EXPECT_TRUE(r.ok()) << in << ": " << r.status().message();
  return r.ok() ? *r : "<error>";
}

TEST(PunycodeTest, KnownEncodings) {
  struct Case {
    std::u32string in;
    const char* out;
  } cases[] = {
      {U"bücher", "bcher-kva"},
      {U"münchen", "mnchen-3ya"},
      {U"faß", "fa-hia"},
      {U"παράδειγμα", "hxajbheg2az3al"},
      {U"пример", "e1afmkfd"},
      {U"例子", "fsqu00a"},
      {U"テスト", "zckzah"},
      {U"中国", "fiqs8s"},
      {U"ü", "tda"},
      {U"ñandú", "and-6ma2c"},
      {U"Bücher", "Bcher-kva"},
      {U"abc", "abc-"},
      {U"bÜcher", "bcher-2pa"},
      {U"", ""},
  };
  for (const auto& c : cases) {
    auto enc = PunycodeEncode(c.in);
    ASSERT_TRUE(enc.ok());
    EXPECT_EQ(*enc, c.out);
    auto dec = PunycodeDecode(c.out);
    ASSERT_TRUE(dec.ok()) << c.out;
    EXPECT_EQ(*dec, c.in) << c.out;
  }
}

TEST(PunycodeTest, RejectsHostileInput) {
  // Invalid digits, non-basic before the delimiter, truncated deltas, overflow.
  for (const char* bad :
       {"abc-!", "ü-kva", "bcher-kv", "-", "-abc", "99999999999999999", "a-9999999a", "\xff"}) {
    EXPECT_FALSE(PunycodeDecode(bad).ok()) << "accepted '" << bad << "'";
  }
  // Deltas that land on a surrogate (U+D800) or beyond U+10FFFF; U+10FFFF itself decodes.
  EXPECT_FALSE(PunycodeDecode("ib9b").ok());
  EXPECT_FALSE(PunycodeDecode("en32g").ok());
  auto max = PunycodeDecode("dn32g");
  ASSERT_TRUE(max.ok());
  EXPECT_EQ(*max, std::u32string(1, 0x10FFFF));
  std::u32string surrogate = {0xD800};
  EXPECT_FALSE(PunycodeEncode(surrogate).ok());
  std::u32string too_big = {0x110000};
  EXPECT_FALSE(PunycodeEncode(too_big).ok());
  EXPECT_FALSE(PunycodeEncode(std::u32string(2000, U'ü')).ok());
  EXPECT_FALSE(PunycodeDecode(std::string(2000, 'a')).ok());
  // An output too long to decode again is refused too (found by the host fuzzer).
  std::u32string spread;
  for (int i = 0; i < 600; ++i) spread += static_cast<char32_t>(0x4E00 + 37 * i);
  EXPECT_FALSE(PunycodeEncode(spread).ok());
  spread.resize(300);
  auto fits = PunycodeEncode(spread);
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(*PunycodeDecode(*fits), spread);
}

TEST(PunycodeTest, DecodedCodePointsAreNeverBasic) {
  // Deltas start at U+0080, so decoding cannot smuggle '.', '/' or '@' into a label.
  for (const char* s : {"a", "ba", "tda", "kva", "aaaa", "999a"}) {
    auto dec = PunycodeDecode(s);
    if (!dec.ok()) continue;
    for (char32_t c : *dec) EXPECT_GE(c, 0x80u) << s;
  }
}

TEST(NormalizeHostTest, CaseTrailingDotAndIdn) {
  EXPECT_EQ(Norm("Example.COM"), "example.com");
  EXPECT_EQ(Norm("example.com."), "example.com");
  EXPECT_EQ(Norm("bücher.example"), "xn--bcher-kva.example");
  EXPECT_EQ(Norm("BÜCHER.example"), "xn--bcher-kva.example");
  EXPECT_EQ(Norm("XN--BCHER-KVA.Example."), "xn--bcher-kva.example");
  EXPECT_EQ(Norm("пример.испытание"), "xn--e1afmkfd.xn--80akhbyknj4f");
  EXPECT_EQ(Norm("ПРИМЕР.испытание"), "xn--e1afmkfd.xn--80akhbyknj4f");
  EXPECT_EQ(Norm("ΠΑΡΆΔΕΙΓΜΑ.test"), "xn--hxajbheg2az3al.test");
  EXPECT_EQ(Norm("例子.test"), "xn--fsqu00a.test");
  EXPECT_EQ(Norm("faß.de"), "xn--fa-hia.de");  // IDNA2008: ß is kept, not mapped to "ss"
  EXPECT_EQ(Norm("ＥＸＡＭＰＬＥ．ｃｏｍ"), "example.com");  // fullwidth
  EXPECT_EQ(Norm("example。com"), "example.com");            // ideographic full stop
  EXPECT_EQ(Norm("a-b.c_d.example"), "a-b.c_d.example");
  EXPECT_EQ(Norm("r3---sn-abc.googlevideo.com"), "r3---sn-abc.googlevideo.com");
  EXPECT_EQ(Norm("localhost"), "localhost");
  EXPECT_EQ(Norm("127.0.0.1.nip.io"), "127.0.0.1.nip.io");  // a name; resolution is checked
  EXPECT_EQ(Norm("1e5.example"), "1e5.example");
  EXPECT_EQ(Norm(std::string(63, 'a') + ".com"), std::string(63, 'a') + ".com");
  std::string longest = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                        std::string(63, 'c') + "." + std::string(61, 'd');  // 253 octets
  EXPECT_EQ(Norm(longest + "."), longest);
}

TEST(NormalizeHostTest, DecodesBack) {
  auto u = HostToUnicode("xn--bcher-kva.example");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(*u, "bücher.example");
  auto v = HostToUnicode("xn--e1afmkfd.xn--80akhbyknj4f");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "пример.испытание");
  EXPECT_EQ(*HostToUnicode("plain.example"), "plain.example");
  EXPECT_FALSE(HostToUnicode("xn--bcher-kv.example").ok());
}

TEST(NormalizeHostTest, IsIdempotent) {
  for (const char* in : {"Bücher.Example.", "ПРИМЕР.испытание", "ＥＸＡＭＰＬＥ．ｃｏｍ", "a.b.c",
                         "xn--bcher-kva.example", "Ÿ.example", "ǅ.example"}) {
    auto once = NormalizeHost(in);
    if (!once.ok()) continue;
    auto twice = NormalizeHost(*once);
    ASSERT_TRUE(twice.ok()) << *once;
    EXPECT_EQ(*twice, *once);
  }
}

TEST(NormalizeHostTest, RejectsMalformedNames) {
  for (const std::string& bad : std::vector<std::string>{
           "",
           ".",
           "..",
           ".example.com",
           "example..com",
           "example.com..",
           "exa mple.com",
           "example.com/",
           "user@example.com",
           "example.com:443",
           "exa%6dple.com",
           "*.example.com",
           "-example.com",
           "example-.com",
           "example.com\n",
           "exa\tmple.com",
           "[example.com]",
           "a\\b.com",
           "exam\"ple.com",
           "ex,ample.com",
           std::string(64, 'a') + ".com",  // label > 63
           std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." +
               std::string(63, 'd'),  // 255 octets > 253
           "xn--.example",            // empty A-label
           "xn--bcher-kv.example",    // truncated punycode
           "xn--abc-.example",        // A-label without non-ASCII
           "xn--bcher-2pa.example",   // decodes to uppercase Ü: not canonical
           "xn--Bcher-kva-.example",
           "xn--a_b.example",
           "ü_x.example",                  // '_' in an IDN label
           "\xC3\x28.example",             // invalid UTF-8
           "\xC0\xAE.example",             // overlong '.'
           "\xED\xA0\x80.example",         // encoded surrogate
           "\xF4\x90\x80\x80.example",     // beyond U+10FFFF
           "exa\xC2\xADmple.com",          // soft hyphen (UTS #46 would delete it)
           "exa\xE2\x80\x8Bmple.com",      // zero-width space
           "exa\xE2\x80\x8Dmple.com",      // zero-width joiner
           "\xE2\x84\xAA.example",         // Kelvin sign (maps to k in UTS #46)
           "\xE2\x93\x94xample.com",       // circled e
           "\xF0\x9D\x90\x9Examples.com",  // mathematical bold e
           "\xEF\xAC\x81le.example",       // "fi" ligature
           "\xF0\x9F\x98\x80.example",     // emoji
           "\xCC\x81"
           "abc.example",              // label starts with a combining mark
           "example\xE3\x80\x80.com",  // ideographic space
           "\xEF\xBF\xBD.example",     // replacement character
       }) {
    EXPECT_FALSE(NormalizeHost(bad).ok()) << "accepted '" << bad << "'";
  }
  EXPECT_FALSE(NormalizeHost(std::string(5000, 'a')).ok());
  EXPECT_FALSE(NormalizeHost(std::string("exam\0ple.com", 12)).ok());
}

TEST(NormalizeHostTest, IpLiteralsInDisguiseAreAddresses) {
  struct Case {
    const char* in;
    const char* addr;
  } cases[] = {
      {"127.0.0.1", "127.0.0.1"},
      {"127.1", "127.0.0.1"},
      {"0x7f.1", "127.0.0.1"},
      {"0x7F000001", "127.0.0.1"},
      {"2130706433", "127.0.0.1"},
      {"0177.0.0.1", "127.0.0.1"},
      {"127.0.0.1.", "127.0.0.1"},
      {"１２７.０.０.１", "127.0.0.1"},
      {"169.254.43518", "169.254.169.254"},
      {"0", "0.0.0.0"},
      {"010.0.0.1", "8.0.0.1"},
  };
  for (const auto& c : cases) {
    EXPECT_FALSE(NormalizeHost(c.in).ok()) << c.in << " passed as a name";
    auto h = ParseHost(c.in);
    ASSERT_TRUE(h.ok()) << c.in << ": " << h.status().message();
    ASSERT_TRUE(h->is_address()) << c.in;
    EXPECT_EQ(h->address->ToString(), c.addr) << c.in;
  }
  // Names ending in a number that is not an address are neither names nor addresses.
  for (const char* bad :
       {"foo.123", "1.2.3.4.5", "256.256.256.256", "foo.0x10", "08.0.0.1", "example.0"}) {
    EXPECT_FALSE(ParseHost(bad).ok()) << "accepted '" << bad << "'";
  }
}

TEST(ParseHostTest, NamesAndIpv6) {
  auto n = ParseHost("Bücher.example.");
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(n->is_address());
  EXPECT_EQ(n->name, "xn--bcher-kva.example");
  EXPECT_EQ(n->ToString(), "xn--bcher-kva.example");

  auto v6 = ParseHost("[::1]");
  ASSERT_TRUE(v6.ok());
  ASSERT_TRUE(v6->is_address());
  EXPECT_EQ(v6->ToString(), "::1");
  EXPECT_EQ(v6->ToUriString(), "[::1]");
  auto bare = ParseHost("2001:db8::1");
  ASSERT_TRUE(bare.ok());
  EXPECT_TRUE(bare->is_address());
  // v4-mapped is stored as the IPv4 address: one destination, one spelling.
  auto mapped = ParseHost("[::ffff:127.0.0.1]");
  ASSERT_TRUE(mapped.ok());
  EXPECT_EQ(mapped->address->ToString(), "127.0.0.1");
  EXPECT_EQ(*mapped, *ParseHost("127.1"));

  for (const char* bad : {"[::1", "[fe80::1%25eth0]", "example.com:80", "[1.2.3.4]", "::g"}) {
    EXPECT_FALSE(ParseHost(bad).ok()) << "accepted '" << bad << "'";
  }
}

}  // namespace
}  // namespace ward::net
