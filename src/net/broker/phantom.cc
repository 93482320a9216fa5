#include "net/broker/phantom.h"

#include <openssl/rand.h>

#include <algorithm>

namespace ward::net {

namespace {

// Vendor prefixes that tools (and the vendors' SDKs) check; longest first where they overlap.
constexpr std::string_view kKnownPrefixes[] = {
    "sk-ant-admin01-",
    "sk-ant-api03-",
    "sk-ant-oat01-",
    "sk-ant-",
    "sk-proj-",
    "sk-svcacct-",
    "sk-admin-",
    "sk-or-v1-",
    "sk-",
    "github_pat_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxe-",
    "xapp-",
    "hf_",
    "npm_",
    "pypi-",
    "gsk_",
    "AKIA",
    "ASIA",
    "AIza",
    "dop_v1_",
    "lin_api_",
    "shpat_",
    "r8_",
    "pplx-",
};

constexpr std::string_view kLower = "abcdefghijklmnopqrstuvwxyz";
constexpr std::string_view kUpper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
constexpr std::string_view kDigits = "0123456789";
constexpr size_t kGenericLength = 32;  // base62: 190 bits
constexpr size_t kMaxRandomLength = 4096;
constexpr size_t kShortSecret = 8;

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

PhantomShape Generic() {
  PhantomShape s;
  s.prefix = std::string(kGenericPhantomPrefix);
  s.alphabet = std::string(kLower) + std::string(kUpper) + std::string(kDigits);
  s.length = kGenericLength;
  s.generic = true;
  return s;
}

// The fewest characters drawn uniformly from n that carry kMinPhantomBits: the least length
// with n^length >= 2^128, in integers (no log2, which lives in libm). An alphabet of fewer than
// two counts as one bit per character.
size_t MinRandomLength(size_t n) {
  static_assert(kMinPhantomBits == 128, "the bound below is 2^128");
  if (n < 2) return kMinPhantomBits;
  const unsigned __int128 max = ~static_cast<unsigned __int128>(0);  // 2^128 - 1
  unsigned __int128 v = 1;
  size_t length = 0;
  while (true) {
    ++length;
    if (v > max / n) return length;  // v * n >= 2^128
    v *= n;
  }
}

size_t AlnumCount(std::string_view alphabet) {
  return static_cast<size_t>(std::count_if(alphabet.begin(), alphabet.end(), IsAlnum));
}

// Uniform index below n from random bytes (rejection sampling, n <= 256).
Result<size_t> RandomIndex(size_t n) {
  const unsigned limit = 256 - (256 % n);
  while (true) {
    unsigned char b[32];
    if (RAND_bytes(b, sizeof b) != 1) {
      return Error(Code::kInternal, "the random number generator failed");
    }
    for (unsigned char v : b) {
      if (v < limit) return static_cast<size_t>(v % n);
    }
  }
}

}  // namespace

PhantomShape DescribePhantomShape(std::string_view real) {
  if (real.size() < kShortSecret) {
    // Too short to have a shape; random text could even contain it. Leave its first character
    // out of the alphabet (and use no prefix) so that the phantom never does.
    PhantomShape s = Generic();
    s.prefix.clear();
    if (!real.empty()) std::erase(s.alphabet, real[0]);
    return s;
  }
  for (char c : real) {
    // Whitespace, controls and non-ASCII: not a token format worth imitating.
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return Generic();
    }
  }
  PhantomShape s;
  for (std::string_view p : kKnownPrefixes) {
    if (real.size() > p.size() && real.starts_with(p)) {
      s.prefix = std::string(p);
      break;
    }
  }
  std::string_view rest = real.substr(s.prefix.size());
  size_t pad = 0;
  while (pad < rest.size() && rest[rest.size() - 1 - pad] == '=') ++pad;
  s.suffix = std::string(rest.substr(rest.size() - pad));
  rest.remove_suffix(pad);
  bool lower = false, upper = false, digit = false, dash = false, underscore = false;
  bool hex_lower = true, hex_upper = true;
  for (char c : rest) {
    if (c >= 'a' && c <= 'z') {
      lower = true;
      if (c > 'f') hex_lower = false;
      hex_upper = false;
    } else if (c >= 'A' && c <= 'Z') {
      upper = true;
      if (c > 'F') hex_upper = false;
      hex_lower = false;
    } else if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c == '-') {
      dash = true;
    } else if (c == '_') {
      underscore = true;
    }
    // Other punctuation ('.', '+', '/', ...) is left out of the alphabet: it would only
    // make the phantom harder to carry in URLs and headers.
  }
  if (!lower && !upper && !digit) return Generic();
  if (digit && (lower || upper) && rest.size() >= 16 && (hex_lower || hex_upper) &&
      !(lower && upper)) {
    // Hexadecimal: keep it hexadecimal.
    s.alphabet = std::string(kDigits) + (lower ? "abcdef" : "ABCDEF");
  } else {
    if (lower) s.alphabet += kLower;
    if (upper) s.alphabet += kUpper;
    if (digit) s.alphabet += kDigits;
  }
  if (dash) s.alphabet += '-';
  if (underscore) s.alphabet += '_';
  s.length = std::min(rest.size(), kMaxRandomLength);
  // At least kMinPhantomBits, counting only the alphanumeric characters (the ends are kept
  // alphanumeric, and it keeps the estimate conservative).
  s.length = std::max(s.length, MinRandomLength(AlnumCount(s.alphabet)));
  return s;
}

Result<std::string> MakePhantom(std::string_view real) {
  PhantomShape s = DescribePhantomShape(real);
  std::string alnum;
  for (char c : s.alphabet) {
    if (IsAlnum(c)) alnum += c;
  }
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::string out = s.prefix;
    out.reserve(s.prefix.size() + s.length + s.suffix.size());
    for (size_t i = 0; i < s.length; ++i) {
      // A leading '-' would read as an option, a trailing '-'/'_' looks truncated.
      const std::string& from = (i == 0 || i + 1 == s.length) ? alnum : s.alphabet;
      WARD_ASSIGN_OR_RETURN(size_t k, RandomIndex(from.size()));
      out += from[k];
    }
    out += s.suffix;
    if (out != real && out.find(real) == std::string::npos &&
        std::string_view(real).find(out) == std::string_view::npos) {
      return out;
    }
  }
  return Error(Code::kInternal, "could not make a phantom value different from the secret");
}

std::string_view PhantomRandomPart(std::string_view phantom, const PhantomShape& shape) {
  if (phantom.size() < shape.prefix.size() + shape.suffix.size()) return phantom;
  phantom.remove_prefix(shape.prefix.size());
  phantom.remove_suffix(shape.suffix.size());
  return phantom;
}

}  // namespace ward::net
