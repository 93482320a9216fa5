#include "net/egress_rules.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ward::net {
namespace {

policy::HostRule Rule(std::string pattern, int line = 1) {
  return policy::HostRule{std::move(pattern), policy::Origin{"test.toml", line, "network.allow"}};
}

EgressRules Compile(std::vector<std::string> allow, std::vector<std::string> deny = {}) {
  policy::NetworkPolicy p;
  int line = 1;
  for (auto& a : allow) p.allow.push_back(Rule(a, line++));
  for (auto& d : deny) {
    p.deny.push_back(Rule(d, line++));
    p.deny.back().origin.key = "network.deny";
  }
  auto r = EgressRules::Compile(p);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : EgressRules();
}

IpAddress Ip(const char* s) { return *IpAddress::Parse(s); }

TEST(EgressRulesTest, EmptyDeniesEverything) {
  EgressRules rules;
  EXPECT_TRUE(rules.empty());
  EXPECT_FALSE(rules.CheckName("example.com", 443).allowed);
  EXPECT_FALSE(rules.CheckAddress(Ip("127.0.0.1"), 80).allowed);
  EXPECT_TRUE(rules.CheckAddress(Ip("8.8.8.8"), 443).allowed);  // public: the name decided
}

struct NameCase {
  const char* host;
  uint16_t port;
  bool allowed;
};

void ExpectNames(const EgressRules& rules, const std::vector<NameCase>& cases) {
  for (const auto& c : cases) {
    auto d = rules.CheckName(c.host, c.port);
    EXPECT_EQ(d.allowed, c.allowed) << c.host << ":" << c.port << " -> " << d.reason;
    EXPECT_FALSE(d.reason.empty());
  }
}

// "*" (or "*.*") matches every name; the policy loader accepts it only with
// --allow-net-anything. IP literals still need an address rule.
TEST(EgressRulesTest, StarMatchesEveryNameButNoAddress) {
  for (const char* star : {"*", "*.*"}) {
    EgressRules rules = Compile({star});
    ExpectNames(rules, {{"example.com", 443, true}, {"a.b.example.org", 80, true},
                        {"example.com", 22, false}});
    EXPECT_TRUE(rules.CheckDnsName("anything.example").allowed);
    EXPECT_FALSE(rules.CheckName("192.0.2.1", 443).allowed);
  }
  EgressRules denied = Compile({"*.example.com"}, {"*"});
  EXPECT_FALSE(denied.CheckName("www.example.com", 443).allowed);
}

TEST(EgressRulesTest, ExactWildcardAndApex) {
  EgressRules rules = Compile({"example.com", "*.github.com"});
  EXPECT_FALSE(rules.empty());
  ExpectNames(rules, {
                         {"example.com", 443, true},
                         {"example.com", 80, true},
                         {"EXAMPLE.com.", 443, true},
                         {"www.example.com", 443, false},  // exact means exact
                         {"example.com.evil.net", 443, false},
                         {"notexample.com", 443, false},
                         {"api.github.com", 443, true},
                         {"a.b.c.github.com", 443, true},  // any depth
                         {"github.com", 443, false},       // not the apex
                         {"evilgithub.com", 443, false},
                         {"github.com.evil.net", 443, false},
                         {"api.github.com.", 443, true},
                     });
}

TEST(EgressRulesTest, Ports) {
  EgressRules rules =
      Compile({"bare.example", "one.example:8443", "any.example:*", "*.wild.example:22"});
  ExpectNames(rules, {
                         {"bare.example", 80, true},
                         {"bare.example", 443, true},
                         {"bare.example", 8080, false},
                         {"bare.example", 22, false},
                         {"one.example", 8443, true},
                         {"one.example", 443, false},
                         {"any.example", 1, true},
                         {"any.example", 65535, true},
                         {"x.wild.example", 22, true},
                         {"x.wild.example", 443, false},
                         {"bare.example", 0, false},
                     });
}

TEST(EgressRulesTest, DenyWinsAndBareDenyMeansEveryPort) {
  EgressRules rules = Compile({"*.example.com:*", "example.com"},
                              {"secret.example.com", "*.internal.example.com:8080"});
  ExpectNames(rules, {
                         {"www.example.com", 443, true},
                         {"secret.example.com", 443, false},
                         {"secret.example.com", 9999, false},  // bare deny: all ports
                         {"x.secret.example.com", 443, true},  // exact deny is exact
                         {"a.internal.example.com", 8080, false},
                         {"a.internal.example.com", 443, true},
                         {"example.com", 443, true},
                     });
  auto d = rules.CheckName("secret.example.com", 443);
  EXPECT_EQ(d.rule, "secret.example.com");
  EXPECT_EQ(d.origin.source, "test.toml");
  EXPECT_EQ(d.origin.key, "network.deny");
  EXPECT_NE(d.reason.find("test.toml:3"), std::string::npos) << d.reason;
  auto a = rules.CheckName("www.example.com", 443);
  EXPECT_EQ(a.rule, "*.example.com:*");
  EXPECT_EQ(a.origin.line, 1);
}

TEST(EgressRulesTest, NamesAreNormalisedOnBothSides) {
  EgressRules rules = Compile({"Bücher.Example.", "*.XN--E1AFMKFD.test"});
  ExpectNames(rules, {
                         {"xn--bcher-kva.example", 443, true},
                         {"bücher.example", 443, true},
                         {"BÜCHER.EXAMPLE.", 443, true},
                         {"bucher.example", 443, false},
                         {"www.пример.test", 443, true},
                         {"пример.test", 443, false},
                     });
}

TEST(EgressRulesTest, IpLiteralsOnlyWhenListed) {
  EgressRules rules = Compile(
      {"example.com", "10.0.0.5", "[::1]:3000", "192.168.0.0/16:*", "fd00::/8", "127.0.0.1:8080"});
  ExpectNames(rules, {
                         {"10.0.0.5", 443, true},
                         {"10.0.0.5", 8080, false},
                         {"10.0.0.6", 443, false},
                         {"[::1]", 3000, true},
                         {"::1", 3000, true},
                         {"[::1]", 3001, false},
                         {"192.168.7.7", 5432, true},
                         {"[fd12::1]", 443, true},
                         {"93.184.216.34", 443, false},  // a public literal needs a rule too
                         {"127.0.0.1", 8080, true},
                         {"127.1", 8080, true},  // the disguise is the same address
                         {"2130706433", 8080, true},
                         {"0x7f.0.0.1", 80, false},
                         {"[::ffff:127.0.0.1]", 8080, true},
                         {"foo.123", 443, false},  // neither name nor address
                     });
}

TEST(EgressRulesTest, CheckAddressDeniesNonPublicUnlessListed) {
  EgressRules rules = Compile({"*.example.com", "127.0.0.1:3000", "10.0.0.0/8:*"}, {"8.8.4.0/24"});
  EXPECT_TRUE(rules.CheckAddress(Ip("93.184.216.34"), 443).allowed);
  EXPECT_TRUE(rules.CheckAddress(Ip("2606:4700::1111"), 443).allowed);
  EXPECT_TRUE(rules.CheckAddress(Ip("127.0.0.1"), 3000).allowed);
  EXPECT_TRUE(rules.CheckAddress(Ip("::ffff:127.0.0.1"), 3000).allowed);
  EXPECT_FALSE(rules.CheckAddress(Ip("127.0.0.1"), 3001).allowed);
  EXPECT_FALSE(rules.CheckAddress(Ip("127.0.0.2"), 3000).allowed);
  EXPECT_TRUE(rules.CheckAddress(Ip("10.20.30.40"), 9).allowed);
  EXPECT_FALSE(rules.CheckAddress(Ip("8.8.4.4"), 443).allowed);  // deny by CIDR
  for (const char* a : {"169.254.169.254", "fd00:ec2::254", "100.100.100.200", "192.168.1.1", "::1",
                        "fe80::1", "100.64.0.1", "224.0.0.1", "0.0.0.0", "240.0.0.1",
                        "255.255.255.255", "64:ff9b::7f00:1", "2002:7f00:1::", "::ffff:10.0.0.1"}) {
    auto d = rules.CheckAddress(Ip(a), 443);
    if (std::string(a) == "::ffff:10.0.0.1") {
      EXPECT_TRUE(d.allowed) << a;  // mapped into 10/8, which is listed
      continue;
    }
    EXPECT_FALSE(d.allowed) << a;
    EXPECT_EQ(d.rule, "") << a;
    EXPECT_NE(d.reason.find(Ip(a).Unmapped().ToString()), std::string::npos) << d.reason;
  }
  // A name rule never allows a non-public address, even for that name's port.
  EXPECT_FALSE(rules.CheckAddress(Ip("192.168.1.1"), 443).allowed);
  EXPECT_FALSE(rules.CheckAddress(Ip("127.0.0.1"), 0).allowed);
}

TEST(EgressRulesTest, DnsNamesIgnorePortsButHonourBroadDenies) {
  EgressRules rules = Compile(
      {"api.example.com:8443", "*.cdn.example", "blocked.example", "partly.example:*", "10.0.0.1"},
      {"blocked.example", "partly.example:22", "evil.cdn.example"});
  EXPECT_TRUE(rules.CheckDnsName("API.example.com.").allowed);  // any port of the rule
  EXPECT_TRUE(rules.CheckDnsName("x.cdn.example").allowed);
  EXPECT_FALSE(rules.CheckDnsName("cdn.example").allowed);
  EXPECT_FALSE(rules.CheckDnsName("evil.cdn.example").allowed);
  EXPECT_FALSE(rules.CheckDnsName("blocked.example").allowed);  // bare deny: every port
  EXPECT_TRUE(rules.CheckDnsName("partly.example").allowed);    // denied on one port only
  EXPECT_FALSE(rules.CheckDnsName("other.example").allowed);
  EXPECT_FALSE(rules.CheckDnsName("10.0.0.1").allowed);
  EXPECT_FALSE(rules.CheckDnsName("exa\\046mple.com").allowed);  // escaped DNS label bytes
  EXPECT_EQ(rules.CheckDnsName("x.cdn.example").rule, "*.cdn.example");
}

TEST(EgressRulesTest, BadPatternsNameTheOrigin) {
  for (const char* bad : {"*.",
                          "*foo.com",
                          "a..b",
                          ":99999",
                          "example.com:99999",
                          "http://x",
                          "",
                          "foo.*.com",
                          "*.*.example.com",
                          "example.com:",
                          "example.com:0",
                          "example.com:-1",
                          "example.com:+80",
                          "example.com/path",
                          "user@host",
                          "exa mple.com",
                          " example.com",
                          "example.com ",
                          "[::1",
                          "[::1]x",
                          "[example.com]:80",
                          "10.0.0.1/8",
                          "127.1",
                          "0x7f.0.0.1",
                          "*.10.0.0.1",
                          "*.[::1]",
                          "::1:3000:x",
                          "fe80::1%eth0",
                          "example.com?x",
                          "a.b#c",
                          "foo.123",
                          "example.com:80:80",
                          "*.example.com:*:*",
                          "xn--zz.example"}) {
    policy::NetworkPolicy p;
    p.allow.push_back(policy::HostRule{bad, policy::Origin{"cli", 0, "--allow-net"}});
    auto r = EgressRules::Compile(p);
    ASSERT_FALSE(r.ok()) << "accepted '" << bad << "'";
    EXPECT_NE(r.status().message().find("cli (--allow-net)"), std::string::npos)
        << r.status().message();
  }
  policy::NetworkPolicy p;
  p.deny.push_back(policy::HostRule{"*.", policy::Origin{"x.toml", 7, "network.deny"}});
  auto r = EgressRules::Compile(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("x.toml:7 (network.deny)"), std::string::npos)
      << r.status().message();
}

TEST(EgressRulesTest, ParsedRuleShapes) {
  struct Case {
    const char* pattern;
    HostRule::Kind kind;
    HostRule::Ports ports;
    uint16_t port;
    const char* canonical;  // name or net
  } cases[] = {
      {"example.com", HostRule::Kind::kExact, HostRule::Ports::kDefault, 0, "example.com"},
      {"*.Example.com.", HostRule::Kind::kWildcard, HostRule::Ports::kDefault, 0, "example.com"},
      {"example.com:8443", HostRule::Kind::kExact, HostRule::Ports::kOne, 8443, "example.com"},
      {"example.com:*", HostRule::Kind::kExact, HostRule::Ports::kAny, 0, "example.com"},
      {"10.0.0.5", HostRule::Kind::kAddress, HostRule::Ports::kDefault, 0, "10.0.0.5/32"},
      {"[::1]:3000", HostRule::Kind::kAddress, HostRule::Ports::kOne, 3000, "::1/128"},
      {"::1", HostRule::Kind::kAddress, HostRule::Ports::kDefault, 0, "::1/128"},
      {"[::ffff:10.0.0.1]", HostRule::Kind::kAddress, HostRule::Ports::kDefault, 0, "10.0.0.1/32"},
      {"10.0.0.0/8", HostRule::Kind::kNet, HostRule::Ports::kDefault, 0, "10.0.0.0/8"},
      {"10.0.0.0/8:5432", HostRule::Kind::kNet, HostRule::Ports::kOne, 5432, "10.0.0.0/8"},
      {"fd00::/8", HostRule::Kind::kNet, HostRule::Ports::kDefault, 0, "fd00::/8"},
      {"[fd00::]/8", HostRule::Kind::kNet, HostRule::Ports::kDefault, 0, "fd00::/8"},
      {"[fd00::/8]:443", HostRule::Kind::kNet, HostRule::Ports::kOne, 443, "fd00::/8"},
  };
  for (const auto& c : cases) {
    auto r = HostRule::Parse(policy::HostRule{c.pattern, {}});
    ASSERT_TRUE(r.ok()) << c.pattern << ": " << r.status().message();
    EXPECT_EQ(r->kind, c.kind) << c.pattern;
    EXPECT_EQ(r->ports, c.ports) << c.pattern;
    EXPECT_EQ(r->port, c.port) << c.pattern;
    bool is_name = c.kind == HostRule::Kind::kExact || c.kind == HostRule::Kind::kWildcard;
    EXPECT_EQ(is_name ? r->name : r->net.ToString(), c.canonical) << c.pattern;
    EXPECT_EQ(r->text, c.pattern);
  }
}

TEST(EgressRulesTest, AllowedNamePortsAreWhatCaptureOpens) {
  auto ports = [](std::vector<std::string> allow, std::vector<std::string> deny = {}) {
    return Compile(std::move(allow), std::move(deny)).AllowedNamePorts();
  };
  auto p = ports({"a.test", "*.b.test:8443", "c.test:22", "10.0.0.0/8:5432", "[::1]:3000"});
  EXPECT_EQ(p.ports, (std::vector<uint16_t>{22, 80, 443, 8443}));
  EXPECT_FALSE(p.any);
  p = ports({"a.test:*", "c.test:22"});
  EXPECT_TRUE(p.any);
  EXPECT_TRUE(ports({"10.0.0.5", "192.0.2.0/24:443"}).empty());
  EXPECT_TRUE(ports({}).empty());
}

}  // namespace
}  // namespace ward::net
