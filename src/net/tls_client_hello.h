// Peek-parse a TLS ClientHello from the first bytes of a CONNECT tunnel, to check that its SNI
// names the CONNECT host. Nothing is terminated or modified; the caller buffers what the
// client sent so far, calls again on kNeedMore, then forwards the same bytes. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/idna.h"

namespace ward::net {

// The ClientHello message (header included) is at most 16 KiB; it may span many records, each
// with a 5-byte header. A caller that has buffered kMaxClientHelloPeek bytes always has an
// answer other than kNeedMore.
inline constexpr size_t kMaxClientHelloMessage = 16 * 1024;
inline constexpr size_t kMaxClientHelloRecords = 64;
inline constexpr size_t kMaxClientHelloPeek = kMaxClientHelloMessage + 5 * kMaxClientHelloRecords;

struct ClientHello {
  uint16_t legacy_version = 0;          // from the handshake message (0x0303 for TLS 1.2 and 1.3)
  std::optional<Host> sni;              // normalised; absent when the client sent none
  std::vector<std::string> alpn;        // as sent, in order ("h2", "http/1.1")
  bool encrypted_client_hello = false;  // an ECH extension: the real SNI is hidden
};

struct ClientHelloParse {
  enum class Kind : uint8_t {
    kNeedMore,   // a valid prefix: read more
    kNotTls,     // does not start with a TLS handshake record (plain HTTP, SSH, SSLv2, ...)
    kMalformed,  // starts like TLS but is broken, too large, or unusable for our check
    kHello,
  };
  Kind kind = Kind::kNeedMore;
  ClientHello hello;   // kHello
  std::string reason;  // kNotTls / kMalformed
};

// kMalformed includes: a server_name list with more than one entry or a non-host_name type, an
// SNI that is not a valid host name (or is an IP literal, which RFC 6066 forbids), duplicate
// extensions, empty ALPN names, lengths that disagree, other record types interleaved.
ClientHelloParse ParseClientHello(std::string_view buffered);

}  // namespace ward::net
