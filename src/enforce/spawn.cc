#include "enforce/spawn.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <utility>

#include "common/linux.h"

namespace ward::enforce {
namespace {

// CLOSE_RANGE_CLOEXEC where the kernel lacks it (gVisor): each open fd >= 3 marked, from a
// listing of /proc/self/fd read onto the stack (the command allocates nothing).
bool MarkCloseOnExecFrom3() {
  int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  alignas(8) char buf[4096];
  long n;
  while ((n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
    for (long off = 0; off < n;) {
      const auto* e = reinterpret_cast<const struct dirent64*>(buf + off);
      off += e->d_reclen;
      int fd = 0;
      for (const char* c = e->d_name; *c >= '0' && *c <= '9'; ++c) fd = fd * 10 + (*c - '0');
      if (fd >= 3 && fd != dir) fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
  }
  close(dir);
  return n == 0;
}

}  // namespace

ExecArgs PrepareExec(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  ExecArgs a;
  for (const auto& s : argv) a.argv.push_back(const_cast<char*>(s.c_str()));
  a.argv.push_back(nullptr);
  for (const auto& e : env) a.envp.push_back(const_cast<char*>(e.c_str()));
  a.envp.push_back(nullptr);
  const std::string& cmd = argv[0];
  if (cmd.find('/') != std::string::npos) {
    a.paths.push_back(cmd);
    return a;
  }
  a.searched = true;
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : env) {
    if (e.compare(0, 5, "PATH=") == 0) path = e.substr(5);
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string full = end > start ? path.substr(start, end - start) : std::string(".");
    full.append(1, '/').append(cmd);
    a.paths.push_back(std::move(full));
    start = end + 1;
  }
  return a;
}

// execve with the PATH search done in the sandbox's own view, with a shell's exit-status
// conventions: 127 when nothing was found, 126 when found but not executable. No allocation.
int ExecCommand(const ExecArgs& a) {
  if (!a.searched) {
    execve(a.paths[0].c_str(), a.argv.data(), a.envp.data());
    return errno;
  }
  int saved = ENOENT;
  for (const std::string& full : a.paths) {
    execve(full.c_str(), a.argv.data(), a.envp.data());
    if (errno == EACCES || errno == ENOEXEC || errno == EPERM) saved = errno;
  }
  return saved;
}

bool CloseOnExecFrom3() {
  if (sys::CloseRange(3, UINT_MAX, CLOSE_RANGE_CLOEXEC) == 0) return true;
  return errno == EINVAL && MarkCloseOnExecFrom3();
}

// For errors: the name of a resource the policy limits (static text, nothing allocated).
const char* RlimitName(int resource) {
  switch (resource) {
    case RLIMIT_AS:
      return "RLIMIT_AS";
    case RLIMIT_DATA:
      return "RLIMIT_DATA";
    case RLIMIT_NPROC:
      return "RLIMIT_NPROC";
    case RLIMIT_CPU:
      return "RLIMIT_CPU";
    case RLIMIT_FSIZE:
      return "RLIMIT_FSIZE";
    case RLIMIT_NOFILE:
      return "RLIMIT_NOFILE";
    case RLIMIT_MSGQUEUE:
      return "RLIMIT_MSGQUEUE";
    case RLIMIT_SIGPENDING:
      return "RLIMIT_SIGPENDING";
    default:
      return "a resource limit";
  }
}

const char* ApplyRlimits(const std::vector<ProcessSpec::Rlimit>& rlimits) {
  struct rlimit core = {0, 0};
  if (setrlimit(RLIMIT_CORE, &core) != 0) return "RLIMIT_CORE";
  for (const auto& r : rlimits) {
    struct rlimit rl = {r.soft, r.hard};
    if (setrlimit(r.resource, &rl) != 0) return RlimitName(r.resource);
  }
  return nullptr;
}

pid_t SpawnOnOwnStack(int (*fn)(void*), void* arg) {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  constexpr size_t kStackSize = 1 << 20;
  void* stack = mmap(nullptr, kStackSize, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  if (stack != MAP_FAILED) {
    pid_t pid = clone(fn, static_cast<char*>(stack) + kStackSize, CLONE_VM | CLONE_VFORK | SIGCHLD,
                      arg);
    const int e = errno;
    munmap(stack, kStackSize);  // the child has exec'd or exited: the stack is unused
    errno = e;
    return pid;
  }
#endif
  pid_t pid = fork();
  if (pid == 0) _exit(fn(arg));
  return pid;
}

}  // namespace ward::enforce
