#include "supervisor/review_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "audit/record.h"
#include "audit/session_log.h"
#include "supervisor/review_copy.h"

namespace ward::supervisor {
namespace {

constexpr const char* kMetaFile = "meta.json";
constexpr const char* kSpareDir = ".spare";
constexpr size_t kMaxMetaBytes = 4 << 20;

// `path` and its missing parents, each made 0700.
Status MakeDirs(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    const std::string prefix = path.substr(0, pos);
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return Errno("creating " + prefix);
  }
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return Errno("checking " + path);
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
    return Error(Code::kFailedPrecondition,
                 path + " is not a directory of ours: move it away (ward keeps review sessions "
                        "there)");
  }
  return Ok();
}

std::string ReadSmallFile(int dirfd, const char* name, bool* ok) {
  *ok = false;
  UniqueFd fd(openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return "";
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return "";
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxMetaBytes) return "";
  }
  *ok = true;
  return out;
}

nlohmann::json ToJson(const ReviewSession& s) {
  nlohmann::json applied = nlohmann::json::array();
  for (const AppliedPath& a : s.applied) {
    applied.push_back({{"path", a.path}, {"ctime_ns", a.ctime_ns}});
  }
  return {{"id", s.id},
          {"workspace", s.workspace},
          {"mode", ReviewModeName(s.mode)},
          {"state", ReviewStateName(s.state)},
          {"started_ns", s.started_ns},
          {"copied_ns", s.copied_ns},
          {"uid", s.uid},
          {"created_by", s.created_by},
          {"note", s.note},
          {"protected", s.protected_relpaths},
          {"applied", applied},
          {"ended", s.ended}};
}

// Takes over a spare session (one whose run wrote nothing) as <root>/<id>: one rename. False
// when there is none to take.
bool ClaimSpare(const std::string& root, const std::string& id) {
  UniqueFd spares(open((root + "/" + kSpareDir).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!spares) return false;
  UniqueFd rootfd(open(root.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!rootfd) return false;
  DIR* d = fdopendir(fcntl(spares.get(), F_DUPFD_CLOEXEC, 3));
  if (d == nullptr) return false;
  bool claimed = false;
  while (struct dirent* e = readdir(d)) {
    if (!audit::IsValidSessionId(e->d_name)) continue;
    // Atomic: of two runs that try the same spare, one gets it.
    if (renameat(spares.get(), e->d_name, rootfd.get(), id.c_str()) == 0) {
      claimed = true;
      break;
    }
  }
  closedir(d);
  return claimed;
}

// The overlay's root directory is the upper one: it shows the workspace's own mode.
Status ShowWorkspaceMode(const ReviewSession& s, const struct stat& ws) {
  struct stat up;
  if (stat(s.upper().c_str(), &up) != 0) return Errno("stat " + s.upper());
  if ((up.st_mode & 07777) == (ws.st_mode & 01777)) return Ok();
  if (chmod(s.upper().c_str(), ws.st_mode & 01777) != 0) return Errno("chmod " + s.upper());
  return Ok();
}

bool KernelAtLeast(int major, int minor) {
  struct utsname u;
  if (uname(&u) != 0) return false;
  int ma = 0, mi = 0;
  if (std::sscanf(u.release, "%d.%d", &ma, &mi) != 2) return false;
  return ma > major || (ma == major && mi >= minor);
}

}  // namespace

const char* ReviewModeName(ReviewMode m) { return m == ReviewMode::kOverlay ? "overlay" : "copy"; }

const char* ReviewStateName(ReviewState s) {
  switch (s) {
    case ReviewState::kOpen:
      return "open";
    case ReviewState::kApplied:
      return "applied";
    case ReviewState::kDiscarded:
      return "discarded";
  }
  return "open";
}

std::string ReviewRoot(const std::string& state_dir) { return state_dir + "/review"; }

int64_t CoarseNowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string OverlayUnavailable(const std::string& dir, bool probe_xattr) {
  if (!KernelAtLeast(5, 11)) {
    return "overlayfs in a user namespace needs Linux 5.11 or later";
  }
  // The overlay is made with the mount API: where fsopen does not exist (gVisor), not at all.
  // (Unprivileged it answers EPERM here, which says it exists.)
  const long fs = syscall(SYS_fsopen, "overlay", FSOPEN_CLOEXEC);
  if (fs >= 0) close(static_cast<int>(fs));
  if (fs < 0 && errno == ENOSYS) return "this kernel has no mount API (fsopen)";
  struct statfs sfs;
  if (statfs(dir.c_str(), &sfs) != 0) return "cannot stat the file system of " + dir;
  if (sfs.f_type == OVERLAYFS_SUPER_MAGIC) {
    return "ward's state directory is on an overlay itself, which cannot hold an upper layer";
  }
  if (!probe_xattr) return "";
  // Whiteouts and opaque directories are kept in user.overlay.* attributes (userxattr).
  const std::string probe = dir + "/upper";
  if (setxattr(probe.c_str(), "user.ward.probe", "1", 1, 0) != 0) {
    return "the file system of ward's state directory does not take user.* extended attributes";
  }
  (void)removexattr(probe.c_str(), "user.ward.probe");
  return "";
}

Result<ReviewSession> CreateReviewSession(const ReviewRequest& req) {
  if (req.state_dir.empty()) {
    return Error(Code::kFailedPrecondition,
                 "cannot tell where ward's state directory is (set XDG_STATE_HOME or HOME): "
                 "review mode keeps the run's writes there");
  }
  if (!audit::IsValidSessionId(req.id)) return InvalidArgument("bad review session id " + req.id);
  ReviewSession s;
  s.id = req.id;
  s.workspace = req.workspace;
  s.started_ns = CoarseNowNs();
  s.uid = getuid();
  s.created_by = req.created_by;
  s.protected_relpaths = req.protected_relpaths;
  const std::string root = ReviewRoot(req.state_dir);
  s.dir = root + "/" + req.id;
  struct stat ws;
  if (stat(s.workspace.c_str(), &ws) != 0) return Errno("stat " + s.workspace);
  if (!req.force_copy && ClaimSpare(root, req.id)) {
    std::string why_not = OverlayUnavailable(s.dir, /*probe_xattr=*/false);
    if (why_not.empty()) {
      WARD_TRY(ShowWorkspaceMode(s, ws));
      WARD_TRY(SaveReviewSession(s, /*in_place=*/true));
      return s;
    }
    (void)RemoveReviewSession(s);  // overlayfs went away (another kernel): made afresh below
  }
  // The directories above exist at every run but the first: one mkdir.
  int made = mkdir(s.dir.c_str(), 0700);
  if (made != 0 && errno == ENOENT) {
    WARD_TRY(MakeDirs(root));
    made = mkdir(s.dir.c_str(), 0700);
  }
  if (made != 0) return Errno("creating the review session " + s.dir);
  auto fail = [&](Status st) -> Result<ReviewSession> {
    (void)RemoveReviewSession(s);
    return st;
  };
  if (mkdir(s.upper().c_str(), 0700) != 0) return fail(Errno("creating " + s.upper()));
  std::string why_not =
      req.force_copy ? "--workspace=copy" : OverlayUnavailable(s.dir, /*probe_xattr=*/true);
  if (why_not.empty()) {
    if (mkdir(s.work().c_str(), 0700) != 0) return fail(Errno("creating " + s.work()));
    Status shown = ShowWorkspaceMode(s, ws);
    if (!shown.ok()) return fail(shown);
  } else {
    s.mode = ReviewMode::kCopy;
    s.note = why_not;
    if (rmdir(s.upper().c_str()) != 0) return fail(Errno("removing " + s.upper()));
    Status copied = CopyWorkspace(s, CopyLimits{}, &s.copied_ns);
    if (!copied.ok()) return fail(copied);
  }
  // Nobody reads a session before it has a meta.json: written where it is.
  Status saved = SaveReviewSession(s, /*in_place=*/true);
  if (!saved.ok()) return fail(saved);
  return s;
}

Status SaveReviewSession(const ReviewSession& s, bool in_place) {
  std::string text = ToJson(s).dump(1) + "\n";
  const std::string path = s.dir + "/" + kMetaFile;
  const std::string tmp = in_place ? path : path + ".tmp";
  // In place, the file is overwritten from its start and padded with spaces to its old length
  // (JSON allows them): a truncation would free its blocks, which on a file system mounted
  // with `discard` waits for the device.
  UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (in_place ? 0 : O_TRUNC),
                   0600));
  if (!fd) return Errno("writing " + tmp);
  struct stat st;
  if (in_place && fstat(fd.get(), &st) == 0 && static_cast<size_t>(st.st_size) > text.size()) {
    text.append(static_cast<size_t>(st.st_size) - text.size(), ' ');
  }
  if (pwrite(fd.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return Errno("writing " + tmp);
  }
  fd.reset();
  if (!in_place && rename(tmp.c_str(), path.c_str()) != 0) return Errno("renaming " + tmp);
  return Ok();
}

Result<ReviewSession> LoadReviewSession(const std::string& dir) {
  UniqueFd d(open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d) return Errno("review session " + dir);
  bool ok = false;
  std::string text = ReadSmallFile(d.get(), kMetaFile, &ok);
  if (!ok) return Errno("reading " + dir + "/" + kMetaFile);
  ReviewSession s;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    s.id = j.at("id").get<std::string>();
    s.workspace = j.at("workspace").get<std::string>();
    const std::string mode = j.at("mode").get<std::string>();
    if (mode != "overlay" && mode != "copy") throw std::runtime_error("unknown mode " + mode);
    s.mode = mode == "overlay" ? ReviewMode::kOverlay : ReviewMode::kCopy;
    const std::string state = j.at("state").get<std::string>();
    s.state = state == "applied"     ? ReviewState::kApplied
              : state == "discarded" ? ReviewState::kDiscarded
                                     : ReviewState::kOpen;
    s.started_ns = j.at("started_ns").get<int64_t>();
    s.copied_ns = j.value("copied_ns", int64_t{0});
    s.uid = j.value("uid", 0u);
    s.created_by = j.value("created_by", "");
    s.note = j.value("note", "");
    s.protected_relpaths = j.value("protected", std::vector<std::string>{});
    if (j.contains("applied")) {
      for (const nlohmann::json& a : j.at("applied")) {
        s.applied.push_back({a.at("path").get<std::string>(), a.at("ctime_ns").get<int64_t>()});
      }
    }
    s.ended = j.value("ended", "");
  } catch (const std::exception& e) {
    return InvalidArgument(dir + "/" + kMetaFile + " is not a review session's record: " +
                           e.what());
  }
  s.dir = dir;
  if (s.id != dir.substr(dir.rfind('/') + 1)) {
    return InvalidArgument(dir + "/" + kMetaFile + " names another session (" + s.id + ")");
  }
  return s;
}

std::vector<ReviewSession> ListReviewSessions(const std::string& state_dir) {
  std::vector<ReviewSession> out;
  const std::string root = ReviewRoot(state_dir);
  DIR* d = opendir(root.c_str());
  if (d == nullptr) return out;
  while (struct dirent* e = readdir(d)) {
    if (!audit::IsValidSessionId(e->d_name)) continue;
    Result<ReviewSession> s = LoadReviewSession(root + "/" + e->d_name);
    if (s.ok()) out.push_back(std::move(s).value());
  }
  closedir(d);
  // Ids begin with their UTC start time: newest first.
  std::sort(out.begin(), out.end(),
            [](const ReviewSession& a, const ReviewSession& b) { return a.id > b.id; });
  return out;
}

Result<ReviewSession> ResolveReviewSession(const std::string& state_dir, const std::string& name,
                                           const std::string& workspace) {
  std::vector<ReviewSession> all = ListReviewSessions(state_dir);
  if (name.empty()) {
    for (ReviewSession& s : all) {
      if (s.workspace == workspace && s.state == ReviewState::kOpen) return std::move(s);
    }
    return NotFound("no open review session for the workspace " + workspace +
                    " (runs in review mode: ward run --workspace=overlay; every session: ward "
                    "diff --sessions)");
  }
  if (all.empty()) return NotFound("no review sessions in " + ReviewRoot(state_dir));
  if (name == "last") return std::move(all.front());
  std::vector<ReviewSession*> matches;
  for (ReviewSession& s : all) {
    if (s.id == name) return std::move(s);
    if (s.id.starts_with(name)) matches.push_back(&s);
  }
  if (matches.empty()) return NotFound("no review session matches '" + name + "'");
  if (matches.size() > 1) {
    std::string msg = "'" + name + "' is ambiguous: it matches";
    for (size_t i = 0; i < matches.size() && i < 5; ++i) msg += " " + matches[i]->id;
    return InvalidArgument(msg);
  }
  return std::move(*matches.front());
}

Result<UniqueFd> LockReviewSession(const ReviewSession& s) {
  const std::string& path = s.dir;
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return Errno("opening " + path);
  if (flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return Error(Code::kUnavailable,
                   "review session " + s.id +
                       " is in use: a run still writes it, or another ward diff, apply or "
                       "discard reads it; try again once it is done");
    }
    return Errno("locking " + path);
  }
  return fd;
}

Status RemoveTreeAt(int dirfd, const std::string& name) {
  struct stat st;
  if (fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? Ok() : Errno("stat " + name);
  }
  if (!S_ISDIR(st.st_mode)) {
    if (unlinkat(dirfd, name.c_str(), 0) != 0 && errno != ENOENT) return Errno("removing " + name);
    return Ok();
  }
  UniqueFd dir(openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir && errno == EACCES) {
    // overlayfs leaves its work/work directory with mode 0.
    if (fchmodat(dirfd, name.c_str(), 0700, 0) == 0) {
      dir.reset(openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
  }
  if (!dir) return Errno("opening " + name);
  struct stat dst;
  if (fstat(dir.get(), &dst) != 0) return Errno("stat " + name);
  if (dst.st_dev != st.st_dev || dst.st_ino != st.st_ino) {
    return Error(Code::kInternal, name + " changed while it was being removed");
  }
  if ((dst.st_mode & 0700) != 0700) (void)fchmod(dir.get(), 0700);
  std::vector<std::string> names;
  {
    DIR* d = fdopendir(fcntl(dir.get(), F_DUPFD_CLOEXEC, 3));
    if (d == nullptr) return Errno("listing " + name);
    while (struct dirent* e = readdir(d)) {
      if (std::string_view(e->d_name) == "." || std::string_view(e->d_name) == "..") continue;
      names.emplace_back(e->d_name);
    }
    closedir(d);
  }
  for (const std::string& n : names) {
    struct stat cst;
    if (fstatat(dir.get(), n.c_str(), &cst, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(cst.st_mode) && cst.st_dev != dst.st_dev) {
      return Error(Code::kFailedPrecondition, name + "/" + n + " is a mount point: not removed");
    }
    WARD_TRY(RemoveTreeAt(dir.get(), n));
  }
  if (unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return Errno("removing " + name);
  }
  return Ok();
}

Status RemoveReviewLayers(const ReviewSession& s) {
  UniqueFd d(open(s.dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d) return Errno("opening " + s.dir);
  for (const char* name : {"upper", "work", "copy", "manifest", "lock"}) {
    WARD_TRY(RemoveTreeAt(d.get(), name));
  }
  return Ok();
}

Status RemoveReviewSession(const ReviewSession& s) {
  const size_t slash = s.dir.rfind('/');
  if (slash == std::string::npos || s.dir.substr(slash + 1) != s.id) {
    return InvalidArgument("not a review session directory: " + s.dir);
  }
  UniqueFd parent(open(s.dir.substr(0, slash).c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!parent) return Errno("opening " + s.dir.substr(0, slash));
  return RemoveTreeAt(parent.get(), s.id);
}

Status RetireEmptyReviewSession(const ReviewSession& s) {
  if (s.mode != ReviewMode::kOverlay || !ReviewTreeEmpty(s)) return RemoveReviewSession(s);
  const size_t slash = s.dir.rfind('/');
  const std::string root = s.dir.substr(0, slash);
  const std::string spare = root + "/" + kSpareDir;
  if (rename(s.dir.c_str(), (spare + "/" + s.id).c_str()) == 0) return Ok();
  if (errno == ENOENT && mkdir(spare.c_str(), 0700) == 0 &&
      rename(s.dir.c_str(), (spare + "/" + s.id).c_str()) == 0) {
    return Ok();
  }
  return RemoveReviewSession(s);
}

void SetAsideOverlayWork(const ReviewSession& s) {
  if (s.mode != ReviewMode::kOverlay) return;
  UniqueFd work(open(s.work().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!work) return;
  constexpr std::string_view kAside = ".ward-aside-";
  constexpr size_t kKeep = 32;
  std::vector<std::string> aside;
  bool has_work = false;
  {
    DIR* d = fdopendir(fcntl(work.get(), F_DUPFD_CLOEXEC, 3));
    if (d == nullptr) return;
    while (struct dirent* e = readdir(d)) {
      std::string_view n = e->d_name;
      if (n == "work") has_work = true;
      if (n.starts_with(kAside)) aside.emplace_back(n);
    }
    closedir(d);
  }
  if (aside.size() >= kKeep) {
    for (const std::string& n : aside) (void)RemoveTreeAt(work.get(), n);
  }
  if (!has_work) return;
  uint64_t r = 0;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) r = CoarseNowNs();
  char name[64];
  std::snprintf(name, sizeof name, "%.*s%016llx", static_cast<int>(kAside.size()), kAside.data(),
                static_cast<unsigned long long>(r));
  (void)renameat(work.get(), "work", work.get(), name);
}

bool ReviewTreeEmpty(const ReviewSession& s) {
  if (s.mode != ReviewMode::kOverlay) return false;
  DIR* d = opendir(s.upper().c_str());
  if (d == nullptr) return false;
  bool empty = true;
  while (struct dirent* e = readdir(d)) {
    if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..") {
      empty = false;
      break;
    }
  }
  closedir(d);
  return empty;
}

}  // namespace ward::supervisor
