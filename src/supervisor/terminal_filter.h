// The filter on the sandbox's pty output on its way to the user's terminal. The terminal obeys
// what it reads: besides colours and cursor movement, some sequences make it type into its own
// input (answer-back and report requests), write the clipboard, program its keys or fonts, or
// resize the window. The filter reads the byte stream as the terminal does (ECMA-48 / the DEC
// VT parser, UTF-8 decoded first), lets ordinary sequences through unchanged and drops the rest
// whole; the table with the reason for each row is docs/terminal.md.
//
// A sequence is written only once it is complete, so a sequence split across reads is judged
// as a whole, and the terminal is never left in the middle of one (or of a UTF-8 character)
// when ward writes a prompt. A sequence longer than the bound, or one that never ends, is
// dropped; so is ENQ wherever it appears. Invalid UTF-8 becomes U+FFFD, which is what a UTF-8
// terminal shows for it: no byte can then mean one thing to the filter and another to the
// terminal.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ward::supervisor {

// How the terminal decodes bytes. UTF-8 (every terminal today): C1 controls are the code points
// U+0080..U+009F. Eight-bit (a terminal set to a legacy encoding): every byte 0x80..0x9F is a
// C1 control and nothing is decoded.
enum class TerminalEncoding { kUtf8, kEightBit };

// The encoding the user's locale names (LC_ALL, else LC_CTYPE, else LANG): eight-bit only when
// it names a charset that is not UTF-8 ("de_DE.ISO-8859-1", "ru_RU.KOI8-R"); UTF-8 otherwise,
// "C" and an unset locale included (terminals are UTF-8 even where the locale is not).
TerminalEncoding TerminalEncodingFromLocale(const char* lc_all, const char* lc_ctype,
                                            const char* lang);
TerminalEncoding TerminalEncodingFromEnvironment();

// The DEC private modes that ward changes to show a prompt and puts back afterwards, as the
// relayed output left them (nullopt: never set, the terminal's default).
class TerminalModes {
 public:
  // The modes followed: origin (6), autowrap (7), cursor visible (25), the alternate screens
  // (47, 1047, 1049), mouse and focus reports (9, 1000, 1001, 1002, 1003, 1004).
  static constexpr std::array<int, 12> kFollowed = {6,    7,    9,    25,   47,   1000,
                                                    1001, 1002, 1003, 1004, 1047, 1049};
  std::optional<bool> Get(int mode) const;
  void Set(int mode, bool on);  // modes not followed are ignored
  void Clear();                 // a full reset: every mode back to the terminal's default

 private:
  std::array<std::optional<bool>, kFollowed.size()> value_;
};

class TerminalFilter {
 public:
  struct Options {
    TerminalEncoding encoding = TerminalEncoding::kUtf8;
    // --raw-terminal: everything passes unchanged and at once; the stream is still read, to
    // follow the modes.
    bool pass_all = false;
  };
  // A sequence was dropped: what it is (a row of the table) and its first bytes.
  using DropFn = std::function<void(std::string_view kind, std::string_view head)>;

  // Bounds: an escape or control sequence, and a string (OSC title, hyperlink).
  static constexpr size_t kMaxSequence = 256;
  static constexpr size_t kMaxString = 8192;

  TerminalFilter() : TerminalFilter(Options{}) {}
  explicit TerminalFilter(Options options) : options_(options) {}
  void set_on_drop(DropFn fn) { on_drop_ = std::move(fn); }

  // Appends to *out what of `in` may reach the terminal. An incomplete sequence or character at
  // the end is held until the bytes that complete it arrive.
  void Feed(std::string_view in, std::string* out);
  // The output ended: whatever is held is dropped (the terminal never saw its start).
  void End();

  const TerminalModes& modes() const { return modes_; }
  uint64_t dropped() const { return dropped_; }

 private:
  enum class State { kGround, kEscape, kCsi, kString, kStringEsc };

  void Byte(unsigned char b);
  void Utf8Byte(unsigned char b);
  void Invalid();  // an invalid UTF-8 byte sequence: U+FFFD
  void Char(uint32_t cp, std::string_view raw);
  void Ground(uint32_t cp, std::string_view raw);
  void C1(uint32_t cp, std::string_view raw);
  void InEscape(uint32_t cp, std::string_view raw);
  void InCsi(uint32_t cp, std::string_view raw);
  void InString(uint32_t cp, std::string_view raw);
  void InStringEsc(uint32_t cp, std::string_view raw);

  void Start(State state, std::string_view raw, char kind);
  void Introduce(std::string_view raw, char kind);  // ESC [ / ESC ] ...: the sequence's kind
  void Append(std::string_view raw);
  void Complete(std::string_view raw);
  void Abandon(const char* kind);
  void Reset();
  void Drop(const char* kind, std::string_view head);
  void Emit(std::string_view bytes);

  Options options_;
  DropFn on_drop_;
  std::string* out_ = nullptr;
  // UTF-8 decoding: the bytes of the character so far and how many more it needs.
  std::string utf8_;
  int utf8_need_ = 0;
  unsigned char utf8_lo_ = 0x80, utf8_hi_ = 0xBF;  // the next byte's range (Unicode table 3-7)
  uint32_t utf8_cp_ = 0;
  // The sequence being read: its bytes (until the bound; only the head of one known to be
  // dropped), and the reason when it is known to be dropped before it ends.
  State state_ = State::kGround;
  std::string seq_;
  size_t intro_len_ = 0;  // the introducer's bytes at the start of seq_
  bool inter_ = false;    // an escape sequence has intermediates (ESC ( B is no introducer)
  const char* discard_ = nullptr;  // the reason, once the sequence is known to be dropped
  TerminalModes modes_;
  uint64_t dropped_ = 0;
};

}  // namespace ward::supervisor
