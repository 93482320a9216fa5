#include "net/addr.h"

#include <cstdio>

namespace ward::net {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Strict dotted decimal: four parts of 1..3 digits, no leading zeros, each <= 255.
std::optional<uint32_t> ParseStrictV4(std::string_view s) {
  uint32_t value = 0;
  int parts = 0;
  size_t i = 0;
  while (true) {
    size_t start = i;
    uint32_t part = 0;
    while (i < s.size() && IsDigit(s[i]) && i - start < 4) {
      part = part * 10 + static_cast<uint32_t>(s[i] - '0');
      ++i;
    }
    size_t len = i - start;
    if (len == 0 || len > 3 || part > 255) return std::nullopt;
    if (len > 1 && s[start] == '0') return std::nullopt;
    value = (value << 8) | part;
    ++parts;
    if (parts == 4) break;
    if (i >= s.size() || s[i] != '.') return std::nullopt;
    ++i;
  }
  if (i != s.size()) return std::nullopt;
  return value;
}

std::optional<std::array<uint8_t, 16>> ParseV6(std::string_view s) {
  // Collect up to 8 groups before and after a single "::".
  std::array<uint16_t, 8> head{}, tail{};
  int nhead = 0, ntail = 0;
  bool seen_gap = false;
  bool v4_tail = false;
  uint32_t v4 = 0;
  size_t i = 0;
  if (s.size() < 2) return std::nullopt;
  if (s[0] == ':') {
    if (s[1] != ':') return std::nullopt;
    seen_gap = true;
    i = 2;
    if (i == s.size()) return std::array<uint8_t, 16>{};
  }
  while (i < s.size()) {
    // A group or a trailing dotted quad.
    size_t start = i;
    while (i < s.size() && HexValue(s[i]) >= 0) ++i;
    if (i < s.size() && s[i] == '.') {
      auto q = ParseStrictV4(s.substr(start));
      if (!q) return std::nullopt;
      v4 = *q;
      v4_tail = true;
      i = s.size();
      break;
    }
    size_t len = i - start;
    if (len == 0 || len > 4) return std::nullopt;
    uint16_t group = 0;
    for (size_t k = start; k < i; ++k) group = static_cast<uint16_t>(group * 16 + HexValue(s[k]));
    if (seen_gap) {
      if (ntail >= 8) return std::nullopt;
      tail[ntail++] = group;
    } else {
      if (nhead >= 8) return std::nullopt;
      head[nhead++] = group;
    }
    if (i == s.size()) break;
    if (s[i] != ':') return std::nullopt;
    ++i;
    if (i < s.size() && s[i] == ':') {
      if (seen_gap) return std::nullopt;
      seen_gap = true;
      ++i;
      if (i == s.size()) break;
    } else if (i == s.size()) {
      return std::nullopt;  // trailing single ':'
    }
  }
  int groups = nhead + ntail + (v4_tail ? 2 : 0);
  if (seen_gap ? groups > 7 : groups != 8) return std::nullopt;
  std::array<uint16_t, 8> all{};
  for (int k = 0; k < nhead; ++k) all[k] = head[k];
  int tail_start = 8 - ntail - (v4_tail ? 2 : 0);
  for (int k = 0; k < ntail; ++k) all[tail_start + k] = tail[k];
  if (v4_tail) {
    all[6] = static_cast<uint16_t>(v4 >> 16);
    all[7] = static_cast<uint16_t>(v4 & 0xffff);
  }
  std::array<uint8_t, 16> out{};
  for (int k = 0; k < 8; ++k) {
    out[2 * k] = static_cast<uint8_t>(all[k] >> 8);
    out[2 * k + 1] = static_cast<uint8_t>(all[k] & 0xff);
  }
  return out;
}

std::string V4ToString(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff,
                v & 0xff);
  return buf;
}

uint32_t BytesToV4(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

bool PrefixMatches(const std::array<uint8_t, 16>& a, const std::array<uint8_t, 16>& b, int bits) {
  int full = bits / 8;
  for (int k = 0; k < full; ++k) {
    if (a[k] != b[k]) return false;
  }
  int rest = bits % 8;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a[full] & mask) == (b[full] & mask);
}

}  // namespace

IpAddress IpAddress::V4(uint32_t v) {
  IpAddress a;
  a.family_ = Family::kV4;
  a.bytes_[0] = static_cast<uint8_t>(v >> 24);
  a.bytes_[1] = static_cast<uint8_t>(v >> 16);
  a.bytes_[2] = static_cast<uint8_t>(v >> 8);
  a.bytes_[3] = static_cast<uint8_t>(v);
  return a;
}

IpAddress IpAddress::V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return V4((uint32_t{a} << 24) | (uint32_t{b} << 16) | (uint32_t{c} << 8) | uint32_t{d});
}

IpAddress IpAddress::V6(const std::array<uint8_t, 16>& bytes) {
  IpAddress a;
  a.family_ = Family::kV6;
  a.bytes_ = bytes;
  return a;
}

IpAddress IpAddress::MappedV6(uint32_t v) {
  std::array<uint8_t, 16> b{};
  b[10] = 0xff;
  b[11] = 0xff;
  b[12] = static_cast<uint8_t>(v >> 24);
  b[13] = static_cast<uint8_t>(v >> 16);
  b[14] = static_cast<uint8_t>(v >> 8);
  b[15] = static_cast<uint8_t>(v);
  return V6(b);
}

Result<IpAddress> IpAddress::Parse(std::string_view text) {
  if (text.size() > 64) return InvalidArgument("IP address too long");
  std::string_view s = text;
  bool bracketed = false;
  if (!s.empty() && s.front() == '[') {
    if (s.size() < 2 || s.back() != ']') return InvalidArgument("unbalanced '[' in IP address");
    s = s.substr(1, s.size() - 2);
    bracketed = true;
  }
  if (!bracketed) {
    if (auto v4 = ParseStrictV4(s)) return V4(*v4);
  }
  if (s.find(':') != std::string_view::npos) {
    if (auto v6 = ParseV6(s)) return V6(*v6);
  }
  return InvalidArgument("not an IP address: '" + std::string(text) + "'");
}

std::optional<IpAddress> IpAddress::ParseLegacyV4(std::string_view s) {
  if (s.empty() || s.size() > 64) return std::nullopt;
  uint64_t parts[4];
  int n = 0;
  size_t i = 0;
  while (true) {
    if (n == 4) return std::nullopt;
    size_t start = i;
    while (i < s.size() && s[i] != '.') ++i;
    std::string_view p = s.substr(start, i - start);
    if (p.empty()) return std::nullopt;
    uint64_t v = 0;
    int base = 10;
    if (p.size() >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
      base = 16;
      p.remove_prefix(2);  // "0x" alone is zero, as inet_aton and URL parsers read it
    } else if (p.size() >= 2 && p[0] == '0') {
      base = 8;
      p.remove_prefix(1);
    }
    for (char c : p) {
      int d = HexValue(c);
      if (d < 0 || d >= base) return std::nullopt;
      v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
      if (v > 0xffffffffULL) return std::nullopt;
    }
    parts[n++] = v;
    if (i == s.size()) break;
    ++i;                                     // '.'
    if (i == s.size()) return std::nullopt;  // trailing dot: callers strip it first
  }
  uint32_t value = 0;
  for (int k = 0; k < n - 1; ++k) {
    if (parts[k] > 255) return std::nullopt;
    value |= static_cast<uint32_t>(parts[k]) << (24 - 8 * k);
  }
  uint64_t last = parts[n - 1];
  int last_bits = 32 - 8 * (n - 1);
  if (last_bits < 32 && last >= (uint64_t{1} << last_bits)) return std::nullopt;
  value |= static_cast<uint32_t>(last);
  return V4(value);
}

uint32_t IpAddress::v4() const { return BytesToV4(bytes_.data()); }

IpAddress IpAddress::Unmapped() const {
  if (!is_v6()) return *this;
  for (int k = 0; k < 10; ++k) {
    if (bytes_[k] != 0) return *this;
  }
  if (bytes_[10] != 0xff || bytes_[11] != 0xff) return *this;
  return V4(BytesToV4(bytes_.data() + 12));
}

std::string IpAddress::ToString() const {
  if (is_v4()) return V4ToString(v4());
  if (Unmapped().is_v4()) return "::ffff:" + V4ToString(BytesToV4(bytes_.data() + 12));
  uint16_t g[8];
  for (int k = 0; k < 8; ++k)
    g[k] = static_cast<uint16_t>((bytes_[2 * k] << 8) | bytes_[2 * k + 1]);
  // RFC 5952: compress the longest run (>= 2) of zero groups, the first one on a tie.
  int best = -1, best_len = 0;
  for (int k = 0; k < 8;) {
    if (g[k] != 0) {
      ++k;
      continue;
    }
    int j = k;
    while (j < 8 && g[j] == 0) ++j;
    if (j - k > best_len && j - k >= 2) {
      best = k;
      best_len = j - k;
    }
    k = j;
  }
  std::string out;
  char buf[8];
  for (int k = 0; k < 8; ++k) {
    if (k == best) {
      out += "::";
      k += best_len - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':') out += ':';
    std::snprintf(buf, sizeof buf, "%x", g[k]);
    out += buf;
  }
  return out;
}

std::string IpAddress::ToUriString() const { return is_v6() ? "[" + ToString() + "]" : ToString(); }

IpNet::IpNet(const IpAddress& base, int prefix_len) {
  int max = base.is_v4() ? 32 : 128;
  if (prefix_len < 0) prefix_len = 0;
  if (prefix_len > max) prefix_len = max;
  std::array<uint8_t, 16> b = base.bytes();
  for (int bit = prefix_len; bit < max; ++bit) {
    b[bit / 8] = static_cast<uint8_t>(b[bit / 8] & ~(0x80 >> (bit % 8)));
  }
  if (base.is_v4()) {
    address_ = IpAddress::V4(b[0], b[1], b[2], b[3]);
  } else {
    address_ = IpAddress::V6(b);
  }
  prefix_len_ = prefix_len;
}

Result<IpNet> IpNet::Parse(std::string_view text) {
  std::string_view s = text;
  size_t slash = s.rfind('/');
  if (slash == std::string_view::npos) return InvalidArgument("CIDR needs a '/prefix'");
  std::string_view addr_text = s.substr(0, slash);
  std::string_view len_text = s.substr(slash + 1);
  // "[fd00::]/8": brackets around the address only.
  WARD_ASSIGN_OR_RETURN(IpAddress addr, IpAddress::Parse(addr_text));
  if (len_text.empty() || len_text.size() > 3) {
    return InvalidArgument("bad prefix length in '" + std::string(text) + "'");
  }
  int len = 0;
  for (char c : len_text) {
    if (!IsDigit(c)) return InvalidArgument("bad prefix length in '" + std::string(text) + "'");
    len = len * 10 + (c - '0');
  }
  if (len_text.size() > 1 && len_text[0] == '0') {
    return InvalidArgument("bad prefix length in '" + std::string(text) + "'");
  }
  int max = addr.is_v4() ? 32 : 128;
  if (len > max) return InvalidArgument("prefix length too large in '" + std::string(text) + "'");
  IpNet net(addr, len);
  if (net.address() != addr) {
    return InvalidArgument("host bits set in '" + std::string(text) + "' (did you mean " +
                           net.ToString() + "?)");
  }
  return net;
}

bool IpNet::Contains(const IpAddress& addr) const {
  if (addr.family() != address_.family()) return false;
  return PrefixMatches(addr.bytes(), address_.bytes(), prefix_len_);
}

std::string IpNet::ToString() const {
  return address_.ToString() + "/" + std::to_string(prefix_len_);
}

const char* AddressClassName(AddressClass c) {
  switch (c) {
    case AddressClass::kPublic:
      return "public";
    case AddressClass::kUnspecified:
      return "unspecified";
    case AddressClass::kLoopback:
      return "loopback";
    case AddressClass::kPrivate:
      return "private";
    case AddressClass::kLinkLocal:
      return "link-local";
    case AddressClass::kCgnat:
      return "carrier-grade NAT";
    case AddressClass::kMulticast:
      return "multicast";
    case AddressClass::kReserved:
      return "reserved";
    case AddressClass::kBroadcast:
      return "broadcast";
    case AddressClass::kMetadata:
      return "cloud metadata";
  }
  return "unknown";
}

namespace {

struct V4Range {
  uint32_t base;
  int len;
  AddressClass cls;
  const char* text;
};

// Order matters: the first match wins, so specific entries (metadata) precede their blocks.
constexpr V4Range kV4Ranges[] = {
    {0xA9FEA9FE, 32, AddressClass::kMetadata, "169.254.169.254"},  // AWS, GCP, Azure, OpenStack
    {0xA9FEAA02, 32, AddressClass::kMetadata, "169.254.170.2"},    // AWS ECS task metadata
    {0x646464C8, 32, AddressClass::kMetadata, "100.100.100.200"},  // Alibaba Cloud
    {0xA83F8110, 32, AddressClass::kMetadata, "168.63.129.16"},    // Azure WireServer
    {0xC00000C0, 32, AddressClass::kMetadata, "192.0.0.192"},      // Oracle Cloud
    {0x00000000, 8, AddressClass::kUnspecified, "0.0.0.0/8"},
    {0x0A000000, 8, AddressClass::kPrivate, "10.0.0.0/8"},
    {0x64400000, 10, AddressClass::kCgnat, "100.64.0.0/10"},
    {0x7F000000, 8, AddressClass::kLoopback, "127.0.0.0/8"},
    {0xA9FE0000, 16, AddressClass::kLinkLocal, "169.254.0.0/16"},
    {0xAC100000, 12, AddressClass::kPrivate, "172.16.0.0/12"},
    {0xC0000000, 24, AddressClass::kReserved, "192.0.0.0/24"},
    {0xC0A80000, 16, AddressClass::kPrivate, "192.168.0.0/16"},
    {0xE0000000, 4, AddressClass::kMulticast, "224.0.0.0/4"},
    {0xFFFFFFFF, 32, AddressClass::kBroadcast, "255.255.255.255"},
    {0xF0000000, 4, AddressClass::kReserved, "240.0.0.0/4"},
};

Classification ClassifyV4(uint32_t v) {
  for (const V4Range& r : kV4Ranges) {
    uint32_t mask = r.len == 0 ? 0 : ~uint32_t{0} << (32 - r.len);
    if ((v & mask) == r.base) {
      return {r.cls, std::string(AddressClassName(r.cls)) + " (" + r.text + ")"};
    }
  }
  return {};
}

struct V6Range {
  std::array<uint8_t, 16> base;
  int len;
  AddressClass cls;
  const char* text;
};

const V6Range kV6Ranges[] = {
    {{0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54},
     128,
     AddressClass::kMetadata,
     "fd00:ec2::254"},  // AWS IMDS over IPv6
    {{}, 128, AddressClass::kUnspecified, "::"},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, AddressClass::kLoopback, "::1"},
    {{}, 96, AddressClass::kReserved, "::/96, IPv4-compatible"},
    {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, AddressClass::kPrivate, "64:ff9b:1::/48"},
    {{0x01, 0x00}, 64, AddressClass::kReserved, "100::/64"},
    {{0xfc}, 7, AddressClass::kPrivate, "fc00::/7"},
    {{0xfe, 0x80}, 10, AddressClass::kLinkLocal, "fe80::/10"},
    {{0xfe, 0xc0}, 10, AddressClass::kPrivate, "fec0::/10, site-local"},
    {{0xff}, 8, AddressClass::kMulticast, "ff00::/8"},
};

Classification Embedded(const Classification& inner, const char* via) {
  if (inner.cls == AddressClass::kPublic) return inner;
  return {inner.cls, inner.why + " embedded in " + via};
}

}  // namespace

Classification Classify(const IpAddress& addr) {
  if (addr.is_v4()) return ClassifyV4(addr.v4());
  const auto& b = addr.bytes();
  // Embedded IPv4 first: classify where the packets would go.
  IpAddress unmapped = addr.Unmapped();
  if (unmapped.is_v4()) return Embedded(ClassifyV4(unmapped.v4()), "IPv4-mapped (::ffff:0:0/96)");
  static const std::array<uint8_t, 16> kNat64 = {0x00, 0x64, 0xff, 0x9b};
  if (PrefixMatches(b, kNat64, 96)) {
    return Embedded(ClassifyV4(BytesToV4(b.data() + 12)), "NAT64 (64:ff9b::/96)");
  }
  if (b[0] == 0x20 && b[1] == 0x02) {
    return Embedded(ClassifyV4(BytesToV4(b.data() + 2)), "6to4 (2002::/16)");
  }
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && b[3] == 0x00) {
    // Teredo: the client's IPv4 address is stored inverted in the last 32 bits.
    return Embedded(ClassifyV4(~BytesToV4(b.data() + 12)), "Teredo (2001::/32)");
  }
  for (const V6Range& r : kV6Ranges) {
    if (PrefixMatches(b, r.base, r.len)) {
      return {r.cls, std::string(AddressClassName(r.cls)) + " (" + r.text + ")"};
    }
  }
  // All assigned global unicast space is 2000::/3; anything else is not the public internet.
  if ((b[0] & 0xe0) != 0x20) {
    return {AddressClass::kReserved, "reserved (outside 2000::/3)"};
  }
  return {};
}

bool IsNonPublic(const IpAddress& addr, std::string* why) {
  Classification c = Classify(addr);
  if (c.cls == AddressClass::kPublic) return false;
  if (why != nullptr) *why = std::move(c.why);
  return true;
}

}  // namespace ward::net
