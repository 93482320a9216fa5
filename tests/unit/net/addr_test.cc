#include "net/addr.h"

#include <gtest/gtest.h>

#include <string>

namespace ward::net {
namespace {

IpAddress Ip(const std::string& s) {
  auto r = IpAddress::Parse(s);
  EXPECT_TRUE(r.ok()) << s << ": " << r.status().message();
  return r.ok() ? *r : IpAddress();
}

TEST(IpAddressTest, ParsesAndPrintsCanonicalForms) {
  struct Case {
    const char* in;
    const char* out;
  } cases[] = {
      {"1.2.3.4", "1.2.3.4"},
      {"0.0.0.0", "0.0.0.0"},
      {"255.255.255.255", "255.255.255.255"},
      {"::", "::"},
      {"::1", "::1"},
      {"[::1]", "::1"},
      {"2001:DB8:0:0:0:0:0:1", "2001:db8::1"},
      {"2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"},  // first longest run
      {"2001:0db8:0000:0000:0000:ff00:0042:8329", "2001:db8::ff00:42:8329"},
      {"1:0:1:0:1:0:1:0", "1:0:1:0:1:0:1:0"},  // single zero groups stay
      {"fe80::", "fe80::"},
      {"1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"},
      {"::ffff:1.2.3.4", "::ffff:1.2.3.4"},
      {"::FFFF:7f00:1", "::ffff:127.0.0.1"},
      {"64:ff9b::192.0.2.33", "64:ff9b::c000:221"},
      {"1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"},
  };
  for (const auto& c : cases) {
    auto r = IpAddress::Parse(c.in);
    ASSERT_TRUE(r.ok()) << c.in << ": " << r.status().message();
    EXPECT_EQ(r->ToString(), c.out) << c.in;
    // Printing then parsing gives the same address.
    auto again = IpAddress::Parse(r->ToString());
    ASSERT_TRUE(again.ok()) << r->ToString();
    EXPECT_EQ(*again, *r);
  }
  EXPECT_EQ(Ip("::1").ToUriString(), "[::1]");
  EXPECT_EQ(Ip("10.0.0.1").ToUriString(), "10.0.0.1");
}

TEST(IpAddressTest, RejectsMalformedText) {
  for (const char* bad : {"",
                          "1.2.3",
                          "1.2.3.4.5",
                          "256.1.1.1",
                          "01.2.3.4",
                          "1.2.3.04",
                          "1.2.3.4 ",
                          " 1.2.3.4",
                          "1..2.3",
                          "1.2.3.",
                          "-1.2.3.4",
                          "0x1.2.3.4",
                          "127.1",
                          "2130706433",
                          "[1.2.3.4]",
                          ":",
                          ":::",
                          "1:::2",
                          "1::2::3",
                          ":1::",
                          "1:2:3:4:5:6:7:8:9",
                          "1:2:3:4:5:6:7:8::",
                          "12345::",
                          "g::",
                          "fe80::1%eth0",
                          "[::1",
                          "::1]",
                          "[[::1]]",
                          "::1.2.3",
                          "::1.2.3.4.5",
                          "1:2:3:4:5:6:7:1.2.3.4",
                          "::ffff:01.2.3.4",
                          "1:",
                          "::1:"}) {
    EXPECT_FALSE(IpAddress::Parse(bad).ok()) << "accepted '" << bad << "'";
  }
  EXPECT_FALSE(IpAddress::Parse(std::string(100, '1')).ok());
  EXPECT_FALSE(IpAddress::Parse(std::string("1.2.3.4\0", 8)).ok());
}

TEST(IpAddressTest, LegacyV4IsInetAtonCompatible) {
  struct Case {
    const char* in;
    const char* out;
  } cases[] = {
      {"127.1", "127.0.0.1"},      {"127.0.1", "127.0.0.1"},
      {"2130706433", "127.0.0.1"}, {"0x7f000001", "127.0.0.1"},
      {"0x7f.1", "127.0.0.1"},     {"0X7F.0.0.1", "127.0.0.1"},
      {"0177.0.0.1", "127.0.0.1"}, {"017700000001", "127.0.0.1"},
      {"010.0.0.1", "8.0.0.1"},    {"0", "0.0.0.0"},
      {"0x", "0.0.0.0"},           {"169.254.43518", "169.254.169.254"},
      {"1.2.3.4", "1.2.3.4"},      {"4294967295", "255.255.255.255"},
  };
  for (const auto& c : cases) {
    auto r = IpAddress::ParseLegacyV4(c.in);
    ASSERT_TRUE(r.has_value()) << c.in;
    EXPECT_EQ(r->ToString(), c.out) << c.in;
  }
  for (const char* bad : {"", "4294967296", "256.1.1.1", "1.256.1.1", "1.2.65536", "1.16777216",
                          "08", "0x1g", "1.2.3.4.5", "1..2", "1.2.3.", ".1.2.3", "a.b.c.d",
                          "example.com", "1.2.3.4a", "99999999999999999999"}) {
    EXPECT_FALSE(IpAddress::ParseLegacyV4(bad).has_value()) << "accepted '" << bad << "'";
  }
}

TEST(IpAddressTest, UnmappedTreatsV4MappedAsV4) {
  EXPECT_EQ(Ip("::ffff:10.1.2.3").Unmapped(), Ip("10.1.2.3"));
  EXPECT_TRUE(Ip("::ffff:10.1.2.3").Unmapped().is_v4());
  EXPECT_EQ(Ip("::1").Unmapped(), Ip("::1"));
  EXPECT_EQ(Ip("64:ff9b::a01:203").Unmapped(), Ip("64:ff9b::a01:203"));
  EXPECT_EQ(IpAddress::MappedV6(0x7f000001).ToString(), "::ffff:127.0.0.1");
  EXPECT_NE(Ip("::ffff:10.1.2.3"), Ip("10.1.2.3"));  // different spellings, same destination
}

TEST(IpNetTest, ParsesAndContains) {
  auto n = IpNet::Parse("10.0.0.0/8");
  ASSERT_TRUE(n.ok());
  EXPECT_TRUE(n->Contains(Ip("10.255.1.2")));
  EXPECT_FALSE(n->Contains(Ip("11.0.0.0")));
  EXPECT_FALSE(n->Contains(Ip("::ffff:10.0.0.1")));  // families differ; callers unmap
  EXPECT_EQ(n->ToString(), "10.0.0.0/8");

  auto v6 = IpNet::Parse("[fd00::]/8");
  ASSERT_TRUE(v6.ok());
  EXPECT_TRUE(v6->Contains(Ip("fdff::1")));
  EXPECT_FALSE(v6->Contains(Ip("fe00::1")));

  auto odd = IpNet::Parse("100.64.0.0/10");
  ASSERT_TRUE(odd.ok());
  EXPECT_TRUE(odd->Contains(Ip("100.127.255.255")));
  EXPECT_FALSE(odd->Contains(Ip("100.128.0.0")));

  auto all = IpNet::Parse("0.0.0.0/0");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->Contains(Ip("8.8.8.8")));
  auto host = IpNet::Parse("::1/128");
  ASSERT_TRUE(host.ok());
  EXPECT_TRUE(host->Contains(Ip("::1")));
  EXPECT_FALSE(host->Contains(Ip("::2")));
}

TEST(IpNetTest, RejectsBadBlocks) {
  for (const char* bad : {"10.0.0.1/8", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0",
                          "10.0.0.0/08", "10.0.0.0/-1", "10.0.0.0/8/8", "/8", "10.1/16",
                          "fd00::1/8", "10.0.0.0/a", "10.0.0.0/1234"}) {
    EXPECT_FALSE(IpNet::Parse(bad).ok()) << "accepted '" << bad << "'";
  }
  auto r = IpNet::Parse("10.0.0.1/8");
  EXPECT_NE(r.status().message().find("10.0.0.0/8"), std::string::npos) << r.status().message();
}

struct ClassCase {
  const char* addr;
  AddressClass cls;
};

TEST(ClassifyTest, EveryV4Range) {
  const ClassCase cases[] = {
      {"0.0.0.0", AddressClass::kUnspecified},
      {"0.1.2.3", AddressClass::kUnspecified},
      {"10.0.0.1", AddressClass::kPrivate},
      {"10.255.255.255", AddressClass::kPrivate},
      {"100.64.0.1", AddressClass::kCgnat},
      {"100.127.255.254", AddressClass::kCgnat},
      {"100.100.100.200", AddressClass::kMetadata},
      {"127.0.0.1", AddressClass::kLoopback},
      {"127.255.255.254", AddressClass::kLoopback},
      {"169.254.0.1", AddressClass::kLinkLocal},
      {"169.254.169.254", AddressClass::kMetadata},
      {"169.254.170.2", AddressClass::kMetadata},
      {"168.63.129.16", AddressClass::kMetadata},
      {"172.16.0.1", AddressClass::kPrivate},
      {"172.31.255.255", AddressClass::kPrivate},
      {"192.0.0.8", AddressClass::kReserved},
      {"192.0.0.192", AddressClass::kMetadata},
      {"192.168.1.1", AddressClass::kPrivate},
      {"224.0.0.1", AddressClass::kMulticast},
      {"239.255.255.250", AddressClass::kMulticast},
      {"240.0.0.1", AddressClass::kReserved},
      {"255.255.255.254", AddressClass::kReserved},
      {"255.255.255.255", AddressClass::kBroadcast},
      // Public, including neighbours of the ranges and the documentation blocks.
      {"1.1.1.1", AddressClass::kPublic},
      {"9.255.255.255", AddressClass::kPublic},
      {"11.0.0.0", AddressClass::kPublic},
      {"100.63.255.255", AddressClass::kPublic},
      {"100.128.0.0", AddressClass::kPublic},
      {"126.255.255.255", AddressClass::kPublic},
      {"128.0.0.0", AddressClass::kPublic},
      {"169.253.255.255", AddressClass::kPublic},
      {"169.255.0.0", AddressClass::kPublic},
      {"172.15.255.255", AddressClass::kPublic},
      {"172.32.0.0", AddressClass::kPublic},
      {"192.0.1.0", AddressClass::kPublic},
      {"192.0.2.1", AddressClass::kPublic},     // TEST-NET-1
      {"198.51.100.7", AddressClass::kPublic},  // TEST-NET-2
      {"203.0.113.9", AddressClass::kPublic},   // TEST-NET-3
      {"198.18.0.1", AddressClass::kPublic},    // benchmarking / fake-IP DNS
      {"192.167.255.255", AddressClass::kPublic},
      {"192.169.0.0", AddressClass::kPublic},
      {"223.255.255.255", AddressClass::kPublic},
  };
  for (const auto& c : cases) {
    Classification got = Classify(Ip(c.addr));
    EXPECT_EQ(got.cls, c.cls) << c.addr << " -> " << AddressClassName(got.cls) << " " << got.why;
    EXPECT_EQ(got.why.empty(), c.cls == AddressClass::kPublic) << c.addr;
  }
}

TEST(ClassifyTest, EveryV6RangeAndEmbeddedV4) {
  const ClassCase cases[] = {
      {"::", AddressClass::kUnspecified},
      {"::1", AddressClass::kLoopback},
      {"::2", AddressClass::kReserved},
      {"::7f00:1", AddressClass::kReserved},  // IPv4-compatible, deprecated
      {"::ffff:127.0.0.1", AddressClass::kLoopback},
      {"::ffff:169.254.169.254", AddressClass::kMetadata},
      {"::ffff:10.0.0.1", AddressClass::kPrivate},
      {"::ffff:8.8.8.8", AddressClass::kPublic},
      {"64:ff9b::127.0.0.1", AddressClass::kLoopback},
      {"64:ff9b::a9fe:a9fe", AddressClass::kMetadata},
      {"64:ff9b::8.8.8.8", AddressClass::kPublic},
      {"64:ff9b:1::1", AddressClass::kPrivate},
      {"2002:7f00:1::", AddressClass::kLoopback},  // 6to4 of 127.0.0.1
      {"2002:c0a8:101::1", AddressClass::kPrivate},
      {"2002:a9fe:a9fe::", AddressClass::kMetadata},
      {"2002:808:808::1", AddressClass::kPublic},
      {"2001:0:4136:e378:8000:63bf:80ff:fffe", AddressClass::kLoopback},  // Teredo, ~127.0.0.1
      {"2001:0:4136:e378:8000:63bf:f7f7:f7f7", AddressClass::kPublic},    // Teredo, 8.8.8.8
      {"100::1", AddressClass::kReserved},
      {"fc00::1", AddressClass::kPrivate},
      {"fdff:ffff::1", AddressClass::kPrivate},
      {"fd00:ec2::254", AddressClass::kMetadata},
      {"fe80::1", AddressClass::kLinkLocal},
      {"febf::1", AddressClass::kLinkLocal},
      {"fec0::1", AddressClass::kPrivate},
      {"ff02::1", AddressClass::kMulticast},
      {"ff05::1:3", AddressClass::kMulticast},
      {"4000::1", AddressClass::kReserved},  // outside 2000::/3
      {"1::", AddressClass::kReserved},
      {"2606:4700::1111", AddressClass::kPublic},
      {"2001:db8::1", AddressClass::kPublic},  // documentation
      {"3fff::1", AddressClass::kPublic},
  };
  for (const auto& c : cases) {
    Classification got = Classify(Ip(c.addr));
    EXPECT_EQ(got.cls, c.cls) << c.addr << " -> " << AddressClassName(got.cls) << " " << got.why;
  }
}

TEST(ClassifyTest, IsNonPublicExplains) {
  std::string why;
  EXPECT_TRUE(IsNonPublic(Ip("169.254.169.254"), &why));
  EXPECT_NE(why.find("metadata"), std::string::npos) << why;
  EXPECT_TRUE(IsNonPublic(Ip("2002:7f00:1::"), &why));
  EXPECT_NE(why.find("6to4"), std::string::npos) << why;
  EXPECT_NE(why.find("loopback"), std::string::npos) << why;
  why = "unchanged";
  EXPECT_FALSE(IsNonPublic(Ip("8.8.8.8"), &why));
  EXPECT_EQ(why, "unchanged");
  EXPECT_TRUE(IsNonPublic(Ip("127.0.0.1"), nullptr));
}

}  // namespace
}  // namespace ward::net
