// Reading a small file that someone other than the caller may have put there (a workspace's
// .ward.toml): whatever sits at the path, the read neither hangs nor runs without bound, and
// anything but a small regular file of an accepted owner is refused with what it is.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"

namespace ward {

struct UntrustedFileRules {
  size_t max_bytes = 0;       // a larger file is refused; at most max_bytes + 1 bytes are read
  std::vector<uid_t> owners;  // the file's owner must be one of these
};

// Opens `path` with O_NOFOLLOW | O_NONBLOCK (a symlink at its last component is not followed,
// and a FIFO or device cannot block the open), checks the descriptor, and reads it.
// Errors, each message saying what the path is ("a FIFO, not a regular file"), without the path:
//   kNotFound           nothing there;
//   kFailedPrecondition not a regular file (symlink, FIFO, socket, directory, device);
//   kPermissionDenied   owned by another uid, or not readable;
//   kResourceExhausted  larger than max_bytes (or grew past it while being read).
Result<std::string> ReadUntrustedFile(const std::string& path, const UntrustedFileRules& rules);

// "a regular file", "a symbolic link", "a FIFO", "a unix socket", "a directory",
// "a character device", "a block device".
std::string DescribeFileType(mode_t mode);

}  // namespace ward
