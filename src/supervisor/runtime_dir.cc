#include "supervisor/runtime_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "audit/session_log.h"

namespace ward::supervisor {
namespace {

std::string ModeText(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// The checks every private directory passes: a directory (lstat: a symlink is not one), ours,
// not writable by others.
Status CheckPrivateDirStat(const std::string& dir, const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) {
    return Error(Code::kPermissionDenied,
                 dir + " is not a directory (a symlink?); remove it, ward makes its own");
  }
  if (st.st_uid != ::geteuid()) {
    return Error(Code::kPermissionDenied,
                 dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to us");
  }
  if ((st.st_mode & 022) != 0) {
    return Error(Code::kPermissionDenied, dir + " is writable by others (mode " +
                                              ModeText(st.st_mode) +
                                              "); remove it or make it 0700");
  }
  return Ok();
}

// Makes each missing directory of `path` 0700 (the state directory's parents: ~/.local/state).
Status MakeParents(const std::string& path) {
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return Errno("creating " + prefix);
  }
  return Ok();
}

}  // namespace

RuntimeDir ChooseRuntimeDir(const RuntimeDirInputs& in) {
  if (!in.xdg_runtime_dir.empty() && in.xdg_runtime_dir[0] == '/') {
    std::string base = in.xdg_runtime_dir;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    return {base == "/" ? "/ward" : base + "/ward", RuntimeDirSource::kXdgRuntimeDir};
  }
  const std::string run_user = in.run_user + "/" + std::to_string(in.uid);
  struct stat st;
  if (::lstat(run_user.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == in.uid &&
      (st.st_mode & 022) == 0) {
    return {run_user + "/ward", RuntimeDirSource::kRunUser};
  }
  if (!in.state_dir.empty() && in.state_dir[0] == '/') {
    return {in.state_dir + "/run", RuntimeDirSource::kStateDir};
  }
  return {};
}

RuntimeDirInputs RuntimeDirInputsNow() {
  RuntimeDirInputs in;
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  in.xdg_runtime_dir = xdg ? xdg : "";
  in.uid = ::geteuid();
  in.state_dir = audit::DefaultStateDir();
  return in;
}

std::string WardRuntimeDir() { return ChooseRuntimeDir(RuntimeDirInputsNow()).path; }

std::string RunUserWardDir() {
  return RuntimeDirInputs().run_user + "/" + std::to_string(::geteuid()) + "/ward";
}

Result<std::string> MakeWardRuntimeDir() {
  RuntimeDir dir = ChooseRuntimeDir(RuntimeDirInputsNow());
  if (dir.source == RuntimeDirSource::kNone) {
    return Error(Code::kFailedPrecondition,
                 "cannot tell where ward's runtime directory goes: set XDG_RUNTIME_DIR (or "
                 "XDG_STATE_HOME or HOME)");
  }
  if (dir.source == RuntimeDirSource::kStateDir) WARD_TRY(MakeParents(dir.path));
  WARD_TRY(PreparePrivateDir(dir.path));
  return dir.path;
}

Status PreparePrivateDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return Errno("creating " + dir);
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return Errno(dir);
  WARD_TRY(CheckPrivateDirStat(dir, st));
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0) {
    return Errno("chmod 0700 " + dir);
  }
  return Ok();
}

Status CheckPrivateDir(const std::string& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return Errno(dir);
  return CheckPrivateDirStat(dir, st);
}

}  // namespace ward::supervisor
