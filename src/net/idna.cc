#include "net/idna.h"

#include <cstdio>
#include <variant>
#include <vector>

#include "net/text_util.h"

namespace ward::net {

namespace {

// ---- RFC 3492 parameters ----
constexpr uint32_t kBase = 36;
constexpr uint32_t kTMin = 1;
constexpr uint32_t kTMax = 26;
constexpr uint32_t kSkew = 38;
constexpr uint32_t kDamp = 700;
constexpr uint32_t kInitialBias = 72;
constexpr uint32_t kInitialN = 128;
constexpr uint64_t kMaxInt = 0xffffffffULL;
constexpr size_t kMaxPunycodeInput = 1024;

uint32_t Adapt(uint64_t delta, uint64_t num_points, bool first_time) {
  delta = first_time ? delta / kDamp : delta / 2;
  delta += delta / num_points;
  uint32_t k = 0;
  while (delta > ((kBase - kTMin) * kTMax) / 2) {
    delta /= kBase - kTMin;
    k += kBase;
  }
  return static_cast<uint32_t>(k + (kBase - kTMin + 1) * delta / (delta + kSkew));
}

char EncodeDigit(uint32_t d) { return static_cast<char>(d < 26 ? 'a' + d : '0' + (d - 26)); }

int DecodeDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0' + 26;
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return c - 'A';
  return -1;
}

uint32_t Threshold(uint32_t k, uint32_t bias) {
  if (k <= bias) return kTMin;
  if (k >= bias + kTMax) return kTMax;
  return k - bias;
}

bool IsScalar(char32_t c) { return c < 0x110000 && !(c >= 0xD800 && c <= 0xDFFF); }

// ---- UTF-8 ----
std::optional<std::u32string> DecodeUtf8(std::string_view s) {
  std::u32string out;
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out += static_cast<char32_t>(c);
      ++i;
      continue;
    }
    int len;
    char32_t cp;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1f;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0f;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // beyond U+10FFFF
    } else {
      return std::nullopt;
    }
    if (i + static_cast<size_t>(len) > s.size()) return std::nullopt;
    for (int k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      unsigned char min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
      if (cc < min || cc > max) return std::nullopt;
      cp = (cp << 6) | (cc & 0x3f);
    }
    out += cp;
    i += static_cast<size_t>(len);
  }
  return out;
}

void AppendUtf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

// ---- Mapping and folding (the small, documented subset) ----

// Simple lowercase for the scripts we cover; identity elsewhere.
char32_t Fold(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x178) return 0xFF;
    if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) {
      return (c % 2 == 0) ? c + 1 : c;
    }
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) {
      return (c % 2 == 1) ? c + 1 : c;
    }
    return c;
  }
  // Greek
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if ((c >= 0x391 && c <= 0x3A1) || (c >= 0x3A3 && c <= 0x3AB)) return c + 32;
  // Cyrillic
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F)) {
    return (c % 2 == 0) ? c + 1 : c;
  }
  if (c == 0x4C0) return 0x4CF;
  if (c >= 0x4C1 && c <= 0x4CE) return (c % 2 == 1) ? c + 1 : c;
  // Armenian
  if (c >= 0x531 && c <= 0x556) return c + 48;
  // Georgian (Asomtavruli → Nuskhuri)
  if ((c >= 0x10A0 && c <= 0x10C5) || c == 0x10C7 || c == 0x10CD) return c + 7264;
  // Latin Extended Additional
  if ((c >= 0x1E00 && c <= 0x1E95) || (c >= 0x1EA0 && c <= 0x1EFF)) {
    return (c % 2 == 0) ? c + 1 : c;
  }
  if (c == 0x1E9E) return 0xDF;  // capital sharp s
  return c;
}

// Characters replaced before validation: fullwidth ASCII and the ideographic full stops.
char32_t MapWidth(char32_t c) {
  if (c == 0x3002 || c == 0xFF0E || c == 0xFF61) return '.';
  if (c >= 0xFF01 && c <= 0xFF5E) return c - 0xFF01 + 0x21;
  return c;
}

// Non-ASCII code points we refuse: controls, spaces, punctuation and symbol blocks, the
// compatibility forms UTS #46 would map onto other letters, private use, noncharacters.
bool IsDisallowedNonAscii(char32_t c) {
  if (c < 0xC0) return true;  // C1 controls, NBSP, soft hyphen, Latin-1 symbols
  if (c == 0xD7 || c == 0xF7) return true;
  if (c == 0x34F) return true;                  // combining grapheme joiner
  if (c == 0x61C || c == 0x6DD) return true;    // Arabic letter mark, end of ayah
  if (c == 0x1680 || c == 0x180E) return true;  // ogham space, Mongolian vowel separator
  if (c >= 0x180B && c <= 0x180F) return true;  // Mongolian variation selectors
  if (c >= 0x1D00 && c <= 0x1DBF) return true;  // phonetic extensions (many map to letters)
  if (c >= 0x2000 && c <= 0x2BFF) return true;  // punctuation, symbols, letterlike, enclosed
  if (c >= 0x2E00 && c <= 0x2E7F) return true;  // supplemental punctuation
  if (c >= 0x2F00 && c <= 0x2FFF) return true;  // Kangxi radicals, ideographic description
  if (c >= 0x3000 && c <= 0x303F) return !(c >= 0x3005 && c <= 0x3007);
  if (c >= 0x3200 && c <= 0x33FF) return true;    // enclosed CJK, CJK compatibility
  if (c >= 0xD800 && c <= 0xF8FF) return true;    // surrogates, private use
  if (c >= 0xF900 && c <= 0xFAFF) return true;    // CJK compatibility ideographs
  if (c >= 0xFB00 && c <= 0xFFFF) return true;    // presentation forms, specials, halfwidth
  if (c >= 0x1D000 && c <= 0x1D24F) return true;  // musical symbols
  if (c >= 0x1D400 && c <= 0x1D7FF) return true;  // mathematical alphanumerics
  if (c >= 0x1F000 && c <= 0x1FFFF) return true;  // emoji, enclosed supplements
  if (c >= 0xE0000) return true;                  // tags, variation selectors, private use
  if ((c & 0xFFFE) == 0xFFFE) return true;        // noncharacters in every plane
  return false;
}

bool IsCombiningMark(char32_t c) {
  return (c >= 0x300 && c <= 0x36F) || (c >= 0x483 && c <= 0x489) || (c >= 0x1AB0 && c <= 0x1AFF) ||
         (c >= 0x1DC0 && c <= 0x1DFF);
}

bool IsLdh(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

std::string Describe(char32_t c) {
  if (c >= 0x21 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
  return buf;
}

Status LabelError(std::string_view host, const std::string& what) {
  return InvalidArgument("invalid host name " + QuoteUntrusted(host) + ": " + what);
}

// Rules for a label with non-ASCII characters (already mapped and folded), whether typed in
// Unicode or decoded from an A-label, so that both spellings of a label agree.
Status CheckULabel(std::string_view host, std::u32string_view label) {
  if (label.empty()) return LabelError(host, "empty label");
  if (label.front() == '-' || label.back() == '-') {
    return LabelError(host, "label starts or ends with '-'");
  }
  if (IsCombiningMark(label.front())) return LabelError(host, "label starts with a combining mark");
  if (label.size() >= 4 && label.substr(0, 4) == U"xn--") {
    return LabelError(host, "non-ASCII label with the xn-- prefix");
  }
  for (char32_t c : label) {
    if (c < 0x80) {
      if (!IsLdh(c))
        return LabelError(host, "invalid character " + Describe(c) + " in an IDN label");
    } else if (IsDisallowedNonAscii(c)) {
      return LabelError(host, "invalid character " + Describe(c));
    }
  }
  return Ok();
}

// An "xn--" label must be exactly what encoding its decoded form gives, so that every host has
// one spelling.
Status CheckALabel(std::string_view host, std::string_view label) {
  std::string_view rest = label.substr(4);
  if (rest.empty()) return LabelError(host, "empty A-label");
  auto decoded = PunycodeDecode(rest);
  if (!decoded.ok()) return LabelError(host, "bad punycode: " + decoded.status().message());
  bool non_ascii = false;
  for (char32_t c : *decoded) {
    if (c < 0x80) continue;
    non_ascii = true;
    if (Fold(c) != c) return LabelError(host, "A-label decodes to uppercase " + Describe(c));
  }
  if (!non_ascii) return LabelError(host, "A-label without non-ASCII characters");
  WARD_TRY(CheckULabel(host, *decoded));
  auto reencoded = PunycodeEncode(*decoded);
  if (!reencoded.ok() || *reencoded != rest) return LabelError(host, "non-canonical A-label");
  return Ok();
}

// Either a normalised name or the IPv4 address a disguised literal stands for.
using NameOrAddress = std::variant<std::string, IpAddress>;

bool IsNumericLabel(std::string_view l) {
  if (l.empty()) return false;
  if (l.size() >= 2 && l[0] == '0' && l[1] == 'x') {
    for (char c : l.substr(2)) {
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
  }
  for (char c : l) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

Result<NameOrAddress> Normalize(std::string_view host) {
  if (host.empty()) return InvalidArgument("empty host name");
  if (host.size() > kMaxHostInputBytes) return InvalidArgument("host name too long");
  auto cps = DecodeUtf8(host);
  if (!cps) return LabelError(host, "not valid UTF-8");
  for (char32_t& c : *cps) c = Fold(MapWidth(c));
  if (!cps->empty() && cps->back() == '.') cps->pop_back();  // one trailing dot: the root
  if (cps->empty()) return LabelError(host, "empty");

  std::string out;
  size_t start = 0;
  while (start <= cps->size()) {
    size_t end = start;
    while (end < cps->size() && (*cps)[end] != '.') ++end;
    std::u32string_view label(cps->data() + start, end - start);
    if (label.empty()) return LabelError(host, "empty label");
    if (label.size() > 63) return LabelError(host, "label longer than 63 octets");
    if (label.front() == '-' || label.back() == '-') {
      return LabelError(host, "label starts or ends with '-'");
    }
    bool ascii = true;
    for (char32_t c : label) {
      if (c < 0x80) {
        if (!IsLdh(c) && c != '_') return LabelError(host, "invalid character " + Describe(c));
      } else {
        ascii = false;
        if (IsDisallowedNonAscii(c)) return LabelError(host, "invalid character " + Describe(c));
      }
    }
    if (!out.empty()) out += '.';
    if (ascii) {
      std::string l(label.begin(), label.end());
      if (l.size() >= 4 && l.compare(0, 4, "xn--") == 0) WARD_TRY(CheckALabel(host, l));
      out += l;
    } else {
      WARD_TRY(CheckULabel(host, label));
      auto encoded = PunycodeEncode(label);
      if (!encoded.ok()) return LabelError(host, encoded.status().message());
      if (encoded->size() + 4 > 63) return LabelError(host, "label longer than 63 octets");
      out += "xn--";
      out += *encoded;
    }
    if (out.size() > kMaxHostNameLength) return LabelError(host, "longer than 253 octets");
    start = end + 1;
  }

  // Resolvers read these as IPv4 (inet_aton), so they must be matched as addresses.
  if (auto v4 = IpAddress::ParseLegacyV4(out)) return NameOrAddress(*v4);
  size_t last_dot = out.rfind('.');
  std::string_view last = last_dot == std::string::npos
                              ? std::string_view(out)
                              : std::string_view(out).substr(last_dot + 1);
  if (IsNumericLabel(last)) {
    return LabelError(host, "ends in a number but is not an IPv4 address");
  }
  return NameOrAddress(std::move(out));
}

// Appends q as a variable-length integer in the digits of the current bias (RFC 3492 3.3).
void AppendDelta(std::string& out, uint64_t q, uint32_t bias) {
  for (uint32_t k = kBase;; k += kBase) {
    uint32_t t = Threshold(k, bias);
    if (q < t) break;
    out += EncodeDigit(static_cast<uint32_t>(t + (q - t) % (kBase - t)));
    q = (q - t) / (kBase - t);
  }
  out += EncodeDigit(static_cast<uint32_t>(q));
}

}  // namespace

Result<std::string> PunycodeEncode(std::u32string_view input) {
  if (input.size() > kMaxPunycodeInput) return InvalidArgument("punycode input too long");
  std::string out;
  for (char32_t c : input) {
    if (!IsScalar(c)) return InvalidArgument("invalid code point");
    if (c < 0x80) out += static_cast<char>(c);
  }
  uint64_t h = out.size();
  const uint64_t b = h;
  if (b > 0) out += '-';
  uint64_t n = kInitialN, delta = 0;
  uint32_t bias = kInitialBias;
  while (h < input.size()) {
    uint64_t m = kMaxInt;
    for (char32_t c : input) {
      if (c >= n && c < m) m = c;
    }
    if ((m - n) > (kMaxInt - delta) / (h + 1)) return InvalidArgument("punycode overflow");
    delta += (m - n) * (h + 1);
    n = m;
    for (char32_t c : input) {
      if (c < n) {
        if (++delta > kMaxInt) return InvalidArgument("punycode overflow");
      }
      if (c == n) {
        AppendDelta(out, delta, bias);
        bias = Adapt(delta, h + 1, h == b);
        delta = 0;
        ++h;
      }
    }
    ++delta;
    ++n;
  }
  // Symmetric with PunycodeDecode's bound: what we encode can always be decoded.
  if (out.size() > kMaxPunycodeInput) return InvalidArgument("punycode output too long");
  return out;
}

Result<std::u32string> PunycodeDecode(std::string_view input) {
  if (input.size() > kMaxPunycodeInput) return InvalidArgument("punycode input too long");
  std::u32string out;
  size_t b = input.rfind('-');
  size_t in = 0;
  if (b != std::string_view::npos && b > 0) {
    for (size_t j = 0; j < b; ++j) {
      unsigned char c = static_cast<unsigned char>(input[j]);
      if (c >= 0x80) return InvalidArgument("non-basic code point before the delimiter");
      out += static_cast<char32_t>(c);
    }
    in = b + 1;
  }
  uint64_t n = kInitialN, i = 0;
  uint32_t bias = kInitialBias;
  while (in < input.size()) {
    uint64_t old_i = i, w = 1;
    for (uint32_t k = kBase;; k += kBase) {
      if (in >= input.size()) return InvalidArgument("truncated punycode");
      int digit = DecodeDigit(input[in++]);
      if (digit < 0) return InvalidArgument("invalid punycode digit");
      if (static_cast<uint64_t>(digit) > (kMaxInt - i) / w) {
        return InvalidArgument("punycode overflow");
      }
      i += static_cast<uint64_t>(digit) * w;
      uint32_t t = Threshold(k, bias);
      if (static_cast<uint32_t>(digit) < t) break;
      if (w > kMaxInt / (kBase - t)) return InvalidArgument("punycode overflow");
      w *= kBase - t;
    }
    uint64_t len = out.size() + 1;
    bias = Adapt(i - old_i, len, old_i == 0);
    if (i / len > kMaxInt - n) return InvalidArgument("punycode overflow");
    n += i / len;
    i %= len;
    if (!IsScalar(static_cast<char32_t>(n)) || n > 0x10FFFF) {
      return InvalidArgument("punycode decodes outside Unicode");
    }
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(i), static_cast<char32_t>(n));
    ++i;
  }
  return out;
}

std::string Host::ToString() const { return address ? address->ToString() : name; }

std::string Host::ToUriString() const { return address ? address->ToUriString() : name; }

Result<std::string> NormalizeHost(std::string_view host) {
  WARD_ASSIGN_OR_RETURN(NameOrAddress r, Normalize(host));
  if (auto* addr = std::get_if<IpAddress>(&r)) {
    return InvalidArgument("host " + QuoteUntrusted(host) + " is the IP address " +
                           addr->ToString() + ", not a name");
  }
  return std::get<std::string>(std::move(r));
}

Result<Host> ParseHost(std::string_view host) {
  if (host.size() > kMaxHostInputBytes) return InvalidArgument("host name too long");
  if (!host.empty() && (host.front() == '[' || host.find(':') != std::string_view::npos)) {
    auto addr = IpAddress::Parse(host);
    if (!addr.ok()) return InvalidArgument("invalid host " + QuoteUntrusted(host));
    return Host{"", addr->Unmapped()};
  }
  WARD_ASSIGN_OR_RETURN(NameOrAddress r, Normalize(host));
  if (auto* addr = std::get_if<IpAddress>(&r)) return Host{"", *addr};
  return Host{std::get<std::string>(std::move(r)), std::nullopt};
}

Result<std::string> HostToUnicode(std::string_view normalized) {
  if (normalized.size() > kMaxHostInputBytes) return InvalidArgument("host name too long");
  std::string out;
  size_t start = 0;
  while (start <= normalized.size()) {
    size_t end = normalized.find('.', start);
    if (end == std::string_view::npos) end = normalized.size();
    std::string_view label = normalized.substr(start, end - start);
    if (!out.empty() || start > 0) out += '.';
    if (label.size() > 4 && label.substr(0, 4) == "xn--") {
      WARD_ASSIGN_OR_RETURN(std::u32string u, PunycodeDecode(label.substr(4)));
      for (char32_t c : u) AppendUtf8(out, c);
    } else {
      out += label;
    }
    start = end + 1;
  }
  return out;
}

}  // namespace ward::net
