// The record format: hashing, timestamps, the canonical form and its stability.
#include "audit/record.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <vector>

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
  // The same as gmtime's calendar, from 1900 to 2255 (system_clock counts nanoseconds in 64 bits:
  // about 292 years either side of 1970).
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> secs(-2208988800, 9000000000);
  for (int i = 0; i < 20000; ++i) {
    const int64_t s = secs(rng);
    const int64_t ms = static_cast<int64_t>(rng() % 1000);
    time_t tt = static_cast<time_t>(s);
    struct tm tm {};
    ASSERT_NE(gmtime_r(&tt, &tm), nullptr);
    char want[96];
    snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
    ASSERT_EQ(FormatTimestamp(system_clock::time_point{milliseconds(s * 1000 + ms)}), want) << s;
  }
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

// CanonicalJson writes plain strings and integers itself and everything else through
// nlohmann's dump(); the bytes must be exactly what dump() alone gives, or records written
// by this version would not verify against the canonical form of older ones (and back).
TEST(RecordTest, CanonicalFormIsNlohmannsDumpByteForByte) {
  std::vector<nlohmann::json> cases = {
      nullptr,
      true,
      false,
      0,
      -1,
      1,
      INT64_MIN,
      INT64_MAX,
      UINT64_MAX,
      0.0,
      -0.0,
      0.1,
      1e300,
      5e-324,
      std::nan(""),
      INFINITY,
      -INFINITY,
      1.0,
      1e21,
      123456789.0,
      "",
      "plain ascii / paths with spaces",
      "quote \" and backslash \\",
      std::string("\0nul", 4),
      "\x01\x1f\x7f",
      "\b\f\n\r\t",
      "é ✓ \xf0\x9f\x94\x92",
      std::string("\xc3(\xff\x80", 4),
      "\xed\xa0\x80 surrogate",
      "\xf4\x90\x80\x80 too high",
      "\xe2\x82 truncated",
      nlohmann::json::array(),
      nlohmann::json::object(),
      nlohmann::json::binary({1, 2, 3}),
      {{"", 1}, {"é", 2}, {"a\"b", 3}, {std::string("\xff", 1), 4}, {"\n", {1, 2.5, "x"}}}};
  for (const nlohmann::json& j : cases) {
    EXPECT_EQ(CanonicalJson(j), CanonicalJsonReferenceForTesting(j)) << j.type_name();
  }

  // Random trees: strings mostly printable ASCII (the fast path) with escapes, UTF-8, invalid
  // bytes and DEL mixed in; integers, floats, nesting. A fixed seed keeps failures
  // reproducible.
  std::mt19937_64 rng(20261201);
  auto pick = [&](uint64_t n) { return rng() % n; };
  auto random_string = [&] {
    static const std::vector<std::string> kPieces = {"a",
                                                     "Z",
                                                     "/usr/lib",
                                                     " ",
                                                     "~",
                                                     "{",
                                                     "}",
                                                     "\"",
                                                     "\\",
                                                     "\n",
                                                     "\t",
                                                     std::string("\0", 1),
                                                     "\x1b",
                                                     "\x7f",
                                                     "é",
                                                     "✓",
                                                     "\xf0\x9f\x94\x92",
                                                     "\xff",
                                                     "\x80",
                                                     "\xc3",
                                                     "\xed\xa0\x80",
                                                     "%"};
    std::string s;
    for (uint64_t n = pick(12); n > 0; --n) {
      s += pick(3) == 0 ? kPieces[pick(kPieces.size())] : std::string(1, char(0x20 + pick(0x5f)));
    }
    return s;
  };
  std::function<nlohmann::json(int)> random_json = [&](int depth) -> nlohmann::json {
    switch (pick(depth > 4 ? 7 : 9)) {
      case 0:
        return nullptr;
      case 1:
        return pick(2) == 0;
      case 2:
        return static_cast<int64_t>(rng());
      case 3:
        return rng();
      case 4: {
        double d;
        uint64_t bits = rng();
        std::memcpy(&d, &bits, sizeof d);
        return pick(2) == 0
                   ? d
                   : static_cast<double>(static_cast<int64_t>(rng() % 2000000) - 1000000) / 8;
      }
      case 5:
      case 6:
        return random_string();
      case 7: {
        nlohmann::json a = nlohmann::json::array();
        for (uint64_t n = pick(5); n > 0; --n) a.push_back(random_json(depth + 1));
        return a;
      }
      default: {
        nlohmann::json o = nlohmann::json::object();
        for (uint64_t n = pick(5); n > 0; --n) o[random_string()] = random_json(depth + 1);
        return o;
      }
    }
  };
  int fast_path_strings = 0;
  for (int i = 0; i < 3000; ++i) {
    nlohmann::json j = random_json(0);
    const std::string ours = CanonicalJson(j);
    ASSERT_EQ(ours, CanonicalJsonReferenceForTesting(j)) << "case " << i;
    fast_path_strings += j.is_string() && ours.size() == j.get_ref<const std::string&>().size() + 2;
  }
  EXPECT_GT(fast_path_strings, 50);  // the generator does reach the fast path
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
  EXPECT_TRUE(IsSyncType("exec.end"));
  EXPECT_FALSE(IsSyncType("exec.start"));
  EXPECT_FALSE(IsSyncType("net.deny"));
}

}  // namespace
}  // namespace ward::audit
