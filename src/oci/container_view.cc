#include "oci/container_view.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/unique_fd.h"
#include "common/untrusted_file.h"
#include "enforce/beneath.h"
#include "net/broker/setup.h"
#include "policy/loader.h"
#include "policy/paths.h"

namespace ward::oci {
namespace {

// Destinations the sandbox has of its own, or not at all.
bool WardOwns(const std::string& dest) {
  for (const char* own : {"/proc", "/dev", "/sys", "/tmp"}) {
    if (policy::PathIsWithin(dest, own)) return true;
  }
  return false;
}

std::string Where(size_t i) { return "config.json: mounts[" + std::to_string(i) + "]"; }

// Makes `name` in `dir` as a directory or an empty file, when it is missing. 0 or an errno.
int MakeMissing(int dir, const char* name, bool as_dir) {
  if (as_dir) return mkdirat(dir, name, 0755) == 0 || errno == EEXIST ? 0 : errno;
  UniqueFd made(openat(dir, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644));
  return made || errno == EEXIST ? 0 : errno;
}

// Makes `rel` (normalised, relative) beneath the rootfs as a directory or an empty file, every
// missing directory on the way too, following no symlink.
Status MakeMountPoint(int rootfs, const std::string& rel, bool dir, const std::string& where) {
  const std::vector<std::string> parts = policy::PathComponents("/" + rel);
  UniqueFd cur(fcntl(rootfs, F_DUPFD_CLOEXEC, 3));
  for (size_t i = 0; i < parts.size(); ++i) {
    const char* name = parts[i].c_str();
    UniqueFd next(enforce::OpenComponentNoFollow(cur.get(), name, O_PATH));
    if (!next && errno == ENOENT) {
      if (int err = MakeMissing(cur.get(), name, dir || i + 1 < parts.size()); err != 0) {
        return ErrnoError(where + ": making /" + rel + " in the image", err);
      }
      next.reset(enforce::OpenComponentNoFollow(cur.get(), name, O_PATH));
    }
    if (!next) return ErrnoError(where + ": /" + rel + " in the image", errno);
    struct stat st;
    if (fstat(next.get(), &st) != 0) return ErrnoError(where, errno);
    if (S_ISLNK(st.st_mode)) {
      return InvalidArgument(where + ": the destination /" + rel +
                             " lies through a symbolic link of the image, which ward does not follow");
    }
    cur = std::move(next);
  }
  return Ok();
}

// The bundle's bind `m`, as the planner takes it.
Result<enforce::ContainerBind> BindOf(const Mount& m, const std::string& where) {
  char buf[PATH_MAX];
  if (realpath(m.source.c_str(), buf) == nullptr) return ErrnoError(where + ": source " + m.source, errno);
  enforce::ContainerBind b;
  b.source = buf;
  b.target = policy::NormalizePath(m.destination);
  b.writable = !m.read_only();
  b.why = where;
  return b;
}

// Whether `rel` (normalised, relative) beneath the rootfs is a regular file, reached with no
// symlink followed.
bool RegularFileBeneath(int rootfs, const std::string& rel) {
  UniqueFd cur(fcntl(rootfs, F_DUPFD_CLOEXEC, 3));
  for (const std::string& part : policy::PathComponents("/" + rel)) {
    cur.reset(enforce::OpenComponentNoFollow(cur.get(), part.c_str(), O_PATH));
    if (!cur) return false;
  }
  struct stat st;
  return fstat(cur.get(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

Result<policy::Policy> ContainerPolicy(const ContainerChoices& choices,
                                       const std::string& credentials_dir) {
  policy::Context ctx;
  ctx.home = "/root";
  ctx.cwd = "/";
  ctx.workspace = "/";
  UntrustedFileRules rules;
  rules.max_bytes = size_t{256} * 1024;
  rules.owners = {0, geteuid()};
  const std::string workspace_file = policy::WorkspaceFilePath(ctx.workspace);
  Result<policy::Policy> pol =
      policy::LoadPolicy(choices.flags, ctx, [&](const std::string& path) -> Result<std::string> {
        if (path == workspace_file) return NotFound(path);
        return ReadUntrustedFile(path, rules);
      });
  if (!pol.ok()) return pol;
  // A container sees its image: nothing of the host's file system, no workspace, no HOME of
  // the caller's (the image's own is in it).
  pol->paths.clear();
  pol->workspace = "";
  pol->workspace_access.reset();
  pol->home = "";
  if (!credentials_dir.empty()) {
    for (auto& [name, cred] : pol->credentials) {
      if (!cred.enabled) continue;
      cred.from.kind = policy::CredentialSource::Kind::kFile;
      cred.from.value = policy::NormalizePath(credentials_dir + "/" + name);
    }
  }
  return pol;
}

// In a pod's network the supervisor resolves names with the engine's hosts and resolv.conf
// (pod_network.h): no container under ward may write them, or one could steer where the
// supervisor of the next (or a restarted) container connects.
bool ResolverFileOfAPod(const Config& config, const std::string& dest) {
  return (dest == "/etc/hosts" || dest == "/etc/resolv.conf") && !PodNetworkPath(config).empty();
}

Result<enforce::ImageRoot> ContainerRoot(const Bundle& bundle) {
  enforce::ImageRoot root;
  root.rootfs = bundle.rootfs;
  root.readonly = bundle.config.root_readonly;
  root.workdir = bundle.config.process.cwd;
  root.hostname = bundle.config.hostname;
  UniqueFd rootfs(open(bundle.rootfs.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!rootfs) return ErrnoError("rootfs " + bundle.rootfs, errno);
  const std::vector<Mount>& mounts = bundle.config.mounts;
  for (size_t i = 0; i < mounts.size(); ++i) {
    const Mount& m = mounts[i];
    const std::string dest = policy::NormalizePath(m.destination);
    if (WardOwns(dest)) continue;
    if (m.bind()) {
      WARD_ASSIGN_OR_RETURN(enforce::ContainerBind b, BindOf(m, Where(i)));
      if (ResolverFileOfAPod(bundle.config, dest)) b.writable = false;
      struct stat st;
      if (stat(b.source.c_str(), &st) != 0) return ErrnoError(Where(i) + ": " + b.source, errno);
      WARD_TRY(MakeMountPoint(rootfs.get(), dest.substr(1), S_ISDIR(st.st_mode), Where(i)));
      root.binds.push_back(std::move(b));
    } else if (m.type == "tmpfs") {
      WARD_TRY(MakeMountPoint(rootfs.get(), dest.substr(1), true, Where(i)));
      root.tmpfs.push_back(dest);
    } else {
      return InvalidArgument(Where(i) + ": a " + m.type + " mount at " + dest +
                             " is not supported (ward binds, makes tmpfs, and has its own /proc, "
                             "/dev and /tmp)");
    }
  }
  return root;
}

Result<std::string> CaBundleInImage(const Bundle& bundle) {
  UniqueFd rootfs(open(bundle.rootfs.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!rootfs) return ErrnoError("rootfs " + bundle.rootfs, errno);
  const std::vector<std::string> paths = net::CaBundlePaths();
  for (const std::string& path : paths) {
    if (RegularFileBeneath(rootfs.get(), path.substr(1))) return path;
  }
  WARD_TRY(MakeMountPoint(rootfs.get(), paths[0].substr(1), false,
                          "the credential broker's CA bundle"));
  return paths[0];
}

}  // namespace ward::oci
