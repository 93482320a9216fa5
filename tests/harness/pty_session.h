// A program on a terminal of the test's own: the test holds the pty's master, reads what the
// terminal would show and types into it (tests/escape/terminal_*_test.cc).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "harness.h"

namespace ward::test {

class PtySession {
 public:
  PtySession(const std::vector<std::string>& argv, const RunOptions& o, unsigned short rows = 40,
             unsigned short cols = 120) {
    int slave = -1;
    struct winsize ws = {rows, cols, 0, 0};
    if (openpty(&master_, &slave, nullptr, nullptr, &ws) != 0) {
      ADD_FAILURE() << "openpty";
      return;
    }
    pid_ = SpawnOnTerminal(argv, o, master_, slave);
    close(slave);
  }
  ~PtySession() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) close(master_);
  }
  PtySession(const PtySession&) = delete;
  PtySession& operator=(const PtySession&) = delete;

  // Called after each read with everything shown so far (a test plays a terminal that answers).
  std::function<void(PtySession&)> on_read;

  const std::string& output() const { return out_; }
  bool ended() const { return eof_; }

  // Reads until `done(output)` holds, the terminal closes, or `timeout` passes.
  bool WaitFor(const std::function<bool(const std::string&)>& done,
               std::chrono::milliseconds timeout) {
    auto until = std::chrono::steady_clock::now() + timeout;
    while (!done(out_)) {
      if (eof_ || std::chrono::steady_clock::now() >= until) return done(out_);
      ReadOnce(50);
    }
    return true;
  }
  bool WaitForText(const std::string& text, std::chrono::milliseconds timeout) {
    return WaitFor([&](const std::string& o) { return o.find(text) != std::string::npos; },
                   timeout);
  }
  // Reads for `d`.
  void Pump(std::chrono::milliseconds d) {
    WaitFor([](const std::string&) { return false; }, d);
  }
  void Type(const std::string& s) {
    ssize_t w = write(master_, s.data(), s.size());
    EXPECT_EQ(w, static_cast<ssize_t>(s.size()));
  }
  // Reads to the end and reaps the program: its exit code, -1 when it had to be killed.
  int Finish(std::chrono::milliseconds timeout) {
    WaitFor([](const std::string&) { return false; }, timeout);
    int status = 0;
    if (!eof_) kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
    if (!eof_) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  void ReadOnce(int ms) {
    struct pollfd p = {master_, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return;
    char buf[4096];
    ssize_t n = read(master_, buf, sizeof buf);
    if (n <= 0) {
      eof_ = true;  // EIO: the last holder of the terminal closed it
      return;
    }
    out_.append(buf, static_cast<size_t>(n));
    if (on_read) on_read(*this);
  }

  int master_ = -1;
  pid_t pid_ = -1;
  std::string out_;
  bool eof_ = false;
};

}  // namespace ward::test
