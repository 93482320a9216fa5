#include "common/descriptors.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "common/linux.h"

namespace ward {

void CloseAllFrom3Except(std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned next = 3;
  for (int fd : keep) {
    if (fd < static_cast<int>(next)) continue;
    if (static_cast<unsigned>(fd) > next) sys::CloseRange(next, static_cast<unsigned>(fd) - 1, 0);
    next = static_cast<unsigned>(fd) + 1;
  }
  sys::CloseRange(next, UINT_MAX, 0);
}

void StdioToDevNull() {
  const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0) return;
  for (int fd = 0; fd <= 2; ++fd) dup2(null, fd);
  if (null > 2) close(null);
}

bool IsPtyMaster(int fd) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode) || major(st.st_rdev) != 5 ||
      minor(st.st_rdev) != 2) {
    return false;
  }
  const int flags = fcntl(fd, F_GETFL);
  int number = 0;
  return flags >= 0 && (flags & O_ACCMODE) == O_RDWR && ioctl(fd, TIOCGPTN, &number) == 0;
}

}  // namespace ward
