#include "net/socks5.h"

namespace ward::net {

namespace {

uint8_t Byte(std::string_view s, size_t i) { return static_cast<uint8_t>(s[i]); }

Socks5Parse Fail(std::string reason, bool send_reply = false,
                 Socks5Reply reply = Socks5Reply::kGeneralFailure) {
  Socks5Parse p;
  p.kind = Socks5Parse::Kind::kError;
  p.send_reply = send_reply;
  p.reply = reply;
  p.reason = std::move(reason);
  return p;
}

Socks5Parse Done(size_t consumed) {
  Socks5Parse p;
  p.kind = Socks5Parse::Kind::kDone;
  p.consumed = consumed;
  return p;
}

}  // namespace

Socks5Parse ParseSocks5Greeting(std::string_view b, Socks5Greeting* out) {
  if (b.empty()) return {};
  if (Byte(b, 0) != kSocks5Version) return Fail("not a SOCKS5 greeting");
  if (b.size() < 2) return {};
  size_t n = Byte(b, 1);
  if (n == 0) return Fail("SOCKS5 greeting offers no methods");
  if (b.size() < 2 + n) return {};
  out->methods.assign(b.begin() + 2, b.begin() + 2 + static_cast<std::ptrdiff_t>(n));
  out->offers_no_auth = false;
  for (uint8_t m : out->methods) out->offers_no_auth |= m == kSocks5NoAuth;
  return Done(2 + n);
}

std::string BuildSocks5MethodSelection(uint8_t method) {
  return std::string{static_cast<char>(kSocks5Version), static_cast<char>(method)};
}

std::string Socks5Request::HostText() const {
  return address_type == Socks5AddressType::kDomain ? domain : address.ToString();
}

Socks5Parse ParseSocks5Request(std::string_view b, Socks5Request* out) {
  if (b.empty()) return {};
  if (Byte(b, 0) != kSocks5Version) return Fail("not a SOCKS5 request", true);
  if (b.size() < 4) return {};
  uint8_t cmd = Byte(b, 1);
  uint8_t rsv = Byte(b, 2);
  uint8_t atyp = Byte(b, 3);
  size_t addr_len;
  size_t addr_off = 4;
  switch (atyp) {
    case static_cast<uint8_t>(Socks5AddressType::kIpv4):
      addr_len = 4;
      break;
    case static_cast<uint8_t>(Socks5AddressType::kIpv6):
      addr_len = 16;
      break;
    case static_cast<uint8_t>(Socks5AddressType::kDomain):
      if (b.size() < 5) return {};
      addr_len = Byte(b, 4);
      addr_off = 5;
      break;
    default:
      // Without a known address type the request's length is unknown: reply and close.
      return Fail("unknown SOCKS5 address type", true, Socks5Reply::kAddressTypeNotSupported);
  }
  size_t total = addr_off + addr_len + 2;
  if (b.size() < total) return {};
  if (rsv != 0) return Fail("non-zero reserved byte in SOCKS5 request", true);
  if (cmd != static_cast<uint8_t>(Socks5Command::kConnect)) {
    return Fail(cmd == 2   ? "SOCKS5 BIND is not supported"
                : cmd == 3 ? "SOCKS5 UDP ASSOCIATE is not supported"
                           : "unknown SOCKS5 command",
                true, Socks5Reply::kCommandNotSupported);
  }
  Socks5Request r;
  r.command = Socks5Command::kConnect;
  r.address_type = static_cast<Socks5AddressType>(atyp);
  std::string_view addr = b.substr(addr_off, addr_len);
  if (atyp == static_cast<uint8_t>(Socks5AddressType::kIpv4)) {
    r.address = IpAddress::V4(Byte(addr, 0), Byte(addr, 1), Byte(addr, 2), Byte(addr, 3));
  } else if (atyp == static_cast<uint8_t>(Socks5AddressType::kIpv6)) {
    std::array<uint8_t, 16> bytes;
    for (size_t k = 0; k < 16; ++k) bytes[k] = Byte(addr, k);
    r.address = IpAddress::V6(bytes);
  } else {
    if (addr_len == 0) return Fail("empty SOCKS5 domain", true);
    r.domain = std::string(addr);
  }
  r.port = static_cast<uint16_t>((Byte(b, total - 2) << 8) | Byte(b, total - 1));
  if (r.port == 0) return Fail("SOCKS5 request for port 0", true);
  *out = std::move(r);
  return Done(total);
}

std::string BuildSocks5Reply(Socks5Reply reply, const IpAddress& bound, uint16_t port) {
  std::string out;
  out += static_cast<char>(kSocks5Version);
  out += static_cast<char>(reply);
  out += '\0';
  if (bound.is_v4()) {
    out += static_cast<char>(Socks5AddressType::kIpv4);
    out.append(reinterpret_cast<const char*>(bound.bytes().data()), 4);
  } else {
    out += static_cast<char>(Socks5AddressType::kIpv6);
    out.append(reinterpret_cast<const char*>(bound.bytes().data()), 16);
  }
  out += static_cast<char>(port >> 8);
  out += static_cast<char>(port & 0xff);
  return out;
}

}  // namespace ward::net
