// A refused destination is answered, never dropped unseen: in every run (no -n needed) the
// proxy's 403 and the DNS stub's NXDOMAIN name the host and the flag that would allow it, and
// the audit trail records the same words (net.deny, dns.deny: host, port, why, allow_with).
// Only made-up names under .example are used: nothing leaves the machine.
#include <nlohmann/json.hpp>
#include <sstream>

#include "audit/sessions.h"
#include "harness.h"

namespace ward::test {
namespace {

class RefusalsNameTheirReasonTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    state_ = root_->path() + "/state";
  }
  RunOptions WithState() {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = state_;
    o.timeout_s = 60;
    return o;
  }
  // The records of `type` in the newest session's trail.
  std::vector<nlohmann::json> Records(const std::string& type) {
    std::vector<nlohmann::json> out;
    auto sessions = audit::ListSessions(state_ + "/ward");
    if (sessions.empty()) return out;
    std::istringstream in(ReadFile(sessions[0].dir + "/events.jsonl"));
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.value("type", "") == type) out.push_back(j["data"]);
    }
    return out;
  }
  // The first record of `type` whose `key` is `value`.
  nlohmann::json Find(const std::string& type, const std::string& key, const std::string& value) {
    for (const auto& r : Records(type)) {
      if (r.contains(key) && r[key] == value) return r;
    }
    return nullptr;
  }
  std::string state_;
};

TEST_F(RefusalsNameTheirReasonTest, PlainHttpIsRefusedWithTheHostAndTheFlagWithoutAnyAllowedHost) {
  RunResult r = Shell("curl -s -i --max-time 10 http://blocked.example/", {}, WithState());
  const std::string sentence = "ward: blocked.example not allowed (ward run -n blocked.example)";
  EXPECT_NE(r.out.find("HTTP/1.1 403 " + sentence + "\r\n"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("\r\n\r\n" + sentence + "\nsee: ward why blocked.example\n"),
            std::string::npos)
      << r.out;
  nlohmann::json d = Find("net.deny", "via", "http");
  ASSERT_FALSE(d.is_null()) << ReadFile(audit::ListSessions(state_ + "/ward")[0].dir +
                                        "/events.jsonl");
  EXPECT_EQ(d["host"], "blocked.example");
  EXPECT_EQ(d["port"], 80);
  EXPECT_EQ(d["reason"], "no_rule");
  EXPECT_EQ(d["why"], "blocked.example not allowed (ward run -n blocked.example)");
  EXPECT_EQ(d["allow_with"], "-n blocked.example");
}

TEST_F(RefusalsNameTheirReasonTest, ConnectIsRefusedWithTheHostPortAndTheFlag) {
  // What curl -v and Python (pip's urllib) show of a refused tunnel.
  RunResult r = Shell(
      "curl -sS -v --max-time 10 https://blocked.example:8443/ 2>&1 | grep '^< HTTP'; "
      "python3 -c 'import urllib.request as u\n"
      "try: u.urlopen(\"https://blocked.example/\", timeout=10)\n"
      "except Exception as e: print(e.reason)'",
      {"-n", "allowed.example"}, WithState());
  EXPECT_EQ(r.out,
            "< HTTP/1.1 403 ward: blocked.example:8443 not allowed (ward run -n "
            "blocked.example:8443)\r\n"
            "Tunnel connection failed: 403 ward: blocked.example not allowed (ward run -n "
            "blocked.example)\n")
      << r.err;
  nlohmann::json d = Find("net.deny", "allow_with", "-n blocked.example:8443");
  ASSERT_FALSE(d.is_null());
  EXPECT_EQ(d["via"], "connect");
  EXPECT_EQ(d["port"], 8443);
  EXPECT_EQ(d["why"], "blocked.example:8443 not allowed (ward run -n blocked.example:8443)");
}

TEST_F(RefusalsNameTheirReasonTest, RefusedNamesAreNxdomainAndRecordedWithoutAnyAllowedHost) {
  RunResult r = Shell(
      "grep -v '^#' /etc/resolv.conf; getent hosts blocked.example; echo getent=$?; "
      "python3 -c 'import socket\n"
      "try: socket.getaddrinfo(\"blocked.example\", 443)\n"
      "except socket.gaierror as e: print(e)'",
      {}, WithState());
  EXPECT_EQ(r.out, "nameserver 127.0.0.1\ngetent=2\n[Errno -2] Name or service not known\n")
      << r.err;
  nlohmann::json d = Find("dns.deny", "host", "blocked.example");
  ASSERT_FALSE(d.is_null());
  EXPECT_EQ(d["rcode"], "NXDOMAIN");
  EXPECT_EQ(d["name"], "blocked.example");
  EXPECT_EQ(d["why"], "blocked.example not allowed (ward run -n blocked.example)");
  EXPECT_EQ(d["allow_with"], "-n blocked.example");
}

TEST_F(RefusalsNameTheirReasonTest, DenyListedHostIsRefusedOnPurposeWithNoFlag) {
  RunResult r = Shell("curl -s -i --max-time 10 http://evil.example/ | head -1; "
                      "getent hosts evil.example; echo getent=$?",
                      {"-n", "evil.example", "--deny-net", "evil.example"}, WithState());
  const std::string why =
      "evil.example refused by network.deny rule 'evil.example' (command line (--deny-net))";
  EXPECT_EQ(r.out, "HTTP/1.1 403 ward: " + why + "\r\ngetent=2\n") << r.err;
  nlohmann::json n = Find("net.deny", "host", "evil.example");
  ASSERT_FALSE(n.is_null());
  EXPECT_EQ(n["why"], why);
  EXPECT_EQ(n["allow_with"], "");
  EXPECT_EQ(n["rule"], "evil.example");
  nlohmann::json d = Find("dns.deny", "host", "evil.example");
  ASSERT_FALSE(d.is_null());
  EXPECT_EQ(d["why"], why);
  EXPECT_EQ(d["allow_with"], "");
}

TEST_F(RefusalsNameTheirReasonTest, SocksRefusalIsRecordedWithTheReason) {
  // SOCKS5 has no room for words (reply code 2, "not allowed"): the trail has them.
  RunResult r = Shell(
      "curl -sS --max-time 10 --socks5-hostname ${HTTPS_PROXY#http://} http://blocked.example/; "
      "echo curl=$?",
      {}, WithState());
  EXPECT_NE(r.out.find("curl=97"), std::string::npos) << r.out << r.err;
  nlohmann::json d = Find("net.deny", "via", "socks5");
  ASSERT_FALSE(d.is_null());
  EXPECT_EQ(d["host"], "blocked.example");
  EXPECT_EQ(d["port"], 80);
  EXPECT_EQ(d["why"], "blocked.example not allowed (ward run -n blocked.example)");
  EXPECT_EQ(d["allow_with"], "-n blocked.example");
}

}  // namespace
}  // namespace ward::test

namespace ward::test {
namespace {

// A direct send (not to the proxy or the stub) is refused in the kernel and never reaches the
// supervisor; the sandbox's own namespace counts those that found no route, and the trail says
// how many. Landlock's TCP refusals (EACCES) happen before routing and are not among them.
TEST_F(RefusalsNameTheirReasonTest, DirectSendsThatFoundNoRouteAreCounted) {
  RunResult r = Shell(
      "python3 -c 'import socket\n"
      "for fam, addr in ((socket.AF_INET, (\"192.0.2.53\", 53)), (socket.AF_INET, (\"192.0.2.1\", "
      "443)), (socket.AF_INET6, (\"2001:db8::53\", 53))):\n"
      "  try: socket.socket(fam, socket.SOCK_DGRAM).sendto(b\"x\", addr)\n"
      "  except OSError as e: print(e.strerror)'; exit 3",
      {}, WithState());
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(r.out,
            "Network is unreachable\nNetwork is unreachable\nNetwork is unreachable\n")
      << r.err;
  auto direct = Records("net.direct.deny");
  ASSERT_EQ(direct.size(), 1u);
  EXPECT_EQ(direct[0]["count"], 3);
  EXPECT_EQ(direct[0]["why"],
            "3 direct send(s) had no route out: only the proxy and the DNS stub lead out "
            "(HTTP(S)_PROXY, ALL_PROXY, /etc/resolv.conf)");
  // The end-of-run summary counts them in one line.
  EXPECT_NE(r.err.find("ward: blocked 3 direct sends (no route out: only the proxy "
                       "(HTTP(S)_PROXY, ALL_PROXY) and the DNS stub lead out) — see: "
                       "docs/network.md\n"),
            std::string::npos)
      << r.err;
  // A command that succeeded despite them is not worth the kernel's counter tables: not read.
  RunResult ok = Shell(
      "python3 -c 'import socket\n"
      "try: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b\"x\", (\"192.0.2.53\", 53))\n"
      "except OSError as e: print(e.strerror)'",
      {}, WithState());
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.out, "Network is unreachable\n");
  EXPECT_TRUE(Records("net.direct.deny").empty());
  // Control: a run that sends nothing directly (its refusals went through the proxy) has none.
  Shell("curl -s -o /dev/null --max-time 10 http://blocked.example/", {}, WithState());
  EXPECT_FALSE(Find("net.deny", "host", "blocked.example").is_null());
  EXPECT_TRUE(Records("net.direct.deny").empty());
}

}  // namespace
}  // namespace ward::test
