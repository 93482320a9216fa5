// IP addresses, networks and the classification the egress proxy uses to refuse destinations
// that are not on the public internet (loopback, private, link-local, metadata, ...). Pure.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ward::net {

class IpAddress {
 public:
  enum class Family : uint8_t { kV4, kV6 };

  IpAddress() = default;  // 0.0.0.0
  static IpAddress V4(uint32_t host_order);
  static IpAddress V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d);
  static IpAddress V6(const std::array<uint8_t, 16>& bytes);
  // ::ffff:a.b.c.d
  static IpAddress MappedV6(uint32_t v4_host_order);

  // Strict textual forms only: dotted-decimal IPv4 (exactly four parts, no leading zeros) and
  // RFC 4291 IPv6 (optionally in brackets, trailing dotted quad allowed, no zone id). Legacy
  // forms such as "127.1" or "0x7f.0.0.1" are errors here; see ParseLegacyV4.
  static Result<IpAddress> Parse(std::string_view text);

  // inet_aton(3)-style IPv4, as resolvers and URL parsers accept it: one to four parts, each
  // decimal, octal (leading 0) or hex (0x); the last part fills the remaining bytes
  // ("127.1" == 127.0.0.1, "2130706433" == 127.0.0.1). nullopt when the text is not one.
  static std::optional<IpAddress> ParseLegacyV4(std::string_view text);

  Family family() const { return family_; }
  bool is_v4() const { return family_ == Family::kV4; }
  bool is_v6() const { return family_ == Family::kV6; }
  // Network-order bytes: 4 meaningful for v4, 16 for v6.
  const std::array<uint8_t, 16>& bytes() const { return bytes_; }
  uint32_t v4() const;  // host order; only for v4
  // The IPv4 address for a v4-mapped IPv6 address (::ffff:a.b.c.d), else *this. Matching and
  // classification treat the two spellings as one address.
  IpAddress Unmapped() const;

  // Canonical: dotted decimal, or RFC 5952 IPv6 (lowercase, longest zero run as "::",
  // v4-mapped as ::ffff:a.b.c.d). No brackets.
  std::string ToString() const;
  // For URIs and host:port: IPv6 in brackets.
  std::string ToUriString() const;

  friend bool operator==(const IpAddress&, const IpAddress&) = default;
  friend auto operator<=>(const IpAddress&, const IpAddress&) = default;

 private:
  Family family_ = Family::kV4;
  std::array<uint8_t, 16> bytes_{};
};

// A CIDR block. The address has no bits set beyond the prefix.
class IpNet {
 public:
  IpNet() = default;
  // nullopt-free constructor for constants; masks host bits.
  IpNet(const IpAddress& base, int prefix_len);

  // "10.0.0.0/8", "fd00::/8", "[fd00::]/8". Host bits set ("10.0.0.1/8") is an error, so a typo
  // does not silently widen or shift the block. A bare address is an error (use Parse for it).
  static Result<IpNet> Parse(std::string_view text);

  const IpAddress& address() const { return address_; }
  int prefix_len() const { return prefix_len_; }
  // Same family only; callers that accept v4-mapped input pass addr.Unmapped().
  bool Contains(const IpAddress& addr) const;
  std::string ToString() const;

  friend bool operator==(const IpNet&, const IpNet&) = default;

 private:
  IpAddress address_;
  int prefix_len_ = 0;
};

enum class AddressClass : uint8_t {
  kPublic,
  kUnspecified,  // 0.0.0.0/8 ("this network"), ::
  kLoopback,     // 127/8, ::1
  kPrivate,      // RFC 1918, fc00::/7, fec0::/10, 64:ff9b:1::/48
  kLinkLocal,    // 169.254/16, fe80::/10
  kCgnat,        // 100.64/10
  kMulticast,    // 224/4, ff00::/8
  kReserved,     // 240/4, 192.0.0.0/24, 100::/64, ::/96, IPv6 outside 2000::/3
  kBroadcast,    // 255.255.255.255
  kMetadata,     // cloud instance metadata endpoints
};
const char* AddressClassName(AddressClass c);

struct Classification {
  AddressClass cls = AddressClass::kPublic;
  // Human-readable: "loopback (127.0.0.0/8)", "cloud metadata (169.254.169.254) embedded in
  // 6to4 (2002::/16)". Empty for public addresses.
  std::string why;
};

// IPv4 embedded in IPv6 (::ffff:0:0/96, 64:ff9b::/96, 2002::/16, Teredo 2001::/32) is classified
// by the embedded IPv4 address, since that is where packets may end up. Documentation ranges
// (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32) and 198.18/15 are public: package
// mirrors and fake-IP DNS setups live there.
Classification Classify(const IpAddress& addr);

// What the proxy denies by default. Sets *why (when non-null) to the reason.
bool IsNonPublic(const IpAddress& addr, std::string* why);

}  // namespace ward::net
