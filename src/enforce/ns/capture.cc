#include "enforce/ns/capture.h"

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ward::enforce {
namespace internal {

namespace {
constexpr size_t kAlign = 4;
size_t Aligned(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }
}  // namespace

void NlWriter::Raw(const void* data, size_t n) {
  if (!ok_ || len_ + Aligned(n) > cap_) {
    ok_ = false;
    return;
  }
  std::memcpy(buf_ + len_, data, n);
  len_ += n;
  Pad();
}

void NlWriter::Pad() {
  while (len_ % kAlign != 0) buf_[len_++] = 0;
}

size_t NlWriter::BeginMessage(uint16_t type, uint16_t flags, uint32_t seq) {
  const size_t at = len_;
  struct nlmsghdr h = {};
  h.nlmsg_type = type;
  h.nlmsg_flags = flags;
  h.nlmsg_seq = seq;
  Raw(&h, sizeof h);
  return at;
}

void NlWriter::EndMessage(size_t at) {
  if (!ok_) return;
  const auto len = static_cast<uint32_t>(len_ - at);
  std::memcpy(buf_ + at + offsetof(struct nlmsghdr, nlmsg_len), &len, sizeof len);
}

void NlWriter::Attr(uint16_t type, const void* data, size_t n) {
  struct nlattr a = {};
  a.nla_type = type;
  a.nla_len = static_cast<uint16_t>(sizeof a + n);
  if (!ok_ || len_ + sizeof a + Aligned(n) > cap_) {
    ok_ = false;
    return;
  }
  std::memcpy(buf_ + len_, &a, sizeof a);
  len_ += sizeof a;
  if (n > 0) std::memcpy(buf_ + len_, data, n);
  len_ += n;
  Pad();
}

void NlWriter::AttrString(uint16_t type, const char* s) { Attr(type, s, std::strlen(s) + 1); }

void NlWriter::AttrBe32(uint16_t type, uint32_t host_order) {
  const uint32_t v = htonl(host_order);
  Attr(type, &v, sizeof v);
}

size_t NlWriter::BeginNest(uint16_t type) {
  const size_t at = len_;
  Attr(static_cast<uint16_t>(type | NLA_F_NESTED), nullptr, 0);
  return at;
}

void NlWriter::EndNest(size_t at) {
  if (!ok_) return;
  const auto len = static_cast<uint16_t>(len_ - at);
  std::memcpy(buf_ + at + offsetof(struct nlattr, nla_len), &len, sizeof len);
}

size_t BuildLocalRoute(char* buf, size_t cap, int family, const uint8_t* addr, int prefix_len,
                       int ifindex, uint32_t seq) {
  NlWriter w(buf, cap);
  const size_t msg = w.BeginMessage(RTM_NEWROUTE,
                                    NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq);
  struct rtmsg rt = {};
  rt.rtm_family = static_cast<unsigned char>(family);
  rt.rtm_dst_len = static_cast<unsigned char>(prefix_len);
  rt.rtm_table = RT_TABLE_LOCAL;
  rt.rtm_protocol = RTPROT_STATIC;
  rt.rtm_scope = RT_SCOPE_HOST;
  rt.rtm_type = RTN_LOCAL;
  w.Raw(&rt, sizeof rt);
  w.Attr(RTA_DST, addr, family == AF_INET ? 4 : 16);
  const auto oif = static_cast<uint32_t>(ifindex);
  w.Attr(RTA_OIF, &oif, sizeof oif);
  w.EndMessage(msg);
  return w.ok() ? w.size() : 0;
}

namespace {

constexpr char kTable[] = "ward";
constexpr char kChain[] = "capture";
constexpr char kRawChain[] = "untracked";
constexpr int kNatDstPriority = -100;  // NF_IP_PRI_NAT_DST: where `nft` puts a dnat chain
constexpr int kRawPriority = -300;     // NF_IP_PRI_RAW: before connection tracking

uint16_t NftType(int msg) {
  return static_cast<uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | msg);
}

void NfGenHeader(NlWriter& w, int family, uint16_t res_id) {
  struct nfgenmsg g = {};
  g.nfgen_family = static_cast<uint8_t>(family);
  g.version = NFNETLINK_V0;
  g.res_id = htons(res_id);
  w.Raw(&g, sizeof g);
}

// One expression of a rule: NFTA_LIST_ELEM { NAME, DATA { ... } }; the caller fills DATA.
struct Expr {
  Expr(NlWriter& w, const char* name, bool has_data = true) : w(w), has_data(has_data) {
    elem = w.BeginNest(NFTA_LIST_ELEM);
    w.AttrString(NFTA_EXPR_NAME, name);
    if (has_data) data = w.BeginNest(NFTA_EXPR_DATA);
  }
  ~Expr() {
    if (has_data) w.EndNest(data);
    w.EndNest(elem);
  }
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;
  NlWriter& w;
  bool has_data;
  size_t elem = 0, data = 0;
};

void DataValue(NlWriter& w, uint16_t type, const void* data, size_t n) {
  const size_t nest = w.BeginNest(type);
  w.Attr(NFTA_DATA_VALUE, data, n);
  w.EndNest(nest);
}

void Compare(NlWriter& w, const void* data, size_t n, uint32_t op = NFT_CMP_EQ) {
  Expr e(w, "cmp");
  w.AttrBe32(NFTA_CMP_SREG, NFT_REG_1);
  w.AttrBe32(NFTA_CMP_OP, op);
  DataValue(w, NFTA_CMP_DATA, data, n);
}

// reg1 = the destination's first ceil(prefix_len / 8) bytes, the last one masked.
void LoadDestinationPrefix(NlWriter& w, int family, int prefix_len, size_t* n) {
  *n = static_cast<size_t>((prefix_len + 7) / 8);
  {
    Expr e(w, "payload");
    w.AttrBe32(NFTA_PAYLOAD_DREG, NFT_REG_1);
    w.AttrBe32(NFTA_PAYLOAD_BASE, NFT_PAYLOAD_NETWORK_HEADER);
    w.AttrBe32(NFTA_PAYLOAD_OFFSET, family == AF_INET ? 16 : 24);  // daddr in iphdr / ipv6hdr
    w.AttrBe32(NFTA_PAYLOAD_LEN, static_cast<uint32_t>(*n));
  }
  if (prefix_len % 8 == 0) return;
  uint8_t mask[16], zero[16] = {};
  std::memset(mask, 0xff, *n);
  mask[*n - 1] = static_cast<uint8_t>(0xff << (8 - prefix_len % 8));
  Expr e(w, "bitwise");
  w.AttrBe32(NFTA_BITWISE_SREG, NFT_REG_1);
  w.AttrBe32(NFTA_BITWISE_DREG, NFT_REG_1);
  w.AttrBe32(NFTA_BITWISE_LEN, static_cast<uint32_t>(*n));
  DataValue(w, NFTA_BITWISE_MASK, mask, *n);
  DataValue(w, NFTA_BITWISE_XOR, zero, *n);
}

void LoadL4Proto(NlWriter& w) {
  Expr e(w, "meta");
  w.AttrBe32(NFTA_META_KEY, NFT_META_L4PROTO);
  w.AttrBe32(NFTA_META_DREG, NFT_REG_1);
}

// <daddr> op addr/prefix_len
void MatchRange(NlWriter& w, int family, const uint8_t* addr, int prefix_len, uint32_t op) {
  size_t n = 0;
  LoadDestinationPrefix(w, family, prefix_len, &n);
  uint8_t want[16] = {};
  std::memcpy(want, addr, n);
  if (prefix_len % 8 != 0) want[n - 1] &= static_cast<uint8_t>(0xff << (8 - prefix_len % 8));
  Compare(w, want, n, op);
}

// meta l4proto tcp  <daddr> == addr/prefix_len  redirect to :port
void RedirectRuleExpressions(NlWriter& w, int family, const uint8_t* addr, int prefix_len,
                             uint16_t port) {
  const size_t list = w.BeginNest(NFTA_RULE_EXPRESSIONS);
  LoadL4Proto(w);
  const uint8_t tcp = IPPROTO_TCP;
  Compare(w, &tcp, 1);
  MatchRange(w, family, addr, prefix_len, NFT_CMP_EQ);
  {
    Expr e(w, "immediate");
    w.AttrBe32(NFTA_IMMEDIATE_DREG, NFT_REG_1);
    const uint16_t be_port = htons(port);
    DataValue(w, NFTA_IMMEDIATE_DATA, &be_port, sizeof be_port);
  }
  {
    Expr e(w, "redir");
    w.AttrBe32(NFTA_REDIR_REG_PROTO_MIN, NFT_REG_1);
  }
  w.EndNest(list);
}

// Connection tracking (which the nat chain turns on for the whole namespace) only for what is
// captured: everything else is `notrack`, so that the sandbox's other packets (UDP to closed
// ports, its own loopback traffic) cost no entries in the kernel's shared table. `tcp`: the
// rule for "meta l4proto != tcp", else for "<daddr> != range". A captured connection's replies
// go to the synthetic address (its source: the ranges are local), so they stay tracked.
void NotrackRuleExpressions(NlWriter& w, int family, const uint8_t* addr, int prefix_len,
                            bool tcp) {
  const size_t list = w.BeginNest(NFTA_RULE_EXPRESSIONS);
  if (tcp) {
    LoadL4Proto(w);
    const uint8_t proto = IPPROTO_TCP;
    Compare(w, &proto, 1, NFT_CMP_NEQ);
  } else {
    MatchRange(w, family, addr, prefix_len, NFT_CMP_NEQ);
  }
  { Expr e(w, "notrack", /*has_data=*/false); }
  w.EndNest(list);
}

// One base chain of table "ward" at the output hook.
void NewChain(NlWriter& w, int nfproto, const char* name, const char* type, int priority,
              uint32_t seq) {
  const size_t m = w.BeginMessage(NftType(NFT_MSG_NEWCHAIN),
                                  NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE, seq);
  NfGenHeader(w, nfproto, 0);
  w.AttrString(NFTA_CHAIN_TABLE, kTable);
  w.AttrString(NFTA_CHAIN_NAME, name);
  const size_t hook = w.BeginNest(NFTA_CHAIN_HOOK);
  w.AttrBe32(NFTA_HOOK_HOOKNUM, NF_INET_LOCAL_OUT);
  w.AttrBe32(NFTA_HOOK_PRIORITY, static_cast<uint32_t>(priority));
  w.EndNest(hook);
  w.AttrString(NFTA_CHAIN_TYPE, type);
  w.EndMessage(m);
}

// A rule appended to `chain`; `expressions` writes its NFTA_RULE_EXPRESSIONS.
template <typename F>
void NewRule(NlWriter& w, int nfproto, const char* chain, uint32_t seq, F expressions) {
  const size_t m = w.BeginMessage(NftType(NFT_MSG_NEWRULE),
                                  NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_APPEND, seq);
  NfGenHeader(w, nfproto, 0);
  w.AttrString(NFTA_RULE_TABLE, kTable);
  w.AttrString(NFTA_RULE_CHAIN, chain);
  expressions();
  w.EndMessage(m);
}

}  // namespace

size_t BuildRedirect(char* buf, size_t cap, int family, const uint8_t* addr, int prefix_len,
                     uint16_t port, uint32_t seq) {
  NlWriter w(buf, cap);
  const int nfproto = family == AF_INET ? NFPROTO_IPV4 : NFPROTO_IPV6;

  size_t m = w.BeginMessage(NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, seq++);
  NfGenHeader(w, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
  w.EndMessage(m);

  m = w.BeginMessage(NftType(NFT_MSG_NEWTABLE), NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE, seq++);
  NfGenHeader(w, nfproto, 0);
  w.AttrString(NFTA_TABLE_NAME, kTable);
  w.EndMessage(m);

  NewChain(w, nfproto, kChain, "nat", kNatDstPriority, seq++);
  NewRule(w, nfproto, kChain, seq++,
          [&] { RedirectRuleExpressions(w, family, addr, prefix_len, port); });
  NewChain(w, nfproto, kRawChain, "filter", kRawPriority, seq++);
  for (bool tcp : {true, false}) {
    NewRule(w, nfproto, kRawChain, seq++,
            [&] { NotrackRuleExpressions(w, family, addr, prefix_len, tcp); });
  }

  m = w.BeginMessage(NFNL_MSG_BATCH_END, NLM_F_REQUEST, seq++);
  NfGenHeader(w, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
  w.EndMessage(m);
  return w.ok() ? w.size() : 0;
}

}  // namespace internal

namespace {

// Sends one request (or batch) and waits for `acks` acknowledgements. 0 or -errno.
int Exchange(int protocol, const char* msg, size_t len, int acks) {
  if (len == 0) return -EMSGSIZE;
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
  if (fd < 0) return -errno;
  // The kernel answers at once; a bound on the wait all the same, as this holds up the start.
  struct timeval tv = {2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct sockaddr_nl kernel = {};
  kernel.nl_family = AF_NETLINK;
  int rc = 0;
  if (sendto(fd, msg, len, 0, reinterpret_cast<struct sockaddr*>(&kernel), sizeof kernel) !=
      static_cast<ssize_t>(len)) {
    rc = -errno;
  }
  alignas(struct nlmsghdr) char buf[4096];
  for (int got = 0; rc == 0 && got < acks;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      rc = n < 0 ? -errno : -EPROTO;
      break;
    }
    auto left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<struct nlmsghdr*>(buf); NLMSG_OK(h, left);
         h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type != NLMSG_ERROR) continue;
      const auto* e = static_cast<const struct nlmsgerr*>(NLMSG_DATA(h));
      if (e->error != 0) {
        rc = e->error;
        break;
      }
      ++got;
    }
  }
  close(fd);
  return rc;
}

int LoopbackIndex() {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  struct ifreq ifr = {};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  int rc = ioctl(fd, SIOCGIFINDEX, &ifr) == 0 ? ifr.ifr_ifindex : -errno;
  close(fd);
  return rc;
}

bool HasIpv6() {
  int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  close(fd);
  return true;
}

int CaptureFamily(int family, const uint8_t* addr, int prefix_len, uint16_t port, int lo,
                  const char** what) {
  char msg[2048];
  size_t n = internal::BuildLocalRoute(msg, sizeof msg, family, addr, prefix_len, lo, 1);
  if (int rc = Exchange(NETLINK_ROUTE, msg, n, 1); rc != 0) {
    *what = family == AF_INET ? "making the IPv4 capture range local"
                              : "making the IPv6 capture range local";
    return rc;
  }
  n = internal::BuildRedirect(msg, sizeof msg, family, addr, prefix_len, port, 1);
  if (int rc = Exchange(NETLINK_NETFILTER, msg, n, internal::kRedirectAcks); rc != 0) {
    *what = "adding the nftables rule that redirects the capture range";
    return rc;
  }
  return 0;
}

}  // namespace

int SetUpCapture(const NetSpec& net, bool* v6, const char** what) {
  *v6 = false;
  const int lo = LoopbackIndex();
  if (lo < 0) {
    *what = "finding lo";
    return lo;
  }
  if (int rc = CaptureFamily(AF_INET, net.capture_v4.data(), net.capture_v4_len,
                             net.capture_port, lo, what);
      rc != 0) {
    return rc;
  }
  if (net.capture_v6_len == 0 || !HasIpv6()) return 0;
  if (int rc = CaptureFamily(AF_INET6, net.capture_v6.data(), net.capture_v6_len,
                             net.capture_port, lo, what);
      rc != 0) {
    return rc;
  }
  *v6 = true;
  return 0;
}

}  // namespace ward::enforce
