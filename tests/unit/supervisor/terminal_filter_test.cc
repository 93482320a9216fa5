// The terminal output filter: every dropped sequence goes whole (also when it arrives split
// at any byte), every passing one and UTF-8 text come out byte for byte, and the bounds hold.
#include "supervisor/terminal_filter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ward::supervisor {
namespace {

struct Filtered {
  std::string out;
  std::vector<std::string> kinds;
};

// Feeds `chunks` in order, then ends the stream when `end`.
Filtered Filter(const std::vector<std::string>& chunks, TerminalFilter::Options o = {},
                bool end = true) {
  TerminalFilter f(o);
  Filtered r;
  f.set_on_drop([&r](std::string_view kind, std::string_view) { r.kinds.emplace_back(kind); });
  for (const std::string& c : chunks) f.Feed(c, &r.out);
  if (end) f.End();
  return r;
}

std::string Printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[8];
      snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

// The same output whole, split in two at every byte, and one byte at a time; `drops` sequences
// dropped (kSome: at least one).
constexpr int kSome = -1;
void ExpectAtEverySplit(const std::string& in, const std::string& want, int drops,
                        TerminalFilter::Options o = {}) {
  Filtered whole = Filter({in}, o);
  EXPECT_EQ(Printable(whole.out), Printable(want)) << "input " << Printable(in);
  if (drops == kSome) {
    EXPECT_FALSE(whole.kinds.empty()) << "input " << Printable(in);
  } else {
    EXPECT_EQ(whole.kinds.size(), static_cast<size_t>(drops)) << "input " << Printable(in);
  }
  for (size_t i = 1; i < in.size(); ++i) {
    Filtered split = Filter({in.substr(0, i), in.substr(i)}, o);
    EXPECT_EQ(Printable(split.out), Printable(want)) << "split at " << i << ": " << Printable(in);
    EXPECT_EQ(split.kinds, whole.kinds) << "split at " << i << ": " << Printable(in);
  }
  std::vector<std::string> bytes;
  for (char c : in) bytes.emplace_back(1, c);
  Filtered one = Filter(bytes, o);
  EXPECT_EQ(Printable(one.out), Printable(want)) << "byte by byte: " << Printable(in);
}

// Everything that must not reach the terminal, in 7-bit and (UTF-8) C1 spellings.
const std::vector<std::string>& Dropped() {
  static const std::vector<std::string> kDropped = {
      "\x05",  // ENQ
      // device attributes
      "\x1b[c",
      "\x1b[0c",
      "\x1b[>c",
      "\x1b[>0c",
      "\x1b[=c",
      "\x1b[=0c",
      "\x1b[?1;2c",
      // status and cursor position reports
      "\x1b[5n",
      "\x1b[6n",
      "\x1b[?6n",
      "\x1b[?15n",
      "\x1b[?26n",
      "\x1b[?996n",
      "\x1b[>1n",
      // window operations: reports (11, 13..21), iconify, move, resize, raise, lower, DECSLPP
      "\x1b[21t",
      "\x1b[20t",
      "\x1b[19t",
      "\x1b[18t",
      "\x1b[16t",
      "\x1b[15t",
      "\x1b[14t",
      "\x1b[14;2t",
      "\x1b[13t",
      "\x1b[13;2t",
      "\x1b[11t",
      "\x1b[1t",
      "\x1b[2t",
      "\x1b[3;0;0t",
      "\x1b[4;2000;2000t",
      "\x1b[5t",
      "\x1b[6t",
      "\x1b[7t",
      "\x1b[8;100;300t",
      "\x1b[9;1t",
      "\x1b[10;1t",
      "\x1b[t",
      "\x1b[48t",
      // mode, state, checksum, locator, version, keyboard, graphics, colour stack reports
      "\x1b[?1$p",
      "\x1b[4$p",
      "\x1b[?2026$p",
      "\x1b[1$w",
      "\x1b[1$u",
      "\x1b[1;1;1;1;24;80*y",
      "\x1b[1'|",
      "\x1b[>q",
      "\x1b[>0q",
      "\x1b[?u",
      "\x1b[?4m",
      "\x1b[?1;1;0S",
      "\x1b[#R",
      "\x1b[x",
      "\x1b[1x",
      "\x1b[1+x",
      // self test, printing, VT52 mode, column changes
      "\x1b[4;1y",
      "\x1b[0i",
      "\x1b[5i",
      "\x1b[?5i",
      "\x1b[?2l",
      "\x1b[?1;2l",
      "\x1b[?3h",
      "\x1b[?3l",
      "\x1b[132$|",
      "\x1b[48*|",
      // Tektronix mode, a locked keyboard, more DEC reports (secure reset, key type, displayed
      // extent, character set)
      "\x1b[?38h",
      "\x1b[2h",
      "\x1b[1;2h",
      "\x1b[1+p",
      "\x1b[1,w",
      "\x1b[\"v",
      "\x1b[&u",
      // identify, single shifts, encoding switches, a stray string terminator
      "\x1bZ",
      "\x1bN",
      "\x1bO",
      "\x1b%G",
      "\x1b%@",
      "\x1b\\",
      // OSC: clipboard, the terminal's colours (changes, resets, queries), fonts, files,
      // notifications, X properties, logs
      "\x1b]4;1;rgb:ff/00/00\x07",
      "\x1b]10;#ffffff\x07",
      "\x1b]11;rgb:00/00/00\x1b\\",
      "\x1b]11;#000000\x07",
      "\x1b]12;red\x07",
      "\x1b]104\x07",
      "\x1b]104;1\x07",
      "\x1b]110\x07",
      "\x1b]111\x1b\\",
      "\x1b]112\x07",
      "\x1b]52;c;aGVsbG8=\x07",
      "\x1b]52;c;?\x1b\\",
      "\x1b]52;;\x07",
      "\x1b]4;1;?\x07",
      "\x1b]4;1;rgb:00/00/00;2;?\x07",
      "\x1b]5;0;?\x07",
      "\x1b]10;?\x07",
      "\x1b]11;?\x1b\\",
      "\x1b]12;?\x07",
      "\x1b]17;?\x07",
      "\x1b]19;?\x07",
      "\x1b]50;?\x07",
      "\x1b]1337;File=name=eA==:aGk=\x07",
      "\x1b]9;hello\x07",
      "\x1b]777;notify;a;b\x07",
      "\x1b]46;/tmp/log\x07",
      "\x1b]3;WM_NAME=x\x07",
      "\x1b]L title\x07",
      "\x1b]\x07",
      "\x1b]60\x07",
      // DCS: DECRQSS, XTGETTCAP, XTSETTCAP, DECUDK, DECDLD, sixel, tmux passthrough
      "\x1bP$qm\x1b\\",
      "\x1bP$q\"p\x1b\\",
      "\x1bP$q r\x1b\\",
      "\x1bP+q544e\x1b\\",
      "\x1bP+p544e=78\x1b\\",
      "\x1bP0;1|17/6c73\x1b\\",
      "\x1bP1;1;1{ @???\x1b\\",
      "\x1bPq#0;2;0;0;0#0!10~\x1b\\",
      "\x1bPtmux;\x1b\x1b]52;c;aGk=\x07\x1b\\",
      // SOS, PM, APC (kitty graphics)
      "\x1bXsos\x1b\\",
      "\x1b^pm\x1b\\",
      "\x1b_Gi=1,a=q;\x1b\\",
      "\x1b_Gf=100,t=f;L2V0Yw==\x07",
      // C1 spellings (UTF-8 encoded U+0080..U+009F)
      "\xc2\x9b"
      "6n",
      "\xc2\x9b"
      "21t",
      "\xc2\x9d"
      "52;c;aGk=\xc2\x9c",
      "\xc2\x9d"
      "52;c;aGk=\x07",
      "\xc2\x90$qm\xc2\x9c",
      "\xc2\x9f"
      "Ga=q\xc2\x9c",
      "\xc2\x9a",
      "\xc2\x8e",
      "\xc2\x8f",
      "\xc2\x9c",
      "\x1b]11;?\xc2\x9c",
  };
  return kDropped;
}

// Ordinary output that must pass unchanged.
const std::vector<std::string>& Passing() {
  static const std::vector<std::string> kPassing = {
      // attributes and colours
      "\x1b[m",
      "\x1b[0m",
      "\x1b[1;31m",
      "\x1b[38;5;196m",
      "\x1b[48;2;10;20;30m",
      "\x1b[38:2::255:0:0m",
      "\x1b[4:3m",
      "\x1b[58;5;1m",
      "\xc2\x9b"
      "1m",
      // cursor movement, saving, index
      "\x1b[H",
      "\x1b[10;20H",
      "\x1b[5A",
      "\x1b[B",
      "\x1b[2C",
      "\x1b[D",
      "\x1b[2G",
      "\x1b[3d",
      "\x1b[4;5f",
      "\x1b[s",
      "\x1b[u",
      "\x1b"
      "7",
      "\x1b"
      "8",
      "\x1bM",
      "\x1b"
      "D",
      "\x1b"
      "E",
      "\x1b[2E",
      "\x1b[F",
      "\x1b[3`",
      "\x1b[2a",
      "\x1b[3e",
      "\x1b[2I",
      "\x1b[Z",
      // erase, insert, delete, scroll, repeat
      "\x1b[J",
      "\x1b[2J",
      "\x1b[3J",
      "\x1b[K",
      "\x1b[1K",
      "\x1b[?2J",
      "\x1b[?K",
      "\x1b[3X",
      "\x1b[2P",
      "\x1b[3@",
      "\x1b[L",
      "\x1b[2M",
      "\x1b[1;24r",
      "\x1b[r",
      "\x1b[S",
      "\x1b[2T",
      "\x1b[5b",
      "\x1b[g",
      "\x1b[3g",
      "\x1bH",
      // modes: screens, cursor, paste, keys, mouse, focus, synchronized output, wrap, insert
      "\x1b[?1049h",
      "\x1b[?1049l",
      "\x1b[?47h",
      "\x1b[?1047h",
      "\x1b[?1048h",
      "\x1b[?25l",
      "\x1b[?25h",
      "\x1b[?2004h",
      "\x1b[?2004l",
      "\x1b[?1h",
      "\x1b[?1l",
      "\x1b=",
      "\x1b>",
      "\x1b[?1000h",
      "\x1b[?1002h",
      "\x1b[?1003h",
      "\x1b[?1006h",
      "\x1b[?1004h",
      "\x1b[?2026h",
      "\x1b[?2026l",
      "\x1b[?7l",
      "\x1b[?7h",
      "\x1b[4h",
      "\x1b[4l",
      "\x1b[2l",
      "\x1b[20h",
      "\x1b[?38l",
      "\x1b[?12l",
      "\x1b[?2h",
      "\x1b[?1000;1006h",
      "\x1b[?69h",
      "\x1b[2;50s",
      // titles, the title stack, hyperlinks, working directory, prompt marks
      "\x1b]0;title\x07",
      "\x1b]2;t\xc3\xadtulo \xe2\x9c\x93\x1b\\",
      "\x1b]1;icon\x07",
      "\x1b]2;a?b\x07",
      "\x1b[22;0t",
      "\x1b[23;0t",
      "\x1b[22t",
      "\x1b[23;2t",
      "\x1b]8;;https://example.com/?q=1\x1b\\link\x1b]8;;\x1b\\",
      "\x1b]8;id=1;file:///x\x07",
      "\x1b]7;file://host/dir\x07",
      "\x1b]133;A\x07",
      "\x1b]133;D;0\x1b\\",
      "\x1b]2;c1 end\xc2\x9c",
      // character sets, cursor shape, keyboard protocols, resets, line attributes
      "\x1b(B",
      "\x1b(0",
      "\x1b)0",
      "\x0e",
      "\x0f",
      "\x1b[2 q",
      "\x1b[0 q",
      "\x1b[>1u",
      "\x1b[<u",
      "\x1b[<3u",
      "\x1b[=1;1u",
      "\x1b[>4;2m",
      "\x1b[>4;m",
      "\x1b[>4m",
      "\x1b"
      "c",
      "\x1b[!p",
      "\x1b#8",
      "\x1b#6",
      "\x1b[1\"q",
      // C0 controls, DEL, and C0 inside a sequence (executed where it stands)
      "\r\n\t\b\x07\x0b\x0c",
      "\x7f",
      "\x1b[1\n;31m",
      "\x1b[3\x7fm",
  };
  return kPassing;
}

TEST(TerminalFilterTest, DroppedSequencesGoWholeAtEverySplit) {
  for (const std::string& d : Dropped()) {
    SCOPED_TRACE(Printable(d));
    ExpectAtEverySplit("A" + d + "B", "AB", kSome);
  }
}

TEST(TerminalFilterTest, PassingSequencesAreUnchangedAtEverySplit) {
  for (const std::string& p : Passing()) {
    SCOPED_TRACE(Printable(p));
    ExpectAtEverySplit("A" + p + "B", "A" + p + "B", 0);
  }
}

TEST(TerminalFilterTest, Utf8TextIsUnchanged) {
  // Continuation bytes 0x80..0x9f inside characters are text, not C1 controls, even when what
  // follows would make a report request of them ("věc" is U+011B then 'c'; "ŝ52;" is U+015D).
  std::string text =
      "h\xc3\xa9llo w\xc3\xb6rld \xe2\x80\x94 v\xc4\x9b"
      "c \xc4\x9b"
      "6n \xc5\x9d"
      "52;c;x "
      "\xc5\x9c\xc5\x91\xc4\x9f \xe2\x82\xac \xf0\x9d\x84\x9e \xe6\x97\xa5\xe6\x9c\xac "
      "\xf0\x9f\x99\x82 \xef\xbf\xbd";
  ExpectAtEverySplit(text, text, 0);
}

TEST(TerminalFilterTest, InvalidUtf8BecomesTheReplacementCharacter) {
  const std::string r = "\xef\xbf\xbd";
  // A lone byte, a stray continuation (a C1 control only to an 8-bit terminal), overlong
  // forms of ESC (an ESC the filter would not see), a surrogate, a cut character.
  ExpectAtEverySplit(
      "a\xff"
      "b",
      "a" + r + "b", 0);
  ExpectAtEverySplit(
      "a\x9b"
      "6n",
      "a" + r + "6n", 0);
  ExpectAtEverySplit(
      "a\xc0\x9b"
      "6n",
      "a" + r + r + "6n", 0);
  ExpectAtEverySplit(
      "a\xe0\x80\x9b"
      "6n",
      "a" + r + r + r + "6n", 0);
  ExpectAtEverySplit("a\xed\xa0\x80z", "a" + r + r + r + "z", 0);
  ExpectAtEverySplit("a\xe2\x82z", "a" + r + "z", 0);
}

TEST(TerminalFilterTest, OverLongSequencesAreDroppedWhole) {
  std::string csi = "\x1b[" + std::string(300, '1') + "m";
  ExpectAtEverySplit("A" + csi + "B", "AB", 1);
  std::string params = "\x1b[";
  for (int i = 0; i < 200; ++i) params += "1;";
  Filtered r = Filter({"A" + params + "mB"});
  EXPECT_EQ(r.out, "AB");
  ASSERT_EQ(r.kinds.size(), 1u);
  EXPECT_EQ(r.kinds[0], "over-long sequence");
  // A title is read up to the string bound; one past it is dropped to its terminator.
  std::string fits = "\x1b]0;" + std::string(TerminalFilter::kMaxString - 10, 't') + "\x07";
  EXPECT_EQ(Filter({"A" + fits + "B"}).out, "A" + fits + "B");
  std::string too_long = "\x1b]0;" + std::string(TerminalFilter::kMaxString + 1, 't') + "\x07";
  r = Filter({"A" + too_long + "B"});
  EXPECT_EQ(r.out, "AB");
  EXPECT_EQ(r.kinds, std::vector<std::string>{"over-long sequence"});
  // A device control string (a sixel image) is dropped without being kept, however long.
  std::string dcs = "\x1bPq" + std::string(1 << 20, '~') + "\x1b\\";
  r = Filter({"A" + dcs + "B"});
  EXPECT_EQ(r.out, "AB");
  EXPECT_EQ(r.kinds, std::vector<std::string>{"DCS (device control string)"});
}

TEST(TerminalFilterTest, UnterminatedSequencesNeverReachTheTerminal) {
  for (const std::string& start :
       {std::string("\x1b]0;title"), std::string("\x1b]52;c;aGk="), std::string("\x1b[6"),
        std::string("\x1bP$q"), std::string("\x1b"), std::string("\x1b("), std::string("\xc2\x9b"),
        std::string("\xc2")}) {
    SCOPED_TRACE(Printable(start));
    Filtered held = Filter({"A" + start}, {}, /*end=*/false);
    EXPECT_EQ(held.out, "A");
    Filtered ended = Filter({"A" + start}, {}, /*end=*/true);
    EXPECT_EQ(ended.out, "A");
  }
  Filtered r = Filter({"A\x1b]0;title"});
  EXPECT_EQ(r.kinds, std::vector<std::string>{"unterminated sequence"});
}

TEST(TerminalFilterTest, InterruptionsAndControlsInsideSequences) {
  // CAN and SUB cancel the sequence in the terminal too; they pass.
  ExpectAtEverySplit("\x1b[6\x18n", "\x18n", 1);
  ExpectAtEverySplit(
      "\x1b]52;c;x\x1a"
      "B",
      "\x1a"
      "B",
      1);
  // A new ESC or a C1 control ends an unfinished sequence, which is dropped.
  ExpectAtEverySplit("\x1b]0;abc\x1b[31mB", "\x1b[31mB", 1);
  ExpectAtEverySplit(
      "\x1b]0;abc\xc2\x9b"
      "31mB",
      "\xc2\x9b"
      "31mB",
      1);
  ExpectAtEverySplit("\x1b[12\x1b[6nB", "B", 2);
  // ENQ is taken out wherever it stands; the title around it passes.
  ExpectAtEverySplit("\x1b]0;ti\x05tle\x07", "\x1b]0;title\x07", 1);
  // A character beyond ASCII inside a control sequence ends it: the character is text.
  ExpectAtEverySplit("\x1b[6\xc3\xa9n", "\xc3\xa9n", 1);
}

TEST(TerminalFilterTest, DropsAreReportedWithTheirKind) {
  Filtered r = Filter({"\x1b]52;c;aGk=\x07\x1b[6n\x1b[21t\x1bP$qm\x1b\\\x1b[c\x05"});
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.kinds,
            (std::vector<std::string>{
                "OSC 52 (clipboard)", "DSR (status or cursor position report request)",
                "XTWINOPS (window report, move, resize, iconify)", "DCS (device control string)",
                "DA (device attributes request)", "ENQ (answerback)"}));
  TerminalFilter f;
  std::string head;
  f.set_on_drop([&head](std::string_view, std::string_view h) { head = std::string(h); });
  std::string out;
  f.Feed("\x1b]52;c;" + std::string(1000, 'A') + "\x07", &out);
  EXPECT_EQ(head.substr(0, 8), "\x1b]52;c;A");
  EXPECT_LE(head.size(), 48u);
}

// vim's start and end on a 256-colour terminal, its report requests left out: every byte
// passes, and the modes it set are followed.
TEST(TerminalFilterTest, FullScreenProgramOutputPassesByteForByte) {
  std::string screen =
      "\x1b[?1049h\x1b[22;0;0t\x1b[>4;2m\x1b[?1h\x1b=\x1b[H\x1b[2J\x1b[?2004h\x1b[?1004h"
      "\x1b[1;24r\x1b[?12h\x1b[?12l\x1b[22;2t\x1b[22;1t\x1b[27m\x1b[29m\x1b[m\x1b[H\x1b[2J"
      "\x1b[?25l\x1b[2 q\x1b[1;1H\x1b[38;5;208m  1 \x1b[m#include <stdio.h>\r\n"
      "\x1b[38;5;208m  2 \x1b[m\x1b[38;2;175;135;255mint\x1b[m main() { "
      "\x1b[48;5;236mreturn\x1b[m 0; }\x1b[3;1H\x1b[94m~                              "
      "\x1b[m\r\n\x1b[94m~\x1b[m\x1b[24;63H1,1\x1b[11CAll\x1b[1;5H\x1b[?25h"
      "\x1b]2;main.c (~/src) - VIM\x07\x1b]1;main.c\x07\x1b[?1000h\x1b[?1006h"
      "\x1b[1;23r\x1b[23;1H\n\x1b[r\x1b[22;1H\x1b[K\x1b[1;1H\x1b[2;24r\x1b[2;1H\x1bM\x1b[r"
      "\x1b[?2026h\x1b[5;1H\x1b[1m\x1b[4:3m\x1b[58;5;1merror\x1b[m\x1b[?2026l"
      "\x1b(0lqqk\x1b(B\x1b[2K\x1b[3@x\x1b[2P\x1b[?1000l\x1b[?1006l\x1b[?1004l";
  std::string leave =
      "\x1b[?2004l\x1b[>4;m\x1b[23;2t\x1b[23;1t\x1b[?1l\x1b>\x1b[?1049l\x1b[23;0;0t";
  ExpectAtEverySplit(screen + leave, screen + leave, 0);
  TerminalFilter f;
  std::string out;
  f.Feed(screen, &out);
  EXPECT_EQ(f.modes().Get(1049), std::optional<bool>(true));
  EXPECT_EQ(f.modes().Get(25), std::optional<bool>(true));
  EXPECT_EQ(f.modes().Get(1000), std::optional<bool>(false));
  f.Feed("\x1b[?25l\x1b[?1002h", &out);
  EXPECT_EQ(f.modes().Get(25), std::optional<bool>(false));
  EXPECT_EQ(f.modes().Get(1002), std::optional<bool>(true));
  f.Feed(leave, &out);
  EXPECT_EQ(f.modes().Get(1049), std::optional<bool>(false));
  // A dropped sequence changes nothing; a full reset clears everything.
  f.Feed("\x1b[?3;25h", &out);
  EXPECT_EQ(f.modes().Get(25), std::optional<bool>(false));
  f.Feed(
      "\x1b"
      "c",
      &out);
  EXPECT_EQ(f.modes().Get(25), std::nullopt);
  EXPECT_EQ(f.modes().Get(1002), std::nullopt);
}

TEST(TerminalFilterTest, RawPassesEverythingAtOnceAndStillFollowsModes) {
  TerminalFilter::Options raw;
  raw.pass_all = true;
  for (const std::string& d : Dropped()) {
    Filtered r = Filter({"A" + d.substr(0, 1), d.substr(1) + "B"}, raw);
    EXPECT_EQ(r.out, "A" + d + "B") << Printable(d);
    EXPECT_TRUE(r.kinds.empty());
  }
  TerminalFilter f(raw);
  std::string out;
  f.Feed("\x1b[?1049h\x1b[?3;25l\xff", &out);
  EXPECT_EQ(out, "\x1b[?1049h\x1b[?3;25l\xff");
  EXPECT_EQ(f.modes().Get(1049), std::optional<bool>(true));
  EXPECT_EQ(f.modes().Get(25), std::optional<bool>(false));
  EXPECT_EQ(f.dropped(), 0u);
}

TEST(TerminalFilterTest, EightBitTerminals) {
  TerminalFilter::Options eight;
  eight.encoding = TerminalEncoding::kEightBit;
  ExpectAtEverySplit(
      "A\x9b"
      "6nB",
      "AB", 1, eight);
  ExpectAtEverySplit(
      "A\x9d"
      "52;c;aGk=\x9c"
      "B",
      "AB", 1, eight);
  ExpectAtEverySplit(
      "A\x90$qm\x9c"
      "B",
      "AB", 1, eight);
  ExpectAtEverySplit(
      "A\x9a"
      "B",
      "AB", 1, eight);
  ExpectAtEverySplit(
      "A\x9b"
      "1mB",
      "A\x9b"
      "1mB",
      0, eight);
  ExpectAtEverySplit("caf\xe9 \xa9 \xff", "caf\xe9 \xa9 \xff", 0, eight);  // Latin-1 text
}

TEST(TerminalFilterTest, EncodingFromTheLocale) {
  auto enc = TerminalEncodingFromLocale;
  EXPECT_EQ(enc(nullptr, nullptr, nullptr), TerminalEncoding::kUtf8);
  EXPECT_EQ(enc(nullptr, nullptr, "C"), TerminalEncoding::kUtf8);
  EXPECT_EQ(enc(nullptr, nullptr, "en_US.UTF-8"), TerminalEncoding::kUtf8);
  EXPECT_EQ(enc(nullptr, nullptr, "de_DE.utf8@euro"), TerminalEncoding::kUtf8);
  EXPECT_EQ(enc(nullptr, nullptr, "de_DE.ISO-8859-1"), TerminalEncoding::kEightBit);
  EXPECT_EQ(enc(nullptr, nullptr, "de_DE@euro"), TerminalEncoding::kEightBit);
  EXPECT_EQ(enc("", "ru_RU.KOI8-R", "en_US.UTF-8"), TerminalEncoding::kEightBit);
  EXPECT_EQ(enc("C.UTF-8", "ru_RU.KOI8-R", nullptr), TerminalEncoding::kUtf8);
}

}  // namespace
}  // namespace ward::supervisor
