#include "net/socks5.h"

#include <gtest/gtest.h>

#include <string>

namespace ward::net {
namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int v : b) s += static_cast<char>(v);
  return s;
}

TEST(Socks5GreetingTest, ParsesIncrementally) {
  std::string g = Bytes({5, 2, 0x02, 0x00}) + "REST";
  for (size_t n = 0; n < 4; ++n) {
    Socks5Greeting out;
    EXPECT_EQ(ParseSocks5Greeting(g.substr(0, n), &out).kind, Socks5Parse::Kind::kNeedMore) << n;
  }
  Socks5Greeting out;
  Socks5Parse p = ParseSocks5Greeting(g, &out);
  ASSERT_EQ(p.kind, Socks5Parse::Kind::kDone);
  EXPECT_EQ(p.consumed, 4u);
  EXPECT_TRUE(out.offers_no_auth);
  EXPECT_EQ(out.methods, (std::vector<uint8_t>{2, 0}));
  EXPECT_EQ(BuildSocks5MethodSelection(kSocks5NoAuth), Bytes({5, 0}));
}

TEST(Socks5GreetingTest, OnlyNoAuthIsAcceptable) {
  Socks5Greeting out;
  Socks5Parse p = ParseSocks5Greeting(Bytes({5, 1, 0x02}), &out);
  ASSERT_EQ(p.kind, Socks5Parse::Kind::kDone);
  EXPECT_FALSE(out.offers_no_auth);
  EXPECT_EQ(BuildSocks5MethodSelection(kSocks5NoAcceptableMethod), Bytes({5, 0xff}));
  // 255 methods is the maximum and fine.
  std::string all = Bytes({5, 255});
  for (int i = 0; i < 255; ++i) all += static_cast<char>(255 - i);
  p = ParseSocks5Greeting(all, &out);
  ASSERT_EQ(p.kind, Socks5Parse::Kind::kDone);
  EXPECT_EQ(p.consumed, kSocks5MaxGreeting);
}

TEST(Socks5GreetingTest, RejectsOtherProtocols) {
  Socks5Greeting out;
  for (const std::string& bad :
       {Bytes({4, 1, 0, 80}), std::string("GET / HTTP/1.1\r\n"),
        std::string("CONNECT x:443 HTTP/1.1\r\n"), Bytes({5, 0}), Bytes({0x16, 3, 1})}) {
    Socks5Parse p = ParseSocks5Greeting(bad, &out);
    EXPECT_EQ(p.kind, Socks5Parse::Kind::kError) << bad;
    EXPECT_FALSE(p.send_reply);
    EXPECT_FALSE(p.reason.empty());
  }
}

TEST(Socks5RequestTest, ConnectWithEveryAddressType) {
  Socks5Request r;
  std::string v4 = Bytes({5, 1, 0, 1, 93, 184, 216, 34, 0x01, 0xbb});
  for (size_t n = 0; n < v4.size(); ++n) {
    EXPECT_EQ(ParseSocks5Request(v4.substr(0, n), &r).kind, Socks5Parse::Kind::kNeedMore) << n;
  }
  Socks5Parse p = ParseSocks5Request(v4 + "extra", &r);
  ASSERT_EQ(p.kind, Socks5Parse::Kind::kDone);
  EXPECT_EQ(p.consumed, v4.size());
  EXPECT_EQ(r.address_type, Socks5AddressType::kIpv4);
  EXPECT_EQ(r.address.ToString(), "93.184.216.34");
  EXPECT_EQ(r.port, 443);
  EXPECT_EQ(r.HostText(), "93.184.216.34");

  std::string dom = Bytes({5, 1, 0, 3, 11}) + "example.com" + Bytes({0x1f, 0x90});
  for (size_t n = 0; n < dom.size(); ++n) {
    EXPECT_EQ(ParseSocks5Request(dom.substr(0, n), &r).kind, Socks5Parse::Kind::kNeedMore) << n;
  }
  p = ParseSocks5Request(dom, &r);
  ASSERT_EQ(p.kind, Socks5Parse::Kind::kDone);
  EXPECT_EQ(r.domain, "example.com");
  EXPECT_EQ(r.port, 8080);
  EXPECT_EQ(r.HostText(), "example.com");

  std::string v6 = Bytes({5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 22});
  p = ParseSocks5Request(v6, &r);
  ASSERT_EQ(p.kind, Socks5Parse::Kind::kDone);
  EXPECT_EQ(r.HostText(), "::1");
  EXPECT_EQ(r.port, 22);

  // A 255-byte domain is the maximum; its bytes are passed on raw for the rules to judge.
  std::string longest = Bytes({5, 1, 0, 3, 255}) + std::string(255, 'a') + Bytes({0, 80});
  p = ParseSocks5Request(longest, &r);
  ASSERT_EQ(p.kind, Socks5Parse::Kind::kDone);
  EXPECT_EQ(p.consumed, kSocks5MaxRequest);
  std::string binary = Bytes({5, 1, 0, 3, 3, 'a', 0, '.', 0, 80});
  p = ParseSocks5Request(binary, &r);
  ASSERT_EQ(p.kind, Socks5Parse::Kind::kDone);
  EXPECT_EQ(r.domain, std::string("a\0.", 3));
}

TEST(Socks5RequestTest, RefusesWithTheRightReply) {
  struct Case {
    std::string bytes;
    Socks5Reply reply;
  } cases[] = {
      {Bytes({5, 2, 0, 1, 1, 2, 3, 4, 0, 80}), Socks5Reply::kCommandNotSupported},  // BIND
      {Bytes({5, 3, 0, 1, 0, 0, 0, 0, 0, 0}), Socks5Reply::kCommandNotSupported},   // UDP
      {Bytes({5, 9, 0, 1, 1, 2, 3, 4, 0, 80}), Socks5Reply::kCommandNotSupported},
      {Bytes({5, 1, 0, 2, 1, 2, 3, 4, 0, 80}), Socks5Reply::kAddressTypeNotSupported},
      {Bytes({5, 1, 0, 0}), Socks5Reply::kAddressTypeNotSupported},
      {Bytes({5, 1, 0, 3, 0, 0, 80}), Socks5Reply::kGeneralFailure},           // empty domain
      {Bytes({5, 1, 1, 1, 1, 2, 3, 4, 0, 80}), Socks5Reply::kGeneralFailure},  // RSV != 0
      {Bytes({5, 1, 0, 1, 1, 2, 3, 4, 0, 0}), Socks5Reply::kGeneralFailure},   // port 0
      {Bytes({4, 1, 0, 80, 1, 2, 3, 4, 0}), Socks5Reply::kGeneralFailure},
  };
  for (const auto& c : cases) {
    Socks5Request r;
    Socks5Parse p = ParseSocks5Request(c.bytes, &r);
    ASSERT_EQ(p.kind, Socks5Parse::Kind::kError) << static_cast<int>(c.bytes[1]);
    EXPECT_TRUE(p.send_reply);
    EXPECT_EQ(p.reply, c.reply) << p.reason;
  }
  // A command error waits for the whole request, so the reply follows it.
  Socks5Request r;
  EXPECT_EQ(ParseSocks5Request(Bytes({5, 2, 0, 1, 1, 2}), &r).kind, Socks5Parse::Kind::kNeedMore);
}

TEST(Socks5ReplyTest, Builds) {
  EXPECT_EQ(BuildSocks5Reply(Socks5Reply::kSucceeded), Bytes({5, 0, 0, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(BuildSocks5Reply(Socks5Reply::kNotAllowed), Bytes({5, 2, 0, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(BuildSocks5Reply(Socks5Reply::kHostUnreachable)[1], 4);
  EXPECT_EQ(BuildSocks5Reply(Socks5Reply::kConnectionRefused)[1], 5);
  EXPECT_EQ(BuildSocks5Reply(Socks5Reply::kCommandNotSupported)[1], 7);
  EXPECT_EQ(BuildSocks5Reply(Socks5Reply::kAddressTypeNotSupported)[1], 8);
  EXPECT_EQ(BuildSocks5Reply(Socks5Reply::kSucceeded, IpAddress::V4(10, 0, 0, 1), 1080),
            Bytes({5, 0, 0, 1, 10, 0, 0, 1, 0x04, 0x38}));
  std::string v6 = BuildSocks5Reply(Socks5Reply::kSucceeded, *IpAddress::Parse("::1"), 1);
  EXPECT_EQ(v6.size(), 22u);
  EXPECT_EQ(v6[3], 4);
  EXPECT_EQ(v6[19], 1);
}

}  // namespace
}  // namespace ward::net
