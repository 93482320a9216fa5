#include "enforce/ns/user.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "common/unique_fd.h"

namespace ward::enforce {
namespace {

Status WriteProcFile(pid_t pid, const char* name, const std::string& content) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/%s", pid, name);
  UniqueFd fd(open(path, O_WRONLY | O_CLOEXEC));
  if (!fd) return Errno(std::string("open ") + path);
  if (write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    return Errno(std::string("write ") + path);
  }
  return Ok();
}

// 0 or -errno.
int WriteSelfFile(const char* path, const char* content, size_t len) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n = write(fd, content, len);
  int e = errno;
  close(fd);
  if (n == static_cast<ssize_t>(len)) return 0;
  return n < 0 ? -e : -EIO;
}

}  // namespace

int WriteOwnIdMaps(uid_t uid, gid_t gid, const char** failed) {
  char uid_line[48], gid_line[48];
  const int ul = std::snprintf(uid_line, sizeof uid_line, "%u %u 1\n", uid, uid);
  const int gl = std::snprintf(gid_line, sizeof gid_line, "%u %u 1\n", gid, gid);
  const struct {
    const char* path;
    const char* content;
    size_t len;
  } files[] = {{"/proc/self/setgroups", "deny", 4},
               {"/proc/self/uid_map", uid_line, static_cast<size_t>(ul)},
               {"/proc/self/gid_map", gid_line, static_cast<size_t>(gl)}};
  for (const auto& f : files) {
    if (int rc = WriteSelfFile(f.path, f.content, f.len); rc != 0) {
      *failed = f.path;
      return rc;
    }
  }
  return 0;
}

Status WriteIdMaps(pid_t pid, uid_t uid, gid_t gid, bool allow_setgroups) {
  WARD_TRY(WriteProcFile(pid, "setgroups", allow_setgroups ? "allow" : "deny"));
  WARD_TRY(WriteProcFile(pid, "uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1\n"));
  WARD_TRY(WriteProcFile(pid, "gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n"));
  return Ok();
}

}  // namespace ward::enforce
