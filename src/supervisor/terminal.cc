#include "supervisor/terminal.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

namespace ward::supervisor {

void TerminalState::Capture() {
  for (int fd = 0; fd < 3; ++fd) {
    tty_[fd] = isatty(fd) == 1;
    if (tty_[fd] && ref_fd_ < 0) ref_fd_ = fd;
  }
  if (ref_fd_ >= 0) have_termios_ = tcgetattr(ref_fd_, &saved_) == 0;
}

void TerminalState::MakeRaw() {
  if (!tty_[0] || !have_termios_ || raw_) return;
  struct termios raw = saved_;
  cfmakeraw(&raw);
  // Output post-processing stays with the pty inside; the real terminal only passes bytes.
  if (tcsetattr(0, TCSADRAIN, &raw) == 0) raw_ = true;
}

void TerminalState::Restore() {
  if (raw_) {
    tcsetattr(0, TCSADRAIN, &saved_);
    raw_ = false;
  }
}

void TerminalState::SyncWindowSize(int pty_master) const {
  if (ref_fd_ < 0) return;
  struct winsize ws;
  if (ioctl(ref_fd_, TIOCGWINSZ, &ws) == 0) ioctl(pty_master, TIOCSWINSZ, &ws);
}

bool TerminalState::termios(struct termios* out) const {
  if (!have_termios_) return false;
  *out = saved_;
  return true;
}

bool TerminalState::winsize(struct winsize* out) const {
  return ref_fd_ >= 0 && ioctl(ref_fd_, TIOCGWINSZ, out) == 0;
}

bool WriteToTerminal(int fd, std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        struct pollfd pf = {fd, POLLOUT, 0};
        poll(&pf, 1, 1000);
        continue;
      }
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

void ShrinkPty(int pty_master) {
  struct winsize ws;
  if (ioctl(pty_master, TIOCGWINSZ, &ws) != 0 || ws.ws_row < 2) return;
  ws.ws_row -= 1;
  ioctl(pty_master, TIOCSWINSZ, &ws);
}

PtyOutput::PtyOutput(int out_fd, TerminalFilter::Options options) : fd_(out_fd), filter_(options) {}

void PtyOutput::Relay(std::string_view data) {
  if (held_) {
    kept_.append(data);
    return;
  }
  std::string out;
  filter_.Feed(data, &out);
  if (!out.empty()) WriteToTerminal(fd_, out);
}

void PtyOutput::Hold() { held_ = true; }

void PtyOutput::Resume() {
  if (!held_) return;
  held_ = false;
  std::string kept = std::move(kept_);
  kept_.clear();
  if (!kept.empty()) Relay(kept);
  if (on_resume_) on_resume_();
}

void PtyOutput::End() { filter_.End(); }

const std::string_view kPromptPreamble =
    "\x18"                                                  // CAN: a half-sent sequence ends
    "\x1b<"                                                 // out of VT52 mode (raw output)
    "\x1b[4i\x1b[2l"                                        // no printer, keyboard unlocked
    "\x1b[?2026l"                                           // synchronized output ended
    "\x1b[0$}"                                              // DECSASD: the main display
    "\x1b[?1049l\x1b[?1047l\x1b[?47l"                       // the main screen
    "\x1b[?9l\x1b[?1000l\x1b[?1001l\x1b[?1002l\x1b[?1003l"  // no mouse reports
    "\x1b[?1004l"                                           // no focus reports
    "\x1b[>0u"                                              // kitty keyboard: plain keys
    "\x1b[?69l\x1b[r\x1b[?6l"                               // no margins, region, origin mode
    "\x1b[?7h\x1b[4l\x1b[?5l\x1b[0m"                        // autowrap, replace, normal video
    "\x1b(B\x0f"                                            // ASCII, in G0
    "\x1b[?25h"                                             // the cursor shown
    "\x1b[9999;1H\r\n\x1b[2K";                              // a fresh line at the bottom

std::string PromptEpilogue(const TerminalModes& modes) {
  std::string s = "\x1b[<u";  // pops the keyboard mode the preamble pushed
  auto set = [&s](int mode, bool on) { s += "\x1b[?" + std::to_string(mode) + (on ? "h" : "l"); };
  for (int alt : {1049, 1047, 47}) {
    if (modes.Get(alt).value_or(false)) {
      set(alt, true);
      break;
    }
  }
  for (int report : {9, 1000, 1001, 1002, 1003, 1004}) {
    if (modes.Get(report).value_or(false)) set(report, true);
  }
  if (modes.Get(6).value_or(false)) set(6, true);
  if (!modes.Get(7).value_or(true)) set(7, false);
  if (!modes.Get(25).value_or(true)) set(25, false);
  return s;
}

void TerminalPrompter::Ask(const PromptQuestion& question, AnswerFn answer) {
  ++asked_;
  answer_ = std::move(answer);
  code_ = question.code;
  typed_.clear();
  keys_.Reset();
  if (output_) output_->Hold();
  // What was typed before the question is on the screen is not its answer. (A key typed
  // between this and the drawing cannot allow: the code is not known before it is shown.)
  tcflush(in_fd_, TCIFLUSH);
  // The terminal is in raw mode: "\r\n" starts a fresh line.
  std::string text(kPromptPreamble);
  text +=
      "[ward] " + question.request + "\r\n[ward] " + question.instructions + "\r\n[ward] answer: ";
  WriteToTerminal(out_fd_, text);
}

void TerminalPrompter::Cancel() {
  if (!asking()) return;
  Close("(withdrawn: answered elsewhere or timed out)", std::nullopt, /*answer=*/false);
}

bool TerminalPrompter::OnInput(const char* data, size_t n) {
  if (!asking()) return false;
  std::string keys;
  keys_.Feed(std::string_view(data, n), &keys);
  // The rest of the read after the answer is dropped: it was typed before any next question.
  const uint64_t question = asked_;
  for (char c : keys) {
    if (!asking() || asked_ != question) break;
    Key(c);
  }
  return true;
}

void TerminalPrompter::OnInputClosed() {
  if (!asking()) return;
  Close("(no input: left to the other channels)", std::nullopt, /*answer=*/true);
}

void TerminalPrompter::Abandon(std::string_view why) {
  if (!asking()) return;
  Close("(" + std::string(why) + ")", std::nullopt, /*answer=*/false);
}

// One key of the answer: the code's keys are echoed, Backspace erases, Enter ends the answer,
// and any other key ends it where it stands (it cannot be part of the code: a denial).
void TerminalPrompter::Key(char c) {
  if (c == '\r' || c == '\n') {
    return Close(JudgeTyped(typed_, code_).outcome, typed_, /*answer=*/true);
  }
  if (c == 0x7f || c == 0x08) {
    if (!typed_.empty()) {
      typed_.pop_back();
      WriteToTerminal(out_fd_, "\b \b");
    }
    return;
  }
  if (IsAnswerKey(c)) {
    if (typed_.size() < 16) {
      typed_.push_back(c);
      WriteToTerminal(out_fd_, std::string(1, c));
    }
    return;
  }
  typed_.push_back(c);
  if (c >= 0x20 && c < 0x7f) WriteToTerminal(out_fd_, std::string(1, c));
  Close(JudgeTyped(typed_, code_).outcome, typed_, /*answer=*/true);
}

void TerminalPrompter::Close(const std::string& outcome, std::optional<std::string> typed,
                             bool answer) {
  AnswerFn fn = std::move(answer_);
  answer_ = nullptr;
  std::string text = "  " + outcome + "\r\n";
  text += PromptEpilogue(output_ ? output_->modes() : TerminalModes());
  WriteToTerminal(out_fd_, text);
  if (output_) output_->Resume();
  if (answer && fn) fn(std::move(typed));  // may ask the next question
}

void TerminalPrompter::Keys::Reset() {
  state_ = State::kText;
  csi_.clear();
  skip_ = 0;
}

void TerminalPrompter::Keys::Feed(std::string_view in, std::string* keys) {
  for (char ch : in) {
    unsigned char b = static_cast<unsigned char>(ch);
    switch (state_) {
      case State::kText:
        if (b == 0x1b) {
          state_ = State::kEsc;
        } else {
          keys->push_back(ch);
        }
        break;
      case State::kEsc:
        if (b == '[') {
          state_ = State::kCsi;
          csi_.clear();
        } else if (b == 'O') {
          state_ = State::kSs3;
        } else if (b == ']' || b == 'P' || b == '_' || b == '^' || b == 'X') {
          state_ = State::kString;
        } else if (b != 0x1b) {
          state_ = State::kText;  // Alt with a key: no part of an answer
        }
        break;
      case State::kSs3:  // the application keypad: digits and Enter
        if (b >= 'p' && b <= 'y') keys->push_back(static_cast<char>('0' + (b - 'p')));
        if (b == 'M') keys->push_back('\r');
        state_ = State::kText;
        break;
      case State::kCsi:
        if (b >= 0x40 && b <= 0x7e) {
          EndCsi(ch, keys);
        } else if (csi_.size() < 64) {
          csi_.push_back(ch);
        }
        break;
      case State::kString:
        if (b == 0x07) state_ = State::kText;
        if (b == 0x1b) state_ = State::kStringEsc;
        break;
      case State::kStringEsc:
        state_ = b == '\\' ? State::kText : State::kString;
        break;
      case State::kSkip:
        if (--skip_ <= 0) state_ = State::kText;
        break;
    }
  }
  // A terminal sends a report or key sequence in one piece: what is left open at the end of a
  // read was a key of its own (Escape, Alt-[), not the start of a sequence that eats the answer.
  Reset();
}

void TerminalPrompter::Keys::EndCsi(char final, std::string* keys) {
  state_ = State::kText;
  if (final == 'M' && csi_.empty()) {  // an X10 mouse report: three bytes follow
    state_ = State::kSkip;
    skip_ = 3;
    return;
  }
  if (final != 'u' || csi_.empty() || !std::isdigit(static_cast<unsigned char>(csi_[0]))) return;
  // kitty keyboard: CSI code[:alternates] ; modifiers[:event] ; text u
  long code = 0, mods = 1, event = 1;
  size_t i = 0;
  while (i < csi_.size() && std::isdigit(static_cast<unsigned char>(csi_[i]))) {
    code = std::min(code * 10 + (csi_[i++] - '0'), 0x10ffffL);
  }
  size_t semi = csi_.find(';');
  if (semi != std::string::npos) {
    i = semi + 1;
    long v = 0;
    bool any = false;
    while (i < csi_.size() && std::isdigit(static_cast<unsigned char>(csi_[i]))) {
      v = std::min(v * 10 + (csi_[i++] - '0'), 1000L);
      any = true;
    }
    if (any) mods = v;
    if (i < csi_.size() && csi_[i] == ':') {
      ++i;
      event = 0;
      while (i < csi_.size() && std::isdigit(static_cast<unsigned char>(csi_[i]))) {
        event = std::min(event * 10 + (csi_[i++] - '0'), 1000L);
      }
    }
  }
  if (event == 3) return;                                           // a key released
  if (code >= 57399 && code <= 57408) code = '0' + (code - 57399);  // keypad digits
  if (code == 57414) code = 13;                                     // keypad Enter
  long m = mods > 0 ? mods - 1 : 0;                                 // shift 1, alt 2, ctrl 4
  if (code == 13) return keys->push_back('\r');
  if (code == 127 || code == 8) return keys->push_back(static_cast<char>(code));
  if (m & 4) {
    if (code == 'c') keys->push_back(0x03);
    if (code == 'd') keys->push_back(0x04);
    return;
  }
  if (m & ~1L) return;  // alt, super...: no part of an answer
  if (code < 0x20 || code >= 0x7f) return keys->push_back('?');
  char c = static_cast<char>(code);
  if (m & 1)
    c = std::isalpha(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '?';
  keys->push_back(c);
}

}  // namespace ward::supervisor
