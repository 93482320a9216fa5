#include "common/write_all.h"

#include <unistd.h>

#include <cerrno>

namespace ward {

Status WriteAll(int fd, std::string_view bytes, const std::string& what) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoError(what, n < 0 ? errno : EIO);
    done += static_cast<size_t>(n);
  }
  return Ok();
}

}  // namespace ward
