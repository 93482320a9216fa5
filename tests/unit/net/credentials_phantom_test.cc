// Phantom values: the vendor prefix, length and alphabet of the real token, nothing else of it,
// and at least 128 random bits.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "net/broker/phantom.h"

namespace ward::net {
namespace {

bool AllIn(std::string_view s, std::string_view alphabet) {
  return s.find_first_not_of(alphabet) == std::string_view::npos;
}

double Bits(const PhantomShape& s) {
  size_t alnum = 0;
  for (char c : s.alphabet) alnum += std::isalnum(static_cast<unsigned char>(c)) ? 1 : 0;
  return static_cast<double>(s.length) * std::log2(static_cast<double>(alnum));
}

struct Case {
  std::string real, prefix;
};

TEST(PhantomTest, KeepsVendorPrefixLengthAndAlphabet) {
  const std::string b62 = "aB3xY9kLmN0pQ7rS2tUvW4zA1cD5eF6gH8iJ";
  const std::vector<Case> cases = {
      {"sk-ant-api03-" + b62 + "-_" + b62 + "AA", "sk-ant-api03-"},
      {"sk-ant-oat01-" + b62 + b62, "sk-ant-oat01-"},
      {"sk-proj-" + b62 + "_" + b62, "sk-proj-"},
      {"sk-" + b62 + b62.substr(0, 12), "sk-"},
      {"ghp_" + b62, "ghp_"},
      {"github_pat_11ABCDEFG0" + b62 + "_" + b62, "github_pat_"},
      {"xoxb-1234567890-1234567890123-" + b62.substr(0, 24), "xoxb-"},
      {"glpat-" + b62.substr(0, 26), "glpat-"},
  };
  for (const Case& c : cases) {
    PhantomShape shape = DescribePhantomShape(c.real);
    EXPECT_EQ(shape.prefix, c.prefix) << c.real;
    EXPECT_FALSE(shape.generic);
    auto p = MakePhantom(c.real);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_TRUE(p->starts_with(c.prefix)) << *p;
    EXPECT_EQ(p->size(), c.real.size()) << c.real << " -> " << *p;
    EXPECT_NE(*p, c.real);
    std::string_view rand = std::string_view(*p).substr(c.prefix.size());
    EXPECT_TRUE(AllIn(rand, shape.alphabet)) << *p;
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(rand.front()))) << *p;
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(rand.back()))) << *p;
    EXPECT_GE(Bits(shape), 128.0) << c.real;
  }
}

TEST(PhantomTest, AlphabetFollowsTheRealValueNotItsCharacters) {
  // Lowercase hex stays lowercase hex.
  std::string hex = "0123456789abcdef0123456789abcdef01234567";
  PhantomShape s = DescribePhantomShape(hex);
  EXPECT_EQ(s.alphabet, "0123456789abcdef");
  auto p = MakePhantom(hex);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->size(), hex.size());
  EXPECT_TRUE(AllIn(*p, "0123456789abcdef"));
  // Digits only: digits, lengthened to 128 bits (39 digits).
  s = DescribePhantomShape("12345678901234567890");
  EXPECT_EQ(s.alphabet, "0123456789");
  EXPECT_EQ(s.length, 39u);
  // Short hex: 32 characters, exactly 128 bits (16^32 = 2^128).
  s = DescribePhantomShape("0123456789abcdef0123");
  EXPECT_EQ(s.alphabet, "0123456789abcdef");
  EXPECT_EQ(s.length, 32u);
  // Base64 padding is kept; '+' and '/' are left out of the random part.
  std::string b64 = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo+/abc+/xyz0123==";
  s = DescribePhantomShape(b64);
  EXPECT_EQ(s.suffix, "==");
  p = MakePhantom(b64);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->ends_with("=="));
  EXPECT_EQ(p->find_first_of("+/"), std::string::npos);
  EXPECT_EQ(p->size(), b64.size());
}

TEST(PhantomTest, ShortOrShapelessSecretsGetAtLeast128Bits) {
  for (std::string real : {"abc", "hunter2", "ghp_x", "A", "__--__"}) {
    PhantomShape s = DescribePhantomShape(real);
    EXPECT_GE(Bits(s), 128.0) << real;
    auto p = MakePhantom(real);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->find(real), std::string::npos) << real << " in " << *p;
  }
  // Too short for a shape: no prefix, and the first character cannot occur at all.
  PhantomShape tiny = DescribePhantomShape("A");
  EXPECT_EQ(tiny.alphabet.find('A'), std::string::npos);
  EXPECT_TRUE(tiny.prefix.empty());
  // Whitespace, controls or non-ASCII: the generic shape.
  for (std::string real : {"pass word", "caf\xc3\xa9-token-value-1234", "tab\there"}) {
    PhantomShape s = DescribePhantomShape(real);
    EXPECT_TRUE(s.generic) << real;
    auto p = MakePhantom(real);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(p->starts_with(kGenericPhantomPrefix));
    EXPECT_GE(Bits(s), 128.0);
  }
}

TEST(PhantomTest, FreshEverySessionAndNothingOfTheSecretLeaks) {
  const std::string real = "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
  std::set<std::string> seen;
  size_t a_count = 0, total = 0;
  for (int i = 0; i < 200; ++i) {
    auto p = MakePhantom(real);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(seen.insert(*p).second) << "repeated phantom " << *p;
    for (char c : std::string_view(*p).substr(13)) {
      a_count += c == 'A';
      ++total;
    }
  }
  // The real value is all 'A's: the phantom's characters must not follow it (an alphabet of
  // 26 uppercase letters gives 'A' about 1/26 of the time).
  EXPECT_LT(static_cast<double>(a_count) / static_cast<double>(total), 0.1);
}

TEST(PhantomTest, RandomPartExcludesPrefixAndSuffix) {
  PhantomShape s = DescribePhantomShape("ghp_abcdefghijklmnopqrstuvwxyz0123456789==");
  EXPECT_EQ(PhantomRandomPart("ghp_XYZ==", s), "XYZ");
  EXPECT_EQ(PhantomRandomPart("g", s), "g");
}

}  // namespace
}  // namespace ward::net
