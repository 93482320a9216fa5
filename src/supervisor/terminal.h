// The supervisor owns the user's terminal. When any of fds 0, 1, 2 is a terminal the command
// gets the sandbox's own pty (from its private devpts) and the supervisor relays bytes between
// it and the real terminal, which it puts in raw mode so the pty's line discipline does the
// work. The command never holds the user's terminal (no TIOCSTI, no reading its keystrokes).
#pragma once

#include <sys/ioctl.h>
#include <termios.h>

#include "common/unique_fd.h"

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

}  // namespace ward::supervisor
