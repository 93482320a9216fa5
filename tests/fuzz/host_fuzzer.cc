// Host names, IP text, punycode and allow-list patterns. The first byte picks what the rest of
// the input is fed to; every mode checks idempotence or a round trip.
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "net/addr.h"
#include "net/egress_rules.h"
#include "net/idna.h"

using namespace ward::net;

namespace {

bool IsCanonicalNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

void Names(std::string_view in) {
  auto n = NormalizeHost(in);
  if (n.ok()) {
    FUZZ_CHECK(!n->empty() && n->size() <= kMaxHostNameLength);
    for (char c : *n) FUZZ_CHECK(IsCanonicalNameChar(c));
    auto again = NormalizeHost(*n);
    FUZZ_CHECK(again.ok() && *again == *n);
    auto unicode = HostToUnicode(*n);
    FUZZ_CHECK(unicode.ok());
    auto back = NormalizeHost(*unicode);
    FUZZ_CHECK(back.ok() && *back == *n);
  }
  auto h = ParseHost(in);
  if (h.ok()) {
    auto again = ParseHost(h->ToString());
    FUZZ_CHECK(again.ok() && *again == *h);
    auto uri = ParseHost(h->ToUriString());
    FUZZ_CHECK(uri.ok() && *uri == *h);
    if (h->is_address()) FUZZ_CHECK(h->address->Unmapped() == *h->address);
  }
}

void Addresses(std::string_view in) {
  auto a = IpAddress::Parse(in);
  if (a.ok()) {
    auto again = IpAddress::Parse(a->ToString());
    FUZZ_CHECK(again.ok() && *again == *a);
    (void)Classify(*a);
    if (a->is_v4()) FUZZ_CHECK(IpAddress::ParseLegacyV4(in) == *a);
  }
  if (auto l = IpAddress::ParseLegacyV4(in)) (void)Classify(*l);
  auto net = IpNet::Parse(in);
  if (net.ok()) {
    auto again = IpNet::Parse(net->ToString());
    FUZZ_CHECK(again.ok() && *again == *net);
    FUZZ_CHECK(net->Contains(net->address()));
  }
  if (in.size() >= 16) {
    std::array<uint8_t, 16> b;
    for (size_t i = 0; i < 16; ++i) b[i] = static_cast<uint8_t>(in[i]);
    IpAddress v6 = IpAddress::V6(b);
    (void)Classify(v6);
    auto again = IpAddress::Parse(v6.ToString());
    FUZZ_CHECK(again.ok() && *again == v6);
  }
}

void Punycode(std::string_view in) {
  std::u32string cps;
  for (size_t i = 0; i + 2 < in.size(); i += 3) {
    char32_t c = (static_cast<uint8_t>(in[i]) << 16 | static_cast<uint8_t>(in[i + 1]) << 8 |
                  static_cast<uint8_t>(in[i + 2])) %
                 0x110000;
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    cps += c;
  }
  auto enc = PunycodeEncode(cps);
  if (enc.ok()) {
    auto dec = PunycodeDecode(*enc);
    FUZZ_CHECK(dec.ok() && *dec == cps);
  }
  (void)PunycodeDecode(in);
}

void Patterns(std::string_view in) {
  ward::policy::NetworkPolicy policy;
  size_t start = 0;
  int line = 1;
  while (start <= in.size() && policy.allow.size() + policy.deny.size() < 16) {
    size_t end = in.find('\n', start);
    if (end == std::string_view::npos) end = in.size();
    ward::policy::HostRule r{std::string(in.substr(start, end - start)),
                             ward::policy::Origin{"fuzz", line++, "network.allow"}};
    (line % 3 == 0 ? policy.deny : policy.allow).push_back(std::move(r));
    start = end + 1;
  }
  auto rules = EgressRules::Compile(policy);
  if (!rules.ok()) {
    FUZZ_CHECK(rules.status().message().find("fuzz:") != std::string::npos);
    return;
  }
  for (const auto& r : rules->allow_rules()) {
    // Each name rule allows its own name (unless a deny rule wins).
    if (r.kind == HostRule::Kind::kExact) {
      auto d = rules->CheckName(r.name, r.ports == HostRule::Ports::kOne ? r.port : 443);
      FUZZ_CHECK(!d.reason.empty());
    }
  }
  for (const auto& r : rules->deny_rules()) {
    if (r.kind == HostRule::Kind::kExact) {
      FUZZ_CHECK(
          !rules->CheckName(r.name, r.ports == HostRule::Ports::kOne ? r.port : 443).allowed);
    }
    if (r.kind == HostRule::Kind::kWildcard) {
      FUZZ_CHECK(
          !rules->CheckName("x." + r.name, r.ports == HostRule::Ports::kOne ? r.port : 80).allowed);
    }
  }
  (void)rules->CheckName(in, 443);
  (void)rules->CheckAddress(IpAddress::V4(static_cast<uint32_t>(in.size() * 2654435761u)), 443);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in = ward::fuzz::AsText(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      Names(in);
      break;
    case 1:
      Addresses(in);
      break;
    case 2:
      Punycode(in);
      break;
    case 3:
      Patterns(in);
      break;
  }
  return 0;
}
