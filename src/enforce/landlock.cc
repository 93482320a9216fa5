#include "enforce/landlock.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/linux.h"
#include "common/unique_fd.h"

namespace ward::enforce {
namespace {

constexpr uint64_t kFileOnlyRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                     LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
                                     LANDLOCK_ACCESS_FS_IOCTL_DEV;

// Fills *error; -1 for the caller to return.
int Failed(ChildError* error, const char* stage, int err, const char* d1 = "",
           const char* d2 = "") {
  error->Set(stage, err, d1, d2);
  return -1;
}

}  // namespace

int LandlockAbi() {
  long abi = sys::LandlockCreateRuleset(nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

uint64_t LandlockFsRights(int abi) {
  uint64_t r = 0;
  if (abi >= 1) r |= (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // the 13 rights of ABI 1
  if (abi >= 2) r |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) r |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5) r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  return r;
}

uint64_t LandlockReadRights(int abi) {
  (void)abi;
  return LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
}

int BuildLandlockRuleset(const LandlockSpec& spec, ChildError* error) {
  int abi = spec.abi;
  if (abi <= 0) return Failed(error, "landlock", EOPNOTSUPP, "no Landlock ABI");
  sys::LandlockRulesetAttr attr;
  attr.handled_access_fs = LandlockFsRights(abi);
  size_t size = sizeof(uint64_t);
  if (abi >= 4) {
    if (spec.tcp) {
      attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP;
      if (!spec.connect_any) attr.handled_access_net |= LANDLOCK_ACCESS_NET_CONNECT_TCP;
    }
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
    size = 3 * sizeof(uint64_t);
  }
  UniqueFd ruleset(static_cast<int>(sys::LandlockCreateRuleset(&attr, size, 0)));
  if (!ruleset) return Failed(error, "landlock", errno, "create_ruleset");

  const uint64_t all = attr.handled_access_fs;
  const uint64_t read = LandlockReadRights(abi) & all;
  for (const LandlockPath& p : spec.paths) {
    UniqueFd fd(open(p.path.c_str(), O_PATH | O_CLOEXEC));
    if (!fd) {
      if (errno == ENOENT) continue;
      return Failed(error, "landlock", errno, "opening ", p.path.c_str());
    }
    struct stat st;
    if (fstat(fd.get(), &st) != 0) return Failed(error, "landlock", errno, "stat ", p.path.c_str());
    uint64_t rights;
    if (p.device) {
      rights = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
               LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_IOCTL_DEV |
               LANDLOCK_ACCESS_FS_TRUNCATE;
    } else if (p.proc) {
      rights = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
               LANDLOCK_ACCESS_FS_READ_DIR;
    } else {
      rights = p.writable ? all : read;
    }
    rights &= all;
    if (!S_ISDIR(st.st_mode)) rights &= kFileOnlyRights;
    struct landlock_path_beneath_attr pb = {};
    pb.allowed_access = rights;
    pb.parent_fd = fd.get();
    if (sys::LandlockAddRule(ruleset.get(), LANDLOCK_RULE_PATH_BENEATH, &pb, 0) != 0) {
      return Failed(error, "landlock", errno, "add_rule ", p.path.c_str());
    }
  }
  if (abi >= 4 && spec.tcp) {
    for (uint16_t port : spec.connect_tcp) {
      if (spec.connect_any) break;  // not handled: every port is open
      sys::LandlockNetPortAttr np = {LANDLOCK_ACCESS_NET_CONNECT_TCP, port};
      if (sys::LandlockAddRule(ruleset.get(), sys::kLandlockRuleNetPort, &np, 0) != 0) {
        return Failed(error, "landlock", errno, "add_rule tcp connect");
      }
    }
    for (uint16_t port : spec.bind_tcp) {
      sys::LandlockNetPortAttr np = {LANDLOCK_ACCESS_NET_BIND_TCP, port};
      if (sys::LandlockAddRule(ruleset.get(), sys::kLandlockRuleNetPort, &np, 0) != 0) {
        return Failed(error, "landlock", errno, "add_rule tcp bind");
      }
    }
  }
  return ruleset.release();
}

bool RestrictLandlock(int ruleset, ChildError* error) {
  // no_new_privs is set by the caller before this point (landlock_restrict_self requires it
  // without CAP_SYS_ADMIN, and the command must not have that either).
  if (sys::LandlockRestrictSelf(ruleset, 0) != 0) {
    return error->Set("landlock", errno, "restrict_self");
  }
  return true;
}

bool ApplyLandlock(const LandlockSpec& spec, ChildError* error) {
  UniqueFd ruleset(BuildLandlockRuleset(spec, error));
  return ruleset && RestrictLandlock(ruleset.get(), error);
}

}  // namespace ward::enforce
