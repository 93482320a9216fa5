// The synthetic addresses of transparent capture: one pair per name, stable for the session,
// mapped back only for what was given out.
#include "net/synthetic_names.h"

#include <gtest/gtest.h>

namespace ward::net {
namespace {

IpAddress Ip(const char* text) { return *IpAddress::Parse(text); }

TEST(SyntheticNamesTest, EachNameGetsOnePairForTheSession) {
  SyntheticNames names;
  auto a = names.AddressesFor("a.test");
  auto b = names.AddressesFor("b.test");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->v4.ToString(), "198.18.0.1");
  EXPECT_EQ(a->v6.ToString(), "fd77:6172:6400::1");
  EXPECT_EQ(b->v4.ToString(), "198.18.0.2");
  EXPECT_EQ(names.AddressesFor("a.test")->v4, a->v4);
  EXPECT_EQ(names.size(), 2u);
  EXPECT_EQ(names.NameOf(a->v4), "a.test");
  EXPECT_EQ(names.NameOf(b->v6), "b.test");
  // The v4-mapped spelling of a synthetic address is that address.
  EXPECT_EQ(names.NameOf(Ip("::ffff:198.18.0.2")), "b.test");
}

TEST(SyntheticNamesTest, OnlyWhatWasGivenOutMapsToAName) {
  SyntheticNames names;
  names.AddressesFor("a.test");
  for (const char* other : {"198.18.0.0", "198.18.0.2", "198.19.255.255", "127.0.0.1",
                            "192.0.2.1", "fd77:6172:6400::2", "fd77:6172:6400:0:1::1",
                            "fd77:6172:6401::1", "::1"}) {
    EXPECT_EQ(names.NameOf(Ip(other)), std::nullopt) << other;
  }
  EXPECT_TRUE(names.Contains(Ip("198.19.255.255")));
  EXPECT_TRUE(names.Contains(Ip("fd77:6172:6400::ffff")));
  EXPECT_FALSE(names.Contains(Ip("198.20.0.1")));
  EXPECT_FALSE(names.Contains(Ip("fd77:6172:6401::1")));
}

TEST(SyntheticNamesTest, AFullTableGivesNoMore) {
  SyntheticNames names(2);
  EXPECT_TRUE(names.AddressesFor("a.test"));
  EXPECT_TRUE(names.AddressesFor("b.test"));
  EXPECT_FALSE(names.AddressesFor("c.test"));
  EXPECT_TRUE(names.AddressesFor("a.test"));  // known names keep theirs
  // The range bounds the table whatever is asked for.
  SyntheticNames huge(1u << 20);
  EXPECT_EQ(SyntheticNames::V4Range().ToString(), "198.18.0.0/15");
}

}  // namespace
}  // namespace ward::net
