// The DNS stub over real UDP and TCP loopback sockets, with a resolver stub that records every
// name it is asked: denied names must never reach it.
#include "net/dns_stub.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <string>
#include <vector>

#include "proxy_test_util.h"

namespace ward::net {
namespace {

using testing::ConnectTo;
using testing::FakeResolver;
using testing::Ip;
using testing::Listener;
using testing::LoopThread;
using testing::MakeRules;
using testing::SendAll;
using testing::WaitClosed;

void PutU16(std::string& m, uint16_t v) {
  m += static_cast<char>(v >> 8);
  m += static_cast<char>(v & 0xff);
}

uint16_t U16(const std::string& m, size_t i) {
  return static_cast<uint16_t>((static_cast<uint8_t>(m[i]) << 8) | static_cast<uint8_t>(m[i + 1]));
}

std::string Query(uint16_t id, const std::string& name, uint16_t type, uint16_t qclass = 1,
                  bool edns = false, uint16_t qdcount = 1) {
  std::string m;
  PutU16(m, id);
  PutU16(m, 0x0100);  // RD
  PutU16(m, qdcount);
  PutU16(m, 0);
  PutU16(m, 0);
  PutU16(m, edns ? 1 : 0);
  size_t start = 0;
  while (start < name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    m += static_cast<char>(dot - start);
    m += name.substr(start, dot - start);
    start = dot + 1;
  }
  m += '\0';
  PutU16(m, type);
  PutU16(m, qclass);
  if (edns) {
    m += '\0';
    PutU16(m, 41);
    PutU16(m, 1232);
    PutU16(m, 0);
    PutU16(m, 0);
    PutU16(m, 0);
  }
  return m;
}

struct Answer {
  bool ok = false;
  uint16_t id = 0;
  int rcode = -1;
  bool tc = false;
  int ancount = 0, arcount = 0;
  std::vector<std::string> addrs;
  uint32_t ttl = 0;
  std::string qname;  // as echoed
};

size_t SkipName(const std::string& m, size_t p, std::string* out = nullptr) {
  while (p < m.size()) {
    uint8_t len = static_cast<uint8_t>(m[p]);
    if (len == 0) return p + 1;
    if ((len & 0xC0) == 0xC0) return p + 2;
    if (out) {
      if (!out->empty()) *out += '.';
      *out += m.substr(p + 1, len);
    }
    p += 1 + len;
  }
  return m.size();
}

Answer Parse(const std::string& m) {
  Answer a;
  if (m.size() < 12) return a;
  a.id = U16(m, 0);
  uint16_t flags = U16(m, 2);
  a.rcode = flags & 0xf;
  a.tc = (flags & 0x0200) != 0;
  int qd = U16(m, 4);
  a.ancount = U16(m, 6);
  a.arcount = U16(m, 10);
  size_t p = 12;
  for (int i = 0; i < qd; ++i) p = SkipName(m, p, &a.qname) + 4;
  for (int i = 0; i < a.ancount && p + 10 <= m.size(); ++i) {
    p = SkipName(m, p);
    uint16_t type = U16(m, p);
    a.ttl = (uint32_t{U16(m, p + 4)} << 16) | U16(m, p + 6);
    uint16_t len = U16(m, p + 8);
    p += 10;
    if (p + len > m.size()) return a;
    if (type == 1 && len == 4) {
      a.addrs.push_back(IpAddress::V4(static_cast<uint8_t>(m[p]), static_cast<uint8_t>(m[p + 1]),
                                      static_cast<uint8_t>(m[p + 2]),
                                      static_cast<uint8_t>(m[p + 3]))
                            .ToString());
    } else if (type == 28 && len == 16) {
      std::array<uint8_t, 16> b;
      for (int k = 0; k < 16; ++k) b[k] = static_cast<uint8_t>(m[p + k]);
      a.addrs.push_back(IpAddress::V6(b).ToString());
    }
    p += len;
  }
  a.ok = true;
  return a;
}

// Reads n length-prefixed DNS messages from a TCP connection.
std::vector<std::string> RecvFrames(int fd, size_t n) {
  std::string buf = testing::RecvUntil(fd, [n](const std::string& b) {
    size_t p = 0, count = 0;
    while (p + 2 <= b.size() && p + 2 + U16(b, p) <= b.size()) {
      p += 2 + U16(b, p);
      ++count;
    }
    return count >= n;
  });
  std::vector<std::string> out;
  size_t p = 0;
  while (out.size() < n && p + 2 <= buf.size() && p + 2 + U16(buf, p) <= buf.size()) {
    out.push_back(buf.substr(p + 2, U16(buf, p)));
    p += 2 + U16(buf, p);
  }
  return out;
}

class DnsStubTest : public ::testing::Test {
 protected:
  void SetUp() override { Start({}); }
  void TearDown() override { StopAll(); }

  void Start(DnsStubOptions options) {
    loop_ = std::make_unique<LoopThread>();
    resolver_ = std::make_unique<FakeResolver>(loop_->ctx());
    resolver_->Set("allowed.test", {Ip("192.0.2.1"), Ip("2001:db8::1")});
    std::vector<IpAddress> many;
    for (int i = 1; i <= 100; ++i) many.push_back(IpAddress::V4(198, 51, 100, i));
    resolver_->Set("many.wild.test", many);
    stub_ = std::make_unique<DnsStub>(
        loop_->ctx(), MakeRules({"allowed.test", "*.wild.test", "v6.test:8443"}, {"bad.wild.test"}),
        resolver_.get(), &events_, options);
    Listener udp = testing::BindUdp();
    Listener tcp = testing::ListenTcp();
    udp_port_ = udp.port;
    tcp_port_ = tcp.port;
    ASSERT_TRUE(stub_->ServeUdp(std::move(udp.fd)).ok());
    ASSERT_TRUE(stub_->ServeTcp(std::move(tcp.fd)).ok());
    loop_->Start();
  }

  void StopAll() {
    if (!stub_) return;
    loop_->RunSync([this] { stub_->Stop(); });
    loop_->Join();  // returns only when nothing is left pending
    stub_.reset();
    resolver_.reset();
    loop_.reset();
  }

  // One UDP exchange; "" when no answer came within the timeout.
  std::string Exchange(const std::string& query, int timeout_ms = 2000) {
    UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(udp_port_);
    sendto(fd.get(), query.data(), query.size(), 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    struct pollfd p = {fd.get(), POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return "";
    char buf[65536];
    ssize_t n = recv(fd.get(), buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

  std::vector<Event> Denials() const {
    std::vector<Event> out;
    for (const Event& e : events_.events()) {
      if (e.type == "dns.deny") out.push_back(e);
    }
    return out;
  }

  MemoryEventSink events_;
  std::unique_ptr<LoopThread> loop_;
  std::unique_ptr<FakeResolver> resolver_;
  std::unique_ptr<DnsStub> stub_;
  uint16_t udp_port_ = 0, tcp_port_ = 0;
};

TEST_F(DnsStubTest, AllowedNameResolvesAAndAaaa) {
  Answer a = Parse(Exchange(Query(0x1234, "allowed.test", 1)));
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.id, 0x1234);
  EXPECT_EQ(a.rcode, 0);
  EXPECT_EQ(a.addrs, std::vector<std::string>{"192.0.2.1"});
  EXPECT_EQ(a.ttl, 30u);
  Answer aaaa = Parse(Exchange(Query(7, "allowed.test", 28)));
  EXPECT_EQ(aaaa.rcode, 0);
  EXPECT_EQ(aaaa.addrs, std::vector<std::string>{"2001:db8::1"});
  EXPECT_EQ(resolver_->asked(), (std::vector<std::string>{"allowed.test", "allowed.test"}));
  EXPECT_EQ(stub_->stats().answered, 2u);
  EXPECT_TRUE(Denials().empty());
}

TEST_F(DnsStubTest, WithCaptureAnAllowedNameGetsItsSyntheticAddressesOnly) {
  StopAll();
  SyntheticNames names(/*max_names=*/2);
  DnsStubOptions o;
  o.synthetic = &names;
  Start(o);
  Answer a = Parse(Exchange(Query(1, "AlLoWeD.TeSt", 1)));
  EXPECT_EQ(a.rcode, 0);
  EXPECT_EQ(a.addrs, std::vector<std::string>{"198.18.0.1"});
  Answer aaaa = Parse(Exchange(Query(2, "allowed.test", 28)));
  EXPECT_EQ(aaaa.addrs, std::vector<std::string>{"fd77:6172:6400::1"});
  // One address per name for the session, the real ones never shown.
  Answer many = Parse(Exchange(Query(3, "many.wild.test", 1)));
  EXPECT_EQ(many.addrs, std::vector<std::string>{"198.18.0.2"});
  EXPECT_EQ(Parse(Exchange(Query(4, "allowed.test", 1))).addrs,
            std::vector<std::string>{"198.18.0.1"});
  EXPECT_EQ(names.NameOf(Ip("198.18.0.2")), "many.wild.test");
  // A name with no IPv6 address has none here either; a full table answers SERVFAIL.
  EXPECT_TRUE(Parse(Exchange(Query(5, "many.wild.test", 28))).addrs.empty());
  resolver_->Set("third.wild.test", {Ip("192.0.2.3")});
  EXPECT_EQ(Parse(Exchange(Query(6, "third.wild.test", 1))).rcode, 2);
  EXPECT_EQ(Parse(Exchange(Query(8, "third.wild.test", 1))).rcode, 2);
  size_t limits = 0;
  for (const Event& e : events_.events()) limits += e.type == "net.limit" ? 1 : 0;
  EXPECT_EQ(limits, 1u);
  // Denied names are as before: NXDOMAIN, unresolved, no address given.
  EXPECT_EQ(Parse(Exchange(Query(7, "denied.test", 1))).rcode, 3);
  EXPECT_EQ(names.size(), 2u);
}

TEST_F(DnsStubTest, WithoutIpv6CaptureAaaaHasNoAnswer) {
  StopAll();
  SyntheticNames names;
  DnsStubOptions o;
  o.synthetic = &names;
  o.synthetic_v6 = false;
  Start(o);
  Answer aaaa = Parse(Exchange(Query(1, "allowed.test", 28)));
  EXPECT_EQ(aaaa.rcode, 0);
  EXPECT_TRUE(aaaa.addrs.empty());
  EXPECT_EQ(Parse(Exchange(Query(2, "allowed.test", 1))).addrs,
            std::vector<std::string>{"198.18.0.1"});
}

TEST_F(DnsStubTest, NamesAreNormalisedBeforeResolvingAndEchoedAsAsked) {
  Answer a = Parse(Exchange(Query(1, "AlLoWeD.TeSt", 1)));
  EXPECT_EQ(a.rcode, 0);
  EXPECT_EQ(a.qname, "AlLoWeD.TeSt");
  EXPECT_EQ(a.addrs, std::vector<std::string>{"192.0.2.1"});
  EXPECT_EQ(resolver_->asked(), std::vector<std::string>{"allowed.test"});
}

TEST_F(DnsStubTest, CanaryNamesGetNxdomainAndNeverReachTheResolver) {
  for (const char* canary :
       {"k3x9q2-canary.exfil.example", "aGVsbG8gd29ybGQ.data.evil.test", "allowed.test.evil",
        "sub.allowed.test", "bad.wild.test", "127.0.0.1", "wild.test"}) {
    Answer a = Parse(Exchange(Query(9, canary, 1)));
    ASSERT_TRUE(a.ok) << canary;
    EXPECT_EQ(a.rcode, 3) << canary;
    EXPECT_TRUE(a.addrs.empty());
  }
  // bad.wild.test: a deny rule beats the wildcard that would allow it.
  EXPECT_TRUE(resolver_->asked().empty()) << ::testing::PrintToString(resolver_->asked());
  auto denials = Denials();
  ASSERT_EQ(denials.size(), 7u);
  EXPECT_EQ(denials[0].data["name"], "k3x9q2-canary.exfil.example");
  EXPECT_EQ(denials[0].data["type"], "A");
  EXPECT_EQ(denials[0].data["rcode"], "NXDOMAIN");
  EXPECT_EQ(denials[4].data["rule"], "bad.wild.test");
  // The same words as the proxy's 403: the flag that allows a name, none for a deny rule's.
  EXPECT_EQ(denials[0].data["host"], "k3x9q2-canary.exfil.example");
  EXPECT_EQ(denials[0].data["why"],
            "k3x9q2-canary.exfil.example not allowed (ward run -n k3x9q2-canary.exfil.example)");
  EXPECT_EQ(denials[0].data["allow_with"], "-n k3x9q2-canary.exfil.example");
  EXPECT_EQ(denials[4].data["allow_with"], "");
  EXPECT_EQ(denials[4].data["why"].get<std::string>().rfind(
                "bad.wild.test refused by network.deny rule 'bad.wild.test'", 0),
            0u)
      << denials[4].data.dump();
  EXPECT_EQ(denials[5].data["allow_with"], "") << "an address is not a name to allow";
  EXPECT_EQ(stub_->stats().nxdomain, 7u);
}

TEST_F(DnsStubTest, AllowedNameThatDoesNotExistIsNxdomainWithoutDenial) {
  Answer a = Parse(Exchange(Query(3, "nothing.wild.test", 28)));
  EXPECT_EQ(a.rcode, 3);
  EXPECT_EQ(resolver_->asked(), std::vector<std::string>{"nothing.wild.test"});
  EXPECT_TRUE(Denials().empty());
}

TEST_F(DnsStubTest, PortRestrictedRuleStillResolves) {
  resolver_->Set("v6.test", {Ip("2001:db8::6")});
  Answer a = Parse(Exchange(Query(3, "v6.test", 28)));
  EXPECT_EQ(a.rcode, 0);
  EXPECT_EQ(a.addrs, std::vector<std::string>{"2001:db8::6"});
  // No IPv4 address: NOERROR without data.
  Answer b = Parse(Exchange(Query(4, "v6.test", 1)));
  EXPECT_EQ(b.rcode, 0);
  EXPECT_EQ(b.ancount, 0);
}

TEST_F(DnsStubTest, OtherTypesAndClassesAreRefusedUnresolved) {
  struct Case {
    const char* name;
    uint16_t type, qclass;
  };
  for (Case c : {Case{"allowed.test", 16, 1}, Case{"allowed.test", 15, 1},
                 Case{"secret.exfil.example", 16, 1}, Case{"allowed.test", 255, 1},
                 Case{"allowed.test", 1, 3}, Case{"1.0.0.127.in-addr.arpa", 12, 1}}) {
    Answer a = Parse(Exchange(Query(5, c.name, c.type, c.qclass)));
    ASSERT_TRUE(a.ok);
    EXPECT_EQ(a.rcode, 5) << c.name << " " << c.type;
  }
  EXPECT_TRUE(resolver_->asked().empty());
  auto denials = Denials();
  ASSERT_EQ(denials.size(), 6u);
  EXPECT_EQ(denials[0].data["type"], "TXT");
  EXPECT_EQ(denials[0].data["rcode"], "REFUSED");
  EXPECT_EQ(denials[2].data["name"], "secret.exfil.example");
  EXPECT_EQ(stub_->stats().refused, 6u);
}

TEST_F(DnsStubTest, MalformedMessagesAreDroppedAndCounted) {
  EXPECT_EQ(Exchange("\x12\x34\x01", 300), "");  // shorter than a header
  std::string response = Query(8, "allowed.test", 1);
  response[2] = static_cast<char>(0x81);  // QR: a response, never answered
  EXPECT_EQ(Exchange(response, 300), "");
  std::string junk(600, '\xff');
  junk[2] = 0x01;
  junk[3] = 0x00;
  Answer formerr = Parse(Exchange(junk));  // a header, then nonsense
  EXPECT_EQ(formerr.rcode, 1);
  Answer two = Parse(Exchange(Query(11, "allowed.test", 1, 1, false, 2)));
  EXPECT_EQ(two.id, 11);
  EXPECT_EQ(two.rcode, 1);
  EXPECT_EQ(stub_->stats().malformed, 4u);
  EXPECT_TRUE(resolver_->asked().empty());
  // Still serving.
  EXPECT_EQ(Parse(Exchange(Query(12, "allowed.test", 1))).rcode, 0);
}

TEST_F(DnsStubTest, EdnsQueriesGetAnOptRecord) {
  Answer a = Parse(Exchange(Query(13, "allowed.test", 1, 1, true)));
  EXPECT_EQ(a.rcode, 0);
  EXPECT_EQ(a.arcount, 1);
  EXPECT_EQ(a.addrs, std::vector<std::string>{"192.0.2.1"});
}

TEST_F(DnsStubTest, LargeAnswersAreTruncatedOverUdpAndCompleteOverTcp) {
  Answer udp = Parse(Exchange(Query(14, "many.wild.test", 1)));
  EXPECT_EQ(udp.rcode, 0);
  EXPECT_TRUE(udp.tc);
  EXPECT_EQ(udp.ancount, 0);

  UniqueFd fd = ConnectTo(tcp_port_);
  std::string q = Query(15, "many.wild.test", 1);
  std::string framed;
  PutU16(framed, static_cast<uint16_t>(q.size()));
  ASSERT_TRUE(SendAll(fd.get(), framed + q));
  auto frames = RecvFrames(fd.get(), 1);
  ASSERT_EQ(frames.size(), 1u);
  Answer tcp = Parse(frames[0]);
  EXPECT_FALSE(tcp.tc);
  EXPECT_EQ(tcp.addrs.size(), 100u);
}

TEST_F(DnsStubTest, TcpServesSeveralFramedQueriesThenCloses) {
  UniqueFd fd = ConnectTo(tcp_port_);
  std::string both;
  for (uint16_t id : {21, 22}) {
    std::string q = Query(id, id == 21 ? "allowed.test" : "evil.test", 1);
    PutU16(both, static_cast<uint16_t>(q.size()));
    both += q;
  }
  // Split across writes at an awkward place: the framing must reassemble it.
  ASSERT_TRUE(SendAll(fd.get(), both.substr(0, 1)));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(SendAll(fd.get(), both.substr(1)));
  auto frames = RecvFrames(fd.get(), 2);
  ASSERT_EQ(frames.size(), 2u);
  std::vector<Answer> answers = {Parse(frames[0]), Parse(frames[1])};
  EXPECT_EQ(answers[0].id, 21);
  EXPECT_EQ(answers[0].rcode, 0);
  EXPECT_EQ(answers[1].id, 22);
  EXPECT_EQ(answers[1].rcode, 3);
  // A zero-length frame is a protocol error: the connection ends.
  ASSERT_TRUE(SendAll(fd.get(), std::string(2, '\0')));
  EXPECT_TRUE(WaitClosed(fd.get()));
  EXPECT_EQ(resolver_->asked(), std::vector<std::string>{"allowed.test"});
}

TEST_F(DnsStubTest, ResolverThatNeverAnswersGivesServfail) {
  StopAll();
  DnsStubOptions options;
  options.resolve_timeout = std::chrono::milliseconds(200);
  Start(options);
  resolver_->SetSilent("slow.wild.test");
  Answer a = Parse(Exchange(Query(31, "slow.wild.test", 1)));
  EXPECT_EQ(a.rcode, 2);
  EXPECT_EQ(stub_->stats().servfail, 1u);
  // Stopping with a query still waiting does not leave the loop busy (TearDown joins it).
  Exchange(Query(32, "slow.wild.test", 1), 50);
}

}  // namespace
}  // namespace ward::net
