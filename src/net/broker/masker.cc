#include "net/broker/masker.h"

#include <algorithm>
#include <set>

namespace ward::net {

namespace {

// Derived forms shorter than this would match ordinary text by chance.
constexpr size_t kMinDerivedForm = 8;

constexpr const char* kAlphabets[2] = {
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
};

int Base64Value(int alphabet, char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == kAlphabets[alphabet][62]) return 62;
  if (c == kAlphabets[alphabet][63]) return 63;
  return -1;
}

bool IsBase64Char(char c) { return Base64Value(0, c) >= 0 || Base64Value(1, c) >= 0; }

// Replaces the bits of c under `mask` by `bits`, in c's own alphabet. When c does not show
// which alphabet its blob uses and the form cannot tell either (its text is the same in both),
// `hint` (a character nearby, or 0) may; else the standard one.
void SetBase64Bits(char& c, int alphabet, bool either, char hint, int mask, int bits) {
  if (c == '-' || c == '_' || (either && (hint == '-' || hint == '_'))) alphabet = 1;
  if (c == '+' || c == '/' || (either && (hint == '+' || hint == '/'))) alphabet = 0;
  int v = Base64Value(alphabet, c);
  if (v >= 0) c = kAlphabets[alphabet][(v & ~mask) | bits];
}

// The part of base64 that a secret starting `align` bytes into a 3-byte group determines, and
// its bits in the characters on either side.
struct Base64Part {
  std::string stable;
  uint8_t lead_bits = 0, lead_value = 0;
  uint8_t trail_bits = 0, trail_value = 0;
};

Base64Part Base64At(std::string_view s, size_t align, int alphabet) {
  // Neighbours of zero bits: the characters at the edges then hold the secret's bits only.
  std::string blob(align, '\0');
  blob.append(s);
  blob.append((3 - blob.size() % 3) % 3, '\0');
  const std::string enc = Base64EncodeWith(blob, alphabet, /*pad=*/false);
  const size_t begin_bit = 8 * align, end_bit = 8 * (align + s.size());
  const size_t first = (begin_bit + 5) / 6, end = end_bit / 6;
  Base64Part p;
  if (end <= first) return p;
  p.stable = enc.substr(first, end - first);
  if (begin_bit % 6 != 0) {
    p.lead_bits = static_cast<uint8_t>(6 * first - begin_bit);
    p.lead_value = static_cast<uint8_t>(Base64Value(alphabet, enc[first - 1]));
  }
  if (end_bit % 6 != 0) {
    p.trail_bits = static_cast<uint8_t>(end_bit - 6 * end);
    p.trail_value = static_cast<uint8_t>(Base64Value(alphabet, enc[end]));
  }
  return p;
}

std::string PercentEncode(std::string_view s, bool upper, bool (*keep)(char)) {
  const char* hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  for (char c : s) {
    if (keep != nullptr && keep(c)) {
      out += c;
    } else {
      out += '%';
      out += hex[static_cast<uint8_t>(c) >> 4];
      out += hex[static_cast<uint8_t>(c) & 15];
    }
  }
  return out;
}

bool IsAlnum(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
// RFC 3986 unreserved: what encodeURIComponent-style encoders leave alone.
bool IsUnreserved(char c) { return IsAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~'; }
// ...and what path encoders (Python's quote) leave alone as well.
bool IsPathSafe(char c) { return IsUnreserved(c) || c == '/'; }

std::string UnicodeEscape(char c, bool upper) {
  const char* hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out = "\\u00";
  out += hex[static_cast<uint8_t>(c) >> 4];
  out += hex[static_cast<uint8_t>(c) & 15];
  return out;
}

// JSON string escaping as serializers do it: quote and backslash always; then either '/' as
// "\/" (PHP and others), or the HTML-sensitive characters as \u escapes (Go, and "HTML-safe"
// modes elsewhere); or every character as a \u escape.
enum class JsonStyle { kSlash, kHtmlSafe, kAllLower, kAllUpper };
std::string JsonEscape(std::string_view s, JsonStyle style) {
  std::string out;
  for (char c : s) {
    if (style == JsonStyle::kAllLower || style == JsonStyle::kAllUpper) {
      out += UnicodeEscape(c, style == JsonStyle::kAllUpper);
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '/' && style == JsonStyle::kSlash) {
      out += "\\/";
    } else if ((c == '<' || c == '>' || c == '&' || c == '\'') && style == JsonStyle::kHtmlSafe) {
      out += UnicodeEscape(c, false);
    } else {
      out += c;
    }
  }
  return out;
}

// The standard base64 form with this text also matches its URL-safe spelling.
void MarkEitherAlphabet(std::vector<SecretForm>& forms, const std::string& text) {
  for (SecretForm& f : forms) {
    if (f.text == text && f.alphabet == 0) f.either_alphabet = true;
  }
}

}  // namespace

// ------------------------------------------------------------------ encodings

std::string Base64EncodeWith(std::string_view data, int alphabet, bool pad) {
  const char* table = kAlphabets[alphabet];
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    uint32_t v = (static_cast<uint8_t>(data[i]) << 16) | (static_cast<uint8_t>(data[i + 1]) << 8) |
                 static_cast<uint8_t>(data[i + 2]);
    out += table[(v >> 18) & 63];
    out += table[(v >> 12) & 63];
    out += table[(v >> 6) & 63];
    out += table[v & 63];
  }
  const size_t rest = data.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<uint8_t>(data[i]) << 16;
    if (rest == 2) v |= static_cast<uint8_t>(data[i + 1]) << 8;
    out += table[(v >> 18) & 63];
    out += table[(v >> 12) & 63];
    if (rest == 2) out += table[(v >> 6) & 63];
    if (pad) out.append(3 - rest, '=');
  }
  return out;
}

std::string HexEncode(std::string_view data, bool upper) {
  const char* hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  out.reserve(data.size() * 2);
  for (char c : data) {
    out += hex[static_cast<uint8_t>(c) >> 4];
    out += hex[static_cast<uint8_t>(c) & 15];
  }
  return out;
}

// ------------------------------------------------------------------ forms

std::vector<SecretForm> SecretForms(std::string_view secret, std::string_view phantom) {
  const bool same_length = phantom.size() == secret.size();
  std::vector<SecretForm> forms;
  std::set<std::string> seen;
  auto add = [&](std::string form, std::string text, std::string repl, bool literal = false) {
    if (text.empty() || (!literal && text.size() < kMinDerivedForm)) return;
    if (!seen.insert(text).second) return;
    SecretForm f;
    f.form = std::move(form);
    f.replacement =
        same_length && repl.size() == text.size() ? std::move(repl) : std::string(text.size(), 'x');
    f.text = std::move(text);
    forms.push_back(std::move(f));
  };
  add("literal", std::string(secret), std::string(phantom), /*literal=*/true);

  for (int alphabet : {0, 1}) {
    for (size_t align = 0; align < 3; ++align) {
      Base64Part s = Base64At(secret, align, alphabet);
      Base64Part p = same_length ? Base64At(phantom, align, alphabet) : Base64Part{};
      const size_t before = forms.size();
      add(std::string(alphabet == 0 ? "base64/" : "base64url/") + std::to_string(align), s.stable,
          p.stable);
      if (forms.size() == before) {
        // The URL-safe text is the standard one: that form stands for both alphabets.
        MarkEitherAlphabet(forms, s.stable);
        continue;
      }
      SecretForm& f = forms.back();
      f.alphabet = alphabet;
      f.lead_bits = s.lead_bits;
      f.trail_bits = s.trail_bits;
      // Without a phantom of the same length, the secret's bits become zeros.
      f.lead_value = same_length ? p.lead_value : 0;
      f.trail_value = same_length ? p.trail_value : 0;
      // Only the secret's own bits (the lowest lead_bits, the highest trail_bits) are kept.
      f.lead_value &= static_cast<uint8_t>((1u << f.lead_bits) - 1);
      f.trail_value &= static_cast<uint8_t>((0x3fu << (6 - f.trail_bits)) & 0x3f);
    }
  }
  for (bool upper : {false, true}) {
    add(upper ? "HEX" : "hex", HexEncode(secret, upper), HexEncode(phantom, upper));
  }
  for (bool upper : {true, false}) {
    const std::string c = upper ? "" : "/lower";
    add("percent" + c, PercentEncode(secret, upper, nullptr),
        PercentEncode(phantom, upper, nullptr));
    add("percent-reserved" + c, PercentEncode(secret, upper, IsUnreserved),
        PercentEncode(phantom, upper, IsUnreserved));
    add("percent-path" + c, PercentEncode(secret, upper, IsPathSafe),
        PercentEncode(phantom, upper, IsPathSafe));
  }
  for (JsonStyle style :
       {JsonStyle::kSlash, JsonStyle::kHtmlSafe, JsonStyle::kAllLower, JsonStyle::kAllUpper}) {
    add("json", JsonEscape(secret, style), JsonEscape(phantom, style));
  }
  return forms;
}

// ------------------------------------------------------------------ table

namespace {
std::vector<std::string> Texts(const std::vector<SecretForm>& forms) {
  std::vector<std::string> out;
  out.reserve(forms.size());
  for (const SecretForm& f : forms) out.push_back(f.text);
  return out;
}
std::vector<SecretForm> Distinct(std::vector<SecretForm> forms) {
  std::set<std::string> seen;
  std::vector<SecretForm> out;
  for (SecretForm& f : forms) {
    if (!f.text.empty() && seen.insert(f.text).second) out.push_back(std::move(f));
  }
  return out;
}
}  // namespace

SecretMaskTable::SecretMaskTable(std::vector<SecretForm> forms)
    : forms_(Distinct(std::move(forms))), matcher_(Texts(forms_)) {
  for (const SecretForm& f : forms_) rewrites_before_ = rewrites_before_ || f.lead_bits > 0;
}

// ------------------------------------------------------------------ streaming

std::string SecretMasker::Process(std::string_view data) {
  const MultiMatcher& m = table_->matcher();
  buf_.append(data);
  size_t i = scanned_;
  while (i < buf_.size()) {
    if (!trail_fixes_.empty()) {
      // One byte at a time while a character after a match waits to be rewritten.
      state_ = m.Step(state_, static_cast<unsigned char>(buf_[i]));  // the byte as it came
      FixTrail(i);
      ++i;
    } else {
      i += m.Scan(&state_, std::string_view(buf_).substr(i));
    }
    if (m.matches(state_)) {
      m.ForEachMatch(state_, [&](size_t form) { Rewrite(i, table_->forms()[form]); });
    }
  }
  scanned_ = buf_.size();
  // Hold back what a match may still cover: the tail that begins some form, and the character
  // before it when a base64 form would rewrite that one.
  size_t keep_from = buf_.size() - std::min(buf_.size(), m.depth(state_));
  if (table_->rewrites_before() && keep_from > 0 && IsBase64Char(buf_[keep_from - 1])) {
    --keep_from;
  }
  std::string out = buf_.substr(0, keep_from);
  buf_.erase(0, keep_from);
  base_ += keep_from;
  scanned_ = buf_.size();
  return out;
}

std::string SecretMasker::Flush() {
  std::string out = std::move(buf_);
  buf_.clear();
  base_ += out.size();
  scanned_ = 0;
  state_ = MultiMatcher::kStart;
  trail_fixes_.clear();
  return out;
}

void SecretMasker::Rewrite(size_t end, const SecretForm& f) {
  const size_t start = end - f.text.size();
  buf_.replace(start, f.replacement.size(), f.replacement);
  if (f.lead_bits > 0 && start > 0) {
    SetBase64Bits(buf_[start - 1], f.alphabet, f.either_alphabet,
                  f.either_alphabet ? AlphabetHint(start - 1) : 0, (1 << f.lead_bits) - 1,
                  f.lead_value);
  }
  if (f.trail_bits > 0) {
    // The character after the match has not been scanned yet: rewritten when it is.
    trail_fixes_.push_back({base_ + end, static_cast<size_t>(&f - table_->forms().data())});
  }
}

char SecretMasker::AlphabetHint(size_t i) const {
  // The nearest character before i, in the same run of base64, that only one alphabet has.
  for (size_t k = i; k-- > 0 && i - k <= kHintReach;) {
    const char c = buf_[k];
    if (c == '+' || c == '/' || c == '-' || c == '_') return c;
    if (!IsBase64Char(c)) break;
  }
  return 0;
}

void SecretMasker::FixTrail(size_t i) {
  const uint64_t at = base_ + i;
  for (size_t k = 0; k < trail_fixes_.size();) {
    if (trail_fixes_[k].at != at) {
      ++k;
      continue;
    }
    const SecretForm& f = table_->forms()[trail_fixes_[k].form];
    SetBase64Bits(buf_[i], f.alphabet, f.either_alphabet, f.either_alphabet ? AlphabetHint(i) : 0,
                  (0x3f << (6 - f.trail_bits)) & 0x3f, f.trail_value);
    trail_fixes_[k] = trail_fixes_.back();
    trail_fixes_.pop_back();
  }
}

}  // namespace ward::net
