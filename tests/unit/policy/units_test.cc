#include <gtest/gtest.h>

#include "policy/loader.h"

namespace ward::policy {
namespace {

uint64_t SizeOk(const char* s) {
  Result<uint64_t> r = ParseSize(s);
  EXPECT_TRUE(r.ok()) << s << ": " << r.status().message();
  return r.ok() ? *r : 0;
}

uint64_t DurationOk(const char* s) {
  Result<uint64_t> r = ParseDurationMs(s);
  EXPECT_TRUE(r.ok()) << s << ": " << r.status().message();
  return r.ok() ? *r : 0;
}

TEST(ParseSize, PlainBytes) {
  EXPECT_EQ(SizeOk("1024"), 1024u);
  EXPECT_EQ(SizeOk("0"), 0u);
  EXPECT_EQ(SizeOk("1B"), 1u);
}

TEST(ParseSize, BinaryUnits) {
  EXPECT_EQ(SizeOk("64k"), 64u << 10);
  EXPECT_EQ(SizeOk("64K"), 64u << 10);
  EXPECT_EQ(SizeOk("512M"), 512ull << 20);
  EXPECT_EQ(SizeOk("8G"), 8ull << 30);
  EXPECT_EQ(SizeOk("2T"), 2ull << 40);
  EXPECT_EQ(SizeOk("8GiB"), 8ull << 30);
  EXPECT_EQ(SizeOk("8gb"), 8ull << 30);
}

TEST(ParseSize, Fractions) {
  EXPECT_EQ(SizeOk("1.5G"), 3ull << 29);
  EXPECT_EQ(SizeOk("0.5k"), 512u);
  EXPECT_EQ(SizeOk("1.0001k"), 1024u);  // rounds down to whole bytes
}

TEST(ParseSize, RejectsGarbage) {
  for (const char* bad : {"", "G", "abc", "8X", "8 G", " 8G", "8G ", "1.", ".5G", "8Gx", "8kk",
                          "0x10", "1e6", "+8G", "8iB", "1,5G", "８G"}) {
    Result<uint64_t> r = ParseSize(bad);
    EXPECT_FALSE(r.ok()) << "accepted '" << bad << "'";
  }
}

TEST(ParseSize, RejectsNegativeFractionalBytesAndOverflow) {
  Result<uint64_t> neg = ParseSize("-1G");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("negative"), std::string::npos);

  Result<uint64_t> frac = ParseSize("1.5");
  ASSERT_FALSE(frac.ok());
  EXPECT_NE(frac.status().message().find("fraction"), std::string::npos);

  for (const char* big :
       {"18446744073709551616", "99999999999999999999999", "16777216T", "17179869184G"}) {
    Result<uint64_t> r = ParseSize(big);
    ASSERT_FALSE(r.ok()) << big;
    EXPECT_NE(r.status().message().find("too large"), std::string::npos) << big;
  }
  EXPECT_EQ(SizeOk("18446744073709551615"), UINT64_MAX);
}

TEST(ParseSize, MessagesAreBoundedAndPrintable) {
  std::string junk(10000, 'x');
  junk[3] = '\n';
  Result<uint64_t> r = ParseSize(junk);
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.status().message().size(), 400u);
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
}

TEST(ParseDuration, Units) {
  EXPECT_EQ(DurationOk("500ms"), 500u);
  EXPECT_EQ(DurationOk("30s"), 30000u);
  EXPECT_EQ(DurationOk("10m"), 600000u);
  EXPECT_EQ(DurationOk("1h"), 3600000u);
  EXPECT_EQ(DurationOk("2d"), 2ull * 86400000);
  EXPECT_EQ(DurationOk("1h30m"), 5400000u);
  EXPECT_EQ(DurationOk("1m30s250ms"), 90250u);
  EXPECT_EQ(DurationOk("1.5s"), 1500u);
}

TEST(ParseDuration, BareNumberIsSeconds) {
  EXPECT_EQ(DurationOk("90"), 90000u);
  EXPECT_EQ(DurationOk("0"), 0u);
  EXPECT_EQ(DurationOk("2.5"), 2500u);
}

TEST(ParseDuration, RejectsGarbage) {
  for (const char* bad : {"", "s", "h1", "1x", "1 h", "1h 30m", "1h30", "ms", "1.h", "1hh", "1H",
                          "--1s", "1s-", "0x1s"}) {
    Result<uint64_t> r = ParseDurationMs(bad);
    EXPECT_FALSE(r.ok()) << "accepted '" << bad << "'";
  }
}

TEST(ParseDuration, RejectsNegativeAndOverflow) {
  Result<uint64_t> neg = ParseDurationMs("-5s");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("negative"), std::string::npos);
  for (const char* big : {"99999999999999999999d", "213503982335d", "18446744073709551615s",
                          "18446744073709551615ms1ms"}) {
    Result<uint64_t> r = ParseDurationMs(big);
    ASSERT_FALSE(r.ok()) << big;
    EXPECT_NE(r.status().message().find("too long"), std::string::npos) << big;
  }
}

}  // namespace
}  // namespace ward::policy
