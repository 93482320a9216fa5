// The words of a refusal (net/egress_rules.h: AllowFlag, RefusalTarget, RefusalSentence): the
// flag offered is one the rules accept and that allows exactly the refused destination, none is
// offered for a deny rule, and what the sandbox named cannot put a control byte on a terminal
// or break the 403's status line.
#include <gtest/gtest.h>

#include "net/egress_rules.h"

namespace ward::net {
namespace {

Host Name(const std::string& s) { return *ParseHost(s); }

EgressRules Rules(std::vector<std::string> allow, std::vector<std::string> deny = {}) {
  policy::NetworkPolicy p;
  for (auto& a : allow) p.allow.push_back({a, {}});
  for (auto& d : deny) p.deny.push_back({d, {"test.toml", 3, "network.deny"}});
  return *EgressRules::Compile(p);
}

TEST(RefusalSentenceTest, TheFlagOfferedAllowsExactlyTheRefusedDestination) {
  struct Case {
    std::string host;
    uint16_t port;
    std::string flag;
  } cases[] = {{"registry.example.org", 443, "-n registry.example.org"},
               {"registry.example.org", 80, "-n registry.example.org"},
               {"registry.example.org", 8443, "-n registry.example.org:8443"},
               {"10.0.0.5", 443, "-n 10.0.0.5"},
               {"10.0.0.5", 3000, "-n 10.0.0.5:3000"},
               {"fd00::1", 443, "-n fd00::1"},
               {"fd00::1", 3000, "-n [fd00::1]:3000"}};
  for (const Case& c : cases) {
    EgressRules::Decision d = Rules({}).CheckHost(Name(c.host), c.port);
    ASSERT_FALSE(d.allowed);
    EXPECT_EQ(d.allow_with, c.flag) << c.host << ":" << c.port;
    // The pattern in the flag, once allowed, allows it.
    EXPECT_TRUE(Rules({c.flag.substr(3)}).CheckHost(Name(c.host), c.port).allowed) << c.flag;
  }
}

TEST(RefusalSentenceTest, ADenyRuleOffersNoFlagAndSaysSo) {
  EgressRules rules = Rules({"evil.example"}, {"evil.example"});
  EgressRules::Decision d = rules.CheckHost(Name("evil.example"), 443);
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(d.allow_with, "");
  EXPECT_EQ(RefusalSentence(RefusalTarget(Name("evil.example"), 443), d.rule, "test.toml:3",
                            false, d.reason, d.allow_with),
            "evil.example refused by network.deny rule 'evil.example' (test.toml:3)");
  EXPECT_EQ(rules.CheckDnsName("evil.example").allow_with, "");
  EXPECT_EQ(Rules({}).CheckDnsName("pkg.example").allow_with, "-n pkg.example");
}

TEST(RefusalSentenceTest, SentencesNameTheTargetAndTheFlag) {
  EXPECT_EQ(RefusalSentence("registry.example.org", "", "", true, "no rule allows it",
                            "-n registry.example.org"),
            "registry.example.org not allowed (ward run -n registry.example.org)");
  EXPECT_EQ(RefusalSentence("a.example:443", "", "", false, "TLS server name b does not match", ""),
            "a.example:443 refused: TLS server name b does not match");
}

TEST(RefusalSentenceTest, ControlBytesFromTheSandboxNeverSurvive) {
  std::string s = RefusalSentence("a\x1b[2J\r\nHTTP/1.1 200 OK\x7f\xc3\xa4", "",
                                  "", false, "bad\nhost", "");
  for (char c : s) {
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << static_cast<int>(static_cast<unsigned char>(c));
  }
  EXPECT_EQ(s, "a?[2J??HTTP/1.1 200 OK??? refused: bad?host");
}

}  // namespace
}  // namespace ward::net
