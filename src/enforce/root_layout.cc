#include "enforce/root_layout.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "common/unique_fd.h"
#include "policy/paths.h"

namespace ward::enforce {

bool ListDir(int dirfd, Listing* out) {
  UniqueFd dir(openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return false;
  alignas(8) char buf[8192];
  while (true) {
    long n = syscall(SYS_getdents64, dir.get(), buf, sizeof buf);
    if (n < 0) return false;
    if (n == 0) return true;
    for (long off = 0; off < n;) {
      const auto* e = reinterpret_cast<const struct dirent64*>(buf + off);
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
        out->emplace_back(e->d_name, e->d_type);
      }
      off += e->d_reclen;
    }
  }
}

std::vector<std::string> MaskNames(int dirfd, const std::string& pattern) {
  if (!policy::HasGlob(pattern)) return {pattern};
  std::vector<std::string> names;
  Listing entries;
  if (!ListDir(dirfd, &entries)) return names;
  for (auto& [name, type] : entries) {
    if (policy::MatchComponent(pattern, name)) names.push_back(std::move(name));
  }
  return names;
}

}  // namespace ward::enforce
