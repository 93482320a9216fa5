#include "common/descriptors.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace ward {
namespace {

// In a child (the test's own descriptors stay): the kept ones stay open, every other one from 3
// up is closed, and stdio then leads to /dev/null.
TEST(Descriptors, OnlyTheKeptOnesStayAndStdioGoesToDevNull) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int fds[6];
    for (int& fd : fds) fd = open("/dev/zero", O_RDONLY);
    CloseAllFrom3Except({fds[1], fds[4]});
    int code = 0;
    for (int i = 0; i < 6; ++i) {
      const bool open_now = fcntl(fds[i], F_GETFD) != -1;
      if (open_now != (i == 1 || i == 4)) code |= 1 << i;
    }
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) _exit(100);
    dup2(pipe_fds[1], 1);
    StdioToDevNull();
    char link[64] = {};
    if (readlink("/proc/self/fd/1", link, sizeof link - 1) <= 0 ||
        std::string(link) != "/dev/null") {
      code |= 64;
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Only a pty's master passes: not its slave, a pipe, /dev/null or a file; the master does.
TEST(Descriptors, IsPtyMasterTakesOnlyAPtysMaster) {
  const int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(master, 0);
  ASSERT_EQ(unlockpt(master), 0);
  const int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(slave, 0);
  EXPECT_TRUE(IsPtyMaster(master));
  EXPECT_FALSE(IsPtyMaster(slave));
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  EXPECT_FALSE(IsPtyMaster(pipe_fds[0]));
  const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  EXPECT_FALSE(IsPtyMaster(null));
  EXPECT_FALSE(IsPtyMaster(-1));
  for (int fd : {master, slave, pipe_fds[0], pipe_fds[1], null}) close(fd);
}

}  // namespace
}  // namespace ward
