// When a terminal is attached, the command gets a pty of the sandbox's own (its private
// devpts), relayed by the supervisor; it never holds the user's terminal.
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>

#include "harness.h"

namespace ward::test {
namespace {

class TerminalTest : public SandboxTest {
 protected:
  // Runs ward with a fresh pty as its terminal; writes `input` after a moment; returns what
  // appeared on the terminal.
  std::string RunOnPty(const std::vector<std::string>& cmd, const std::string& input, int* status) {
    int master = -1, slave = -1;
    struct winsize ws = {40, 100, 0, 0};
    if (openpty(&master, &slave, nullptr, nullptr, &ws) != 0) {
      ADD_FAILURE() << "openpty";
      return "";
    }
    RunOptions o = Defaults();
    std::vector<std::string> argv = {WardBin(), "run", "-r", StageDir(), "--"};
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    pid_t pid = SpawnOnTerminal(argv, o, master, slave);
    close(slave);
    std::string out;
    auto start = std::chrono::steady_clock::now();
    bool sent = input.empty();
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
      struct pollfd p = {master, POLLIN, 0};
      int n = poll(&p, 1, 100);
      if (n > 0) {
        char buf[4096];
        ssize_t got = read(master, buf, sizeof buf);
        if (got <= 0) break;
        out.append(buf, got);
      }
      if (!sent && out.find("ready") != std::string::npos) {
        ssize_t w = write(master, input.data(), input.size());
        (void)w;
        sent = true;
      }
    }
    close(master);
    waitpid(pid, status, 0);
    return out;
  }
};

TEST_F(TerminalTest, CommandGetsItsOwnPty) {
  int status = 0;
  std::string out = RunOnPty({ProbeBin(), "isatty"}, "", &status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_NE(out.find("ok 111"), std::string::npos) << out;
  out = RunOnPty({"/bin/sh", "-c", "readlink /proc/self/fd/0; tty"}, "", &status);
  EXPECT_NE(out.find("/dev/pts/0"), std::string::npos) << out;  // the sandbox's devpts
  out = RunOnPty({ProbeBin(), "tiocgwinsz"}, "", &status);
  EXPECT_NE(out.find("ok TIOCGWINSZ"), std::string::npos) << out;
}

TEST_F(TerminalTest, InputIsRelayedAndInjectionIsDenied) {
  int status = 0;
  std::string out =
      RunOnPty({"/bin/sh", "-c", "echo ready; read line; echo \"got:$line\""}, "hello\n", &status);
  EXPECT_NE(out.find("got:hello"), std::string::npos) << out;
  out = RunOnPty({ProbeBin(), "tiocsti"}, "", &status);
  EXPECT_NE(out.find("err EPERM TIOCSTI"), std::string::npos) << out;
  out = RunOnPty({ProbeBin(), "dev-tty"}, "", &status);
  EXPECT_NE(out.find("ok /dev/tty"), std::string::npos) << out;  // its own terminal
}

TEST_F(TerminalTest, WindowSizeFollowsTheTerminal) {
  int status = 0;
  std::string out = RunOnPty({"/bin/sh", "-c", "stty size"}, "", &status);
  EXPECT_NE(out.find("40 100"), std::string::npos) << out;
}

}  // namespace
}  // namespace ward::test
