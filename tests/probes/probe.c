/* ward-probe: one small static program, one verb per behaviour, run inside sandboxes by the
 * integration and escape tests. Each verb attempts one thing and prints exactly one line:
 *   "ok [detail]"            exit 0: the attempt succeeded
 *   "err ENAME [detail]"     exit 1: it failed with errno ENAME
 * Usage errors exit 2. The tests assert the exact errno, and pair every denial with a
 * positive control that proves the probe can see the thing succeed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/nsfs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <mqueue.h>
#include <pthread.h>
#include <time.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static const char* ErrName(int e) {
  switch (e) {
#define E(x) case x: return #x;
    E(EPERM) E(ENOENT) E(ESRCH) E(EINTR) E(EIO) E(ENXIO) E(E2BIG) E(ENOEXEC) E(EBADF)
    E(ECHILD) E(EAGAIN) E(ENOMEM) E(EACCES) E(EFAULT) E(EBUSY) E(EEXIST) E(EXDEV)
    E(ENODEV) E(ENOTDIR) E(EISDIR) E(EINVAL) E(ENFILE) E(EMFILE) E(ENOTTY) E(ETXTBSY)
    E(EFBIG) E(ENOSPC) E(ESPIPE) E(EROFS) E(EMLINK) E(EPIPE) E(ERANGE) E(ENAMETOOLONG)
    E(ENOSYS) E(ENOTEMPTY) E(ELOOP) E(ENOTSOCK) E(EPROTONOSUPPORT) E(EOPNOTSUPP)
    E(EAFNOSUPPORT) E(EADDRINUSE) E(EADDRNOTAVAIL) E(ENETDOWN) E(ENETUNREACH)
    E(ECONNRESET) E(EISCONN) E(ENOTCONN) E(ETIMEDOUT) E(ECONNREFUSED) E(EHOSTUNREACH)
    E(EALREADY) E(EINPROGRESS) E(EDQUOT) E(ENOKEY) E(EKEYREJECTED) E(ESOCKTNOSUPPORT)
#undef E
    default: return "EUNKNOWN";
  }
}

static int Ok(const char* detail) {
  printf("ok%s%s\n", detail && *detail ? " " : "", detail ? detail : "");
  return 0;
}
static int Err(int e, const char* detail) {
  printf("err %s%s%s\n", ErrName(e), detail && *detail ? " " : "", detail ? detail : "");
  return 1;
}
static int Result(long rc, const char* detail) { return rc < 0 ? Err(errno, detail) : Ok(detail); }

static int Connect(int family, const char* host, int port, int type, int timeout_ms) {
  struct sockaddr_storage ss;
  socklen_t len;
  memset(&ss, 0, sizeof ss);
  if (family == AF_INET6) {
    struct sockaddr_in6* a = (struct sockaddr_in6*)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1) return Err(EINVAL, "address");
    len = sizeof *a;
  } else {
    struct sockaddr_in* a = (struct sockaddr_in*)&ss;
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1) return Err(EINVAL, "address");
    len = sizeof *a;
  }
  int fd = socket(family, type | SOCK_CLOEXEC | (type == SOCK_STREAM ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0) return Err(errno, "socket");
  if (type == SOCK_DGRAM) {
    ssize_t n = sendto(fd, "x", 1, 0, (struct sockaddr*)&ss, len);
    return n < 0 ? Err(errno, "sendto") : Ok("sent");
  }
  if (connect(fd, (struct sockaddr*)&ss, len) == 0) return Ok("connected");
  if (errno != EINPROGRESS) return Err(errno, "connect");
  struct pollfd p = {fd, POLLOUT, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return Err(ETIMEDOUT, "connect");
  int soerr = 0;
  socklen_t sl = sizeof soerr;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
  if (soerr) return Err(soerr, "connect");
  return Ok("connected");
}

/* Scans every /proc/<pid>/{environ,cmdline} it can read for a needle. */
static int ScanProc(const char* needle) {
  DIR* d = opendir("/proc");
  if (!d) return Err(errno, "/proc");
  struct dirent* e;
  int found = 0, readable = 0;
  char where[320] = "";
  while ((e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const char* files[] = {"environ", "cmdline"};
    for (int i = 0; i < 2; ++i) {
      /* Our own argv carries the needle; our own environment is fair game. */
      if (i == 1 && atoi(e->d_name) == getpid()) continue;
      char path[300];
      snprintf(path, sizeof path, "/proc/%s/%s", e->d_name, files[i]);
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      char buf[65536];
      ssize_t n = read(fd, buf, sizeof buf - 1);
      close(fd);
      if (n < 0) continue;
      ++readable;
      buf[n] = 0;
      for (ssize_t j = 0; j < n; ++j) if (buf[j] == 0) buf[j] = '\n';
      if (strstr(buf, needle)) {
        found = 1;
        snprintf(where, sizeof where, "%s", path);
      }
    }
  }
  closedir(d);
  char detail[400];
  snprintf(detail, sizeof detail, "readable=%d%s%.300s", readable, found ? " found=" : "", where);
  return found ? Ok(detail) : Err(ENOENT, detail);
}

static int ListFds(void) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return Err(errno, "/proc/self/fd");
  char out[1024] = "";
  struct dirent* e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    int fd = atoi(e->d_name);
    if (fd == dirfd(d)) continue;
    char link[300] = "", target[256] = "";
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n > 0) target[n] = 0;
    char item[320];
    snprintf(item, sizeof item, "%s%d=%s", out[0] ? "," : "", fd, target);
    strncat(out, item, sizeof out - strlen(out) - 1);
  }
  closedir(d);
  return Ok(out);
}

/* For "spin": burn CPU until the deadline (CLOCK_MONOTONIC seconds). */
static volatile double g_spin_until;
static void* Spin(void* unused) {
  (void)unused;
  volatile unsigned long x = 0;
  for (;;) {
    for (int i = 0; i < 100000; ++i) x += i;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec + t.tv_nsec / 1e9 >= g_spin_until) break;
  }
  return NULL;
}

static int Caps(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return Err(errno, "status");
  char line[256], out[512] = "";
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "Cap", 3) == 0 || strncmp(line, "NoNewPrivs", 10) == 0 ||
        strncmp(line, "Seccomp:", 8) == 0 || strncmp(line, "Groups", 6) == 0) {
      line[strcspn(line, "\n")] = 0;
      for (char* p = line; *p; ++p) if (*p == '\t') *p = ' ';
      strncat(out, line, sizeof out - strlen(out) - 2);
      strcat(out, ";");
    }
  }
  fclose(f);
  return Ok(out);
}

#include <pthread.h>
struct RaceArgs {
  char* buf;
  const char* good;
  const char* bad;
  volatile int stop;
};
static void* Flipper(void* p) {
  struct RaceArgs* r = p;
  size_t n = strlen(r->good) > strlen(r->bad) ? strlen(r->good) : strlen(r->bad);
  while (!r->stop) {
    memcpy(r->buf, r->bad, strlen(r->bad) + 1);
    memcpy(r->buf, r->good, strlen(r->good) + 1);
    (void)n;
  }
  return NULL;
}
static int RaceCreate(const char* good, const char* bad, int rounds) {
  static char buf[4096];
  strcpy(buf, good);
  struct RaceArgs r = {buf, good, bad, 0};
  pthread_t t;
  pthread_create(&t, NULL, Flipper, &r);
  int created_bad = 0, created_good = 0;
  for (int i = 0; i < rounds; ++i) {
    int fd = open(buf, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
    struct stat st;
    if (lstat(bad, &st) == 0) { ++created_bad; unlink(bad); }
    if (lstat(good, &st) == 0) { ++created_good; unlink(good); }
  }
  r.stop = 1;
  pthread_join(t, NULL);
  char d[64];
  snprintf(d, sizeof d, "bad=%d good=%d", created_bad, created_good);
  return created_bad ? Ok(d) : Err(ENOENT, d);
}

/* File approvals. */
static long ReadSome(const char* path, int flags, char* out, size_t cap) {
  int fd = open(path, flags | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n = read(fd, out, cap - 1);
  int e = errno;
  close(fd);
  if (n < 0) return -e;
  out[n] = 0;
  for (ssize_t i = 0; i < n; ++i) if (out[i] == '\n' || out[i] == ' ') out[i] = '_';
  return n;
}

struct OpenRace {
  char* buf;
  const char* a;
  const char* b;
  volatile int stop;
};
static void* OpenRaceFlipper(void* p) {
  struct OpenRace* r = p;
  while (!r->stop) {
    strcpy(r->buf, r->b);
    strcpy(r->buf, r->a);
  }
  return NULL;
}
/* One thread opens buf (O_RDONLY) in a loop while another flips it between an allowed path and
 * a secret one. Counts the opens whose content is not the allowed file's; prints the first. */
static int RaceOpen(const char* good, const char* bad, int rounds) {
  char want[256], got[256], other[256] = "";
  if (ReadSome(good, O_RDONLY, want, sizeof want) < 0) return Err(errno, "good");
  static char buf[4096];
  strcpy(buf, good);
  struct OpenRace r = {buf, good, bad, 0};
  pthread_t t;
  pthread_create(&t, NULL, OpenRaceFlipper, &r);
  int same = 0, different = 0, failed = 0;
  // At least `rounds` opens, and on until one was refused (the flipper won a race and the
  // supervisor read the other path) - a loaded machine may not interleave the two threads
  // early - up to 50 times as many, or 20 s (an emulated machine may never interleave them).
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int i = 0; i < rounds || (failed == 0 && i < 50 * rounds); ++i) {
    if (i >= rounds && i % 256 == 0) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec - start.tv_sec >= 20) break;
    }
    long n = ReadSome(buf, O_RDONLY, got, sizeof got);
    if (n < 0) { ++failed; continue; }
    if (strcmp(got, want) == 0) { ++same; continue; }
    if (!different) snprintf(other, sizeof other, "%s", got);
    ++different;
  }
  r.stop = 1;
  pthread_join(t, NULL);
  char d[512];
  snprintf(d, sizeof d, "same=%d different=%d failed=%d first_different=%s", same, different,
           failed, other);
  return different ? Ok(d) : Err(EACCES, d);
}

/* ---- Verbs that try to steer what ward does for the sandbox from outside it (the creation
 * guard, sandbox init), and the fileless-exec and Landlock-log surfaces. ---- */

/* "rdonly,creat,trunc,append,excl,nofollow,wronly,rdwr,path" -> open flags. */
static int ParseOpenFlags(const char* s) {
  int f = 0;
  if (strstr(s, "wronly")) f |= O_WRONLY;
  if (strstr(s, "rdwr")) f |= O_RDWR;
  if (strstr(s, "creat")) f |= O_CREAT;
  if (strstr(s, "trunc")) f |= O_TRUNC;
  if (strstr(s, "append")) f |= O_APPEND;
  if (strstr(s, "excl")) f |= O_EXCL;
  if (strstr(s, "nofollow")) f |= O_NOFOLLOW;
  if (strstr(s, "path")) f = O_PATH;
  return f;
}

/* What an open gave: "ok dev=D ino=I mode=M rdev=MA:MI acc=rw data=<first bytes>". With
 * `data`, writes it first (a writable fd). */
static int ReportFd(int fd, const char* data) {
  struct stat st;
  if (fstat(fd, &st) != 0) return Err(errno, "fstat");
  int fl = fcntl(fd, F_GETFL);
  const char* acc = (fl & O_PATH) == O_PATH ? "path" : (fl & O_ACCMODE) == O_RDWR ? "rw"
                  : (fl & O_ACCMODE) == O_WRONLY ? "w" : "r";
  char wrote[32] = "";
  if (data && (fl & O_ACCMODE) != O_RDONLY) {
    ssize_t w = write(fd, data, strlen(data));
    snprintf(wrote, sizeof wrote, " wrote=%s", w < 0 ? ErrName(errno) : "ok");
  }
  char head[65] = "";
  if ((fl & O_ACCMODE) != O_WRONLY && (fl & O_PATH) != O_PATH && S_ISREG(st.st_mode)) {
    ssize_t n = pread(fd, head, sizeof head - 1, 0);
    if (n > 0) head[n] = 0;
    for (char* c = head; *c; ++c) if (*c == '\n' || *c == ' ') *c = '_';
  }
  char d[256];
  snprintf(d, sizeof d, "dev=%lu ino=%lu mode=%o rdev=%u:%u acc=%s%s data=%s",
           (unsigned long)st.st_dev, (unsigned long)st.st_ino, (unsigned)(st.st_mode & S_IFMT) >> 12,
           major(st.st_rdev), minor(st.st_rdev), acc, wrote, head);
  return Ok(d);
}

/* memfd-exec [execveat|proc]: a copy of this binary in a memfd, executed without a name. */
static int MemfdExec(const char* how, char** argv) {
  if (argv[0] && !strcmp(argv[0], "ward-probe-memfd-child")) return Ok("executed");
  int fd = (int)syscall(SYS_memfd_create, "x", 0);
  if (fd < 0) return Err(errno, "memfd_create");
  int self = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (self < 0) return Err(errno, "open self");
  char buf[65536];
  ssize_t n;
  while ((n = read(self, buf, sizeof buf)) > 0) {
    if (write(fd, buf, (size_t)n) != n) return Err(errno, "write memfd");
  }
  close(self);
  char* args[] = {"ward-probe-memfd-child", "memfd-exec", NULL};
  char* envp[] = {NULL};
  if (how && !strcmp(how, "proc")) {
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    execve(p, args, envp);
    return Err(errno, "execve");
  }
  syscall(SYS_execveat, fd, "", args, envp, AT_EMPTY_PATH);
  return Err(errno, "execveat");
}

/* landlock-restrict FLAGS: a ruleset handling read_file, restricted with these flags. */
static int LandlockRestrict(unsigned flags) {
  struct { unsigned long long handled_access_fs; } attr = {1ULL << 2 /* READ_FILE */};
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_restrict_self 446
#endif
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (rs < 0) return Err(errno, "create_ruleset");
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  return Result(syscall(SYS_landlock_restrict_self, rs, flags), "restrict_self");
}

/* pid1: what the command can do to sandbox init; one errno per attempt. */
static int Pid1(void) {
  char d[512];
  int mem = open("/proc/1/mem", O_RDWR | O_CLOEXEC);
  int mem_e = mem < 0 ? errno : 0;
  char link[256];
  int root_e = readlink("/proc/1/root", link, sizeof link) < 0 ? errno : 0;
  int fdd = open("/proc/1/fd/0", O_RDONLY | O_CLOEXEC);
  int fd_e = fdd < 0 ? errno : 0;
  int env = open("/proc/1/environ", O_RDONLY | O_CLOEXEC);
  int env_e = env < 0 ? errno : 0;
  int pt_e = ptrace(PTRACE_ATTACH, 1, 0, 0) < 0 ? errno : 0;
  char b[8] = "xxxxxxx";
  struct iovec l = {b, sizeof b}, r = {(void*)0x400000, sizeof b};
  int vm_e = process_vm_writev(1, &l, 1, &r, 1, 0) < 0 ? errno : 0;
  snprintf(d, sizeof d, "mem=%s root=%s fd=%s environ=%s ptrace=%s vm_writev=%s",
           mem_e ? ErrName(mem_e) : "ok", root_e ? ErrName(root_e) : "ok",
           fd_e ? ErrName(fd_e) : "ok", env_e ? ErrName(env_e) : "ok",
           pt_e ? ErrName(pt_e) : "ok", vm_e ? ErrName(vm_e) : "ok");
  return (mem_e && root_e && fd_e && env_e && pt_e && vm_e) ? Ok(d) : Err(EPERM, d);
}

/* guard-race ROUNDS OUTSIDE LOG: in the cwd, one thread makes ROUNDS creations (opens with
 * O_CREAT, mkdir, symlink, link, rename) through `d/...` while another swaps `d` between a real
 * directory and links that point outside the view (OUTSIDE absolute, relative, through /proc
 * magic links), renames directories and removes entries. Every descriptor a creation returned is
 * logged to LOG as "dev ino", for the test to compare with the host's inodes. */
static volatile int g_race_stop;
static void* GuardRaceSwapper(void* arg) {
  const char* outside = arg;
  char abs_link[512], magic[512], rel[512];
  snprintf(abs_link, sizeof abs_link, "%s", outside);
  snprintf(magic, sizeof magic, "/proc/1/root%s", outside);
  snprintf(rel, sizeof rel, "../../../../../../../../..%s", outside);
  const char* targets[] = {abs_link, magic, rel, "/proc/self/cwd/../outside", "hop/.."};
  unsigned i = 0;
  while (!g_race_stop) {
    const char* t = targets[i++ % 5];
    unlink("l");
    symlink(t, "l");
    syscall(SYS_renameat2, AT_FDCWD, "d", AT_FDCWD, "l", 2 /* RENAME_EXCHANGE */);
    syscall(SYS_renameat2, AT_FDCWD, "d", AT_FDCWD, "l", 2 /* RENAME_EXCHANGE */);
    if (i % 3 == 0) {
      rename("d", "e");
      rename("e", "d");
    }
    if (i % 7 == 0) {
      unlink("d/x");
      rmdir("d/n");
      unlink("d/s");
    }
  }
  return NULL;
}

static int GuardRace(long rounds, const char* outside, const char* log_path) {
  mkdir("d", 0755);
  mkdir("hop", 0755);
  FILE* log = fopen(log_path, "we");
  if (!log) return Err(errno, "log");
  pthread_t t;
  pthread_create(&t, NULL, GuardRaceSwapper, (void*)outside);
  long opened = 0, failed = 0;
  for (long r = 0; r < rounds; ++r) {
    int fd = -1;
    switch (r % 6) {
      case 0: fd = open("d/x", O_RDWR | O_CREAT | O_CLOEXEC, 0644); break;
      case 1: fd = open("d/canary", O_RDONLY | O_CREAT | O_CLOEXEC, 0644); break;
      case 2: fd = open("l/canary", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644); break;
      case 3: mkdir("d/n", 0755); break;
      case 4: symlink("x", "d/s"); break;
      case 5: fd = open("d/../d/x", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); break;
    }
    if (fd >= 0) {
      struct stat st;
      if (fstat(fd, &st) == 0) fprintf(log, "%lu %lu\n", (unsigned long)st.st_dev, (unsigned long)st.st_ino);
      close(fd);
      ++opened;
    } else if (r % 6 != 3 && r % 6 != 4) {
      ++failed;
    }
  }
  g_race_stop = 1;
  pthread_join(t, NULL);
  fclose(log);
  char d[96];
  snprintf(d, sizeof d, "rounds=%ld opened=%ld failed=%ld", rounds, opened, failed);
  return Ok(d);
}

/* "Seccomp:", "NoNewPrivs:" and "CapEff:" of /proc/PID/status, as "seccomp=2 nnp=1 capeff=0". */
static void StatusOf(int pid, char* out, size_t cap) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  FILE* f = fopen(path, "re");
  char sec[16] = "?", nnp[16] = "?", eff[32] = "?";
  while (f && fgets(line, sizeof line, f)) {
    if (!strncmp(line, "Seccomp:", 8)) sscanf(line + 8, "%15s", sec);
    if (!strncmp(line, "NoNewPrivs:", 11)) sscanf(line + 11, "%15s", nnp);
    if (!strncmp(line, "CapEff:", 7)) sscanf(line + 7, "%31s", eff);
  }
  if (f) fclose(f);
  snprintf(out, cap, "seccomp=%s nnp=%s capeff=%s", sec, nnp, eff);
}

/* The pid of the process whose comm is `name`, or 0. */
static int FindComm(const char* name) {
  DIR* d = opendir("/proc");
  struct dirent* e;
  int found = 0;
  while (d && (e = readdir(d))) {
    char path[300], comm[64] = "";
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
    FILE* f = fopen(path, "re");
    if (f && fgets(comm, sizeof comm, f) && !strncmp(comm, name, strlen(name))) found = atoi(e->d_name);
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return found;
}

/* guard-agent: starts the creation guard's agent (one creation), then reports its layers and what
 * the command can do to it; a last creation proves it still serves. */
static int GuardAgent(void) {
  int fd = open("agent-start", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Err(errno, "first creation");
  close(fd);
  int pid = FindComm("ward-guard");
  if (!pid) return Err(ESRCH, "no ward-guard process");
  char st[128], d[512], path[64];
  StatusOf(pid, st, sizeof st);
  snprintf(path, sizeof path, "/proc/%d/mem", pid);
  int mem = open(path, O_RDWR | O_CLOEXEC);
  int mem_e = mem < 0 ? errno : 0;
  int pt_e = ptrace(PTRACE_ATTACH, pid, 0, 0) < 0 ? errno : 0;
  char b[8] = "xxxxxxx";
  struct iovec l = {b, sizeof b}, r = {(void*)0x400000, sizeof b};
  int vm_e = process_vm_writev(pid, &l, 1, &r, 1, 0) < 0 ? errno : 0;
  int sig_e = kill(pid, 0) < 0 ? errno : 0;
  fd = open("agent-again", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  int again_e = fd < 0 ? errno : 0;
  snprintf(d, sizeof d, "%s mem=%s ptrace=%s vm_writev=%s signal=%s again=%s", st,
           mem_e ? ErrName(mem_e) : "ok", pt_e ? ErrName(pt_e) : "ok",
           vm_e ? ErrName(vm_e) : "ok", sig_e ? ErrName(sig_e) : "ok",
           again_e ? ErrName(again_e) : "ok");
  return Ok(d);
}

/* guard-agent-kill: starts the guard agent, tries to kill it (Landlock ABI >= 6 refuses the
 * signal), and once it is gone asks for another creation, which must fail closed. */
static int GuardAgentKill(void) {
  int fd = open("agent-start", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Err(errno, "first creation");
  close(fd);
  int pid = FindComm("ward-guard");
  if (!pid) return Err(ESRCH, "no ward-guard process");
  int kill_e = kill(pid, SIGKILL) < 0 ? errno : 0;
  /* Init reaps it; until then it is a zombie whose comm is still there. */
  for (int i = 0; !kill_e && i < 200 && FindComm("ward-guard") == pid; ++i) usleep(10000);
  fd = open("agent-after-kill", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  int again_e = fd < 0 ? errno : 0;
  if (fd >= 0) close(fd);
  int exists = access("agent-after-kill", F_OK) == 0;
  char d[128];
  snprintf(d, sizeof d, "kill=%s again=%s exists=%s", kill_e ? ErrName(kill_e) : "ok",
           again_e ? ErrName(again_e) : "ok", exists ? "yes" : "no");
  return Ok(d);
}

static int DeputyVerbs(int argc, char** argv, int* handled) {
  const char* v = argv[1];
  const char* a1 = argc > 2 ? argv[2] : NULL;
  const char* a2 = argc > 3 ? argv[3] : NULL;
  const char* a3 = argc > 4 ? argv[4] : NULL;
  *handled = 1;
  if (!strcmp(v, "open-report") && a2) {
    /* open-report PATH FLAGS [DATA] */
    int fd = open(a1, ParseOpenFlags(a2) | O_CLOEXEC, 0644);
    if (fd < 0) return Err(errno, "open");
    return ReportFd(fd, a3);
  }
  if (!strcmp(v, "fd-link-open") && a3) {
    /* fd-link-open SRC SRCFLAGS FLAGS [DATA]: SRC opened with SRCFLAGS as fd N, then a new
     * symlink ./fdlink -> /proc/self/fd/N opened with FLAGS (the path a creation takes). */
    int src = open(a1, ParseOpenFlags(a2) | O_CLOEXEC | O_NOCTTY);
    if (src < 0) return Err(errno, "open src");
    char target[64];
    snprintf(target, sizeof target, "/proc/self/fd/%d", src);
    unlink("fdlink");
    if (symlink(target, "fdlink") != 0) return Err(errno, "symlink");
    int fd = open("fdlink", ParseOpenFlags(a3) | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd < 0) return Err(errno, "open link");
    return ReportFd(fd, argc > 5 ? argv[5] : NULL);
  }
  if (!strcmp(v, "memfd-exec")) return MemfdExec(a1, argv);
  if (!strcmp(v, "landlock-restrict")) { return LandlockRestrict(a1 ? (unsigned)atoi(a1) : 0); }
  if (!strcmp(v, "pid1")) return Pid1();
  if (!strcmp(v, "pid1-status")) {
    /* Init confines itself once the command has started, before it serves anything: wait for
     * its filter (at most 2 s), then report. */
    char st[128];
    for (int i = 0; i < 200; ++i) {
      StatusOf(1, st, sizeof st);
      if (strncmp(st, "seccomp=0", 9) != 0) break;
      usleep(10000);
    }
    return Ok(st);
  }
  if (!strcmp(v, "guard-agent")) return GuardAgent();
  if (!strcmp(v, "guard-agent-kill")) return GuardAgentKill();
  if (!strcmp(v, "guard-race") && a3) return GuardRace(atol(a1), a2, a3);
  *handled = 0;
  return 0;
}
/* ---- end of the deputy verbs ---- */

/* ---- Verbs that try to leave a setuid or setgid file, or a file capability, in a writable
 * root. Each makes one raw syscall with the mode (octal) it is given and reports the mode the
 * object has afterwards, "ok mode=755" (the permission and set-id bits, octal). ---- */

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_setxattrat
#define SYS_setxattrat 463
#endif

static int ModeOf(int fd, const char* path) {
  struct stat st;
  int rc = fd >= 0 ? fstat(fd, &st) : stat(path, &st);
  if (rc != 0) return Err(errno, "stat after");
  char d[32];
  snprintf(d, sizeof d, "mode=%o", (unsigned)(st.st_mode & 07777));
  return Ok(d);
}

/* priv-chmod HOW PATH MODE: chmod | fchmod | fchmod-opath | fchmodat | fchmodat-dirfd |
 * fchmodat2 | fchmodat2-nofollow | fchmodat2-empty | fchmodat2-null (an O_PATH descriptor, no
 * path) | fd-link (chmod of a new ./privlink ->
 * /proc/self/fd/N, N an O_PATH descriptor of PATH). */
static int PrivChmod(const char* how, const char* path, mode_t mode) {
  long rc;
  if (!strcmp(how, "chmod")) {
    rc = syscall(SYS_chmod, path, mode);
  } else if (!strcmp(how, "fchmod") || !strcmp(how, "fchmod-opath")) {
    int flags = !strcmp(how, "fchmod") ? O_RDONLY | O_NONBLOCK | O_NOCTTY : O_PATH;
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0) return Err(errno, "open");
    rc = syscall(SYS_fchmod, fd, mode);
  } else if (!strcmp(how, "fchmodat")) {
    rc = syscall(SYS_fchmodat, AT_FDCWD, path, mode);
  } else if (!strcmp(how, "fchmodat-dirfd")) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char* slash = strrchr(dir, '/');
    const char* base = slash ? slash + 1 : path;
    if (slash) *slash = 0;
    int dfd = open(slash ? (dir[0] ? dir : "/") : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return Err(errno, "open dir");
    rc = syscall(SYS_fchmodat, dfd, base, mode);
  } else if (!strcmp(how, "fchmodat2")) {
    rc = syscall(SYS_fchmodat2, AT_FDCWD, path, mode, 0);
  } else if (!strcmp(how, "fchmodat2-nofollow")) {
    rc = syscall(SYS_fchmodat2, AT_FDCWD, path, mode, AT_SYMLINK_NOFOLLOW);
  } else if (!strcmp(how, "fchmodat2-empty") || !strcmp(how, "fchmodat2-null")) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return Err(errno, "open");
    rc = syscall(SYS_fchmodat2, fd, strcmp(how, "fchmodat2-null") ? "" : NULL, mode, AT_EMPTY_PATH);
  } else if (!strcmp(how, "fd-link")) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return Err(errno, "open");
    char target[64];
    snprintf(target, sizeof target, "/proc/self/fd/%d", fd);
    unlink("privlink");
    if (symlink(target, "privlink") != 0) return Err(errno, "symlink");
    rc = syscall(SYS_chmod, "privlink", mode);
  } else {
    fprintf(stderr, "priv-chmod: unknown HOW %s\n", how);
    return 2;
  }
  if (rc != 0) return Err(errno, how);
  return ModeOf(-1, path);
}

/* priv-create HOW PATH MODE: open | openat | creat | tmpfile (an O_TMPFILE in the directory
 * PATH) | mknod | mknodat | mkdir | mkdirat | openat2, with O_CREAT where it applies; umask 022. */
static int PrivCreate(const char* how, const char* path, mode_t mode) {
  umask(022);
  long fd = -1, rc = 0;
  if (!strcmp(how, "open")) {
    rc = fd = syscall(SYS_open, path, O_CREAT | O_WRONLY | O_CLOEXEC, mode);
  } else if (!strcmp(how, "openat")) {
    rc = fd = syscall(SYS_openat, AT_FDCWD, path, O_CREAT | O_WRONLY | O_CLOEXEC, mode);
  } else if (!strcmp(how, "creat")) {
    rc = fd = syscall(SYS_creat, path, mode);
  } else if (!strcmp(how, "tmpfile")) {
    rc = fd = syscall(SYS_openat, AT_FDCWD, path, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
  } else if (!strcmp(how, "mknod")) {
    rc = syscall(SYS_mknod, path, S_IFREG | mode, 0);
  } else if (!strcmp(how, "mknodat")) {
    rc = syscall(SYS_mknodat, AT_FDCWD, path, S_IFREG | mode, 0);
  } else if (!strcmp(how, "mkdir")) {
    rc = syscall(SYS_mkdir, path, mode);
  } else if (!strcmp(how, "mkdirat")) {
    rc = syscall(SYS_mkdirat, AT_FDCWD, path, mode);
  } else if (!strcmp(how, "openat2")) {
    struct {
      uint64_t flags, mode, resolve;
    } how2 = {O_CREAT | O_WRONLY | O_CLOEXEC, mode, 0};
    rc = fd = syscall(SYS_openat2, AT_FDCWD, path, &how2, sizeof how2);
  } else {
    fprintf(stderr, "priv-create: unknown HOW %s\n", how);
    return 2;
  }
  if (rc < 0) return Err(errno, how);
  return ModeOf((int)fd, path);
}

/* priv-xattr HOW PATH NAME: setxattr | lsetxattr | fsetxattr | setxattrat. The value of
 * security.capability is a v2 capability set with CAP_SETUID permitted and effective; any
 * other name gets "x". */
static int PrivXattr(const char* how, const char* path, const char* name) {
  uint32_t caps[5] = {0x02000001u /* VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE */,
                      1u << 7 /* CAP_SETUID */, 0, 0, 0};
  const void* value = "x";
  size_t size = 1;
  if (!strcmp(name, "security.capability")) {
    value = caps;
    size = sizeof caps;
  }
  long rc;
  if (!strcmp(how, "setxattr")) {
    rc = syscall(SYS_setxattr, path, name, value, size, 0);
  } else if (!strcmp(how, "lsetxattr")) {
    rc = syscall(SYS_lsetxattr, path, name, value, size, 0);
  } else if (!strcmp(how, "fsetxattr")) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Err(errno, "open");
    rc = syscall(SYS_fsetxattr, fd, name, value, size, 0);
  } else if (!strcmp(how, "setxattrat")) {
    struct {
      uint64_t value;
      uint32_t size, flags;
    } args = {(uint64_t)(uintptr_t)value, (uint32_t)size, 0};
    rc = syscall(SYS_setxattrat, AT_FDCWD, path, 0, name, &args, sizeof args);
  } else {
    fprintf(stderr, "priv-xattr: unknown HOW %s\n", how);
    return 2;
  }
  return Result(rc, how);
}

/* priv-chmod-race ROUNDS OUTSIDE: one thread makes set-id chmods of "t" and "d/x" (by chmod,
 * fchmodat and fchmodat2) while another keeps exchanging "t" with links to OUTSIDE/canary and
 * the directory "d" with links to OUTSIDE (absolute, through /proc magic links, relative past
 * the root). Reports how many chmods succeeded. */
static volatile int g_priv_race_stop;
static void* PrivRaceSwapper(void* arg) {
  const char* outside = arg;
  static char t[3][512], d[4][512];
  snprintf(t[0], sizeof t[0], "%s/canary", outside);
  snprintf(t[1], sizeof t[1], "/proc/1/root%s/canary", outside);
  snprintf(t[2], sizeof t[2], "../../../../../../../../..%s/canary", outside);
  snprintf(d[0], sizeof d[0], "%s", outside);
  snprintf(d[1], sizeof d[1], "/proc/1/root%s", outside);
  snprintf(d[2], sizeof d[2], "../../../../../../../../..%s", outside);
  snprintf(d[3], sizeof d[3], "/proc/self/cwd/../outside");
  unsigned i = 0;
  while (!g_priv_race_stop) {
    ++i;
    unlink("tl");
    symlink(t[i % 3], "tl");
    unlink("dl");
    symlink(d[i % 4], "dl");
    syscall(SYS_renameat2, AT_FDCWD, "t", AT_FDCWD, "tl", 2 /* RENAME_EXCHANGE */);
    syscall(SYS_renameat2, AT_FDCWD, "d", AT_FDCWD, "dl", 2 /* RENAME_EXCHANGE */);
    syscall(SYS_renameat2, AT_FDCWD, "t", AT_FDCWD, "tl", 2 /* RENAME_EXCHANGE */);
    syscall(SYS_renameat2, AT_FDCWD, "d", AT_FDCWD, "dl", 2 /* RENAME_EXCHANGE */);
  }
  return NULL;
}

static int PrivChmodRace(long rounds, const char* outside) {
  mkdir("d", 0755);
  close(open("d/x", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  close(open("t", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  pthread_t th;
  pthread_create(&th, NULL, PrivRaceSwapper, (void*)outside);
  long changed = 0, failed = 0;
  for (long r = 0; r < rounds; ++r) {
    long rc = 0;
    switch (r % 4) {
      case 0:
        rc = syscall(SYS_chmod, "t", 04777);
        break;
      case 1:
        rc = syscall(SYS_fchmodat, AT_FDCWD, "d/x", 06777);
        break;
      case 2:
        rc = syscall(SYS_fchmodat2, AT_FDCWD, "t", 02777, 0);
        break;
      case 3:
        rc = syscall(SYS_chmod, "d/../d/x", 04777);
        break;
    }
    if (rc == 0)
      ++changed;
    else
      ++failed;
  }
  g_priv_race_stop = 1;
  pthread_join(th, NULL);
  char out[96];
  snprintf(out, sizeof out, "rounds=%ld changed=%ld failed=%ld", rounds, changed, failed);
  return Ok(out);
}

static int PrivilegeBitVerbs(int argc, char** argv, int* handled) {
  const char* v = argv[1];
  *handled = 1;
  if (argc == 5 && !strcmp(v, "priv-chmod")) {
    return PrivChmod(argv[2], argv[3], (mode_t)strtol(argv[4], NULL, 8));
  }
  if (argc == 5 && !strcmp(v, "priv-create")) {
    return PrivCreate(argv[2], argv[3], (mode_t)strtol(argv[4], NULL, 8));
  }
  if (argc == 5 && !strcmp(v, "priv-xattr")) return PrivXattr(argv[2], argv[3], argv[4]);
  if (argc == 4 && !strcmp(v, "priv-chmod-race")) return PrivChmodRace(atol(argv[2]), argv[3]);
  *handled = 0;
  return 0;
}
/* ---- end of the privilege-bit verbs ---- */

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: ward-probe VERB [ARGS...]\n");
    return 2;
  }
  const char* v = argv[1];
  if (!strcmp(argv[0], "ward-probe-memfd-child")) return MemfdExec(NULL, argv);
  {
    int handled;
    int rc = DeputyVerbs(argc, argv, &handled);
    if (handled) return rc;
  }
  {
    int handled;
    int rc = PrivilegeBitVerbs(argc, argv, &handled);
    if (handled) return rc;
  }
  const char* a1 = argc > 2 ? argv[2] : NULL;
  const char* a2 = argc > 3 ? argv[3] : NULL;
#define NEED(n) do { if (argc < 2 + (n)) { fprintf(stderr, "%s: missing argument\n", v); return 2; } } while (0)
  if (!strcmp(v, "read")) {
    NEED(1);
    int fd = open(a1, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Err(errno, "open");
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n < 0) return Err(errno, "read");
    buf[n] = 0;
    for (ssize_t i = 0; i < n; ++i) if (buf[i] == '\n') buf[i] = ' ';
    return Ok(buf);
  }
  if (!strcmp(v, "stat")) { NEED(1); struct stat st; return Result(lstat(a1, &st), a1); }
  if (!strcmp(v, "access")) { NEED(1); return Result(access(a1, F_OK), a1); }
  if (!strcmp(v, "ls")) {
    NEED(1);
    DIR* d = opendir(a1);
    if (!d) return Err(errno, a1);
    char out[2048] = "";
    struct dirent* e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
      if (out[0]) strncat(out, ",", sizeof out - strlen(out) - 1);
      strncat(out, e->d_name, sizeof out - strlen(out) - 1);
    }
    closedir(d);
    return Ok(out);
  }
  if (!strcmp(v, "write")) {
    NEED(1);
    int fd = open(a1, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Err(errno, "open");
    const char* data = a2 ? a2 : "x";
    return Result(write(fd, data, strlen(data)), "write");
  }
  if (!strcmp(v, "append")) {
    NEED(1);
    int fd = open(a1, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return Err(errno, "open");
    return Result(write(fd, "x", 1), "write");
  }
  if (!strcmp(v, "truncate")) { NEED(1); return Result(truncate(a1, 0), a1); }
  if (!strcmp(v, "mkdir")) { NEED(1); return Result(mkdir(a1, 0755), a1); }
  if (!strcmp(v, "rmdir")) { NEED(1); return Result(rmdir(a1), a1); }
  if (!strcmp(v, "unlink")) { NEED(1); return Result(unlink(a1), a1); }
  if (!strcmp(v, "symlink")) { NEED(2); return Result(symlink(a1, a2), a2); }
  if (!strcmp(v, "link")) { NEED(2); return Result(link(a1, a2), a2); }
  if (!strcmp(v, "rename")) { NEED(2); return Result(rename(a1, a2), a2); }
  if (!strcmp(v, "chmod")) { NEED(2); return Result(chmod(a1, strtol(a2, NULL, 8)), a1); }
  if (!strcmp(v, "mknod-fifo")) { NEED(1); return Result(mknod(a1, S_IFIFO | 0644, 0), a1); }
  if (!strcmp(v, "mknod-char")) { NEED(1); return Result(mknod(a1, S_IFCHR | 0666, makedev(1, 3)), a1); }
  if (!strcmp(v, "exec")) {
    NEED(1);
    execv(a1, argv + 2);
    return Err(errno, a1);
  }
  if (!strcmp(v, "connect")) { NEED(2); return Connect(strchr(a1, ':') ? AF_INET6 : AF_INET, a1, atoi(a2), SOCK_STREAM, 3000); }
  if (!strcmp(v, "udp")) { NEED(2); return Connect(strchr(a1, ':') ? AF_INET6 : AF_INET, a1, atoi(a2), SOCK_DGRAM, 0); }
  if (!strcmp(v, "bind")) {
    NEED(1);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Err(errno, "socket");
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(atoi(a1));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return Result(bind(fd, (struct sockaddr*)&sa, sizeof sa), "bind");
  }
  if (!strcmp(v, "icmp")) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP);
    if (fd < 0) return Err(errno, "socket");
    return Ok("socket");
  }
  if (!strcmp(v, "raw")) { int fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP); return Result(fd, "socket"); }
  if (!strcmp(v, "socket")) {
    NEED(1);
    int fam = atoi(a1);
    return Result(socket(fam, SOCK_DGRAM | SOCK_CLOEXEC, 0), "socket");
  }
  if (!strcmp(v, "netlink")) { return Result(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0), "socket"); }
  if (!strcmp(v, "abstract-connect")) {
    NEED(1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {0};
    sa.sun_family = AF_UNIX;
    size_t n = strlen(a1);
    if (n > sizeof sa.sun_path - 2) return Err(EINVAL, "name");
    memcpy(sa.sun_path + 1, a1, n);
    return Result(connect(fd, (struct sockaddr*)&sa, offsetof(struct sockaddr_un, sun_path) + 1 + n), "connect");
  }
  if (!strcmp(v, "unix-connect")) {
    NEED(1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {0};
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", a1);
    return Result(connect(fd, (struct sockaddr*)&sa, sizeof sa), "connect");
  }
  if (!strcmp(v, "ptrace-parent")) {
    pid_t pp = getppid();
    return Result(ptrace(PTRACE_ATTACH, pp, 0, 0), "attach");
  }
  if (!strcmp(v, "ptrace")) { NEED(1); return Result(ptrace(PTRACE_ATTACH, atoi(a1), 0, 0), "attach"); }
  if (!strcmp(v, "ptrace-child")) {
    /* Positive-control shape: attach to our own child (allowed by the kernel without seccomp). */
    pid_t c = fork();
    if (c == 0) { pause(); _exit(0); }
    long rc = ptrace(PTRACE_ATTACH, c, 0, 0);
    int e = errno;
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    errno = e;
    return Result(rc, "attach child");
  }
  if (!strcmp(v, "vmread")) {
    NEED(1);
    char buf[16];
    struct iovec l = {buf, sizeof buf}, r = {(void*)0x400000, sizeof buf};
    return Result(process_vm_readv(atoi(a1), &l, 1, &r, 1, 0), "process_vm_readv");
  }
  if (!strcmp(v, "proc-mem")) {
    NEED(1);
    char path[64];
    snprintf(path, sizeof path, "/proc/%s/mem", a1);
    return Result(open(path, O_RDONLY | O_CLOEXEC), path);
  }
  if (!strcmp(v, "kill")) { NEED(2); return Result(kill(atoi(a1), atoi(a2)), "kill"); }
  if (!strcmp(v, "tiocsti")) {
    int fd = a1 ? open(a1, O_RDWR | O_CLOEXEC) : 0;
    if (fd < 0) return Err(errno, "open");
    char c = 'x';
    return Result(ioctl(fd, TIOCSTI, &c), "TIOCSTI");
  }
  if (!strcmp(v, "tiocsti-high")) {
    char c = 'x';
    return Result(syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI | (1UL << 32), &c), "TIOCSTI|1<<32");
  }
  if (!strcmp(v, "tiocgwinsz")) {
    struct winsize ws;
    return Result(ioctl(0, TIOCGWINSZ, &ws), "TIOCGWINSZ");
  }
  if (!strcmp(v, "isatty")) {
    char d[64];
    snprintf(d, sizeof d, "%d%d%d", isatty(0), isatty(1), isatty(2));
    return Ok(d);
  }
  if (!strcmp(v, "dev-tty")) { return Result(open("/dev/tty", O_RDWR | O_CLOEXEC), "/dev/tty"); }
  /* ---- terminal answer-back (tests/escape/terminal_output_test.cc) ---------------------- */
  if (!strcmp(v, "tty-ask")) {
    /* tty-ask HEX MS: writes the bytes HEX to stdout (report requests, say), then collects what
     * arrives on stdin (its terminal, in raw mode so that an answer without a newline is read)
     * for MS milliseconds; prints "ok stdin:HEX" with what arrived. */
    NEED(2);
    struct termios saved, raw;
    int is_tty = tcgetattr(0, &saved) == 0;
    if (is_tty) {
      raw = saved;
      cfmakeraw(&raw);
      raw.c_oflag |= OPOST; /* the report line below keeps its newline */
      if (tcsetattr(0, TCSANOW, &raw) != 0) return Err(errno, "tcsetattr");
    }
    char out[1024];
    size_t n = 0;
    for (const char* h = a1; h[0] && h[1] && n < sizeof out; h += 2) {
      unsigned x;
      if (sscanf(h, "%2x", &x) != 1) return Err(EINVAL, "hex");
      out[n++] = (char)x;
    }
    if (write(1, out, n) != (ssize_t)n) return Err(errno, "write");
    char got[1024];
    size_t have = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long budget = atol(a2);
    for (;;) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      long left = budget - ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
      if (left <= 0 || have == sizeof got) break;
      struct pollfd p = {0, POLLIN, 0};
      if (poll(&p, 1, (int)left) <= 0) continue;
      ssize_t r = read(0, got + have, sizeof got - have);
      if (r <= 0) break;
      have += (size_t)r;
    }
    if (is_tty) tcsetattr(0, TCSANOW, &saved);
    char d[2 * sizeof got + 8];
    strcpy(d, "stdin:");
    for (size_t i = 0; i < have; ++i) sprintf(d + 6 + 2 * i, "%02x", (unsigned char)got[i]);
    return Ok(d);
  }
  /* ---- end of terminal answer-back ------------------------------------------------------- */
  if (!strcmp(v, "userns")) { return Result(unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)"); }
  if (!strcmp(v, "mountns")) { return Result(unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)"); }
  if (!strcmp(v, "clone-userns")) {
    long rc = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
    if (rc == 0) _exit(0);
    if (rc > 0) waitpid(rc, NULL, 0);
    return Result(rc, "clone(CLONE_NEWUSER)");
  }
  if (!strcmp(v, "clone3")) {
    struct { uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls; } args = {0};
    args.exit_signal = SIGCHLD;
    long rc = syscall(SYS_clone3, &args, sizeof args);
    if (rc == 0) _exit(0);
    if (rc > 0) waitpid(rc, NULL, 0);
    return Result(rc, "clone3");
  }
  if (!strcmp(v, "fork")) {
    pid_t c = fork();
    if (c == 0) _exit(0);
    if (c > 0) waitpid(c, NULL, 0);
    return Result(c, "fork");
  }
  if (!strcmp(v, "io_uring")) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    return Result(syscall(SYS_io_uring_setup, 4, &p), "io_uring_setup");
  }
  if (!strcmp(v, "bpf")) { return Result(syscall(SYS_bpf, 0, NULL, 0), "bpf"); }
  if (!strcmp(v, "perf")) { return Result(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), "perf_event_open"); }
  if (!strcmp(v, "keyctl")) { return Result(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0), "keyctl"); }
  if (!strcmp(v, "add_key")) { return Result(syscall(SYS_add_key, "user", "ward", "x", 1, KEY_SPEC_PROCESS_KEYRING), "add_key"); }
  if (!strcmp(v, "userfaultfd")) { return Result(syscall(SYS_userfaultfd, 0), "userfaultfd"); }
  if (!strcmp(v, "mount")) { return Result(mount("none", "/tmp", "tmpfs", 0, NULL), "mount"); }
  if (!strcmp(v, "umount")) { NEED(1); return Result(umount2(a1, MNT_DETACH), "umount"); }
  if (!strcmp(v, "chroot")) { return Result(chroot("/tmp"), "chroot"); }
  if (!strcmp(v, "pivot_root")) { return Result(syscall(SYS_pivot_root, "/tmp", "/tmp"), "pivot_root"); }
  if (!strcmp(v, "setns")) {
    int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Err(errno, "open ns");
    return Result(setns(fd, 0), "setns");
  }
  if (!strcmp(v, "syslog")) { char b[16]; return Result(syscall(SYS_syslog, 3, b, sizeof b), "syslog"); }
  if (!strcmp(v, "personality")) { NEED(1); return Result(personality(strtoul(a1, NULL, 0)), "personality"); }
  if (!strcmp(v, "open_by_handle_at")) { return Result(syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0), "open_by_handle_at"); }
  if (!strcmp(v, "reboot")) { return Result(syscall(SYS_reboot, 0, 0, 0, NULL), "reboot"); }
  if (!strcmp(v, "sethostname")) { return Result(sethostname("evil", 4), "sethostname"); }
  if (!strcmp(v, "hostname")) { char h[256] = ""; gethostname(h, sizeof h); return Ok(h); }
  if (!strcmp(v, "fds")) return ListFds();
  if (!strcmp(v, "caps")) return Caps();
  if (!strcmp(v, "id")) {
    char out[512];
    gid_t groups[64];
    int n = getgroups(64, groups);
    int off = snprintf(out, sizeof out, "uid=%d gid=%d euid=%d groups=", getuid(), getgid(), geteuid());
    for (int i = 0; i < n && off < (int)sizeof out - 16; ++i) off += snprintf(out + off, sizeof out - off, "%s%d", i ? "," : "", groups[i]);
    return Ok(out);
  }
  if (!strcmp(v, "getenv")) { NEED(1); const char* e = getenv(a1); return e ? Ok(e) : Err(ENOENT, a1); }
  if (!strcmp(v, "scan-proc")) { NEED(1); return ScanProc(a1); }
  if (!strcmp(v, "rlimit-core")) {
    struct rlimit rl;
    getrlimit(RLIMIT_CORE, &rl);
    char d[64];
    snprintf(d, sizeof d, "soft=%llu hard=%llu", (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
    return Ok(d);
  }
  if (!strcmp(v, "raise-core")) {
    struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
    return Result(setrlimit(RLIMIT_CORE, &rl), "setrlimit");
  }
  if (!strcmp(v, "setuid0")) { return Result(setuid(0) == 0 && getuid() == 0 && geteuid() == 0 ? 0 : -1, "setuid"); }
  if (!strcmp(v, "daemon")) {
    /* Leaves a double-forked, session-detached process behind that ignores SIGTERM/SIGHUP and
     * carries the marker in its argv so the host can look for it. */
    NEED(1);
    pid_t c = fork();
    if (c == 0) {
      setsid();
      if (fork() == 0) {
        signal(SIGTERM, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        char* sargs[] = {argv[0], "sleep", "300", (char*)a1, NULL};
        execv(argv[0], sargs);
        _exit(1);
      }
      _exit(0);
    }
    waitpid(c, NULL, 0);
    return Ok("spawned");
  }
  if (!strcmp(v, "sleep")) { NEED(1); sleep(atoi(a1)); return Ok("slept"); }
  if (!strcmp(v, "exit")) { NEED(1); return atoi(a1); }
  if (!strcmp(v, "signal-self")) { NEED(1); kill(getpid(), atoi(a1)); pause(); return 1; }
  if (!strcmp(v, "proc-write")) {
    NEED(2);
    int fd = open(a1, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Err(errno, "open");
    return Result(write(fd, a2, strlen(a2)), "write");
  }
  if (!strcmp(v, "ns-owners")) {
    /* Every namespace of the sandbox is owned by its own user namespace (NS_GET_USERNS fails
       with EPERM for an owner outside it); prints the network namespace's inode. */
    struct stat own, st;
    if (stat("/proc/self/ns/user", &own) != 0) return Err(errno, "stat user ns");
    const char* kinds[] = {"net", "mnt", "pid", "ipc", "uts", "cgroup"};
    ino_t net = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; ++i) {
      char path[64];
      snprintf(path, sizeof path, "/proc/self/ns/%s", kinds[i]);
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) return Err(errno, kinds[i]);
      struct stat nst;
      if (fstat(fd, &nst) == 0 && i == 0) net = nst.st_ino;
      int owner = ioctl(fd, NS_GET_USERNS);
      close(fd);
      if (owner < 0) return Err(errno, kinds[i]);
      int same = fstat(owner, &st) == 0 && st.st_ino == own.st_ino && st.st_dev == own.st_dev;
      close(owner);
      if (!same) return Err(EXDEV, kinds[i]);
    }
    char d[64];
    snprintf(d, sizeof d, "net=%lu", (unsigned long)net);
    return Ok(d);
  }
  if (!strcmp(v, "pidns")) {
    char d[64];
    snprintf(d, sizeof d, "pid=%d ppid=%d", getpid(), getppid());
    return Ok(d);
  }
  /* ---- resource limits ---- */
  if (!strcmp(v, "forkbomb")) {
    /* Children wait forever (they carry the marker in argv); stops at the first failure. */
    int n = 0;
    for (; n < 5000; ++n) {
      pid_t c = fork();
      if (c < 0) {
        char d[64];
        snprintf(d, sizeof d, "forked=%d", n);
        return Err(errno, d);
      }
      if (c == 0) { for (;;) pause(); }
    }
    return Ok("forked=5000");
  }
  if (!strcmp(v, "alloc")) {
    /* Allocates and touches MB mebibytes, one at a time. */
    NEED(1);
    int want = atoi(a1), got = 0;
    char d[64];
    for (; got < want; ++got) {
      char* p = malloc(1 << 20);
      if (!p) { snprintf(d, sizeof d, "allocated=%d", got); return Err(ENOMEM, d); }
      memset(p, 0x5a, 1 << 20);
    }
    snprintf(d, sizeof d, "allocated=%d", got);
    return Ok(d);
  }
  if (!strcmp(v, "fill")) {
    /* Writes PATH in 1 MiB chunks until an error or MAX_MB. */
    NEED(2);
    int max = atoi(a2), mb = 0;
    int fd = open(a1, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Err(errno, "open");
    static char chunk[1 << 20];
    memset(chunk, 'w', sizeof chunk);
    char d[64];
    for (; mb < max; ++mb) {
      size_t off = 0;
      while (off < sizeof chunk) {
        ssize_t w = write(fd, chunk + off, sizeof chunk - off);
        if (w < 0) { snprintf(d, sizeof d, "written=%d", mb); return Err(errno, d); }
        off += (size_t)w;
      }
    }
    snprintf(d, sizeof d, "written=%d", mb);
    return Ok(d);
  }
  if (!strcmp(v, "spin")) {
    /* THREADS busy threads for SECONDS of wall time; prints CPU time / wall time. */
    NEED(2);
    int secs = atoi(a1), threads = atoi(a2);
    if (threads < 1 || threads > 64) return Err(EINVAL, "threads");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    g_spin_until = t0.tv_sec + secs + t0.tv_nsec / 1e9;
    pthread_t th[64];
    for (int i = 1; i < threads; ++i) pthread_create(&th[i], NULL, Spin, NULL);
    Spin(NULL);
    for (int i = 1; i < threads; ++i) pthread_join(th[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    double wall = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    char d[64];
    snprintf(d, sizeof d, "cpu=%.3f", cpu / wall);
    return Ok(d);
  }
  if (!strcmp(v, "hang")) {
    /* Ignores SIGTERM, leaves a double-forked SIGTERM-ignoring daemon (marker in argv), then
     * waits forever. */
    NEED(1);
    signal(SIGTERM, SIG_IGN);
    pid_t c = fork();
    if (c == 0) {
      setsid();
      if (fork() == 0) {
        char* sargs[] = {argv[0], "sleep", "300", (char*)a1, NULL};
        execv(argv[0], sargs);
        _exit(1);
      }
      _exit(0);
    }
    waitpid(c, NULL, 0);
    Ok("hanging");
    fflush(stdout);
    for (;;) pause();
  }
  if (!strcmp(v, "inotify-exhaust")) {
    /* Creates inotify instances until one fails, reports, then holds them SECONDS. */
    NEED(1);
    int n = 0;
    while (n < 100000 && inotify_init1(IN_CLOEXEC) >= 0) ++n;
    int e = errno;
    char d[64];
    snprintf(d, sizeof d, "instances=%d", n);
    int rc = Err(e, d);
    fflush(stdout);
    sleep(atoi(a1));
    return rc;
  }
  if (!strcmp(v, "shm-create")) {
    /* A SysV shared memory segment that nobody removes. */
    NEED(1);
    int id = shmget((key_t)strtol(a1, NULL, 0), 1 << 20, IPC_CREAT | 0600);
    if (id < 0) return Err(errno, "shmget");
    char* p = shmat(id, NULL, 0);
    if (p == (void*)-1) return Err(errno, "shmat");
    memset(p, 1, 1 << 20);
    shmdt(p);
    return Ok("created");
  }
  if (!strcmp(v, "shm-get")) { NEED(1); return Result(shmget((key_t)strtol(a1, NULL, 0), 0, 0), "shmget"); }
  if (!strcmp(v, "mq-create")) {
    NEED(1);
    return Result(mq_open(a1, O_CREAT | O_RDWR | O_CLOEXEC, 0600, NULL), "mq_open");
  }
  if (!strcmp(v, "mq-open")) { NEED(1); return Result(mq_open(a1, O_RDWR | O_CLOEXEC), "mq_open"); }
  if (!strcmp(v, "rlimit")) {
    /* rlimit data|nproc|nofile|fsize|msgqueue|sigpending|as */
    NEED(1);
    static const struct { const char* name; int res; } kR[] = {
        {"data", RLIMIT_DATA}, {"nproc", RLIMIT_NPROC}, {"nofile", RLIMIT_NOFILE},
        {"fsize", RLIMIT_FSIZE}, {"msgqueue", RLIMIT_MSGQUEUE}, {"sigpending", RLIMIT_SIGPENDING},
        {"as", RLIMIT_AS}};
    for (size_t i = 0; i < sizeof kR / sizeof kR[0]; ++i) {
      if (strcmp(a1, kR[i].name)) continue;
      struct rlimit rl;
      if (getrlimit(kR[i].res, &rl) != 0) return Err(errno, "getrlimit");
      char d[96];
      if (rl.rlim_cur == RLIM_INFINITY) snprintf(d, sizeof d, "soft=unlimited");
      else snprintf(d, sizeof d, "soft=%llu", (unsigned long long)rl.rlim_cur);
      if (rl.rlim_max == RLIM_INFINITY) strcat(d, " hard=unlimited");
      else snprintf(d + strlen(d), sizeof d - strlen(d), " hard=%llu", (unsigned long long)rl.rlim_max);
      return Ok(d);
    }
    return Err(EINVAL, a1);
  }
  if (!strcmp(v, "race-create")) {
    /* TR01: one thread flips a path buffer between an allowed and a forbidden name while others
     * create files through it. Prints how often the forbidden name came into existence. */
    NEED(3);
    return RaceCreate(a1, a2, atoi(argv[4]));
  }
  if (!strcmp(v, "kill-all")) { return Result(kill(-1, SIGTERM), "kill(-1)"); }
  if (!strcmp(v, "open-write")) { NEED(1); return Result(open(a1, O_WRONLY | O_CLOEXEC), a1); }
  if (!strcmp(v, "readlink")) {
    NEED(1);
    char buf[512];
    ssize_t n = readlink(a1, buf, sizeof buf - 1);
    if (n < 0) return Err(errno, a1);
    buf[n] = 0;
    return Ok(buf);
  }
  if (!strcmp(v, "openat-dotdot")) {
    /* RS06: from every fd we hold, try to climb out. */
    DIR* d = opendir("/proc/self/fd");
    if (!d) return Err(errno, "/proc/self/fd");
    struct dirent* e;
    int escaped = 0;
    char where[128] = "";
    while ((e = readdir(d))) {
      int fd = atoi(e->d_name);
      if (e->d_name[0] == '.' || fd == dirfd(d)) continue;
      int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (up >= 0) { escaped = 1; snprintf(where, sizeof where, "fd %d", fd); close(up); }
    }
    closedir(d);
    return escaped ? Ok(where) : Err(ENOTDIR, "no fd leads anywhere");
  }
  if (!strcmp(v, "shm-bomb")) {
    /* SysV segments of 1 MiB, touched and left behind, until a failure or MAX_MB. */
    NEED(1);
    int max = atoi(a1), n = 0;
    char d[64];
    for (; n < max; ++n) {
      int id = shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0600);
      void* p = id < 0 ? (void*)-1 : shmat(id, NULL, 0);
      if (p == (void*)-1) { snprintf(d, sizeof d, "segments=%d", n); return Err(errno, d); }
      memset(p, 0x5a, 1 << 20);
      shmdt(p);
    }
    snprintf(d, sizeof d, "segments=%d", n);
    return Ok(d);
  }
  if (!strcmp(v, "read-each")) {
    /* read-each PATH N DELAY_MS: N opens (O_RDONLY) with a pause after each; one token per try. */
    NEED(3);
    int n = atoi(a2), delay = atoi(argv[4]);
    char out[2048] = "", got[256], item[320];
    for (int i = 0; i < n; ++i) {
      long rc = ReadSome(a1, O_RDONLY, got, sizeof got);
      snprintf(item, sizeof item, "%s%d:%s", i ? "," : "", i + 1, rc < 0 ? ErrName((int)-rc) : got);
      strncat(out, item, sizeof out - strlen(out) - 1);
      if (delay > 0) usleep((useconds_t)delay * 1000);
    }
    return Ok(out);
  }
  if (!strcmp(v, "read-widen")) {
    /* read-widen PATH: opens read-only, then tries to write through the fd and to reopen it
     * read-write through /proc/self/fd. Prints what each step gave. */
    NEED(1);
    int fd = open(a1, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Err(errno, "open");
    char got[256] = "", d[512], p[64];
    ssize_t n = read(fd, got, sizeof got - 1);
    if (n > 0) got[n] = 0;
    for (ssize_t i = 0; i < n; ++i) if (got[i] == '\n' || got[i] == ' ') got[i] = '_';
    ssize_t w = write(fd, "x", 1);
    int werr = w < 0 ? errno : 0;
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    int rw = open(p, O_RDWR | O_CLOEXEC);
    int rwerr = rw < 0 ? errno : 0;
    int wo = open(p, O_WRONLY | O_CLOEXEC);
    int woerr = wo < 0 ? errno : 0;
    int again = open(p, O_RDONLY | O_CLOEXEC);
    int againerr = again < 0 ? errno : 0;
    snprintf(d, sizeof d, "read=%s write=%s reopen_rw=%s reopen_wo=%s reopen_ro=%s", got,
             w < 0 ? ErrName(werr) : "ok", rw < 0 ? ErrName(rwerr) : "ok",
             wo < 0 ? ErrName(woerr) : "ok", again < 0 ? ErrName(againerr) : "ok");
    return (w >= 0 || rw >= 0 || wo >= 0) ? Ok(d) : Err(EACCES, d);
  }
  if (!strcmp(v, "open-mode")) {
    /* open-mode PATH r|w|rw|trunc|creat: one open with those flags. */
    NEED(2);
    int flags = !strcmp(a2, "w") ? O_WRONLY : !strcmp(a2, "rw") ? O_RDWR
              : !strcmp(a2, "trunc") ? (O_WRONLY | O_TRUNC) : !strcmp(a2, "creat") ? (O_WRONLY | O_CREAT)
              : O_RDONLY;
    return Result(open(a1, flags | O_CLOEXEC, 0644), a2);
  }
  if (!strcmp(v, "race-open")) { NEED(3); return RaceOpen(a1, a2, atoi(argv[4])); }
  if (!strcmp(v, "open-loop")) {
    /* open-loop PATH N: N open+close pairs; prints the mean per pair in microseconds. */
    NEED(2);
    long n = atol(a2);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; ++i) {
      int fd = open(a1, O_RDONLY | O_CLOEXEC);
      if (fd < 0) return Err(errno, "open");
      close(fd);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / (n ? n : 1);
    char d[64];
    snprintf(d, sizeof d, "n=%ld us_per_open=%.3f", n, us);
    return Ok(d);
  }
  /* ---- ward's own host sockets, tried from inside a sandbox (tests/escape/
   * ward_sockets_refuse_sandboxed_peers_test.cc) ---- */
  if (!strcmp(v, "unix-request")) {
    /* unix-request PATH LINE: connect to the stream socket PATH, send LINE and a newline, and
     * print the first line of the reply ("ok REPLY"). A refused connect is "err ENAME connect";
     * a close without a reply line is "err ECONNRESET reply". */
    NEED(2);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {0};
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", a1);
    if (connect(fd, (struct sockaddr*)&sa, sizeof sa) != 0) return Err(errno, "connect");
    char line[4096];
    snprintf(line, sizeof line, "%s\n", a2);
    /* A server that refuses answers and closes, possibly before this is written. */
    (void)!send(fd, line, strlen(line), MSG_NOSIGNAL);
    char reply[8192];
    size_t got = 0;
    while (got < sizeof reply - 1) {
      struct pollfd p = {fd, POLLIN, 0};
      if (poll(&p, 1, 10000) <= 0) return Err(ETIMEDOUT, "reply");
      ssize_t n = read(fd, reply + got, sizeof reply - 1 - got);
      if (n <= 0) break;
      got += (size_t)n;
      if (memchr(reply, '\n', got)) break;
    }
    reply[got] = 0;
    char* nl = strchr(reply, '\n');
    if (!nl) return Err(ECONNRESET, "reply");
    *nl = 0;
    return Ok(reply);
  }
  /* ---- end of ward's own host sockets ---- */
  /* ---- audit trail: a sandbox that fills the disk (tests/escape/audit_survives_a_full_disk_test.cc) ---- */
  if (!strcmp(v, "proxy-deny")) {
    /* proxy-deny N: N CONNECTs through $HTTPS_PROXY (http://ADDR:PORT) to hosts no rule allows
     * (deny-I.invalid), one connection each; each must be answered 403. Prints the count. */
    NEED(1);
    int n = atoi(a1), denied = 0;
    const char* proxy = getenv("HTTPS_PROXY");
    const char* hostp = proxy ? strstr(proxy, "//") : NULL;
    const char* colon = proxy ? strrchr(proxy, ':') : NULL;
    if (!hostp || !colon || colon < hostp) return Err(EINVAL, "HTTPS_PROXY");
    char addr[64];
    snprintf(addr, sizeof addr, "%.*s", (int)(colon - hostp - 2), hostp + 2);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons(atoi(colon + 1));
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) return Err(EINVAL, "HTTPS_PROXY address");
    char d[64];
    for (int i = 0; i < n; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) return Err(errno, "socket");
      if (connect(fd, (struct sockaddr*)&sa, sizeof sa) != 0) {
        snprintf(d, sizeof d, "connect denied=%d", denied);
        return Err(errno, d);
      }
      char req[160], resp[16];
      int len = snprintf(req, sizeof req, "CONNECT deny-%d.invalid:443 HTTP/1.1\r\nHost: deny-%d.invalid:443\r\n\r\n", i, i);
      if (write(fd, req, (size_t)len) != len) { snprintf(d, sizeof d, "write denied=%d", denied); return Err(errno, d); }
      size_t got = 0;
      while (got < 12) {
        ssize_t r = read(fd, resp + got, 12 - got);
        if (r <= 0) break;
        got += (size_t)r;
      }
      close(fd);
      if (got == 12 && !memcmp(resp, "HTTP/1.1 403", 12)) ++denied;
    }
    snprintf(d, sizeof d, "denied=%d", denied);
    return denied == n ? Ok(d) : Err(EACCES, d);
  }
  /* ---- end of the audit trail's verbs ---- */
  /* ---- the workspace's .ward.toml (tests/escape/ward_toml_read_safely_test.cc) ---- */
  if (!strcmp(v, "unix-bind")) {
    /* unix-bind PATH: bind a unix stream socket at PATH and exit, leaving the socket file. */
    NEED(1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Err(errno, "socket");
    struct sockaddr_un sa = {0};
    sa.sun_family = AF_UNIX;
    if (strlen(a1) >= sizeof sa.sun_path) return Err(ENAMETOOLONG, "path");
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", a1);
    return Result(bind(fd, (struct sockaddr*)&sa, sizeof sa), "bind");
  }
  /* ---- end of the workspace file's verbs ---- */
  fprintf(stderr, "unknown verb %s\n", v);
  return 2;
}
