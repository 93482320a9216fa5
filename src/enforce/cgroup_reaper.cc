#include "enforce/cgroup_reaper.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>

namespace ward::enforce {
namespace {

// Not under a sanitizer: its instrumentation of the reaper would write the supervisor thread's
// sanitizer state concurrently with that thread.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
constexpr bool kSharesMemory = true;

// A system call that touches nothing but its registers: the reaper shares the supervisor's TLS,
// and libc's wrappers write errno there. Returns -errno on failure.
inline long Sys(long n, long a = 0, long b = 0, long c = 0, long d = 0) {
  long ret;
  register long r10 asm("r10") = d;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
               : "rcx", "r11", "memory");
  return ret;
}
#else
constexpr bool kSharesMemory = false;

// The reaper is a fork here: libc's wrapper is safe, its errno is the reaper's own.
inline long Sys(long n, long a = 0, long b = 0, long c = 0, long d = 0) {
  long r = syscall(n, a, b, c, d);
  return r < 0 ? -errno : r;
}
#endif

constexpr size_t kStackSize = 64 << 10;

// Everything the reaper reads, beside its stack in one mapping: the supervisor writes it before
// the clone and never again.
struct ReaperArgs {
  int version;
  int ndirs;
  int done_fd, pidfd, keep_fd;
  int timeout_ms;
  char dirs[kMaxCgroupDirs][PATH_MAX];  // only the strings' own bytes are ever touched
};

long L(const void* p) { return reinterpret_cast<long>(p); }

[[noreturn]] void Exit() {
  for (;;) Sys(SYS_exit_group, 0);
}

int64_t NowMs() {
  struct timespec ts = {};
  Sys(SYS_clock_gettime, CLOCK_MONOTONIC, L(&ts));
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// dir + "/" + leaf into out; false when it does not fit.
bool JoinPath(char (&out)[PATH_MAX], const char* dir, const char* leaf) {
  size_t n = 0;
  for (const char* p = dir; *p; ++p) {
    if (n + 1 >= sizeof out) return false;
    out[n++] = *p;
  }
  if (n + 1 >= sizeof out) return false;
  out[n++] = '/';
  for (const char* p = leaf; *p; ++p) {
    if (n + 1 >= sizeof out) return false;
    out[n++] = *p;
  }
  out[n] = '\0';
  return true;
}

int ReaperMain(void* arg) {
  const ReaperArgs& a = *static_cast<const ReaperArgs*>(arg);
  // Outlives the supervisor on purpose: its own session, every signal blocked (by the
  // supervisor around the clone), and no inherited descriptors but its three (it must not hold
  // the caller's pipes open): the pipe, the pidfd and the kept descriptor as 3, 4 and 5, the
  // standard ones on /dev/null.
  Sys(SYS_setsid);
  Sys(SYS_prctl, PR_SET_NAME, L("ward-cgroup-reaper"));
  long pipe_fd = Sys(SYS_fcntl, a.done_fd, F_DUPFD, 10);
  long pidfd = a.pidfd >= 0 ? Sys(SYS_fcntl, a.pidfd, F_DUPFD, 10) : -1;
  long kept = a.keep_fd >= 0 ? Sys(SYS_fcntl, a.keep_fd, F_DUPFD, 10) : -1;
  if (pipe_fd < 0 || Sys(SYS_dup2, pipe_fd, 3) != 3) Exit();
  if (pidfd >= 0 && Sys(SYS_dup2, pidfd, 4) != 4) Exit();
  if (kept >= 0 && Sys(SYS_dup2, kept, 5) != 5) Exit();
  if (pidfd < 0) Sys(SYS_close, 4);
  if (kept < 0) Sys(SYS_close, 5);
  Sys(SYS_close_range, 6, UINT_MAX, 0);
  long null = Sys(SYS_openat, AT_FDCWD, L("/dev/null"), O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd < 3; ++fd) {
    if (null < 0) {
      Sys(SYS_close, fd);
    } else if (null != fd) {
      Sys(SYS_dup2, null, fd);
    }
  }
  if (null > 2) Sys(SYS_close, null);

  struct pollfd pfds[2] = {{3, POLLIN, 0}, {pidfd >= 0 ? 4 : -1, POLLIN, 0}};
  while (Sys(SYS_poll, L(pfds), 2, -1) == -EINTR) {
  }
  // "done" may be in the pipe even when the supervisor has exited since.
  Sys(SYS_fcntl, 3, F_SETFL, O_NONBLOCK);
  char b = 0;
  if (Sys(SYS_read, 3, L(&b), 1) == 1 && b == 'd') Exit();  // the supervisor tore it down
  const char* dirs[kMaxCgroupDirs];
  for (int i = 0; i < a.ndirs; ++i) dirs[i] = a.dirs[i];
  TeardownCgroupDirs(a.version, dirs, a.ndirs, a.timeout_ms);
  Exit();
}

struct Reaper {
  pid_t pid;
  void* mem;  // its stack and arguments; null when it is a fork (its copy is its own)
  size_t size;
  bool retired;
};
std::mutex reapers_mu;
std::vector<Reaper> reapers;

}  // namespace

void KillCgroupDir(int version, const char* dir) {
  char path[PATH_MAX];
  if (version == 2 && JoinPath(path, dir, "cgroup.kill")) {
    long fd = Sys(SYS_openat, AT_FDCWD, L(path), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      long w = Sys(SYS_write, fd, L("1"), 1);
      Sys(SYS_close, fd);
      if (w == 1) return;
    }
  }
  if (!JoinPath(path, dir, "cgroup.procs")) return;
  long fd = Sys(SYS_openat, AT_FDCWD, L(path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[4096];
  long pid = 0;
  bool digits = false;
  auto flush = [&] {
    if (digits && pid > 0) Sys(SYS_kill, pid, SIGKILL);
    pid = 0;
    digits = false;
  };
  for (;;) {
    long n = Sys(SYS_read, fd, L(buf), sizeof buf);
    if (n == -EINTR) continue;
    if (n <= 0) break;
    for (long i = 0; i < n; ++i) {
      if (buf[i] >= '0' && buf[i] <= '9') {
        if (pid < INT_MAX / 10) pid = pid * 10 + (buf[i] - '0');
        digits = true;
      } else {
        flush();
      }
    }
  }
  flush();
  Sys(SYS_close, fd);
}

bool TeardownCgroupDirs(int version, const char* const* dirs, int n, int timeout_ms) {
  if (n < 0 || n > kMaxCgroupDirs) return false;
  const int64_t deadline = NowMs() + timeout_ms;
  bool gone[kMaxCgroupDirs] = {};
  long pause_us = 200;
  while (true) {
    int left = 0;
    for (int i = n; i-- > 0;) {
      if (gone[i]) continue;
      long r = Sys(SYS_rmdir, L(dirs[i]));
      if (r == 0 || r == -ENOENT) {
        gone[i] = true;
      } else {
        KillCgroupDir(version, dirs[i]);
        ++left;
      }
    }
    if (left == 0) return true;
    if (NowMs() >= deadline) return false;
    struct timespec ts = {0, pause_us * 1000};
    Sys(SYS_nanosleep, L(&ts), 0);
    pause_us = pause_us * 2 < 50000 ? pause_us * 2 : 50000;
  }
}

pid_t SpawnCgroupReaper(const CgroupReaperSpec& spec) {
  if (spec.dirs.empty() || spec.dirs.size() > kMaxCgroupDirs || spec.done_fd < 0) {
    errno = EINVAL;
    return -1;
  }
  for (const std::string& d : spec.dirs) {
    if (d.size() >= PATH_MAX) {
      errno = ENAMETOOLONG;
      return -1;
    }
  }
  // [guard page][stack][arguments]: the stack grows down towards the guard.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t args_size = (sizeof(ReaperArgs) + page - 1) / page * page;
  const size_t size = page + kStackSize + args_size;
  char* mem = static_cast<char*>(mmap(nullptr, size, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (mem == MAP_FAILED) return -1;
  if (mprotect(mem, page, PROT_NONE) != 0) {
    int e = errno;
    munmap(mem, size);
    errno = e;
    return -1;
  }
  // Not value-initialised: the mapping is zeroed, and touching only what is written spares
  // the page faults of the unused path buffers.
  auto* a = new (mem + page + kStackSize) ReaperArgs;
  a->version = spec.version;
  a->ndirs = static_cast<int>(spec.dirs.size());
  a->done_fd = spec.done_fd;
  a->pidfd = spec.supervisor_pidfd;
  a->keep_fd = spec.keep_fd;
  a->timeout_ms = spec.timeout_ms;
  for (size_t i = 0; i < spec.dirs.size(); ++i) {
    std::memcpy(a->dirs[i], spec.dirs[i].c_str(), spec.dirs[i].size() + 1);
  }

  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pid_t pid;
  if constexpr (kSharesMemory) {
    pid = clone(&ReaperMain, mem + page + kStackSize, CLONE_VM | SIGCHLD, a);
  } else {
    pid = fork();
    if (pid == 0) ReaperMain(a);
  }
  const int err = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0 || !kSharesMemory) munmap(mem, size);
  if (pid < 0) {
    errno = err;
    return -1;
  }
  std::lock_guard<std::mutex> lock(reapers_mu);
  reapers.push_back({pid, kSharesMemory ? mem : nullptr, size, false});
  return pid;
}

void RetireCgroupReaper(pid_t pid) {
  std::lock_guard<std::mutex> lock(reapers_mu);
  for (Reaper& r : reapers) {
    if (r.pid == pid) r.retired = true;
  }
}

void ReapRetiredCgroupReapers() {
  std::lock_guard<std::mutex> lock(reapers_mu);
  std::erase_if(reapers, [](const Reaper& r) {
    if (!r.retired) return false;
    int w;
    while ((w = waitpid(r.pid, nullptr, WNOHANG)) < 0 && errno == EINTR) {
    }
    if (w == 0) return false;  // still running
    // Reaped, or reaped by someone else (ECHILD): it runs no more, its memory can go.
    if (r.mem != nullptr) munmap(r.mem, r.size);
    return true;
  });
}

}  // namespace ward::enforce
