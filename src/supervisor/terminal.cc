#include "supervisor/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

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

}  // namespace ward::supervisor
