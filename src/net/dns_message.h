// DNS messages for the sandbox's stub resolver: parse one query (hostile input), build the
// answers the stub gives (A/AAAA, CNAME chains, NXDOMAIN, REFUSED, SERVFAIL, no data), and the
// TCP length-prefix framing. Pure.
//
// EDNS: an OPT record in the query is parsed (UDP size, version, DO bit) and answered with a
// minimal OPT (UDP size 1232, no options, DO clear); version != 0 deserves DnsRcode::kBadVers.
// Negative answers carry no SOA, so resolvers cache them only briefly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "net/addr.h"

namespace ward::net {

enum class DnsRcode : uint16_t {
  kNoError = 0,
  kFormErr = 1,
  kServFail = 2,
  kNxDomain = 3,
  kNotImp = 4,
  kRefused = 5,
  kBadVers = 16,  // EDNS only (extended rcode)
};

inline constexpr uint16_t kDnsTypeA = 1;
inline constexpr uint16_t kDnsTypeCname = 5;
inline constexpr uint16_t kDnsTypeAaaa = 28;
inline constexpr uint16_t kDnsTypeOpt = 41;
inline constexpr uint16_t kDnsClassIn = 1;
inline constexpr size_t kDnsMaxMessage = 65535;
inline constexpr size_t kDnsMinUdpSize = 512;
inline constexpr uint16_t kDnsOurUdpSize = 1232;

struct DnsQuestion {
  std::vector<std::string> labels;  // raw label bytes, case preserved (echoed as received)
  // Labels joined by '.', no trailing dot, "" for the root. Bytes other than letters, digits,
  // '-' and '_' appear as \DDD, so a '.' inside a label cannot pass for a separator; such a
  // name fails NormalizeHost and is answered NXDOMAIN.
  std::string name;
  uint16_t qtype = 0;
  uint16_t qclass = 0;
};

struct DnsQuery {
  uint16_t id = 0;
  bool rd = false;  // recursion desired: echoed
  bool cd = false;  // checking disabled: echoed
  DnsQuestion question;
  bool has_edns = false;
  uint16_t edns_udp_size = 0;
  uint8_t edns_version = 0;
  bool edns_do = false;
  // Largest UDP response the client takes: 512 without EDNS, else its size within 512..1232.
  size_t MaxUdpResponse() const;
};

struct DnsQueryParse {
  enum class Kind : uint8_t {
    kQuery,    // parsed: answer it
    kFormErr,  // malformed: answer BuildDnsErrorResponse(message, kFormErr)
    kNotImp,   // opcode other than QUERY: answer BuildDnsErrorResponse(message, kNotImp)
    kDrop,     // shorter than a header, or a response (QR=1): never answer, only count
  };
  Kind kind = Kind::kDrop;
  DnsQuery query;      // kQuery
  std::string reason;  // otherwise
};

// One question (qdcount must be 1), no answer or authority records, name compression only
// backwards (each pointer before the previous one, so no loop), names at most 255 octets,
// at most one OPT (with the root name), no trailing bytes.
DnsQueryParse ParseDnsQuery(std::string_view message);

// A header-only answer (ID, opcode and RD echoed, no question) for a message ParseDnsQuery
// could not take; "" when it is too short to carry an ID.
std::string BuildDnsErrorResponse(std::string_view request, DnsRcode rcode);

struct DnsRecord {
  std::string name;           // owner: the question's name, or a plain dotted name
  uint16_t type = kDnsTypeA;  // kDnsTypeA, kDnsTypeAaaa or kDnsTypeCname
  uint32_t ttl = 0;
  IpAddress address;   // A (IPv4) / AAAA (IPv6)
  std::string target;  // CNAME: a plain dotted name
};

// A full response echoing ID, RD, CD and the question (with OPT when the query had EDNS).
// When it exceeds max_size (the transport's limit, see DnsQuery::MaxUdpResponse; 65535 for
// TCP) the answers are dropped and TC is set so the client retries over TCP. Errors: records
// with invalid names or mismatched address families, BADVERS without EDNS.
Result<std::string> BuildDnsResponse(const DnsQuery& query, DnsRcode rcode,
                                     const std::vector<DnsRecord>& answers, size_t max_size);

// NOERROR: question name CNAME chain[0] CNAME chain[1] ... then the addresses that fit the
// question type (A: IPv4, AAAA: IPv6) owned by the last name. No matching address: the CNAMEs
// only (no data).
Result<std::string> BuildDnsAddressResponse(const DnsQuery& query,
                                            const std::vector<std::string>& cname_chain,
                                            const std::vector<IpAddress>& addresses, uint32_t ttl,
                                            size_t max_size);

// DNS over TCP: a two-byte big-endian length before every message.
Result<std::string> FrameDnsTcp(std::string_view message);

struct DnsTcpFrame {
  enum class Kind : uint8_t { kNeedMore, kFrame, kError };
  Kind kind = Kind::kNeedMore;
  std::string_view message;  // kFrame: a view into the buffer
  size_t consumed = 0;       // kFrame: 2 + message size
};
// The first complete frame in what a TCP connection has buffered. A zero length is kError.
DnsTcpFrame ExtractDnsTcpFrame(std::string_view buffered);

}  // namespace ward::net
