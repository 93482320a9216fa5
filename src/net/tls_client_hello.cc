#include "net/tls_client_hello.h"

#include <algorithm>
#include <bitset>
#include <memory>

#include "net/text_util.h"

namespace ward::net {

namespace {

constexpr uint8_t kHandshakeRecord = 0x16;
constexpr uint8_t kClientHelloType = 1;
constexpr size_t kMaxRecordPayload = 16 * 1024;  // TLSPlaintext limit
constexpr uint16_t kExtServerName = 0;
constexpr uint16_t kExtAlpn = 16;
constexpr uint16_t kExtEch = 0xfe0d;

ClientHelloParse Verdict(ClientHelloParse::Kind kind, std::string reason) {
  ClientHelloParse r;
  r.kind = kind;
  r.reason = std::move(reason);
  return r;
}

ClientHelloParse Malformed(std::string reason) {
  return Verdict(ClientHelloParse::Kind::kMalformed, std::move(reason));
}

// Bounds-checked big-endian reader.
class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  bool empty() const { return s_.empty(); }
  size_t size() const { return s_.size(); }
  bool U8(uint8_t* v) {
    if (s_.size() < 1) return false;
    *v = static_cast<uint8_t>(s_[0]);
    s_.remove_prefix(1);
    return true;
  }
  bool U16(uint16_t* v) {
    if (s_.size() < 2) return false;
    *v = static_cast<uint16_t>((static_cast<uint8_t>(s_[0]) << 8) | static_cast<uint8_t>(s_[1]));
    s_.remove_prefix(2);
    return true;
  }
  bool Bytes(size_t n, std::string_view* out) {
    if (s_.size() < n) return false;
    *out = s_.substr(0, n);
    s_.remove_prefix(n);
    return true;
  }
  // A vector with an 8- or 16-bit length prefix.
  bool Vec8(std::string_view* out) {
    uint8_t n;
    return U8(&n) && Bytes(n, out);
  }
  bool Vec16(std::string_view* out) {
    uint16_t n;
    return U16(&n) && Bytes(n, out);
  }

 private:
  std::string_view s_;
};

ClientHelloParse ParseSni(std::string_view data, ClientHello* hello) {
  Reader r(data);
  std::string_view list;
  if (!r.Vec16(&list) || !r.empty()) return Malformed("bad server_name extension");
  Reader l(list);
  uint8_t type;
  std::string_view name;
  if (!l.U8(&type) || !l.Vec16(&name)) return Malformed("bad server_name list");
  if (type != 0) return Malformed("server_name of a type other than host_name");
  if (!l.empty()) return Malformed("more than one server_name");
  if (name.empty()) return Malformed("empty server_name");
  auto host = ParseHost(name);
  if (!host.ok()) return Malformed("SNI: " + host.status().message());
  if (host->is_address()) return Malformed("SNI is an IP address literal");
  hello->sni = std::move(*host);
  return {};
}

ClientHelloParse ParseAlpn(std::string_view data, ClientHello* hello) {
  Reader r(data);
  std::string_view list;
  if (!r.Vec16(&list) || !r.empty() || list.empty()) return Malformed("bad ALPN extension");
  Reader l(list);
  while (!l.empty()) {
    std::string_view proto;
    if (!l.Vec8(&proto) || proto.empty()) return Malformed("bad ALPN protocol name");
    hello->alpn.emplace_back(proto);
  }
  return {};
}

ClientHelloParse ParseBody(std::string_view body) {
  ClientHelloParse out;
  ClientHello& hello = out.hello;
  Reader r(body);
  std::string_view random, session_id, suites, compression;
  if (!r.U16(&hello.legacy_version) || !r.Bytes(32, &random) || !r.Vec8(&session_id) ||
      session_id.size() > 32 || !r.Vec16(&suites) || suites.size() < 2 || suites.size() % 2 != 0 ||
      !r.Vec8(&compression) || compression.empty()) {
    return Malformed("bad ClientHello fields");
  }
  if (!r.empty()) {
    std::string_view extensions;
    if (!r.Vec16(&extensions) || !r.empty()) return Malformed("bad extensions length");
    auto seen = std::make_unique<std::bitset<65536>>();
    Reader e(extensions);
    while (!e.empty()) {
      uint16_t type;
      std::string_view data;
      if (!e.U16(&type) || !e.Vec16(&data)) return Malformed("truncated extension");
      if (seen->test(type)) return Malformed("duplicate extension " + std::to_string(type));
      seen->set(type);
      ClientHelloParse sub;
      if (type == kExtServerName) {
        sub = ParseSni(data, &hello);
      } else if (type == kExtAlpn) {
        sub = ParseAlpn(data, &hello);
      } else if (type == kExtEch) {
        hello.encrypted_client_hello = true;
      }
      if (sub.kind == ClientHelloParse::Kind::kMalformed) return sub;
    }
  }
  out.kind = ClientHelloParse::Kind::kHello;
  return out;
}

}  // namespace

ClientHelloParse ParseClientHello(std::string_view b) {
  std::string handshake;  // the reassembled handshake bytes
  size_t pos = 0;
  size_t records = 0;
  while (true) {
    if (pos == b.size()) return {};
    std::string_view header = b.substr(pos, 5);
    const bool first = pos == 0;
    if (static_cast<uint8_t>(header[0]) != kHandshakeRecord) {
      return first ? Verdict(ClientHelloParse::Kind::kNotTls, "not a TLS handshake record")
                   : Malformed("another record type before the ClientHello ended");
    }
    if (header.size() >= 2 && header[1] != 3) {
      return first ? Verdict(ClientHelloParse::Kind::kNotTls, "not a TLS record version")
                   : Malformed("bad record version");
    }
    if (header.size() >= 3 && static_cast<uint8_t>(header[2]) > 4) {
      return first ? Verdict(ClientHelloParse::Kind::kNotTls, "not a TLS record version")
                   : Malformed("bad record version");
    }
    if (header.size() < 5) return {};
    size_t len = (static_cast<size_t>(static_cast<uint8_t>(header[3])) << 8) |
                 static_cast<uint8_t>(header[4]);
    if (len == 0) return Malformed("empty handshake record");
    if (len > kMaxRecordPayload) return Malformed("record larger than 16 KiB");
    if (++records > kMaxClientHelloRecords)
      return Malformed("ClientHello split over too many records");
    size_t available = std::min(len, b.size() - pos - 5);
    handshake.append(b.substr(pos + 5, available));
    if (handshake.size() >= 4) {
      if (static_cast<uint8_t>(handshake[0]) != kClientHelloType) {
        return Malformed("first handshake message is not a ClientHello");
      }
      size_t msg_len = (static_cast<size_t>(static_cast<uint8_t>(handshake[1])) << 16) |
                       (static_cast<size_t>(static_cast<uint8_t>(handshake[2])) << 8) |
                       static_cast<uint8_t>(handshake[3]);
      if (msg_len + 4 > kMaxClientHelloMessage) return Malformed("ClientHello larger than 16 KiB");
      if (handshake.size() >= msg_len + 4) {
        return ParseBody(std::string_view(handshake).substr(4, msg_len));
      }
    }
    if (available < len) return {};
    pos += 5 + len;
  }
}

}  // namespace ward::net
