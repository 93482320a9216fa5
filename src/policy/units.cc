// ParseSize, ParseDurationMs and CheckBareSize: strict, overflow-checked, and exception-free,
// since they parse untrusted profile and command-line text.
#include "policy/units.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ward::policy {
namespace {

constexpr uint64_t kMax = UINT64_MAX;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// A decimal number "123" or "1.25" at the start of `s`: integer part and fraction scaled as
// numerator / 10^digits. At most 18 fraction digits are kept (more precision is meaningless).
struct Number {
  uint64_t whole = 0;
  uint64_t frac_num = 0;
  uint64_t frac_den = 1;
  bool has_fraction = false;
};

// Returns the number of characters consumed, 0 when there is no number; sets *overflow.
size_t ReadNumber(std::string_view s, Number* n, bool* overflow) {
  size_t i = 0;
  *overflow = false;
  while (i < s.size() && IsDigit(s[i])) {
    if (__builtin_mul_overflow(n->whole, 10u, &n->whole) ||
        __builtin_add_overflow(n->whole, static_cast<uint64_t>(s[i] - '0'), &n->whole)) {
      *overflow = true;
    }
    ++i;
  }
  if (i == 0) return 0;
  if (i < s.size() && s[i] == '.') {
    size_t j = i + 1;
    int kept = 0;
    while (j < s.size() && IsDigit(s[j])) {
      if (kept < 18) {
        n->frac_num = n->frac_num * 10 + static_cast<uint64_t>(s[j] - '0');
        n->frac_den *= 10;
        ++kept;
      }
      ++j;
    }
    if (j == i + 1) return 0;  // "1." is not a number
    n->has_fraction = true;
    i = j;
  }
  return i;
}

// n * mult, rounding the fraction down; false on overflow.
bool Scale(const Number& n, uint64_t mult, uint64_t* out) {
  uint64_t whole;
  if (__builtin_mul_overflow(n.whole, mult, &whole)) return false;
  unsigned __int128 frac = static_cast<unsigned __int128>(n.frac_num) * mult / n.frac_den;
  if (frac > kMax - whole) return false;
  *out = whole + static_cast<uint64_t>(frac);
  return true;
}

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string Quote(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 64)) out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  if (s.size() > 64) out += "...";
  return out + "'";
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text) {
  const std::string hint =
      ": expected a number of bytes with an optional unit k, M, G or T "
      "(binary multiples), e.g. 512M or 1.5G";
  if (text.empty()) return InvalidArgument("empty size" + hint);
  if (text[0] == '-') return InvalidArgument("negative size " + Quote(text));
  Number n;
  bool overflow = false;
  size_t used = ReadNumber(text, &n, &overflow);
  if (used == 0) return InvalidArgument("invalid size " + Quote(text) + hint);
  if (overflow) return InvalidArgument("size " + Quote(text) + " is too large");
  std::string_view unit = text.substr(used);
  uint64_t mult = 1;
  if (!unit.empty()) {
    switch (Lower(unit[0])) {
      case 'k':
        mult = 1ull << 10;
        break;
      case 'm':
        mult = 1ull << 20;
        break;
      case 'g':
        mult = 1ull << 30;
        break;
      case 't':
        mult = 1ull << 40;
        break;
      case 'b':
        mult = 1;
        break;
      default:
        return InvalidArgument("invalid size " + Quote(text) + hint);
    }
    std::string_view rest = unit.substr(1);
    if (Lower(unit[0]) == 'b') {
      if (!rest.empty()) return InvalidArgument("invalid size " + Quote(text) + hint);
    } else if (!(rest.empty() || rest == "B" || rest == "b" || rest == "iB" || rest == "ib")) {
      return InvalidArgument("invalid size " + Quote(text) + hint);
    }
  }
  if (n.has_fraction && mult == 1) {
    return InvalidArgument("size " + Quote(text) + " is a fraction of a byte");
  }
  uint64_t out;
  if (!Scale(n, mult, &out)) return InvalidArgument("size " + Quote(text) + " is too large");
  return out;
}

Result<uint64_t> ParseDurationMs(std::string_view text) {
  const std::string hint =
      ": expected e.g. 500ms, 30s, 10m, 1h, 1h30m or 2d (a bare number means seconds)";
  if (text.empty()) return InvalidArgument("empty duration" + hint);
  if (text[0] == '-') return InvalidArgument("negative duration " + Quote(text));
  uint64_t total = 0;
  size_t i = 0;
  bool first = true;
  while (i < text.size()) {
    Number n;
    bool overflow = false;
    size_t used = ReadNumber(text.substr(i), &n, &overflow);
    if (used == 0) return InvalidArgument("invalid duration " + Quote(text) + hint);
    if (overflow) return InvalidArgument("duration " + Quote(text) + " is too long");
    i += used;
    std::string_view rest = text.substr(i);
    uint64_t mult;
    if (rest.empty()) {
      if (!first) return InvalidArgument("invalid duration " + Quote(text) + ": missing unit");
      mult = 1000;  // bare number: seconds
    } else if (rest.substr(0, 2) == "ms") {
      mult = 1;
      i += 2;
    } else if (rest[0] == 's') {
      mult = 1000;
      i += 1;
    } else if (rest[0] == 'm') {
      mult = 60 * 1000;
      i += 1;
    } else if (rest[0] == 'h') {
      mult = 3600 * 1000;
      i += 1;
    } else if (rest[0] == 'd') {
      mult = 24ull * 3600 * 1000;
      i += 1;
    } else {
      return InvalidArgument("invalid duration " + Quote(text) + hint);
    }
    uint64_t part;
    if (!Scale(n, mult, &part) || part > kMax - total) {
      return InvalidArgument("duration " + Quote(text) + " is too long");
    }
    total += part;
    first = false;
  }
  return total;
}

Status CheckBareSize(std::string_view written, uint64_t bytes) {
  if (bytes >= kSmallestBareSize || written.empty()) return Ok();
  for (char c : written) {
    if (!IsDigit(c)) return Ok();  // it has a unit (or a fraction of one): the figure is meant
  }
  std::string n(written.substr(0, 20));
  return InvalidArgument(n + " without a unit means " + n +
                         " bytes, too little to be meant; write " + n + "M for MiB or " + n +
                         "G for GiB (or " + n + "B if you do mean bytes)");
}

}  // namespace ward::policy
