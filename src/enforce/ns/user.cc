#include "enforce/ns/user.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace ward::enforce {
namespace {

// Writes setgroups, uid_map and gid_map below `dir` ("/proc/<pid>" or "/proc/self"). No
// allocation (init calls it before anything else). 0, or -errno with `failed` set to the file.
int WriteMapFiles(const char* dir, uid_t uid, gid_t gid, bool allow_setgroups, char* failed,
                  size_t failed_size) {
  char uid_line[48], gid_line[48];
  const int ul = std::snprintf(uid_line, sizeof uid_line, "%u %u 1\n", uid, uid);
  const int gl = std::snprintf(gid_line, sizeof gid_line, "%u %u 1\n", gid, gid);
  const struct {
    const char* name;
    const char* content;
    size_t len;
  } files[] = {{"setgroups", allow_setgroups ? "allow" : "deny", allow_setgroups ? 5u : 4u},
               {"uid_map", uid_line, static_cast<size_t>(ul)},
               {"gid_map", gid_line, static_cast<size_t>(gl)}};
  for (const auto& f : files) {
    std::snprintf(failed, failed_size, "%s/%s", dir, f.name);
    int fd = open(failed, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    ssize_t n = write(fd, f.content, f.len);
    int e = errno;
    close(fd);
    if (n != static_cast<ssize_t>(f.len)) return n < 0 ? -e : -EIO;
  }
  return 0;
}

}  // namespace

Status WriteIdMaps(pid_t pid, uid_t uid, gid_t gid, bool allow_setgroups) {
  char dir[32], failed[64];
  std::snprintf(dir, sizeof dir, "/proc/%d", pid);
  if (int rc = WriteMapFiles(dir, uid, gid, allow_setgroups, failed, sizeof failed); rc != 0) {
    return ErrnoError(std::string("write ") + failed, -rc);
  }
  return Ok();
}

int WriteOwnIdMaps(uid_t uid, gid_t gid, char* failed, size_t failed_size) {
  return WriteMapFiles("/proc/self", uid, gid, /*allow_setgroups=*/false, failed, failed_size);
}

}  // namespace ward::enforce
