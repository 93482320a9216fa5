#include "common/untrusted_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/unique_fd.h"

namespace ward {
namespace {

// "a symbolic link (to /dev/zero)": where it points, printable and bounded, helps to tell a
// mistake from a planted link.
std::string DescribePath(const std::string& path, mode_t mode) {
  std::string what = DescribeFileType(mode);
  if (!S_ISLNK(mode)) return what;
  char target[256];
  ssize_t n = readlink(path.c_str(), target, sizeof target);
  if (n <= 0) return what;
  std::string shown;
  for (ssize_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(target[i]);
    shown += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
  }
  if (static_cast<size_t>(n) == sizeof target) shown += "...";
  return what + " (to " + shown + ")";
}

Status NotRegular(mode_t mode) {
  return Error(Code::kFailedPrecondition, DescribeFileType(mode) + ", not a regular file");
}

Status NotRegular(const std::string& path, mode_t mode) {
  return Error(Code::kFailedPrecondition, DescribePath(path, mode) + ", not a regular file");
}

// What lstat says is at `path`, for an open that failed: a symlink (ELOOP) or a socket (ENXIO).
Status DescribeFailedOpen(const std::string& path, int err) {
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode);
  if (err == ENOENT || err == ENOTDIR) return NotFound("no such file");
  if (err == EACCES || err == EPERM) {
    return Status(Code::kPermissionDenied, "not readable by this user", err);
  }
  return ErrnoError("cannot be opened", err);
}

// The descriptor must be a regular file of an accepted owner and at most the bound.
Status CheckDescriptor(int fd, const UntrustedFileRules& rules) {
  struct stat st;
  if (fstat(fd, &st) != 0) return Errno("fstat");
  if (!S_ISREG(st.st_mode)) return NotRegular(st.st_mode);
  if (std::find(rules.owners.begin(), rules.owners.end(), st.st_uid) == rules.owners.end()) {
    std::string accepted;
    for (uid_t u : rules.owners) {
      accepted += (accepted.empty() ? "uid " : " or uid ") + std::to_string(u);
    }
    return Error(Code::kPermissionDenied,
                 "owned by uid " + std::to_string(st.st_uid) + ", not by " + accepted);
  }
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > rules.max_bytes) {
    return Error(Code::kResourceExhausted, std::to_string(st.st_size) + " bytes, more than the " +
                                               std::to_string(rules.max_bytes) + " allowed");
  }
  return Ok();
}

// At most max_bytes + 1 bytes: one more than allowed is enough to tell that it grew.
Result<std::string> ReadBounded(int fd, size_t max_bytes) {
  std::string text(max_bytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("read");
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > max_bytes) {
    return Error(Code::kResourceExhausted,
                 "more than the " + std::to_string(max_bytes) + " bytes allowed");
  }
  text.resize(got);
  return text;
}

}  // namespace

std::string DescribeFileType(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a unix socket";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
}

Result<std::string> ReadUntrustedFile(const std::string& path, const UntrustedFileRules& rules) {
  // Anything but a regular file is refused before it is opened (opening a device runs its
  // driver); the descriptor's own fstat below is what decides.
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode);
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) return DescribeFailedOpen(path, errno);
  WARD_TRY(CheckDescriptor(fd.get(), rules));
  return ReadBounded(fd.get(), rules.max_bytes);
}

}  // namespace ward
