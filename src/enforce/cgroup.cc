#include "enforce/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "common/linux.h"
#include "enforce/cgroup_reaper.h"

namespace ward::enforce {
namespace {

// How long the supervisor waits for a cgroup to empty at the end (normally it already is:
// everything inside died with the pid namespace), and how long the reaper keeps trying.
constexpr int kTeardownMs = 5000;
constexpr int kReaperTeardownMs = 30000;
// A stale cgroup is removed only when its supervisor is gone and it is older than this.
constexpr int kStaleAgeSeconds = 5;
constexpr const char* kPrefix = "ward-";

std::string ReadText(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return "";
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd.get(), buf, sizeof buf)) > 0) out.append(buf, n);
  return out;
}

Status WriteText(const std::string& path, const std::string& value) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return ErrnoError("opening " + path, errno);
  ssize_t n;
  do {
    n = write(fd.get(), value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(value.size())) {
    return ErrnoError("writing \"" + value + "\" to " + path, n < 0 ? errno : EIO);
  }
  return Ok();
}

// "key 123" lines (memory.events, pids.events, cpu.stat, memory.oom_control).
std::optional<uint64_t> KeyedValue(const std::string& text, const std::string& key) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
        line[key.size()] == ' ') {
      return std::strtoull(line.c_str() + key.size() + 1, nullptr, 10);
    }
    pos = eol + 1;
  }
  return std::nullopt;
}

std::optional<uint64_t> NumberIn(const std::string& path) {
  std::string s = ReadText(path);
  if (s.empty() || s[0] < '0' || s[0] > '9') return std::nullopt;
  return std::strtoull(s.c_str(), nullptr, 10);
}

// The supervisor's teardown, with cgroup_reaper.cc's function (the reaper's own).
bool Teardown(const std::vector<std::string>& dirs, int version, int timeout_ms) {
  const char* d[kMaxCgroupDirs];
  if (dirs.size() > kMaxCgroupDirs) return false;
  for (size_t i = 0; i < dirs.size(); ++i) d[i] = dirs[i].c_str();
  return TeardownCgroupDirs(version, d, static_cast<int>(dirs.size()), timeout_ms);
}

// Removes empty cgroups left by supervisors that died together with their reaper.
void SweepStale(const std::string& parent) {
  DIR* d = opendir(parent.c_str());
  if (d == nullptr) return;
  time_t now = time(nullptr);
  while (struct dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, kPrefix, std::strlen(kPrefix)) != 0) continue;
    char* end = nullptr;
    long pid = std::strtol(e->d_name + std::strlen(kPrefix), &end, 10);
    if (end == e->d_name + std::strlen(kPrefix) || *end != '-' || pid <= 0 || pid > INT_MAX) {
      continue;
    }
    if (pid == getpid() || kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::string path = parent + "/" + e->d_name;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || now - st.st_mtime < kStaleAgeSeconds) continue;
    rmdir(path.c_str());  // fails harmlessly when something still runs there
  }
  closedir(d);
}

std::vector<std::string> WantedControllers(const CgroupSpec& spec) {
  std::vector<std::string> wanted;
  if (spec.memory_bytes) wanted.push_back("memory");
  if (spec.pids) wanted.push_back("pids");
  if (spec.cpu_quota_us) wanted.push_back("cpu");
  return wanted;
}

// Writes "+c" to DIR/cgroup.subtree_control for each wanted controller DIR does not hand to its
// children yet; stops at the first failure, naming that controller in *failed.
Status EnableControllersIn(const std::string& dir, const std::vector<std::string>& wanted,
                           std::string* failed) {
  const std::string control = dir + "/cgroup.subtree_control";
  std::string enabled = " " + ReadText(control) + " ";
  for (char& c : enabled) c = c == '\n' ? ' ' : c;
  for (const std::string& c : wanted) {
    if (enabled.find(" " + c + " ") != std::string::npos) continue;
    Status st = WriteText(control, "+" + c);
    if (!st.ok()) {
      *failed = c;
      return st;
    }
  }
  return Ok();
}

std::string RunName() {
  uint32_t r = 0;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r) {
    r = static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%d-%08x", kPrefix, static_cast<int>(getpid()), r);
  return buf;
}

// Makes the missing cgroups above `leaf` ("a/b/c") below `root`, root first, each kept (the
// engine's), and hands each of them, `root` too, to `each`.
Status MakeAncestors(const std::string& root, const std::string& leaf,
                     const std::function<Status(const std::string&)>& each) {
  std::string dir = root;
  for (size_t slash = leaf.find('/');; slash = leaf.find('/', slash + 1)) {
    WARD_TRY(each(dir));
    if (slash == std::string::npos) return Ok();
    dir = root + "/" + leaf.substr(0, slash);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoError("creating " + dir, errno);
  }
}

// Whether a cgroup that exists is an empty leaf: no process in it and no cgroup below it (on v2
// an interior cgroup's own cgroup.procs is always empty).
bool EmptyLeaf(int dir) {
  UniqueFd procs(openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC));
  char c;
  if (!procs || read(procs.get(), &c, 1) != 0) return false;
  DIR* d = fdopendir(dup(dir));
  if (d == nullptr) return false;
  bool empty = true;
  while (struct dirent* e = readdir(d)) {
    if (e->d_type == DT_DIR && std::strcmp(e->d_name, ".") != 0 &&
        std::strcmp(e->d_name, "..") != 0) {
      empty = false;
    }
  }
  closedir(d);
  return empty;
}

}  // namespace

Result<std::unique_ptr<Cgroup>> Cgroup::Create(const CgroupSpec& spec) {
  if (spec.version != 1 && spec.version != 2) {
    return Error(Code::kInternal, "no cgroup version planned");
  }
  std::unique_ptr<Cgroup> cg(new Cgroup());
  Status st = cg->Init(spec);
  if (!st.ok()) {
    (void)cg->Destroy();
    return std::move(st).With(std::string("cgroup v") + std::to_string(spec.version));
  }
  return cg;
}

Cgroup::~Cgroup() { (void)Destroy(); }

Status Cgroup::MakeDir(const std::string& parent, const std::string& name) {
  std::string path = parent + "/" + name;
  if (paths_.size() >= kMaxCgroupDirs) {
    return Error(Code::kInternal, "more cgroup directories than the teardown takes: " + path);
  }
  if (fixed_) return MakeFixedLeaf(parent, name);
  if (mkdir(path.c_str(), 0755) != 0) return ErrnoError("creating " + path, errno);
  paths_.push_back(path);
  return Ok();
}

Status Cgroup::MakeV1Dir(const std::string& parent, const std::string& name) {
  if (!fixed_) SweepStale(parent);
  return MakeDir(parent, name);
}

// The engine's path: its ancestors are the engine's (kept, as runc keeps them); the leaf is the
// container's alone, held locked while this Cgroup lives (one container a cgroup, also when two
// are created on one path at once). One that exists is taken over only while it is an empty
// leaf, since it is torn down (everything inside killed) with the container.
Status Cgroup::MakeFixedLeaf(const std::string& root, const std::string& leaf) {
  WARD_TRY(MakeAncestors(root, leaf, [](const std::string&) { return Ok(); }));
  const std::string path = root + "/" + leaf;
  const bool made = mkdir(path.c_str(), 0755) == 0;
  if (!made && errno != EEXIST) return ErrnoError("creating " + path, errno);
  UniqueFd dir(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return Error(Code::kInvalidArgument, path + " (linux.cgroupsPath) is not a cgroup");
  if (flock(dir.get(), LOCK_EX | LOCK_NB) != 0) {
    return Error(Code::kFailedPrecondition,
                 "the cgroup " + path + " (linux.cgroupsPath) is another container's");
  }
  if (!made && !EmptyLeaf(dir.get())) {
    return Error(Code::kFailedPrecondition,
                 "the cgroup " + path + " (linux.cgroupsPath) exists and has processes or cgroups "
                 "below it: a container's cgroup must be its own");
  }
  leaf_locks_.push_back(std::move(dir));
  paths_.push_back(path);
  return Ok();
}

// Each ancestor of an engine's leaf hands the wanted controllers to its children (the engine
// has normally done so already).
Status Cgroup::EnableV2ControllersAbove(const CgroupSpec& spec) {
  const std::vector<std::string> wanted = WantedControllers(spec);
  return MakeAncestors(spec.v2_parent, spec.fixed_leaf.substr(1), [&](const std::string& dir) {
    std::string failed;
    Status st = EnableControllersIn(dir, wanted, &failed);
    return st.ok() ? st : std::move(st).With("enabling the " + failed + " controller in " + dir);
  });
}

Status Cgroup::MakeSharedV2Parent(const CgroupSpec& spec) {
  // Kept after the run, as container engines keep theirs: later runs share it.
  const std::string above = spec.v2_parent.substr(0, spec.v2_parent.rfind('/'));
  std::string failed;
  Status st = EnableControllersIn(above, WantedControllers(spec), &failed);
  if (!st.ok()) return std::move(st).With("enabling the " + failed + " controller in " + above);
  if (mkdir(spec.v2_parent.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoError("creating " + spec.v2_parent, errno);
  }
  return Ok();
}

Status Cgroup::EnableV2Controllers(const CgroupSpec& spec) {
  const std::vector<std::string> wanted = WantedControllers(spec);
  std::string failed;
  Status st = EnableControllersIn(spec.v2_parent, wanted, &failed);
  if (!st.ok() && st.err() == EBUSY && spec.v2_parent_is_own) {
    // "No internal processes": our own cgroup can only hand controllers to children once no
    // process lives in it. Move the supervisor to a leaf (swept once it has exited).
    std::string leaf = spec.v2_parent + "/" + kPrefix + std::to_string(getpid()) + "-sup";
    if (mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoError("creating " + leaf, errno);
    }
    WARD_TRY(WriteText(leaf + "/cgroup.procs", "0"));
    st = EnableControllersIn(spec.v2_parent, wanted, &failed);
  }
  if (!st.ok()) {
    return std::move(st).With(
        "enabling the " + failed + " controller for children of " + spec.v2_parent +
        (st.err() == EBUSY ? " (other processes live in that cgroup: point WARD_CGROUP_ROOT at "
                             "an empty delegated cgroup)"
                           : ""));
  }
  return Ok();
}

Status Cgroup::Init(const CgroupSpec& spec) {
  version_ = spec.version;
  fixed_ = !spec.fixed_leaf.empty();
  const std::string name = fixed_ ? spec.fixed_leaf.substr(1) : RunName();
  if (version_ == 2) {
    if (fixed_) {
      WARD_TRY(EnableV2ControllersAbove(spec));
    } else {
      if (spec.v2_parent_create) WARD_TRY(MakeSharedV2Parent(spec));
      SweepStale(spec.v2_parent);
      WARD_TRY(EnableV2Controllers(spec));
    }
    WARD_TRY(MakeDir(spec.v2_parent, name));
    std::string dir = paths_.back();
    memory_dir_ = pids_dir_ = cpu_dir_ = dir;
    if (spec.memory_bytes) {
      WARD_TRY(WriteText(dir + "/memory.max", std::to_string(*spec.memory_bytes)));
      // Absent without swap accounting / before Linux 4.19: the limit above still holds.
      Status swap = WriteText(dir + "/memory.swap.max", "0");
      if (!swap.ok() && swap.err() != ENOENT) return swap;
      // One OOM kill ends the whole sandbox rather than leaving a half-dead tree.
      Status group = WriteText(dir + "/memory.oom.group", "1");
      if (!group.ok() && group.err() != ENOENT) return group;
    }
    if (spec.pids) WARD_TRY(WriteText(dir + "/pids.max", std::to_string(*spec.pids)));
    if (spec.cpu_quota_us) {
      WARD_TRY(WriteText(dir + "/cpu.max", std::to_string(*spec.cpu_quota_us) + " " +
                                               std::to_string(spec.cpu_period_us)));
    }
    clone_fd_.reset(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!clone_fd_) return ErrnoError("opening " + dir, errno);
    return Ok();
  }
  // A parent is planned for each controller with a limit, and for a container's cgroup named
  // by its engine, for each one there is (its usage is then read there).
  if (!spec.v1_memory_parent.empty()) {
    WARD_TRY(MakeV1Dir(spec.v1_memory_parent, name));
    memory_dir_ = paths_.back();
    if (spec.memory_bytes) {
      std::string v = std::to_string(*spec.memory_bytes);
      WARD_TRY(WriteText(memory_dir_ + "/memory.limit_in_bytes", v));
      // memsw (memory + swap) must be at least the memory limit, so it comes second.
      if (spec.v1_memsw) WARD_TRY(WriteText(memory_dir_ + "/memory.memsw.limit_in_bytes", v));
    }
  }
  if (!spec.v1_pids_parent.empty()) {
    WARD_TRY(MakeV1Dir(spec.v1_pids_parent, name));
    pids_dir_ = paths_.back();
    if (spec.pids) WARD_TRY(WriteText(pids_dir_ + "/pids.max", std::to_string(*spec.pids)));
  }
  if (!spec.v1_cpu_parent.empty()) {
    WARD_TRY(MakeV1Dir(spec.v1_cpu_parent, name));
    cpu_dir_ = paths_.back();
    if (spec.cpu_quota_us) {
      WARD_TRY(WriteText(cpu_dir_ + "/cpu.cfs_period_us", std::to_string(spec.cpu_period_us)));
      WARD_TRY(WriteText(cpu_dir_ + "/cpu.cfs_quota_us", std::to_string(*spec.cpu_quota_us)));
    }
  }
  for (const std::string& parent : spec.v1_accounting_parents) WARD_TRY(MakeV1Dir(parent, name));
  if (paths_.empty()) return Error(Code::kInternal, "no v1 controller planned");
  for (const std::string& dir : paths_) {
    std::string tasks = dir + "/tasks";
    UniqueFd fd(open(tasks.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return ErrnoError("opening " + tasks, errno);
    join_fds_.push_back(std::move(fd));
  }
  return Ok();
}

std::vector<int> Cgroup::self_join_fds() const {
  std::vector<int> fds;
  for (const UniqueFd& fd : join_fds_) fds.push_back(fd.get());
  return fds;
}

void Cgroup::StartReaper(int keep_fd) {
  if (reaper_ > 0 || destroyed_ || paths_.empty()) return;
  ReapRetiredCgroupReapers();
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return;  // the sweep of the next run remains
  // The supervisor's exit is watched through a pidfd as well as the pipe: a process forked
  // later that does not exec would otherwise hold the pipe's write end open.
  UniqueFd self(sys::PidfdOpen(getpid(), 0));
  CgroupReaperSpec spec;
  spec.version = version_;
  spec.dirs = paths_;
  spec.done_fd = p[0];
  spec.supervisor_pidfd = self.get();
  spec.keep_fd = keep_fd;
  spec.timeout_ms = kReaperTeardownMs;
  pid_t pid = SpawnCgroupReaper(spec);
  close(p[0]);
  if (pid < 0) {
    close(p[1]);
    return;
  }
  reaper_ = pid;
  reaper_pipe_.reset(p[1]);
}

Status Cgroup::Attach(pid_t pid) {
  std::string v = std::to_string(pid);
  for (const std::string& dir : paths_) WARD_TRY(WriteText(dir + "/cgroup.procs", v));
  return Ok();
}

void Cgroup::KillAll() {
  for (const std::string& dir : paths_) KillCgroupDir(version_, dir.c_str());
}

CgroupUsage Cgroup::ReadUsage() const {
  CgroupUsage u;
  if (version_ == 2 && !paths_.empty()) {
    const std::string& d = paths_.front();
    u.memory_peak_bytes = NumberIn(d + "/memory.peak");  // Linux 5.19
    u.oom_kills = KeyedValue(ReadText(d + "/memory.events"), "oom_kill").value_or(0);
    u.pids_refused = KeyedValue(ReadText(d + "/pids.events"), "max").value_or(0);
    std::string cpu = ReadText(d + "/cpu.stat");
    u.cpu_usage_usec = KeyedValue(cpu, "usage_usec");
    u.cpu_throttled_periods = KeyedValue(cpu, "nr_throttled").value_or(0);
    return u;
  }
  if (!memory_dir_.empty()) {
    u.memory_peak_bytes = NumberIn(memory_dir_ + "/memory.max_usage_in_bytes");
    u.oom_kills = KeyedValue(ReadText(memory_dir_ + "/memory.oom_control"), "oom_kill").value_or(0);
  }
  if (!pids_dir_.empty()) {
    u.pids_refused = KeyedValue(ReadText(pids_dir_ + "/pids.events"), "max").value_or(0);
  }
  if (!cpu_dir_.empty()) {
    u.cpu_throttled_periods =
        KeyedValue(ReadText(cpu_dir_ + "/cpu.stat"), "nr_throttled").value_or(0);
  }
  return u;
}

Status Cgroup::Destroy(int last_pidfd) {
  if (destroyed_) return Ok();
  destroyed_ = true;
  clone_fd_.reset();
  join_fds_.clear();
  if (last_pidfd >= 0) {
    // Readable once it has exited, and then it has left the cgroup (cgroup_exit runs before
    // the process becomes a zombie). Teardown below still kills and polls, with its timeout.
    struct pollfd pfd = {last_pidfd, POLLIN, 0};
    while (poll(&pfd, 1, kTeardownMs) < 0 && errno == EINTR) {
    }
  }
  bool gone = Teardown(paths_, version_, kTeardownMs);
  leaf_locks_.clear();
  if (reaper_ > 0) {
    if (gone) {
      char done = 'd';
      ssize_t n = write(reaper_pipe_.get(), &done, 1);
      (void)n;
    }
    // Without "done" the reaper sees EOF and keeps trying on its own.
    reaper_pipe_.reset();
    RetireCgroupReaper(reaper_);
    reaper_ = -1;
  }
  ReapRetiredCgroupReapers();
  if (!gone) {
    std::string left;
    for (const auto& p : paths_) {
      if (access(p.c_str(), F_OK) == 0) left += (left.empty() ? "" : ", ") + p;
    }
    return Error(Code::kInternal, "could not remove " + left + " (still busy)");
  }
  return Ok();
}

}  // namespace ward::enforce
