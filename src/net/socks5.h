// SOCKS5 (RFC 1928) for the egress proxy: the greeting (we accept only "no authentication"),
// the CONNECT request, and replies. The parsers are stateless over what the connection has
// buffered so far: call again with more bytes on kNeedMore. Messages are tiny (a greeting is at
// most 257 bytes, a request 262), so nothing larger is ever buffered. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "net/addr.h"

namespace ward::net {

inline constexpr uint8_t kSocks5Version = 5;
inline constexpr uint8_t kSocks5NoAuth = 0x00;
inline constexpr uint8_t kSocks5NoAcceptableMethod = 0xff;
inline constexpr size_t kSocks5MaxGreeting = 2 + 255;
inline constexpr size_t kSocks5MaxRequest = 4 + 1 + 255 + 2;

enum class Socks5Reply : uint8_t {
  kSucceeded = 0,
  kGeneralFailure = 1,
  kNotAllowed = 2,  // connection not allowed by ruleset
  kNetworkUnreachable = 3,
  kHostUnreachable = 4,
  kConnectionRefused = 5,
  kTtlExpired = 6,
  kCommandNotSupported = 7,
  kAddressTypeNotSupported = 8,
};

enum class Socks5Command : uint8_t { kConnect = 1, kBind = 2, kUdpAssociate = 3 };
enum class Socks5AddressType : uint8_t { kIpv4 = 1, kDomain = 3, kIpv6 = 4 };

struct Socks5Parse {
  enum class Kind : uint8_t { kNeedMore, kDone, kError };
  Kind kind = Kind::kNeedMore;
  size_t consumed = 0;  // kDone: length of the message
  // kError: the reply to send before closing when the protocol has one for this error
  // (requests only); send_reply false means just close.
  bool send_reply = false;
  Socks5Reply reply = Socks5Reply::kGeneralFailure;
  std::string reason;
};

struct Socks5Greeting {
  std::vector<uint8_t> methods;
  bool offers_no_auth = false;  // if false, answer kSocks5NoAcceptableMethod and close
};

// VER NMETHODS METHODS... Errors: not version 5 (SOCKS4 and HTTP land here), no methods.
Socks5Parse ParseSocks5Greeting(std::string_view buffered, Socks5Greeting* out);
// VER METHOD: kSocks5NoAuth, or kSocks5NoAcceptableMethod when the client did not offer it.
std::string BuildSocks5MethodSelection(uint8_t method);

struct Socks5Request {
  Socks5Command command = Socks5Command::kConnect;
  Socks5AddressType address_type = Socks5AddressType::kIpv4;
  std::string domain;  // kDomain: raw bytes, 1..255, not yet normalised (EgressRules does that)
  IpAddress address;   // kIpv4 / kIpv6
  uint16_t port = 0;
  // The destination for EgressRules::CheckName: the domain, or the address.
  std::string HostText() const;
};

// VER CMD RSV ATYP DST.ADDR DST.PORT. Only CONNECT is served: BIND, UDP ASSOCIATE and unknown
// commands are kError with reply 7, an unknown address type reply 8, an empty domain, a
// non-zero reserved byte or port 0 reply 1. A command error is reported only once the whole
// request has arrived, so the reply never races the rest of the request.
Socks5Parse ParseSocks5Request(std::string_view buffered, Socks5Request* out);

// VER REP RSV ATYP BND.ADDR BND.PORT. The bound address defaults to 0.0.0.0:0: the sandbox has
// no use for the supervisor's real socket address.
std::string BuildSocks5Reply(Socks5Reply reply, const IpAddress& bound = IpAddress(),
                             uint16_t port = 0);

}  // namespace ward::net
