// The record format: hashing, timestamps, the canonical form and its stability.
#include "audit/record.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace ward::audit {
namespace {

TEST(RecordTest, Sha256KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(RecordTest, TimestampsAreRfc3339UtcWithMilliseconds) {
  using namespace std::chrono;
  EXPECT_EQ(FormatTimestamp(system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatTimestamp(system_clock::time_point{milliseconds(1796055753123)}),
            "2026-11-30T16:22:33.123Z");
  EXPECT_EQ(FormatTimestamp(system_clock::time_point{milliseconds(-1)}),
            "1969-12-31T23:59:59.999Z");
  EXPECT_TRUE(IsValidTimestamp("2026-11-30T16:22:33.123Z"));
  for (const char* bad :
       {"", "2026-11-30T16:22:33Z", "2026-11-30 16:22:33.123Z", "2026-11-30T16:22:33.123+00:00",
        "2026-11-30T16:22:33.1234Z", "2026-1a-30T16:22:33.123Z"}) {
    EXPECT_FALSE(IsValidTimestamp(bad)) << bad;
  }
}

TEST(RecordTest, CanonicalFormSortsKeysAndHasNoWhitespace) {
  nlohmann::json j = {{"b", 1}, {"a", {{"z", true}, {"y", nullptr}}}, {"c", "é\n\"\x01\x7f"}};
  EXPECT_EQ(CanonicalJson(j),
            "{\"a\":{\"y\":null,\"z\":true},\"b\":1,\"c\":\"é\\n\\\"\\u0001\x7f\"}");
  // Keys sort by UTF-8 bytes, so non-ASCII after ASCII.
  EXPECT_EQ(CanonicalJson({{"é", 1}, {"z", 2}, {"Z", 3}}), "{\"Z\":3,\"z\":2,\"é\":1}");
  // Invalid UTF-8 becomes U+FFFD instead of throwing.
  EXPECT_EQ(CanonicalJson(std::string("a\xff", 2)), "\"a\xef\xbf\xbd\"");
}

TEST(RecordTest, SplicedRecordEqualsTheCanonicalObject) {
  std::vector<nlohmann::json> datas = {
      nlohmann::json::object(),
      {{"host", "example.com"}, {"port", 443}},
      {{"f", 0.1}, {"big", UINT64_MAX}, {"neg", INT64_MIN}, {"e", 1e300}, {"t", 5e-324}},
      {{"u", "ünïcödé ✓ \xf0\x9f\x94\x92"}, {"ctl", std::string("\0\x1b", 2)}},
      {{"nested", {{"a", {1, 2, {{"b", nullptr}}}}}}},
  };
  for (const auto& data : datas) {
    BuiltRecord r =
        BuildRecord(7, "2026-11-30T16:22:33.123Z", "net.deny", data, std::string(64, 'a'));
    nlohmann::json obj = {{"seq", 7},
                          {"ts", "2026-11-30T16:22:33.123Z"},
                          {"type", "net.deny"},
                          {"data", data},
                          {"prev", std::string(64, 'a')}};
    EXPECT_EQ(r.hash, Sha256Hex(CanonicalJson(obj)));
    obj["hash"] = r.hash;
    EXPECT_EQ(r.line, CanonicalJson(obj));
  }
}

TEST(RecordTest, CanonicalFormSurvivesParseAndDump) {
  // The verifier re-serialises what it parsed; it must get the same bytes back.
  nlohmann::json data = {{"f", 0.1},
                         {"big", UINT64_MAX},
                         {"neg", INT64_MIN},
                         {"e", 1e300},
                         {"t", 5e-324},
                         {"nan", std::nan("")},
                         {"inf", INFINITY},
                         {"nz", -0.0},
                         {"one", 1.0},
                         {"bad", std::string("\xc3(\xff", 3)},
                         {"ctl", "\b\f\t\r\x1f"}};
  BuiltRecord r = BuildRecord(0, "2026-11-30T16:22:33.123Z", "x", data, kZeroHash);
  auto parsed = nlohmann::json::parse(r.line);
  EXPECT_EQ(CanonicalJson(parsed), r.line);
  parsed.erase("hash");
  EXPECT_EQ(Sha256Hex(CanonicalJson(parsed)), r.hash);
}

TEST(RecordTest, JsonDepthScanIgnoresBracketsInStrings) {
  EXPECT_TRUE(JsonDepthWithin("{\"a\":\"[[[[[[[[[[\"}", 2));
  EXPECT_TRUE(JsonDepthWithin("{\"a\":\"\\\"[[[[\"}", 1));
  EXPECT_FALSE(JsonDepthWithin("[[[1]]]", 2));
  EXPECT_TRUE(JsonDepthWithin("[[[1]]]", 3));
  EXPECT_FALSE(ParseRecordLine(std::string(100000, '[')).has_value());
  EXPECT_FALSE(ParseRecordLine("[1,2]").has_value());
  EXPECT_FALSE(ParseRecordLine("{").has_value());
  EXPECT_TRUE(ParseRecordLine("{\"a\":1}").has_value());
}

TEST(RecordTest, DenialAndSyncTypes) {
  for (const char* t : {"net.deny", "dns.deny", "syscall.deny", "approval.denied",
                        "credential.leak_attempt", "limit.hit"}) {
    EXPECT_TRUE(IsDenialType(t)) << t;
  }
  for (const char* t : {"net.allow", "session.start", "setup.error", "deny", "net.denylist",
                        "limit.set", "credential.use"}) {
    EXPECT_FALSE(IsDenialType(t)) << t;
  }
  EXPECT_TRUE(IsSyncType("session.start"));
  EXPECT_TRUE(IsSyncType("setup.error"));
  EXPECT_TRUE(IsSyncType("session.end"));
  EXPECT_FALSE(IsSyncType("net.deny"));
}

}  // namespace
}  // namespace ward::audit
