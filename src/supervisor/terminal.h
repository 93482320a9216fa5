// The supervisor owns the user's terminal. When any of fds 0, 1, 2 is a terminal the command
// gets the sandbox's own pty (from its private devpts) and the supervisor relays bytes between
// it and the real terminal, which it puts in raw mode so the pty's line discipline does the
// work. The command never holds the user's terminal (no TIOCSTI, no reading its keystrokes).
#pragma once

#include <sys/ioctl.h>
#include <termios.h>

#include <functional>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "supervisor/approvals_prompt.h"

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

// Approval questions on the supervisor's own terminal (the sandbox has its own pty, so this
// never fights the command for input). While a question is open the input relay hands every
// byte to OnInput instead of the pty: the first key answers, the rest of that read is dropped.
class TerminalPrompter final : public Prompter {
 public:
  explicit TerminalPrompter(int out_fd) : out_fd_(out_fd) {}
  void Ask(const std::string& question, const std::vector<PromptChoice>& choices,
           std::function<void(char key)> answer) override;
  void Cancel() override;
  bool asking() const { return static_cast<bool>(answer_); }
  // Input from the real terminal while asking; returns false when no question is open (the
  // relay then forwards the bytes to the pty).
  bool OnInput(const char* data, size_t n);
  // The terminal's input ended: the open question is left to the other channels.
  void OnInputClosed();

 private:
  void Write(const std::string& s) const;
  int out_fd_;
  std::function<void(char)> answer_;
};

}  // namespace ward::supervisor
