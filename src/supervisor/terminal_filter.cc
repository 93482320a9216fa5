#include "supervisor/terminal_filter.h"

#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace ward::supervisor {
namespace {

constexpr uint32_t kEnq = 0x05, kBel = 0x07, kCan = 0x18, kSub = 0x1a, kEsc = 0x1b;
constexpr uint32_t kSt = 0x9c;
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
// The first bytes of a dropped sequence kept for the audit trail.
constexpr size_t kHead = 48;

// The kinds of sequence dropped: one row of docs/terminal.md each.
constexpr const char* kEnqKind = "ENQ (answerback)";
constexpr const char* kOverLong = "over-long sequence";
constexpr const char* kUnterminated = "unterminated sequence";
constexpr const char* kInterrupted = "interrupted sequence";
constexpr const char* kMalformed = "malformed sequence";

// A control sequence's parts: ESC [ (or CSI) marker params intermediates final.
struct Csi {
  char marker = 0;           // '<', '=', '>' or '?' right after the introducer
  std::vector<long> params;  // -1 for an empty parameter; sub-parameters (':') are skipped
  std::string inter;
  char final = 0;
  bool malformed = false;  // a marker elsewhere, a parameter after an intermediate
};

// `body`: what follows the introducer, the final byte included. C0 controls inside are
// executed by the terminal where they stand and do not belong to the sequence.
Csi ParseCsi(std::string_view body) {
  Csi c;
  bool any_param = false, in_sub = false;
  long value = -1;
  for (size_t i = 0; i < body.size(); ++i) {
    unsigned char b = static_cast<unsigned char>(body[i]);
    if (b < 0x20 || b == 0x7f) continue;
    if (b >= 0x40 && b <= 0x7e) {
      c.final = static_cast<char>(b);
      break;
    }
    if (b >= 0x20 && b <= 0x2f) {
      c.inter.push_back(static_cast<char>(b));
      continue;
    }
    // 0x30..0x3f: a parameter byte
    if (!c.inter.empty()) c.malformed = true;
    if (b >= '<' && b <= '?') {
      if (any_param || c.marker) c.malformed = true;
      c.marker = static_cast<char>(b);
      continue;
    }
    any_param = true;
    if (b == ';') {
      c.params.push_back(value);
      value = -1;
      in_sub = false;
    } else if (b == ':') {
      in_sub = true;
    } else if (!in_sub) {
      value = std::min<long>((value < 0 ? 0 : value) * 10 + (b - '0'), 99999);
    }
  }
  if (any_param) c.params.push_back(value);
  return c;
}

bool HasParam(const Csi& c, long p) {
  return std::find(c.params.begin(), c.params.end(), p) != c.params.end();
}

// Control sequences (CSI ...): the report requests, which make the terminal type an answer into
// its own input, and the sequences that act outside the screen (window, printer, VT52 mode).
const char* JudgeCsi(const Csi& c) {
  if (c.malformed) return "malformed control sequence";
  const std::string& in = c.inter;
  long p0 = c.params.empty() ? -1 : c.params[0];
  switch (c.final) {
    case 'c':
      return "DA (device attributes request)";
    case 'n':
      return "DSR (status or cursor position report request)";
    case 'i':
      return "MC (media copy: printing)";
    case 'x':
      if (in.empty() || in == "+") return "DECREQTPARM / DECRQPKFM (report request)";
      break;
    case 't':
      // XTWINOPS: 22/23 push and pop the title; every other op reports, moves, resizes,
      // iconifies or raises the window.
      if (c.marker == 0 && in.empty() && p0 != 22 && p0 != 23) {
        return "XTWINOPS (window report, move, resize, iconify)";
      }
      break;
    case 'p':
      if (in == "$") return "DECRQM (mode report request)";
      if (in == "+") return "DECSR (secure reset: answers)";
      break;
    case 'w':
      if (in == "$") return "DECRQPSR (presentation state report request)";
      if (in == ",") return "DECRQKT (key type report request)";
      break;
    case 'v':
      if (in == "\"") return "DECRQDE (displayed extent report request)";
      break;
    case 'u':
      if (in == "$") return "DECRQTSR (terminal state report request)";
      if (in == "&") return "DECRQUPSS (character set report request)";
      if (c.marker == '?' && in.empty()) return "kitty keyboard flags report request";
      break;
    case 'y':
      if (in == "*") return "DECRQCRA (screen checksum request)";
      if (in.empty()) return "DECTST (self test)";
      break;
    case '|':
      if (in == "'") return "DECRQLP (locator position request)";
      if (in == "$" || in == "*") return "DECSCPP / DECSNLS (resize)";
      break;
    case 'q':
      if (c.marker == '>') return "XTVERSION (version report request)";
      break;
    case 'm':
      if (c.marker == '?') return "XTQMODKEYS (key modifier report request)";
      break;
    case 'S':
      if (c.marker == '?') return "XTSMGRAPHICS (graphics attribute request)";
      break;
    case 'R':
      if (in == "#") return "XTREPORTCOLORS (colour stack report request)";
      break;
    case 'h':
    case 'l':
      if (c.marker == '?' && in.empty()) {
        if (HasParam(c, 3)) return "DECCOLM (resize)";
        if (c.final == 'l' && HasParam(c, 2)) return "DECANM (VT52 mode)";
        if (c.final == 'h' && HasParam(c, 38)) return "DECTEK (Tektronix mode)";
      }
      if (c.marker == 0 && in.empty() && c.final == 'h' && HasParam(c, 2)) {
        return "KAM (locks the keyboard)";
      }
      break;
    default:
      break;
  }
  return nullptr;
}

// Escape sequences (ESC intermediates final), `body` without the ESC.
const char* JudgeEscape(std::string_view body) {
  std::string inter;
  char final = 0;
  for (char ch : body) {
    unsigned char b = static_cast<unsigned char>(ch);
    if (b >= 0x20 && b <= 0x2f) inter.push_back(ch);
    if (b >= 0x30 && b <= 0x7e) final = ch;
  }
  if (inter.empty()) {
    if (final == 'Z') return "DECID (identify request)";
    if (final == 'N' || final == 'O') return "SS2 / SS3 (single shift)";
    if (final == '\\') return "ST without a string";
    return nullptr;
  }
  if (inter[0] == '%') return "DOCS (selects the terminal's encoding)";
  return nullptr;
}

// Operating system commands (OSC Ps ; ...): a list of what passes.
const char* JudgeOsc(std::string_view payload) {
  size_t i = 0;
  long n = 0;
  while (i < payload.size() && i < 6 && std::isdigit(static_cast<unsigned char>(payload[i]))) {
    n = n * 10 + (payload[i] - '0');
    ++i;
  }
  if (i == 0 || (i < payload.size() && payload[i] != ';')) return "OSC (not on the list)";
  if (n == 0 || n == 1 || n == 2 || n == 7 || n == 8 || n == 133) return nullptr;
  if (n == 52) return "OSC 52 (clipboard)";
  // The palette and the default colours: queries answer on the input; changes and resets
  // outlive the run (and a foreground set to the background hides what ward writes).
  if (n == 4 || n == 5 || (n >= 10 && n <= 19) || n == 104 || n == 105 || (n >= 110 && n <= 119)) {
    return "OSC colours (change, reset or query)";
  }
  return "OSC (not on the list)";
}

// The strings dropped whole, known from their introducer.
const char* StringKind(char kind) {
  switch (kind) {
    case 'P':
      return "DCS (device control string)";
    case 'X':
      return "SOS (string)";
    case '^':
      return "PM (privacy message)";
    case '_':
      return "APC (application program command)";
    default:
      return nullptr;
  }
}

// Printable ASCII and the line controls: text in every state of the terminal's ground state.
bool IsPlain(char c) { return (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\r' || c == '\t'; }

bool HasUtf8(std::string_view v) {
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s.find("utf-8") != std::string::npos || s.find("utf8") != std::string::npos;
}

}  // namespace

TerminalEncoding TerminalEncodingFromLocale(const char* lc_all, const char* lc_ctype,
                                            const char* lang) {
  const char* locale = nullptr;
  for (const char* v : {lc_all, lc_ctype, lang}) {
    if (v && *v) {
      locale = v;
      break;
    }
  }
  if (!locale) return TerminalEncoding::kUtf8;
  std::string_view l(locale);
  // "language_TERRITORY.charset@modifier": a charset that is not UTF-8 means an 8-bit terminal.
  size_t dot = l.find('.');
  if (dot == std::string_view::npos) {
    // No charset: "C", "POSIX" and bare names are taken as UTF-8, except the legacy ones whose
    // default charset is 8-bit ("de_DE@euro").
    return l.find("@euro") != std::string_view::npos ? TerminalEncoding::kEightBit
                                                     : TerminalEncoding::kUtf8;
  }
  std::string_view charset = l.substr(dot + 1);
  charset = charset.substr(0, charset.find('@'));
  return HasUtf8(charset) ? TerminalEncoding::kUtf8 : TerminalEncoding::kEightBit;
}

TerminalEncoding TerminalEncodingFromEnvironment() {
  return TerminalEncodingFromLocale(getenv("LC_ALL"), getenv("LC_CTYPE"), getenv("LANG"));
}

std::optional<bool> TerminalModes::Get(int mode) const {
  for (size_t i = 0; i < kFollowed.size(); ++i) {
    if (kFollowed[i] == mode) return value_[i];
  }
  return std::nullopt;
}

void TerminalModes::Set(int mode, bool on) {
  for (size_t i = 0; i < kFollowed.size(); ++i) {
    if (kFollowed[i] == mode) value_[i] = on;
  }
}

void TerminalModes::Clear() { value_.fill(std::nullopt); }

void TerminalFilter::Feed(std::string_view in, std::string* out) {
  if (options_.pass_all) {
    // Raw: the bytes go out as they came; the machine below only follows the modes.
    out->append(in);
    out_ = nullptr;
  } else {
    out_ = out;
  }
  for (size_t i = 0; i < in.size();) {
    // Plain text between sequences goes out in one piece.
    if (state_ == State::kGround && utf8_need_ == 0) {
      size_t j = i;
      while (j < in.size() && IsPlain(in[j])) ++j;
      if (j > i) {
        Emit(in.substr(i, j - i));
        i = j;
        continue;
      }
    }
    Byte(static_cast<unsigned char>(in[i++]));
  }
  out_ = nullptr;
}

void TerminalFilter::End() {
  out_ = nullptr;
  utf8_.clear();
  utf8_need_ = 0;
  if (state_ != State::kGround) Abandon(kUnterminated);
}

void TerminalFilter::Byte(unsigned char b) {
  if (options_.encoding == TerminalEncoding::kUtf8) return Utf8Byte(b);
  char c = static_cast<char>(b);
  Char(b, std::string_view(&c, 1));
}

// UTF-8 as the terminal decodes it, strictly: no overlong forms (an overlong ESC would be an
// ESC the filter did not see), no surrogates, nothing past U+10FFFF.
void TerminalFilter::Utf8Byte(unsigned char b) {
  if (utf8_need_ > 0) {
    if (b >= utf8_lo_ && b <= utf8_hi_) {
      utf8_.push_back(static_cast<char>(b));
      utf8_cp_ = (utf8_cp_ << 6) | (b & 0x3f);
      utf8_lo_ = 0x80;
      utf8_hi_ = 0xbf;
      if (--utf8_need_ == 0) {
        std::string raw = std::move(utf8_);
        utf8_.clear();
        Char(utf8_cp_, raw);
      }
      return;
    }
    Invalid();  // the character so far is cut short; this byte starts afresh
  }
  if (b < 0x80) {
    char c = static_cast<char>(b);
    return Char(b, std::string_view(&c, 1));
  }
  utf8_lo_ = 0x80;
  utf8_hi_ = 0xbf;
  if (b >= 0xc2 && b <= 0xdf) {
    utf8_need_ = 1;
    utf8_cp_ = b & 0x1f;
  } else if (b >= 0xe0 && b <= 0xef) {
    utf8_need_ = 2;
    utf8_cp_ = b & 0x0f;
    if (b == 0xe0) utf8_lo_ = 0xa0;
    if (b == 0xed) utf8_hi_ = 0x9f;
  } else if (b >= 0xf0 && b <= 0xf4) {
    utf8_need_ = 3;
    utf8_cp_ = b & 0x07;
    if (b == 0xf0) utf8_lo_ = 0x90;
    if (b == 0xf4) utf8_hi_ = 0x8f;
  } else {
    return Char(0xfffd, kReplacement);  // a byte that starts no character
  }
  utf8_.assign(1, static_cast<char>(b));
}

void TerminalFilter::Invalid() {
  utf8_.clear();
  utf8_need_ = 0;
  Char(0xfffd, kReplacement);
}

void TerminalFilter::Char(uint32_t cp, std::string_view raw) {
  // What holds in every state, as in the terminal's own parser.
  if (cp == kEnq) return Drop(kEnqKind, raw);
  if (cp == kCan || cp == kSub) {
    if (state_ != State::kGround) Abandon(kInterrupted);
    return Emit(raw);
  }
  if (cp == kEsc) {
    if (state_ == State::kString) {  // a string terminator (ESC \), or the string's end
      state_ = State::kStringEsc;
      return Append(raw);
    }
    if (state_ != State::kGround) Abandon(kInterrupted);
    return Start(State::kEscape, raw, 0);
  }
  if (cp >= 0x80 && cp <= 0x9f) return C1(cp, raw);
  switch (state_) {
    case State::kGround:
      return Ground(cp, raw);
    case State::kEscape:
      return InEscape(cp, raw);
    case State::kCsi:
      return InCsi(cp, raw);
    case State::kString:
      return InString(cp, raw);
    case State::kStringEsc:
      return InStringEsc(cp, raw);
  }
}

void TerminalFilter::Ground(uint32_t, std::string_view raw) { Emit(raw); }

// The 8-bit controls: the introducers, and the one-byte controls judged as their 7-bit forms.
void TerminalFilter::C1(uint32_t cp, std::string_view raw) {
  if (state_ == State::kString && cp == kSt) return Complete(raw);
  if (state_ != State::kGround) Abandon(kInterrupted);
  switch (cp) {
    case 0x9b:
      return Start(State::kCsi, raw, '[');
    case 0x9d:
      return Start(State::kString, raw, ']');
    case 0x90:
      return Start(State::kString, raw, 'P');
    case 0x98:
      return Start(State::kString, raw, 'X');
    case 0x9e:
      return Start(State::kString, raw, '^');
    case 0x9f:
      return Start(State::kString, raw, '_');
    case 0x8e:
    case 0x8f:
      return Drop(JudgeEscape("N"), raw);
    case 0x9a:
      return Drop(JudgeEscape("Z"), raw);
    case 0x9c:
      return Drop(JudgeEscape("\\"), raw);
    default:
      return Emit(raw);
  }
}

void TerminalFilter::InEscape(uint32_t cp, std::string_view raw) {
  if (cp < 0x20 || cp == 0x7f) return Append(raw);  // executed where it stands
  if (cp <= 0x2f) {
    inter_ = true;
    return Append(raw);
  }
  if (cp <= 0x7e) {
    if (!inter_) {
      switch (cp) {
        case '[':
        case ']':
        case 'P':
        case 'X':
        case '^':
        case '_':
          return Introduce(raw, static_cast<char>(cp));
        default:
          break;
      }
    }
    return Complete(raw);
  }
  // A character beyond ASCII ends nothing: no sequence; the character is text.
  Abandon(kMalformed);
  Char(cp, raw);
}

void TerminalFilter::InCsi(uint32_t cp, std::string_view raw) {
  if (cp < 0x40 || cp == 0x7f) return Append(raw);  // parameters, intermediates, C0
  if (cp <= 0x7e) return Complete(raw);
  Abandon(kMalformed);
  Char(cp, raw);
}

void TerminalFilter::InString(uint32_t cp, std::string_view raw) {
  if (cp == kBel) return Complete(raw);  // BEL ends a string as ST does (xterm)
  Append(raw);
}

void TerminalFilter::InStringEsc(uint32_t cp, std::string_view raw) {
  if (cp == '\\') return Complete(raw);
  // The ESC ended the string without terminating it, and starts a sequence of its own.
  Abandon(kInterrupted);
  Start(State::kEscape, "\x1b", 0);
  Char(cp, raw);
}

void TerminalFilter::Start(State state, std::string_view raw, char kind) {
  state_ = state;
  seq_.assign(raw);
  intro_len_ = raw.size();
  inter_ = false;
  discard_ = state == State::kString ? StringKind(kind) : nullptr;
}

void TerminalFilter::Introduce(std::string_view raw, char kind) {
  Append(raw);
  intro_len_ = seq_.size();
  if (kind == '[') {
    state_ = State::kCsi;
  } else {
    state_ = State::kString;
    if (!discard_) discard_ = StringKind(kind);
  }
}

void TerminalFilter::Append(std::string_view raw) {
  if (discard_) {
    // Known to be dropped: only its head is kept, for the audit trail.
    if (seq_.size() < kHead) seq_.append(raw.substr(0, kHead - seq_.size()));
    return;
  }
  size_t bound =
      state_ == State::kString || state_ == State::kStringEsc ? kMaxString : kMaxSequence;
  if (seq_.size() + raw.size() > bound) {
    discard_ = kOverLong;  // dropped whole; read on to its end
    return;
  }
  seq_.append(raw);
}

void TerminalFilter::Complete(std::string_view raw) {
  const State state = state_;
  // A string's payload: between the introducer and the terminator (ESC \ has its ESC already).
  size_t payload_end = seq_.size() - (state == State::kStringEsc ? 1 : 0);
  Append(raw);
  const char* kind = discard_;
  std::optional<Csi> csi;
  if (!kind) {
    std::string_view body = std::string_view(seq_).substr(intro_len_);
    if (state == State::kCsi) {
      csi = ParseCsi(body);
      kind = JudgeCsi(*csi);
    } else if (state == State::kEscape) {
      kind = JudgeEscape(body);
    } else {
      kind = JudgeOsc(std::string_view(seq_).substr(intro_len_, payload_end - intro_len_));
    }
  }
  if (!kind) Emit(seq_);
  // The modes as the terminal now has them: what passed (raw: everything it read).
  if (!kind || (options_.pass_all && !discard_)) {
    if (csi && csi->marker == '?' && csi->inter.empty() &&
        (csi->final == 'h' || csi->final == 'l')) {
      for (long p : csi->params) modes_.Set(static_cast<int>(p), csi->final == 'h');
    } else if (csi && csi->inter == "!" && csi->final == 'p') {  // DECSTR
      modes_.Set(25, true);
      modes_.Set(6, false);
    } else if (state == State::kEscape && seq_.size() == 2 && seq_[1] == 'c') {  // RIS
      modes_.Clear();
    }
  }
  if (kind) Drop(kind, seq_);
  Reset();
}

void TerminalFilter::Abandon(const char* kind) {
  Drop(discard_ ? discard_ : kind, seq_);
  Reset();
}

void TerminalFilter::Reset() {
  state_ = State::kGround;
  seq_.clear();
  intro_len_ = 0;
  inter_ = false;
  discard_ = nullptr;
}

void TerminalFilter::Drop(const char* kind, std::string_view head) {
  if (options_.pass_all) return;  // raw: nothing is dropped
  ++dropped_;
  if (on_drop_) on_drop_(kind, head.substr(0, kHead));
}

void TerminalFilter::Emit(std::string_view bytes) {
  if (out_) out_->append(bytes);
}

}  // namespace ward::supervisor
