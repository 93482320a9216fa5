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

}  // namespace

Status WriteIdMaps(pid_t pid, uid_t uid, gid_t gid, bool allow_setgroups) {
  WARD_TRY(WriteProcFile(pid, "setgroups", allow_setgroups ? "allow" : "deny"));
  WARD_TRY(WriteProcFile(pid, "uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1\n"));
  WARD_TRY(WriteProcFile(pid, "gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n"));
  return Ok();
}

}  // namespace ward::enforce
