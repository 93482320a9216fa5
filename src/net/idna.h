// Host names as the egress rules see them: one canonical spelling per host (lowercase ASCII,
// A-labels, no trailing dot), and IP literals in disguise recognised as addresses. Pure.
//
// Limits (no UTS #46 / Unicode tables are shipped): lowercasing of non-ASCII covers Latin-1,
// Latin Extended-A and Additional, Greek, Cyrillic, Armenian and Georgian; fullwidth ASCII and
// the ideographic full stops are mapped; no NFC normalisation, no bidi or contextual rules.
// Characters that UTS #46 would map onto other text (compatibility forms, math letters,
// enclosed letters, ligatures, soft hyphen, zero-width joiners, ...) are rejected rather than
// mapped. The proxy must resolve and connect to the normalised name, never to the raw one; then
// a spelling these limits treat differently names a different DNS name, not a way around a rule.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "net/addr.h"

namespace ward::net {

// RFC 3492, without the "xn--" prefix. Encode takes Unicode code points (valid scalar values);
// decode rejects overflow, invalid digits, non-basic characters before the delimiter and
// results outside the Unicode scalar range. Inputs and outputs beyond 1024 code points / bytes
// are errors.
Result<std::string> PunycodeEncode(std::u32string_view input);
Result<std::u32string> PunycodeDecode(std::string_view input);

inline constexpr size_t kMaxHostInputBytes = 1024;  // raw input, before normalisation
inline constexpr size_t kMaxHostNameLength = 253;   // normalised, without trailing dot

// A destination: a normalised host name or an IP address.
struct Host {
  std::string name;                  // set when !address
  std::optional<IpAddress> address;  // v4-mapped IPv6 is stored as the IPv4 address

  bool is_address() const { return address.has_value(); }
  std::string ToString() const;     // the name, or the canonical address (IPv6 without brackets)
  std::string ToUriString() const;  // IPv6 in brackets, for host:port and Host headers
  friend bool operator==(const Host&, const Host&) = default;
};

// Host name → canonical form: "Bücher.Example." → "xn--bcher-kva.example". Accepts UTF-8 or
// ASCII; labels are 1..63 octets after conversion, the name at most 253; characters are
// letters, digits, '-' (not at a label's ends) and '_' (ASCII labels only). Any IP literal,
// including inet_aton spellings ("127.1", "0x7f.1", "2130706433") and names ending in a
// numeric label ("foo.123"), is an error here: use ParseHost where addresses are acceptable.
Result<std::string> NormalizeHost(std::string_view host);

// Name or address: "[::1]" and "::1" and "1.2.3.4" and disguised IPv4 ("0x7f.1") become an
// address; everything else must satisfy NormalizeHost.
Result<Host> ParseHost(std::string_view host);

// A normalised name with its A-labels decoded to UTF-8, for display ("xn--bcher-kva.example"
// → "bücher.example").
Result<std::string> HostToUnicode(std::string_view normalized);

}  // namespace ward::net
