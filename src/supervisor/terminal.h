// The supervisor owns the user's terminal. When any of fds 0, 1, 2 is a terminal the command
// gets the sandbox's own pty (from its private devpts) and the supervisor relays bytes between
// it and the real terminal, which it puts in raw mode so the pty's line discipline does the
// work. The command never holds the user's terminal (no TIOCSTI, no reading its keystrokes),
// its output reaches the terminal through the filter (terminal_filter.h), and while ward asks
// a question on the terminal the command's output waits.
#pragma once

#include <sys/ioctl.h>
#include <termios.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "supervisor/approvals/prompt.h"
#include "supervisor/terminal_filter.h"

namespace ward::supervisor {

class TerminalState {
 public:
  // Records which fds are terminals and the terminal's settings.
  void Capture();
  bool any() const { return tty_[0] || tty_[1] || tty_[2]; }
  bool is_tty(int fd) const { return fd >= 0 && fd < 3 && tty_[fd]; }
  // Raw mode on the input terminal (fd 0) for the duration of the run.
  void MakeRaw();
  void Restore();
  // Copies the terminal's window size onto the pty master.
  void SyncWindowSize(int pty_master) const;
  // The settings the sandbox's pty starts with.
  bool termios(struct termios* out) const;
  bool winsize(struct winsize* out) const;
  // The fd that receives the pty's output: 1 if a terminal, else 2 if a terminal, else -1.
  int output_fd() const { return tty_[1] ? 1 : (tty_[2] ? 2 : -1); }

 private:
  bool tty_[3] = {false, false, false};
  int ref_fd_ = -1;  // a terminal fd to read settings from
  bool have_termios_ = false;
  bool raw_ = false;
  struct termios saved_ = {};
};

// Writes all of `s` to the terminal (waiting out a full non-blocking fd); false on an error.
bool WriteToTerminal(int fd, std::string_view s);

// Makes the pty one row shorter, so that the program on it is told (SIGWINCH) and repaints;
// the caller puts the real size back (TerminalState::SyncWindowSize) a moment later.
void ShrinkPty(int pty_master);

// The sandbox's pty output on its way to the terminal: through the filter (unless raw), and
// held while ward asks a question there. What is held is kept, up to a bound; at the bound the
// relay stops reading the pty (accepting() is false) and the command blocks on its writes.
// Nothing is dropped for being held.
class PtyOutput {
 public:
  static constexpr size_t kMaxHeld = 256 * 1024;

  PtyOutput(int out_fd, TerminalFilter::Options options);
  void set_on_drop(TerminalFilter::DropFn fn) { filter_.set_on_drop(std::move(fn)); }
  // Called after Resume() wrote what was held (the relay reads the pty again).
  void set_on_resume(std::function<void()> fn) { on_resume_ = std::move(fn); }

  // Writes `data` (filtered) now, or keeps it while held.
  void Relay(std::string_view data);
  bool accepting() const { return !held_ || kept_.size() < kMaxHeld; }
  bool held() const { return held_; }
  void Hold();
  void Resume();
  // The pty's output ended: an incomplete sequence still held by the filter is dropped.
  void End();
  // The modes the terminal has from what was written (for the prompt's restore).
  const TerminalModes& modes() const { return filter_.modes(); }

 private:
  int fd_;
  TerminalFilter filter_;
  bool held_ = false;
  std::string kept_;
  std::function<void()> on_resume_;
};

// What ward writes before a question so that it stands on its own whatever the command left
// the terminal in: any half-written sequence cancelled, VT52 mode, printer controller mode and
// a locked keyboard undone (--raw-terminal lets them through), synchronized output ended, the main
// display and screen (not the status line, not the alternate screen), mouse and focus reports
// off, the keyboard's plain mode, no margins or scroll region, autowrap on, no insert mode, no
// reverse video, plain attributes (the default colours), ASCII characters, the cursor shown; then
// a fresh, cleared line at the bottom of the screen. Nothing the command wrote can then be
// below the question.
extern const std::string_view kPromptPreamble;
// What ward writes after the question to give the program back what the preamble changed (the
// alternate screen, mouse and focus reports, cursor, autowrap, origin mode, the keyboard mode),
// from the modes its relayed output set.
std::string PromptEpilogue(const TerminalModes& modes);

// Approval questions on the supervisor's own terminal (the sandbox has its own pty, so this
// never fights the command for input). While a question is open the input relay hands every
// byte to OnInput instead of the pty, and the pty's output is held.
class TerminalPrompter final : public Prompter {
 public:
  // `in_fd`: the terminal's input (what was typed before the question was drawn is flushed);
  // `out_fd`: where the question is written; `output`: the pty relay (null: none yet).
  TerminalPrompter(int in_fd, int out_fd, PtyOutput* output)
      : in_fd_(in_fd), out_fd_(out_fd), output_(output) {}
  void Ask(const PromptQuestion& question, AnswerFn answer) override;
  void Cancel() override;
  bool asking() const { return static_cast<bool>(answer_); }
  // Input from the real terminal while asking; returns false when no question is open (the
  // relay then forwards the bytes to the pty).
  bool OnInput(const char* data, size_t n);
  // The terminal's input ended: the open question is left to the other channels.
  void OnInputClosed();
  // The run is over: the open question is closed on the screen, unanswered.
  void Abandon(std::string_view why);

  // Terminal input as keys: escape sequences (mouse and focus reports, bracketed paste marks,
  // late answers to queries) are skipped; a kitty keyboard report (CSI code u) and the
  // application keypad (SS3 p..y, M) are their keys.
  class Keys {
   public:
    void Feed(std::string_view in, std::string* keys);
    void Reset();

   private:
    enum class State { kText, kEsc, kCsi, kSs3, kString, kStringEsc, kSkip };
    void EndCsi(char final, std::string* keys);
    State state_ = State::kText;
    std::string csi_;
    int skip_ = 0;
  };

 private:
  void Key(char c);
  void Close(const std::string& outcome, std::optional<std::string> typed, bool answer);
  int in_fd_;
  int out_fd_;
  PtyOutput* output_;
  AnswerFn answer_;
  uint64_t asked_ = 0;  // questions asked so far: the answer belongs to the one on the screen
  std::string code_;
  std::string typed_;
  Keys keys_;
};

}  // namespace ward::supervisor
