// Transparent capture's netlink messages, read back: the route that makes a range local and the
// nftables batch that redirects its TCP. (The kernel's acceptance of them is the integration
// tests', which connect through them.)
#include "enforce/ns/capture.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>
#include <string>
#include <vector>

namespace ward::enforce {
namespace {

struct Message {
  uint16_t type = 0, flags = 0;
  std::string payload;  // after the nlmsghdr
};

std::vector<Message> Split(const char* buf, size_t len) {
  std::vector<Message> out;
  size_t at = 0;
  while (at + sizeof(nlmsghdr) <= len) {
    nlmsghdr h;
    std::memcpy(&h, buf + at, sizeof h);
    EXPECT_GE(h.nlmsg_len, sizeof h);
    EXPECT_LE(at + h.nlmsg_len, len);
    EXPECT_EQ(h.nlmsg_len % 4, 0u);
    out.push_back({h.nlmsg_type, h.nlmsg_flags,
                   std::string(buf + at + sizeof h, h.nlmsg_len - sizeof h)});
    at += NLMSG_ALIGN(h.nlmsg_len);
  }
  EXPECT_EQ(at, len);
  return out;
}

// Every attribute at any depth (nested ones are walked), as type -> payloads, in order.
void Walk(const std::string& attrs, std::vector<std::pair<uint16_t, std::string>>* out) {
  size_t at = 0;
  while (at + sizeof(nlattr) <= attrs.size()) {
    nlattr a;
    std::memcpy(&a, attrs.data() + at, sizeof a);
    ASSERT_GE(a.nla_len, sizeof a);
    ASSERT_LE(at + a.nla_len, attrs.size());
    std::string payload = attrs.substr(at + sizeof a, a.nla_len - sizeof a);
    out->emplace_back(a.nla_type & NLA_TYPE_MASK, payload);
    if (a.nla_type & NLA_F_NESTED) Walk(payload, out);
    at += NLA_ALIGN(a.nla_len);
  }
  EXPECT_EQ(at, attrs.size());
}

bool HasString(const std::vector<std::pair<uint16_t, std::string>>& attrs, const std::string& s) {
  for (const auto& [type, payload] : attrs) {
    if (payload == s + std::string(1, '\0')) return true;
  }
  return false;
}

TEST(CaptureTest, TheRouteMakesTheRangeLocalThroughLo) {
  char buf[512];
  const uint8_t range[4] = {198, 18, 0, 0};
  size_t n = internal::BuildLocalRoute(buf, sizeof buf, AF_INET, range, 15, 1, 7);
  ASSERT_GT(n, 0u);
  std::vector<Message> m = Split(buf, n);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, RTM_NEWROUTE);
  EXPECT_TRUE(m[0].flags & NLM_F_ACK);
  rtmsg rt;
  std::memcpy(&rt, m[0].payload.data(), sizeof rt);
  EXPECT_EQ(rt.rtm_family, AF_INET);
  EXPECT_EQ(rt.rtm_dst_len, 15);
  EXPECT_EQ(rt.rtm_type, RTN_LOCAL);
  EXPECT_EQ(rt.rtm_table, RT_TABLE_LOCAL);
  std::vector<std::pair<uint16_t, std::string>> attrs;
  Walk(m[0].payload.substr(NLMSG_ALIGN(sizeof rt)), &attrs);
  ASSERT_EQ(attrs.size(), 2u);
  EXPECT_EQ(attrs[0].first, RTA_DST);
  EXPECT_EQ(attrs[0].second, std::string("\xc6\x12\x00\x00", 4));
  EXPECT_EQ(attrs[1].first, RTA_OIF);
}

TEST(CaptureTest, TheBatchRedirectsTcpToTheRangeToThePort) {
  char buf[2048];
  const uint8_t range[16] = {0xfd, 0x77, 0x61, 0x72, 0x64, 0, 0, 0};
  size_t n = internal::BuildRedirect(buf, sizeof buf, AF_INET6, range, 64, 3129, 1);
  ASSERT_GT(n, 0u);
  std::vector<Message> m = Split(buf, n);
  ASSERT_EQ(m.size(), 8u);
  EXPECT_EQ(m[0].type, NFNL_MSG_BATCH_BEGIN);
  EXPECT_EQ(m[7].type, NFNL_MSG_BATCH_END);
  const uint16_t nft = NFNL_SUBSYS_NFTABLES << 8;
  EXPECT_EQ(m[1].type, nft | NFT_MSG_NEWTABLE);
  EXPECT_EQ(m[2].type, nft | NFT_MSG_NEWCHAIN);
  EXPECT_EQ(m[3].type, nft | NFT_MSG_NEWRULE);
  EXPECT_EQ(m[4].type, nft | NFT_MSG_NEWCHAIN);
  EXPECT_EQ(m[5].type, nft | NFT_MSG_NEWRULE);
  EXPECT_EQ(m[6].type, nft | NFT_MSG_NEWRULE);
  int acks = 0;
  for (const Message& msg : m) acks += (msg.flags & NLM_F_ACK) ? 1 : 0;
  EXPECT_EQ(acks, internal::kRedirectAcks);
  // The chain: nat at the output hook.
  std::vector<std::pair<uint16_t, std::string>> chain;
  Walk(m[2].payload.substr(sizeof(nfgenmsg)), &chain);
  EXPECT_TRUE(HasString(chain, "nat"));
  // The rule: tcp, the /64's 8 bytes compared (no mask needed), redirect to 3129.
  std::vector<std::pair<uint16_t, std::string>> rule;
  Walk(m[3].payload.substr(sizeof(nfgenmsg)), &rule);
  for (const char* expr : {"meta", "cmp", "payload", "immediate", "redir"}) {
    EXPECT_TRUE(HasString(rule, expr)) << expr;
  }
  EXPECT_FALSE(HasString(rule, "bitwise"));
  bool prefix = false, port = false;
  for (const auto& [type, payload] : rule) {
    if (type == NFTA_DATA_VALUE && payload == std::string(reinterpret_cast<const char*>(range), 8)) {
      prefix = true;
    }
    if (type == NFTA_DATA_VALUE && payload == std::string("\x0c\x39", 2)) port = true;
  }
  EXPECT_TRUE(prefix);
  EXPECT_TRUE(port);
  // Before connection tracking, everything but TCP to the range is left untracked.
  std::vector<std::pair<uint16_t, std::string>> raw;
  Walk(m[4].payload.substr(sizeof(nfgenmsg)), &raw);
  EXPECT_TRUE(HasString(raw, "filter"));
  for (int i : {5, 6}) {
    std::vector<std::pair<uint16_t, std::string>> untracked;
    Walk(m[i].payload.substr(sizeof(nfgenmsg)), &untracked);
    EXPECT_TRUE(HasString(untracked, "notrack")) << i;
    EXPECT_TRUE(HasString(untracked, "cmp")) << i;
    EXPECT_FALSE(HasString(untracked, "redir")) << i;
  }
}

TEST(CaptureTest, AnOddPrefixIsMaskedAndATooSmallBufferGivesNothing) {
  char buf[2048];
  const uint8_t range[4] = {198, 19, 0, 0};  // host bits set: masked to 198.18.0.0/15, two bytes compared
  size_t n = internal::BuildRedirect(buf, sizeof buf, AF_INET, range, 15, 3129, 1);
  std::vector<Message> m = Split(buf, n);
  ASSERT_EQ(m.size(), 8u);
  std::vector<std::pair<uint16_t, std::string>> rule;
  Walk(m[3].payload.substr(sizeof(nfgenmsg)), &rule);
  EXPECT_TRUE(HasString(rule, "bitwise"));
  bool mask = false, want = false;
  for (const auto& [type, payload] : rule) {
    if (type == NFTA_DATA_VALUE && payload == std::string("\xff\xfe", 2)) mask = true;
    if (type == NFTA_DATA_VALUE && payload == std::string("\xc6\x12", 2)) want = true;
  }
  EXPECT_TRUE(mask);
  EXPECT_TRUE(want);
  EXPECT_EQ(internal::BuildRedirect(buf, 100, AF_INET, range, 15, 3129, 1), 0u);
  EXPECT_EQ(internal::BuildLocalRoute(buf, 20, AF_INET, range, 15, 1, 1), 0u);
}

}  // namespace
}  // namespace ward::enforce
