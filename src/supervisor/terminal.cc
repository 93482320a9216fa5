#include "supervisor/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

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

void TerminalPrompter::Write(const std::string& s) const {
  const char* p = s.data();
  size_t n = s.size();
  while (n > 0) {
    ssize_t w = write(out_fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void TerminalPrompter::Ask(const std::string& question, const std::vector<PromptChoice>& choices,
                           std::function<void(char key)> answer) {
  // The terminal is in raw mode: "\r\n" starts a fresh line.
  std::string text = "\r\n[ward] " + question + " [";
  for (size_t i = 0; i < choices.size(); ++i) {
    text += (i ? ", " : "") + std::string(1, choices[i].key) + " = " + choices[i].label;
  }
  text += "] ";
  answer_ = std::move(answer);
  Write(text);
}

void TerminalPrompter::Cancel() {
  if (!answer_) return;
  answer_ = nullptr;
  Write("(answered elsewhere)\r\n");
}

bool TerminalPrompter::OnInput(const char* data, size_t n) {
  if (!answer_ || n == 0) return false;
  char key = data[0];
  std::function<void(char)> answer = std::move(answer_);
  answer_ = nullptr;
  Write(std::string(1, (key >= 0x20 && key < 0x7f) ? key : '?') + "\r\n");
  answer(key == '\0' ? '?' : key);  // '\0' means "cannot answer" to the channel
  return true;
}

void TerminalPrompter::OnInputClosed() {
  if (!answer_) return;
  std::function<void(char)> answer = std::move(answer_);
  answer_ = nullptr;
  answer('\0');
}

}  // namespace ward::supervisor
