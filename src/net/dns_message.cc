#include "net/dns_message.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

namespace ward::net {

namespace {

constexpr size_t kHeaderSize = 12;
constexpr size_t kMaxNameWire = 255;
constexpr int kMaxPointerHops = 64;
constexpr uint16_t kFlagQr = 0x8000;
constexpr uint16_t kFlagTc = 0x0200;
constexpr uint16_t kFlagRd = 0x0100;
constexpr uint16_t kFlagRa = 0x0080;
constexpr uint16_t kFlagCd = 0x0010;

uint16_t U16At(std::string_view s, size_t i) {
  return static_cast<uint16_t>((static_cast<uint8_t>(s[i]) << 8) | static_cast<uint8_t>(s[i + 1]));
}

uint32_t U32At(std::string_view s, size_t i) {
  return (uint32_t{U16At(s, i)} << 16) | U16At(s, i + 2);
}

void PutU16(std::string& out, uint16_t v) {
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v & 0xff);
}

void PutU32(std::string& out, uint32_t v) {
  PutU16(out, static_cast<uint16_t>(v >> 16));
  PutU16(out, static_cast<uint16_t>(v & 0xffff));
}

// Reads a possibly compressed name at *pos; advances *pos past it (past the first pointer when
// there is one). Every pointer must point before the previous pointer's target (or before
// itself for the first), which makes loops impossible; hops and length are bounded too.
bool ReadName(std::string_view msg, size_t* pos, std::vector<std::string>* labels) {
  size_t p = *pos;
  size_t limit = p;  // pointers must go strictly below this
  size_t end = 0;
  bool jumped = false;
  int hops = 0;
  size_t wire = 0;
  while (true) {
    if (p >= msg.size()) return false;
    uint8_t len = static_cast<uint8_t>(msg[p]);
    if (len == 0) {
      wire += 1;
      if (!jumped) end = p + 1;
      break;
    }
    if ((len & 0xC0) == 0xC0) {
      if (p + 1 >= msg.size()) return false;
      size_t target = (static_cast<size_t>(len & 0x3f) << 8) | static_cast<uint8_t>(msg[p + 1]);
      if (target >= limit || ++hops > kMaxPointerHops) return false;
      if (!jumped) end = p + 2;
      jumped = true;
      limit = target;
      p = target;
      continue;
    }
    if ((len & 0xC0) != 0) return false;  // extended label types: obsolete
    if (p + 1 + len > msg.size()) return false;
    wire += 1 + len;
    if (wire + 1 > kMaxNameWire) return false;
    labels->emplace_back(msg.substr(p + 1, len));
    p += 1 + len;
  }
  *pos = end;
  return true;
}

bool IsPlainNameChar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

std::string PresentationName(const std::vector<std::string>& labels) {
  std::string out;
  for (const std::string& l : labels) {
    if (!out.empty()) out += '.';
    for (char ch : l) {
      unsigned char c = static_cast<unsigned char>(ch);
      if (IsPlainNameChar(c)) {
        out += ch;
      } else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\%03u", c);
        out += buf;
      }
    }
  }
  return out;
}

DnsQueryParse Verdict(DnsQueryParse::Kind kind, std::string reason) {
  DnsQueryParse r;
  r.kind = kind;
  r.reason = std::move(reason);
  return r;
}

bool IsPlainLabel(std::string_view label) {
  if (label.empty() || label.size() > 63) return false;
  return std::all_of(label.begin(), label.end(),
                     [](char c) { return IsPlainNameChar(static_cast<unsigned char>(c)); });
}

// Writes names, compressing repeats of whole names already written.
class NameWriter {
 public:
  explicit NameWriter(std::string* out) : out_(out) {}
  void Remember(std::string name, size_t offset) {
    if (offset < 0x4000) known_.emplace_back(std::move(name), offset);
  }
  Status Write(const std::string& name) {
    for (const auto& [n, off] : known_) {
      if (n == name) {
        PutU16(*out_, static_cast<uint16_t>(0xC000 | off));
        return Ok();
      }
    }
    size_t start = out_->size();
    if (!name.empty()) WARD_TRY(WriteLabels(name));
    *out_ += '\0';
    Remember(name, start);
    return Ok();
  }

 private:
  // Each label of a name that is not the root, after its length.
  Status WriteLabels(const std::string& name) {
    size_t wire = 1;
    size_t s = 0;
    while (s <= name.size()) {
      size_t e = name.find('.', s);
      if (e == std::string::npos) e = name.size();
      size_t len = e - s;
      if (!IsPlainLabel(std::string_view(name).substr(s, len))) {
        return InvalidArgument("bad DNS name '" + name + "'");
      }
      wire += 1 + len;
      if (wire > kMaxNameWire) return InvalidArgument("DNS name too long");
      *out_ += static_cast<char>(len);
      out_->append(name, s, len);
      s = e + 1;
    }
    return Ok();
  }

 private:
  std::string* out_;
  std::vector<std::pair<std::string, size_t>> known_;
};

std::string Header(const DnsQuery& q, uint16_t rcode_low, bool tc, uint16_t ancount) {
  std::string out;
  PutU16(out, q.id);
  uint16_t flags = kFlagQr | kFlagRa | (q.rd ? kFlagRd : 0) | (q.cd ? kFlagCd : 0) |
                   (tc ? kFlagTc : 0) | (rcode_low & 0xf);
  PutU16(out, flags);
  PutU16(out, 1);
  PutU16(out, ancount);
  PutU16(out, 0);
  PutU16(out, q.has_edns ? 1 : 0);
  return out;
}

Result<std::string> Build(const DnsQuery& q, DnsRcode rcode, const std::vector<DnsRecord>* answers,
                          bool tc) {
  uint16_t code = static_cast<uint16_t>(rcode);
  if (code > 15 && !q.has_edns) return InvalidArgument("extended rcode without EDNS");
  size_t n = answers ? answers->size() : 0;
  if (n > 0xffff) return InvalidArgument("too many answers");
  std::string out = Header(q, code, tc, static_cast<uint16_t>(n));
  for (const std::string& l : q.question.labels) {
    out += static_cast<char>(l.size());
    out += l;
  }
  out += '\0';
  PutU16(out, q.question.qtype);
  PutU16(out, q.question.qclass);
  NameWriter names(&out);
  names.Remember(q.question.name, kHeaderSize);
  for (size_t i = 0; i < n; ++i) {
    const DnsRecord& r = (*answers)[i];
    WARD_TRY(names.Write(r.name));
    PutU16(out, r.type);
    PutU16(out, kDnsClassIn);
    PutU32(out, r.ttl);
    if (r.type == kDnsTypeA) {
      if (!r.address.is_v4()) return InvalidArgument("A record with an IPv6 address");
      PutU16(out, 4);
      out.append(reinterpret_cast<const char*>(r.address.bytes().data()), 4);
    } else if (r.type == kDnsTypeAaaa) {
      if (!r.address.is_v6()) return InvalidArgument("AAAA record with an IPv4 address");
      PutU16(out, 16);
      out.append(reinterpret_cast<const char*>(r.address.bytes().data()), 16);
    } else if (r.type == kDnsTypeCname) {
      size_t len_at = out.size();
      PutU16(out, 0);
      WARD_TRY(names.Write(r.target));
      size_t rdlen = out.size() - len_at - 2;
      out[len_at] = static_cast<char>(rdlen >> 8);
      out[len_at + 1] = static_cast<char>(rdlen & 0xff);
    } else {
      return InvalidArgument("unsupported record type " + std::to_string(r.type));
    }
  }
  if (q.has_edns) {
    out += '\0';  // root name
    PutU16(out, kDnsTypeOpt);
    PutU16(out, kDnsOurUdpSize);
    PutU32(out, static_cast<uint32_t>(code >> 4) << 24);  // extended rcode, version 0, DO clear
    PutU16(out, 0);
  }
  if (out.size() > kDnsMaxMessage) return InvalidArgument("DNS response too large");
  return out;
}

}  // namespace

size_t DnsQuery::MaxUdpResponse() const {
  if (!has_edns) return kDnsMinUdpSize;
  return std::clamp<size_t>(edns_udp_size, kDnsMinUdpSize, kDnsOurUdpSize);
}

DnsQueryParse ParseDnsQuery(std::string_view m) {
  using K = DnsQueryParse::Kind;
  if (m.size() < kHeaderSize) return Verdict(K::kDrop, "shorter than a DNS header");
  if (m.size() > kDnsMaxMessage) return Verdict(K::kDrop, "larger than a DNS message");
  uint16_t flags = U16At(m, 2);
  if (flags & kFlagQr) return Verdict(K::kDrop, "a response, not a query");
  if (((flags >> 11) & 0xf) != 0) return Verdict(K::kNotImp, "opcode other than QUERY");
  uint16_t qd = U16At(m, 4), an = U16At(m, 6), ns = U16At(m, 8), ar = U16At(m, 10);
  if (qd != 1) return Verdict(K::kFormErr, "question count is not 1");
  if (an != 0 || ns != 0) return Verdict(K::kFormErr, "answer or authority records in a query");

  DnsQueryParse r;
  r.kind = K::kQuery;
  DnsQuery& q = r.query;
  q.id = U16At(m, 0);
  q.rd = flags & kFlagRd;
  q.cd = flags & kFlagCd;
  size_t pos = kHeaderSize;
  if (!ReadName(m, &pos, &q.question.labels)) return Verdict(K::kFormErr, "bad question name");
  if (pos + 4 > m.size()) return Verdict(K::kFormErr, "truncated question");
  q.question.qtype = U16At(m, pos);
  q.question.qclass = U16At(m, pos + 2);
  q.question.name = PresentationName(q.question.labels);
  pos += 4;

  for (uint16_t i = 0; i < ar; ++i) {
    std::vector<std::string> owner;
    if (!ReadName(m, &pos, &owner)) return Verdict(K::kFormErr, "bad additional record name");
    if (pos + 10 > m.size()) return Verdict(K::kFormErr, "truncated additional record");
    uint16_t type = U16At(m, pos);
    uint16_t cls = U16At(m, pos + 2);
    uint32_t ttl = U32At(m, pos + 4);
    uint16_t rdlen = U16At(m, pos + 8);
    pos += 10;
    if (pos + rdlen > m.size()) return Verdict(K::kFormErr, "truncated additional record");
    pos += rdlen;
    if (type != kDnsTypeOpt) continue;  // e.g. a TSIG we do not verify: tolerated, ignored
    if (q.has_edns) return Verdict(K::kFormErr, "more than one OPT record");
    if (!owner.empty()) return Verdict(K::kFormErr, "OPT record not owned by the root");
    q.has_edns = true;
    q.edns_udp_size = cls;
    q.edns_version = static_cast<uint8_t>((ttl >> 16) & 0xff);
    q.edns_do = (ttl & 0x8000) != 0;
  }
  if (pos != m.size()) return Verdict(K::kFormErr, "trailing bytes after the message");
  return r;
}

std::string BuildDnsErrorResponse(std::string_view request, DnsRcode rcode) {
  if (request.size() < 2) return "";
  uint16_t req_flags = request.size() >= 4 ? U16At(request, 2) : 0;
  std::string out;
  out.append(request.substr(0, 2));
  uint16_t flags = kFlagQr | kFlagRa | (req_flags & 0x7800) | (req_flags & kFlagRd) |
                   (static_cast<uint16_t>(rcode) & 0xf);
  PutU16(out, flags);
  PutU16(out, 0);
  PutU16(out, 0);
  PutU16(out, 0);
  PutU16(out, 0);
  return out;
}

Result<std::string> BuildDnsResponse(const DnsQuery& query, DnsRcode rcode,
                                     const std::vector<DnsRecord>& answers, size_t max_size) {
  WARD_ASSIGN_OR_RETURN(std::string full, Build(query, rcode, &answers, false));
  if (full.size() <= max_size) return full;
  return Build(query, rcode, nullptr, true);
}

Result<std::string> BuildDnsAddressResponse(const DnsQuery& query,
                                            const std::vector<std::string>& cname_chain,
                                            const std::vector<IpAddress>& addresses, uint32_t ttl,
                                            size_t max_size) {
  std::vector<DnsRecord> answers;
  std::string owner = query.question.name;
  for (const std::string& target : cname_chain) {
    DnsRecord r;
    r.name = owner;
    r.type = kDnsTypeCname;
    r.ttl = ttl;
    r.target = target;
    answers.push_back(std::move(r));
    owner = target;
  }
  for (const IpAddress& a : addresses) {
    IpAddress u = a.Unmapped();
    DnsRecord r;
    r.name = owner;
    r.ttl = ttl;
    r.address = u;
    if (query.question.qtype == kDnsTypeA && u.is_v4()) {
      r.type = kDnsTypeA;
    } else if (query.question.qtype == kDnsTypeAaaa && u.is_v6()) {
      r.type = kDnsTypeAaaa;
    } else {
      continue;
    }
    answers.push_back(std::move(r));
  }
  return BuildDnsResponse(query, DnsRcode::kNoError, answers, max_size);
}

Result<std::string> FrameDnsTcp(std::string_view message) {
  if (message.empty() || message.size() > kDnsMaxMessage) {
    return InvalidArgument("DNS message size out of range for TCP framing");
  }
  std::string out;
  PutU16(out, static_cast<uint16_t>(message.size()));
  out += message;
  return out;
}

DnsTcpFrame ExtractDnsTcpFrame(std::string_view buffered) {
  DnsTcpFrame f;
  if (buffered.size() < 2) return f;
  size_t len = U16At(buffered, 0);
  if (len == 0) {
    f.kind = DnsTcpFrame::Kind::kError;
    return f;
  }
  if (buffered.size() < 2 + len) return f;
  f.kind = DnsTcpFrame::Kind::kFrame;
  f.message = buffered.substr(2, len);
  f.consumed = 2 + len;
  return f;
}

}  // namespace ward::net
