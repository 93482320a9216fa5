// Method and path rules: first match wins, a governed host is limited to what its rules allow,
// and a path is read as the server reads it (a target with two readings is refused).
#include "net/request_rules.h"

#include <gtest/gtest.h>

namespace ward::net {
namespace {

using Action = RequestRules::Decision::Action;
using policy::RequestRule;

RequestRule R(std::string host, std::vector<std::string> methods, std::vector<std::string> paths,
              RequestRule::Action action = RequestRule::Action::kAllow, int line = 1) {
  RequestRule r;
  r.host = std::move(host);
  r.methods = std::move(methods);
  r.paths = std::move(paths);
  r.action = action;
  r.origin = {"rules.toml", line, "network.rules"};
  return r;
}

RequestRules Compile(const std::vector<RequestRule>& rules) {
  auto r = RequestRules::Compile(rules);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : RequestRules();
}

Host H(const char* name) { return *ParseHost(name); }

Action Decide(const RequestRules& rules, const char* host, const char* method, const char* target,
              uint16_t port = 443) {
  return rules.Check(H(host), port, method, target).action;
}

TEST(RequestRulesTest, AGetOnlyHostRefusesEveryOtherMethodWithAReason) {
  RequestRules rules = Compile({R("registry.test", {"GET", "HEAD"}, {})});
  EXPECT_TRUE(rules.Governs(H("registry.test"), 443));
  EXPECT_TRUE(rules.Governs(H("registry.test"), 80));
  // A bare host is governed on every port the allow list may open for it.
  EXPECT_TRUE(rules.Governs(H("registry.test"), 8443));
  EXPECT_FALSE(rules.Governs(H("other.test"), 443));
  EXPECT_EQ(Decide(rules, "registry.test", "GET", "/pkg"), Action::kAllow);
  EXPECT_EQ(Decide(rules, "registry.test", "HEAD", "/pkg?x=1"), Action::kAllow);
  RequestRules::Decision d = rules.Check(H("registry.test"), 443, "PUT", "/pkg");
  EXPECT_EQ(d.action, Action::kDeny);
  EXPECT_EQ(d.rule, "");
  EXPECT_NE(d.reason.find("PUT registry.test/pkg"), std::string::npos) << "[" << d.reason << "]";
  EXPECT_NE(d.reason.find("no network.rules rule"), std::string::npos) << d.reason;
  // Methods without regard to case (a server may fold it).
  EXPECT_EQ(Decide(rules, "registry.test", "get", "/pkg"), Action::kAllow);
  EXPECT_EQ(Decide(rules, "registry.test", "put", "/pkg"), Action::kDeny);
}

TEST(RequestRulesTest, TheFirstMatchingRuleDecides) {
  RequestRules rules = Compile({
      R("github.test", {}, {"*/git-receive-pack", "*/info/refs?service=git-receive-pack"},
        RequestRule::Action::kDeny, 1),
      R("github.test", {}, {}, RequestRule::Action::kAllow, 2),
  });
  EXPECT_EQ(Decide(rules, "github.test", "GET", "/acme/app.git/info/refs?service=git-upload-pack"),
            Action::kAllow);
  EXPECT_EQ(Decide(rules, "github.test", "POST", "/acme/app.git/git-upload-pack"), Action::kAllow);
  RequestRules::Decision push =
      rules.Check(H("github.test"), 443, "POST", "/acme/app.git/git-receive-pack");
  EXPECT_EQ(push.action, Action::kDeny);
  EXPECT_EQ(push.origin.line, 1);
  EXPECT_NE(push.reason.find("refused by network.rules rule"), std::string::npos) << push.reason;
  EXPECT_NE(push.reason.find("rules.toml:1"), std::string::npos) << push.reason;
  EXPECT_EQ(Decide(rules, "github.test", "GET", "/acme/app.git/info/refs?service=git-receive-pack"),
            Action::kDeny);
  // A pattern without '?' is matched against the path alone.
  EXPECT_EQ(Decide(rules, "github.test", "POST", "/acme/app.git/git-receive-pack?x"), Action::kDeny);
}

TEST(RequestRulesTest, PushOnlyToOneRepository) {
  RequestRules rules = Compile({
      R("git.test", {}, {"/acme/app.git/*"}, RequestRule::Action::kAllow, 1),
      R("git.test", {}, {"*/git-receive-pack", "*/info/refs?service=git-receive-pack"},
        RequestRule::Action::kDeny, 2),
      R("git.test", {}, {}, RequestRule::Action::kAllow, 3),
  });
  EXPECT_EQ(Decide(rules, "git.test", "POST", "/acme/app.git/git-receive-pack"), Action::kAllow);
  EXPECT_EQ(Decide(rules, "git.test", "POST", "/evil/x.git/git-receive-pack"), Action::kDeny);
  EXPECT_EQ(Decide(rules, "git.test", "POST", "/evil/x.git/git-upload-pack"), Action::kAllow);
}

TEST(RequestRulesTest, PathsAreReadAsTheServerReadsThem) {
  RequestRules rules = Compile({R("api.test", {}, {"/repos/acme/*"}),
                                R("api.test", {}, {"/admin/*"}, RequestRule::Action::kDeny)});
  EXPECT_EQ(Decide(rules, "api.test", "GET", "/repos/%61cme/x"), Action::kAllow);
  for (const char* two_readings :
       {"/repos/acme/../../admin/x", "/repos/acme/%2e%2e/%2E%2E/admin", "/repos/acme/./x",
        "/repos/acme%2f..%2fadmin", "/repos/acme/x\\..\\..\\admin", "/repos//acme/x",
        "/repos/acme/%00", "/repos/acme/%zz", "/repos/acme/%4", "*", "http://api.test/repos/acme/x",
        "", "/repos/acme/x#frag", "/repos/acme/..;/../admin", "/admin;x/y", "/repos/acme/a;b"}) {
    RequestRules::Decision d = rules.Check(H("api.test"), 443, "GET", two_readings);
    EXPECT_EQ(d.action, Action::kDeny) << two_readings;
  }
  EXPECT_EQ(CanonicalRequestPath("/a/%7euser/b%20c?q=%2e"), "/a/~user/b%20c?q=%2e");
  EXPECT_EQ(CanonicalRequestPath("/a/b/"), "/a/b/");
  EXPECT_EQ(CanonicalRequestPath("/a/.."), std::nullopt);
}

TEST(RequestRulesTest, DenyRulesIgnoreCaseAndPatternsAreReadAsRequests) {
  RequestRules rules = Compile({R("api.test", {}, {"/admin/*", "/%7Eroot/*"},
                                  RequestRule::Action::kDeny),
                                R("api.test", {}, {"/Repos/*"}),
                                R("api.test", {}, {})});
  EXPECT_EQ(Decide(rules, "api.test", "GET", "/ADMIN/x"), Action::kDeny);
  EXPECT_EQ(Decide(rules, "api.test", "GET", "/~root/x"), Action::kDeny);
  EXPECT_EQ(Decide(rules, "api.test", "GET", "/%7eroot/x"), Action::kDeny);
  EXPECT_EQ(Decide(rules, "api.test", "GET", "/repos/x"), Action::kAllow);  // the catch-all
  EXPECT_FALSE(RequestRules::Compile({R("api.test", {}, {"/a%2Fb"})}).ok());
}

TEST(RequestRulesTest, AskIsADecisionOfItsOwn) {
  RequestRules rules = Compile({R("api.test", {"DELETE"}, {}, RequestRule::Action::kAsk),
                                R("api.test", {}, {})});
  RequestRules::Decision d = rules.Check(H("api.test"), 443, "DELETE", "/repos/acme/app");
  EXPECT_EQ(d.action, Action::kAsk);
  EXPECT_NE(d.reason.find("needs approval"), std::string::npos) << d.reason;
  EXPECT_EQ(Decide(rules, "api.test", "GET", "/"), Action::kAllow);
}

TEST(RequestRulesTest, PortsWildcardsAndAddresses) {
  RequestRules rules = Compile({R("*.corp.test", {"GET"}, {}), R("api.test:8443", {"POST"}, {}),
                                R("10.0.0.5", {"GET"}, {})});
  EXPECT_TRUE(rules.Governs(H("a.b.corp.test"), 443));
  EXPECT_FALSE(rules.Governs(H("corp.test"), 443));
  EXPECT_TRUE(rules.Governs(H("api.test"), 8443));
  EXPECT_FALSE(rules.Governs(H("api.test"), 443));
  EXPECT_EQ(Decide(rules, "api.test", "POST", "/", 8443), Action::kAllow);
  EXPECT_TRUE(rules.Governs(H("10.0.0.5"), 80));
  EXPECT_EQ(Decide(rules, "10.0.0.5", "GET", "/x", 80), Action::kAllow);
  // One host per rule: a network or every host is refused where the rules are compiled.
  EXPECT_FALSE(RequestRules::Compile({R("10.0.0.0/8", {}, {})}).ok());
  EXPECT_FALSE(RequestRules::Compile({R("*", {}, {})}).ok());
}

TEST(RequestRulesTest, GlobPatterns) {
  EXPECT_TRUE(MatchPathPattern("/a/*", "/a/b/c"));
  EXPECT_TRUE(MatchPathPattern("*/git-receive-pack", "/x/y.git/git-receive-pack"));
  EXPECT_FALSE(MatchPathPattern("*/git-receive-pack", "/x/git-receive-pack/more"));
  EXPECT_TRUE(MatchPathPattern("/user", "/user"));
  EXPECT_FALSE(MatchPathPattern("/user", "/users"));
  EXPECT_TRUE(MatchPathPattern("/a*b*c", "/aXXbYYc"));
  EXPECT_FALSE(MatchPathPattern("/a*b*c", "/aXXbYY"));
  std::string long_text(5000, 'a');
  EXPECT_FALSE(MatchPathPattern("*a*a*a*a*a*b", long_text));  // bounded work, no match
}

}  // namespace
}  // namespace ward::net
