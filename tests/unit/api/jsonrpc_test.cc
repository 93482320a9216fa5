// JSON-RPC framing and parsing: every malformed or hostile line becomes an error value.
#include "api/jsonrpc.h"

#include <cstring>
#include <gtest/gtest.h>

#include "api/error.h"
#include "api/params.h"

namespace ward::api {
namespace {

std::vector<LineFramer::Item> Drain(LineFramer& f) {
  std::vector<LineFramer::Item> out;
  while (auto i = f.Next()) out.push_back(*i);
  return out;
}

TEST(LineFramer, SplitsLinesAcrossChunksAndDropsCr) {
  LineFramer f(100);
  f.Feed("{\"a\":1}\r\n{\"b\"");
  auto items = Drain(f);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].line, "{\"a\":1}");
  EXPECT_EQ(f.pending(), 4u);
  f.Feed(":2}\n\n");
  items = Drain(f);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].line, "{\"b\":2}");
  EXPECT_EQ(items[1].line, "");
}

TEST(LineFramer, OversizedLineIsReportedOnceAndTheStreamRecovers) {
  LineFramer f(16);
  f.Feed(std::string(10, 'x'));
  EXPECT_TRUE(Drain(f).empty());
  f.Feed(std::string(10, 'x'));  // now over the cap without a newline
  auto items = Drain(f);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_TRUE(items[0].oversized);
  EXPECT_EQ(f.pending(), 0u);  // nothing of it is kept
  f.Feed(std::string(1000, 'y'));
  EXPECT_TRUE(Drain(f).empty());  // still the same line: no second report
  f.Feed("yyy\nok\n");
  items = Drain(f);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_FALSE(items[0].oversized);
  EXPECT_EQ(items[0].line, "ok");
}

TEST(LineFramer, OversizedLineArrivingWholeIsReported) {
  LineFramer f(8);
  f.Feed("0123456789abc\nshort\n");
  auto items = Drain(f);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_TRUE(items[0].oversized);
  EXPECT_EQ(items[1].line, "short");
}

TEST(ParseMessage, RequestNotificationAndResponse) {
  ParseFailure pf;
  auto r = ParseMessage(R"({"jsonrpc":"2.0","id":7,"method":"m","params":{"x":1}})", &pf);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, Message::Kind::kRequest);
  EXPECT_EQ(r->id, 7);
  EXPECT_EQ(r->method, "m");
  EXPECT_EQ(r->params["x"], 1);
  r = ParseMessage(R"({"jsonrpc":"2.0","method":"n"})", &pf);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, Message::Kind::kNotification);
  EXPECT_TRUE(r->params.is_object());
  r = ParseMessage(R"({"jsonrpc":"2.0","id":"a","result":{}})", &pf);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, Message::Kind::kResponse);
}

TEST(ParseMessage, MalformedInputIsAnError) {
  struct Case {
    const char* line;
    int code;
  } cases[] = {
      {"not json", kParseErrorCode},
      {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"", kParseErrorCode},
      {"[1,2]", kInvalidRequestCode},  // batches are refused
      {"42", kInvalidRequestCode},
      {"{\"id\":1,\"method\":\"m\"}", kInvalidRequestCode},  // no jsonrpc
      {"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"m\"}", kInvalidRequestCode},
      {"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"m\"}", kInvalidRequestCode},
      {"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"m\"}", kInvalidRequestCode},
      {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", kInvalidRequestCode},
      {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":\"x\"}", kInvalidRequestCode},
      {"{\"jsonrpc\":\"2.0\",\"id\":1}", kInvalidRequestCode},
      {"\"\\ud800\"", kParseErrorCode},  // lone surrogate
  };
  for (const auto& c : cases) {
    ParseFailure pf;
    auto r = ParseMessage(c.line, &pf);
    ASSERT_FALSE(r.ok()) << c.line;
    EXPECT_EQ(r.error().ToJson()["code"], c.code) << c.line;
    EXPECT_TRUE(r.error().ToJson()["data"]["kind"].is_string());
  }
}

TEST(ParseMessage, KeepsTheIdOfAnInvalidRequestWhenItCan) {
  ParseFailure pf;
  auto r = ParseMessage(R"({"jsonrpc":"2.0","id":"q","method":3})", &pf);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(pf.id, "q");
}

TEST(ParseMessage, DeepNestingIsRefusedBeforeParsing) {
  std::string deep(100000, '[');
  ParseFailure pf;
  auto r = ParseMessage(deep, &pf);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidRequest);
  std::string obj;
  for (int i = 0; i < 70; ++i) obj += "{\"a\":";
  obj += "1";
  for (int i = 0; i < 70; ++i) obj += "}";
  EXPECT_FALSE(ParseMessage(obj, &pf).ok());
}

TEST(Serialize, InvalidUtf8NeverThrowsAndStaysValid) {
  nlohmann::json j = {{"data", std::string("ok\xff\xfe", 4)}};
  std::string line = SerializeLine(j);
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  auto back = nlohmann::json::parse(line);
  EXPECT_EQ(back["data"], "ok\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Utf8, ReplacesEveryInvalidSequence) {
  EXPECT_EQ(ToValidUtf8("plain"), "plain");
  EXPECT_EQ(ToValidUtf8("\xc3\xa9"), "\xc3\xa9");                                  // é
  EXPECT_EQ(ToValidUtf8("\xc0\xaf"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(ToValidUtf8("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(ToValidUtf8("a\xe2\x82"), "a\xEF\xBF\xBD\xEF\xBF\xBD");                // cut short
  EXPECT_EQ(ToValidUtf8(std::string("\0", 1)), std::string("\0", 1));
}

TEST(Base64, RoundTripsAndRejectsGarbage) {
  for (std::string s : {std::string(""), std::string("a"), std::string("ab"), std::string("abc"),
                        std::string("\0\xff\x10 binary", 10)}) {
    auto d = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(*d, s);
  }
  EXPECT_EQ(Base64Encode("hello"), "aGVsbG8=");
  EXPECT_FALSE(Base64Decode("abc").has_value());
  EXPECT_FALSE(Base64Decode("ab!=").has_value());
  EXPECT_FALSE(Base64Decode("a===").has_value());
}

TEST(Errors, KindsHaveStableNamesAndCodes) {
  const char* names[] = {"not_found",   "policy_denied",      "approval_required", "timeout",
                         "interrupted", "resource_exhausted", "invalid_request",   "unsupported"};
  for (const char* n : names) {
    auto k = ParseErrorKind(n);
    ASSERT_TRUE(k.has_value()) << n;
    EXPECT_EQ(ErrorKindName(*k), n);
  }
  EXPECT_FALSE(ParseErrorKind("bogus").has_value());
  EXPECT_EQ(FromErrno("x", ENOENT).kind, ErrorKind::kNotFound);
  EXPECT_EQ(FromErrno("x", EXDEV).kind, ErrorKind::kPolicyDenied);
  EXPECT_EQ(FromErrno("x", ELOOP).kind, ErrorKind::kPolicyDenied);
  EXPECT_EQ(FromErrno("x", ENOSPC).kind, ErrorKind::kResourceExhausted);
  EXPECT_EQ(FromStatus(InvalidArgument("bad")).kind, ErrorKind::kInvalidRequest);
  EXPECT_EQ(FromStatus(NotFound("x")).kind, ErrorKind::kNotFound);
  // One mapping for every caller: a state the request does not fit is the request's fault.
  EXPECT_EQ(FromStatus(ward::Error(Code::kFailedPrecondition, "not live")).kind,
            ErrorKind::kInvalidRequest);
  // A file operation's errno: ErrnoError's code, refined where the workspace means more.
  EXPECT_EQ(FromErrno("x", EACCES).kind, ErrorKind::kPolicyDenied);
  EXPECT_EQ(FromErrno("x", EEXIST).kind, ErrorKind::kInvalidRequest);
  EXPECT_EQ(FromErrno("x", ENOSYS).kind, ErrorKind::kUnsupported);
  EXPECT_EQ(FromErrno("x", EIO).kind, ErrorKind::kInterrupted);
  Error e = FromErrno("reading x", ENOENT);
  EXPECT_EQ(e.message, std::string("reading x: ") + std::strerror(ENOENT));
  EXPECT_EQ(e.data["errno"], ENOENT);
}

TEST(Params, TypesRangesAndUnknownKeys) {
  nlohmann::json j = {{"s", "x"}, {"n", 5}, {"b", true}, {"l", {"a", "b"}}, {"m", {{"k", "v"}}}};
  Params p(j);
  EXPECT_EQ(p.String("s"), "x");
  EXPECT_EQ(p.Int("n", 0, 10), 5);
  EXPECT_EQ(p.Bool("b"), true);
  EXPECT_EQ(p.StringList("l").size(), 2u);
  EXPECT_EQ(p.StringMap("m").size(), 1u);
  EXPECT_TRUE(p.Finish());

  nlohmann::json extra = {{"s", "x"}, {"surprise", 1}};
  Params q(extra);
  q.String("s");
  EXPECT_FALSE(q.Finish());
  EXPECT_NE(q.error().message.find("surprise"), std::string::npos);

  nlohmann::json bad = {{"n", 11}};
  Params r(bad);
  EXPECT_FALSE(r.Int("n", 0, 10).has_value());
  EXPECT_FALSE(r.ok());

  nlohmann::json nul = {{"s", std::string("a\0b", 3)}};
  Params t(nul);
  EXPECT_FALSE(t.String("s").has_value());
  EXPECT_FALSE(t.ok());
  Params t2(nul);
  EXPECT_TRUE(t2.Bytes("s", 10).has_value());  // raw data may hold NUL

  nlohmann::json wrong = {{"l", {"a", 1}}};
  Params u(wrong);
  EXPECT_TRUE(u.StringList("l").empty());
  EXPECT_FALSE(u.ok());

  nlohmann::json arr = nlohmann::json::array();
  Params v(arr);
  EXPECT_FALSE(v.ok());

  nlohmann::json big = {{"n", 1e300}};
  Params w(big);
  EXPECT_FALSE(w.Int("n", 0, 10).has_value());

  nlohmann::json huge = {{"n", 18446744073709551615ull}};
  Params x(huge);
  EXPECT_FALSE(x.Int("n", 0, INT64_MAX - 1).has_value());
}

}  // namespace
}  // namespace ward::api
