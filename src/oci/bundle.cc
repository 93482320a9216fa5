#include "oci/bundle.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "common/untrusted_file.h"
#include "enforce/beneath.h"
#include "enforce/plan.h"

namespace ward::oci {
namespace {

// The bundle's root file system: relative roots beneath the bundle, symlinks refused.
Result<std::string> LocateRootfs(const std::string& dir, const std::string& given) {
  if (given[0] == '/') {
    struct stat st;
    if (stat(given.c_str(), &st) != 0) return ErrnoError("root.path " + given, errno);
    if (!S_ISDIR(st.st_mode)) return InvalidArgument("root.path " + given + ": not a directory");
    return enforce::NormalizePath(given);
  }
  const std::string path = enforce::NormalizePath(dir + "/" + given);
  std::optional<std::string> rel = enforce::RelativeBeneath(dir, path);
  if (!rel || rel->empty()) {
    return InvalidArgument("root.path " + given + ": not inside the bundle " + dir);
  }
  UniqueFd bundle(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!bundle) return ErrnoError("bundle " + dir, errno);
  Result<UniqueFd> opened = enforce::OpenBeneath(bundle.get(), dir, *rel);
  if (!opened.ok()) return std::move(opened).take_status().With("root.path");
  struct stat st;
  if (fstat(opened->get(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return InvalidArgument("root.path " + given + ": not a directory");
  }
  return path;
}

// A bind of a host socket (the Docker socket, say) hands the container whatever answers on it:
// refused unless run.ward/allow-socket-bind names that path.
Status CheckSocketBinds(const Config& c, const WardAnnotations& w) {
  for (const Mount& m : c.mounts) {
    if (!m.bind() || m.source.empty()) continue;
    struct stat st;
    if (stat(m.source.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (std::find(w.socket_binds.begin(), w.socket_binds.end(), m.source) != w.socket_binds.end()) {
      continue;
    }
    return Error(Code::kPermissionDenied,
                 "mounts[" + m.destination + "]: binds the host socket " + m.source +
                     ", which hands the container whatever answers on it; allow it by path with "
                     "the annotation run.ward/allow-socket-bind=" + m.source);
  }
  return Ok();
}

}  // namespace

Result<Bundle> LoadBundle(const std::string& dir) {
  char buf[PATH_MAX];
  if (realpath(dir.c_str(), buf) == nullptr) return ErrnoError("bundle " + dir, errno);
  Bundle b;
  b.dir = buf;
  UntrustedFileRules rules;
  rules.max_bytes = kMaxConfigBytes;
  rules.owners = {getuid(), 0};
  Result<std::string> text = ReadUntrustedFile(b.dir + "/config.json", rules);
  if (!text.ok()) return std::move(text).take_status().With(b.dir + "/config.json");
  WARD_ASSIGN_OR_RETURN(b.config, ParseConfig(*text));
  WARD_ASSIGN_OR_RETURN(b.ward, ParseAnnotations(b.config.annotations));
  WARD_ASSIGN_OR_RETURN(b.rootfs, LocateRootfs(b.dir, b.config.root_path));
  WARD_TRY(CheckSocketBinds(b.config, b.ward));
  return b;
}

}  // namespace ward::oci
