// The compiled filter loaded into the real kernel (in forked children; no root needed): each
// denied call fails with exactly the errno EvaluateSeccomp predicts, each allowed call behaves
// as it does without the filter, and each denial has a positive control (the same call in an
// unfiltered child does not fail that way). Also the user-notification listener end to end.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/keyctl.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "enforce/init_confine.h"
#include "enforce/seccomp.h"
#include "enforce/syscalls.h"

namespace ward::enforce {
namespace {

// One fact a child reports through the pipe (small enough for an atomic write).
struct Record {
  int tag = 0;
  int err = 0;
  long v1 = 0;
  long v2 = 0;
};

enum Tag {
  kSetupFailed = 1,  // err: errno of prctl or ApplySeccomp
  kResult,           // v1: return value, err: errno
  kListener,         // v1: the listener fd
  kNotification,     // v1: nr, v2: the flags argument of an openat
  kOpenPlain,        // results of the grandchild's calls
  kOpenCreate,
  kMkdir,
  kChmodPlain,
  kChmodSetid,
};

void Report(int fd, const Record& r) { (void)!write(fd, &r, sizeof(r)); }

struct ChildResult {
  std::vector<Record> records;
  int status = 0;  // from waitpid

  const Record* Find(int tag) const {
    for (const Record& r : records) {
      if (r.tag == tag) {
        return &r;
      }
    }
    return nullptr;
  }
  bool KilledBy(int sig) const { return WIFSIGNALED(status) && WTERMSIG(status) == sig; }
};

// Forks; the child sets a watchdog, optionally no_new_privs and the filter, runs
// body(report_fd, listener_fd) and exits. The parent collects what the child (and its descendants)
// wrote until EOF.
template <typename Body>
ChildResult RunInChild(const SeccompProgram* filter, Body body) {
  ChildResult out;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2: " << strerror(errno);
    return out;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << strerror(errno);
    return out;
  }
  if (pid == 0) {
    close(fds[0]);
    alarm(30);  // a hang becomes a SIGALRM death, not a stuck test
    int listener = -1;
    if (filter != nullptr) {
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        Report(fds[1], {kSetupFailed, errno});
        _exit(1);
      }
      const int rc = ApplySeccomp(*filter, &listener);
      if (rc != 0) {
        Report(fds[1], {kSetupFailed, -rc});
        _exit(1);
      }
      Report(fds[1], {kListener, 0, listener});
    }
    body(fds[1], listener);
    _exit(0);
  }
  close(fds[1]);
  Record r;
  while (true) {
    const ssize_t n = read(fds[0], &r, sizeof(r));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n != sizeof(r)) {
      break;
    }
    out.records.push_back(r);
  }
  close(fds[0]);
  while (waitpid(pid, &out.status, 0) < 0 && errno == EINTR) {
  }
  return out;
}

const SeccompProgram& Filter(bool notify_creations = false) {
  static const SeccompProgram plain = [] {
    auto p = PrepareSeccomp(SeccompSpec{});
    if (!p.ok()) {
      ADD_FAILURE() << p.status().ToString();
    }
    return p.ok() ? std::move(p).value() : SeccompProgram{};
  }();
  static const SeccompProgram notify = [] {
    SeccompSpec spec;
    spec.notify_creations = true;
    auto p = PrepareSeccomp(spec);
    if (!p.ok()) {
      ADD_FAILURE() << p.status().ToString();
    }
    return p.ok() ? std::move(p).value() : SeccompProgram{};
  }();
  return notify_creations ? notify : plain;
}

// One syscall, issued raw so the filter sees exactly these arguments.
struct Probe {
  const char* name;
  const char* syscall;
  uint64_t args[6];
  int want_errno;  // the filter's errno; 0 when the filter must let it through
};

// Short test names in ctest instead of a byte dump of the parameter.
void PrintTo(const Probe& probe, std::ostream* os) { *os << probe.name; }

constexpr char kDevNull[] = "/dev/null";
constexpr char kAbsent[] = "/ward-test-nonexistent";
constexpr char kUserXattr[] = "user.ward";
// struct open_how: O_RDONLY, no mode, no resolve flags.
constexpr uint64_t kOpenHow[3] = {0, 0, 0};
constexpr uint64_t kBadFd = ~0ull;  // fd -1 however it is read

std::vector<Probe> Probes() {
  const auto p = [](const void* ptr) { return reinterpret_cast<uint64_t>(ptr); };
  return {
      // Denied.
      {"ptrace_traceme", "ptrace", {PTRACE_TRACEME}, EPERM},
      {"unshare_newuser", "unshare", {CLONE_NEWUSER}, EPERM},
      {"clone_newuser", "clone", {CLONE_NEWUSER | SIGCHLD}, EPERM},
      // The kernel reads only the low 32 bits of clone's flags; junk above must not matter.
      {"clone_newuser_highbits", "clone", {CLONE_NEWUSER | SIGCHLD | (1ull << 40)}, EPERM},
      {"clone3", "clone3", {0, sizeof(clone_args)}, ENOSYS},
      {"io_uring_setup", "io_uring_setup", {1, 0}, EPERM},
      {"ioctl_tiocsti", "ioctl", {kBadFd, TIOCSTI, 0}, EPERM},
      {"ioctl_tiocsti_highbit", "ioctl", {kBadFd, TIOCSTI | (1ull << 32), 0}, EPERM},
      {"ioctl_tioclinux", "ioctl", {kBadFd, TIOCLINUX, 0}, EPERM},
      {"ioctl_tiocsetd", "ioctl", {kBadFd, TIOCSETD, 0}, EPERM},
      {"socket_netlink",
       "socket",
       {AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE},
       kSeccompSocketFamilyErrno},
      {"socketpair_netlink", "socketpair", {AF_NETLINK, SOCK_RAW, 0, 0}, kSeccompSocketFamilyErrno},
      {"personality_read_implies_exec", "personality", {READ_IMPLIES_EXEC}, EPERM},
      {"keyctl_user_keyring",
       "keyctl",
       {KEYCTL_GET_KEYRING_ID, static_cast<uint64_t>(KEY_SPEC_USER_KEYRING), 0},
       EPERM},
      // An oversized attr fails E2BIG before any privilege check: a control even unprivileged.
      {"bpf_prog_load", "bpf", {5, 0, 0x10000}, EPERM},
      // UFFD_USER_MODE_ONLY (1) is open to unprivileged users.
      {"userfaultfd", "userfaultfd", {O_CLOEXEC | 1}, EPERM},
      {"open_by_handle_at", "open_by_handle_at", {static_cast<uint64_t>(AT_FDCWD), 0, 0}, EPERM},
      {"memfd_secret", "memfd_secret", {0}, ENOSYS},
      {"syslog_size", "syslog", {10, 0, 0}, EPERM},
      // Without the filter: ENOENT (no such file), or /dev/null opened.
      {"setxattr", "setxattr", {p(kAbsent), p(kUserXattr), p("x"), 1, 0}, EOPNOTSUPP},
      {"fsetxattr", "fsetxattr", {kBadFd, p(kUserXattr), p("x"), 1, 0}, EOPNOTSUPP},
      {"openat2",
       "openat2",
       {static_cast<uint64_t>(AT_FDCWD), p(kDevNull), p(kOpenHow), 24},
       ENOSYS},
      // Allowed: must behave exactly as without the filter.
      {"getpid", "getpid", {}, 0},
      {"socket_inet", "socket", {AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0}, 0},
      {"socket_inet_highbits", "socket", {AF_INET | (1ull << 32), SOCK_DGRAM | SOCK_CLOEXEC}, 0},
      {"socket_unix", "socket", {AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0}, 0},
      {"openat_devnull", "openat", {static_cast<uint64_t>(AT_FDCWD), p(kDevNull), O_RDONLY}, 0},
      {"personality_query", "personality", {0xffffffff}, 0},
      {"clone_plain", "clone", {SIGCHLD}, 0},
      {"ioctl_tcgets_badfd", "ioctl", {kBadFd, TCGETS, 0}, 0},
      {"fchmodat_plain", "fchmodat", {static_cast<uint64_t>(AT_FDCWD), p(kAbsent), 0755}, 0},
      {"fchmod_plain_badfd", "fchmod", {kBadFd, 0644}, 0},
  };
}

// Runs the probe in a child and reports {return value, errno}.
ChildResult RunProbe(const Probe& probe, const SeccompProgram* filter) {
  const long nr = NativeSyscallNumber(probe.syscall);
  return RunInChild(filter, [&](int fd, int) {
    const pid_t self = getpid();
    errno = 0;
    const long ret = syscall(nr, probe.args[0], probe.args[1], probe.args[2], probe.args[3],
                             probe.args[4], probe.args[5]);
    const int err = errno;
    if (getpid() != self) {
      _exit(0);  // the new child of a successful clone
    }
    if (ret > 0 && std::string(probe.syscall) == "clone") {
      waitpid(static_cast<pid_t>(ret), nullptr, 0);
    }
    Report(fd, {kResult, err, ret});
  });
}

class SeccompKernel : public ::testing::TestWithParam<Probe> {};

TEST_P(SeccompKernel, KernelAgreesWithEvaluator) {
  const Probe& probe = GetParam();
  const int nr = NativeSyscallNumber(probe.syscall);
  ASSERT_GE(nr, 0) << probe.syscall;
  ASSERT_FALSE(Filter().insns.empty());

  seccomp_data data = {};
  data.nr = nr;
  data.arch = NativeAuditArch();
  for (int i = 0; i < 6; ++i) {
    data.args[i] = probe.args[i];
  }
  const uint32_t verdict = EvaluateSeccomp(Filter(), data);

  const ChildResult filtered = RunProbe(probe, &Filter());
  ASSERT_EQ(filtered.Find(kSetupFailed), nullptr) << strerror(filtered.Find(kSetupFailed)->err);
  ASSERT_TRUE(WIFEXITED(filtered.status)) << "status " << filtered.status;
  const Record* f = filtered.Find(kResult);
  ASSERT_NE(f, nullptr);

  const ChildResult control = RunProbe(probe, nullptr);
  const Record* c = control.Find(kResult);
  ASSERT_NE(c, nullptr);

  if (probe.want_errno != 0) {
    ASSERT_EQ(verdict, SECCOMP_RET_ERRNO | static_cast<uint32_t>(probe.want_errno));
    EXPECT_EQ(f->v1, -1);
    EXPECT_EQ(f->err, probe.want_errno) << "kernel said " << strerror(f->err);
    if (c->v1 == -1 && c->err == probe.want_errno) {
      GTEST_SKIP() << "no positive control here: without the filter " << probe.name
                   << " fails with the same errno (" << strerror(c->err) << ")";
    }
  } else {
    ASSERT_EQ(verdict, SECCOMP_RET_ALLOW);
    EXPECT_EQ(f->v1 >= 0, c->v1 >= 0) << "filtered " << f->v1 << " control " << c->v1;
    if (c->v1 == -1) {
      EXPECT_EQ(f->err, c->err) << strerror(f->err) << " vs " << strerror(c->err);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Probes, SeccompKernel, ::testing::ValuesIn(Probes()),
                         [](const ::testing::TestParamInfo<Probe>& info) {
                           return std::string(info.param.name);
                         });

#if defined(__x86_64__)
long X32Getpid() { return syscall(0x40000000 | SYS_getpid); }

long Int80Getpid() {
  long ret = 20;  // getpid on i386
  asm volatile("int $0x80" : "+a"(ret) : : "r8", "r9", "r10", "r11", "memory", "cc");
  return ret;
}

TEST(SeccompKernelKill, X32SyscallKillsTheProcess) {
  seccomp_data d = {};
  d.nr = 0x40000000 | SYS_getpid;
  d.arch = NativeAuditArch();
  ASSERT_EQ(EvaluateSeccomp(Filter(), d), SECCOMP_RET_KILL_PROCESS);

  const ChildResult control = RunInChild(nullptr, [](int fd, int) {
    const long r = X32Getpid();
    Report(fd, {kResult, errno, r});
  });
  ASSERT_TRUE(WIFEXITED(control.status));  // the call itself is survivable

  const ChildResult filtered = RunInChild(&Filter(), [](int fd, int) {
    const long r = X32Getpid();
    Report(fd, {kResult, errno, r});
  });
  EXPECT_TRUE(filtered.KilledBy(SIGSYS)) << "status " << filtered.status;
  EXPECT_EQ(filtered.Find(kResult), nullptr);
}

TEST(SeccompKernelKill, I386SyscallKillsTheProcess) {
  seccomp_data d = {};
  d.nr = 20;
  d.arch = AUDIT_ARCH_I386;
  ASSERT_EQ(EvaluateSeccomp(Filter(), d), SECCOMP_RET_KILL_PROCESS);

  const ChildResult control = RunInChild(nullptr, [](int fd, int) {
    const long r = Int80Getpid();
    Report(fd, {kResult, 0, r, getpid()});
  });
  if (!WIFEXITED(control.status)) {
    GTEST_SKIP() << "int 0x80 does not work here without a filter (no IA32 emulation)";
  }
  const Record* c = control.Find(kResult);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->v1, c->v2);  // the positive control: i386 getpid really ran

  const ChildResult filtered = RunInChild(&Filter(), [](int fd, int) {
    const long r = Int80Getpid();
    Report(fd, {kResult, 0, r});
  });
  EXPECT_TRUE(filtered.KilledBy(SIGSYS)) << "status " << filtered.status;
  EXPECT_EQ(filtered.Find(kResult), nullptr);
}
#endif

// Sandbox init's filter traps nothing.
const SeccompProgram& InitFilter() {
  static const SeccompProgram p = [] {
    auto insns = InitSeccompProgram();
    if (!insns.ok()) {
      ADD_FAILURE() << insns.status().ToString();
    }
    SeccompProgram out;
    if (insns.ok()) {
      out.insns = std::move(insns).value();
    }
    return out;
  }();
  return p;
}

TEST(SeccompApply, LoadsWithoutListenerWhenNothingIsTrapped) {
  const ChildResult r = RunInChild(&InitFilter(), [](int fd, int) {
    // The filter is in force (prctl(PR_GET_SECCOMP) is not on init's list: EPERM says so).
    const long rc = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
    Report(fd, {kResult, rc < 0 ? errno : 0, rc});
  });
  ASSERT_EQ(r.Find(kSetupFailed), nullptr);
  ASSERT_NE(r.Find(kListener), nullptr);
  EXPECT_EQ(r.Find(kListener)->v1, -1);
  ASSERT_NE(r.Find(kResult), nullptr);
  EXPECT_EQ(r.Find(kResult)->v1, -1);
  EXPECT_EQ(r.Find(kResult)->err, EPERM);
}

TEST(SeccompApply, RefusesBadInputWithoutLoadingAnything) {
  const ChildResult r = RunInChild(nullptr, [](int fd, int) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
      _exit(2);
    }
    int listener = 42;
    Report(fd, {kResult, 0, ApplySeccomp(SeccompProgram{}, &listener), listener});
    SeccompProgram too_long;
    too_long.insns.assign(4097, BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    listener = 42;
    Report(fd, {kResult, 1, ApplySeccomp(too_long, &listener), listener});
    // A trapping program needs somewhere to put the listener.
    Report(fd, {kResult, 2, ApplySeccomp(Filter(/*notify_creations=*/true), nullptr)});
    Report(fd, {kResult, 3, prctl(PR_GET_SECCOMP, 0, 0, 0, 0)});
  });
  ASSERT_TRUE(WIFEXITED(r.status));
  ASSERT_EQ(r.records.size(), 4u);
  EXPECT_EQ(r.records[0].v1, -EINVAL);
  EXPECT_EQ(r.records[0].v2, -1);
  EXPECT_EQ(r.records[1].v1, -EINVAL);
  EXPECT_EQ(r.records[1].v2, -1);
  EXPECT_EQ(r.records[2].v1, -EINVAL);
  EXPECT_EQ(r.records[3].v1, 0);  // still no filter
}

TEST(SeccompApply, WithoutNoNewPrivsAnUnprivilegedLoadFails) {
  if (geteuid() == 0) {
    GTEST_SKIP() << "root may load filters without no_new_privs";
  }
  const ChildResult r = RunInChild(nullptr, [](int fd, int) {
    int listener = 0;
    Report(fd, {kResult, 0, ApplySeccomp(Filter(), &listener), listener});
  });
  ASSERT_NE(r.Find(kResult), nullptr);
  EXPECT_EQ(r.Find(kResult)->v1, -EACCES);
  EXPECT_EQ(r.Find(kResult)->v2, -1);
}

// The supervisor's side in miniature: a grandchild's creating calls wait for the listener's
// answer, non-creating ones do not trap at all.
TEST(SeccompApply, CreationsReachTheListener) {
  const ChildResult r = RunInChild(&Filter(/*notify_creations=*/true), [](int fd, int listener) {
    if (listener < 0) {
      return;
    }
    const pid_t child = fork();
    if (child == 0) {
      alarm(30);
      close(listener);
      errno = 0;
      long ret = openat(AT_FDCWD, kDevNull, O_RDONLY | O_CLOEXEC);
      Report(fd, {kOpenPlain, errno, ret});
      errno = 0;
      ret = openat(AT_FDCWD, "/ward-test-nonexistent/x", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
      Report(fd, {kOpenCreate, errno, ret});
      errno = 0;
      ret = mkdir("/ward-test-nonexistent/y", 0700);
      Report(fd, {kMkdir, errno, ret});
      _exit(0);
    }
    for (int i = 0; i < 2; ++i) {
      pollfd pfd = {listener, POLLIN, 0};
      if (poll(&pfd, 1, 10000) != 1) {
        break;
      }
      seccomp_notif req;
      memset(&req, 0, sizeof(req));
      if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
        break;
      }
      Report(fd, {kNotification, 0, static_cast<long>(req.data.nr),
                  static_cast<long>(req.data.args[2])});
      seccomp_notif_resp resp;
      memset(&resp, 0, sizeof(resp));
      resp.id = req.id;
      resp.error = -EROFS;  // the supervisor's answer; nothing was created
      if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0) {
        break;
      }
    }
    waitpid(child, nullptr, 0);
  });
  ASSERT_EQ(r.Find(kSetupFailed), nullptr);
  ASSERT_NE(r.Find(kListener), nullptr);
  EXPECT_GE(r.Find(kListener)->v1, 0);

  const Record* plain = r.Find(kOpenPlain);
  ASSERT_NE(plain, nullptr);
  EXPECT_GE(plain->v1, 0) << strerror(plain->err);

  std::vector<Record> notes;
  for (const Record& rec : r.records) {
    if (rec.tag == kNotification) {
      notes.push_back(rec);
    }
  }
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].v1, NativeSyscallNumber("openat"));
  EXPECT_TRUE(notes[0].v2 & O_CREAT);
  // glibc may issue mkdir or mkdirat.
  EXPECT_TRUE(notes[1].v1 == NativeSyscallNumber("mkdir") ||
              notes[1].v1 == NativeSyscallNumber("mkdirat"))
      << NativeSyscallName(static_cast<int>(notes[1].v1));

  for (int tag : {kOpenCreate, kMkdir}) {
    const Record* rec = r.Find(tag);
    ASSERT_NE(rec, nullptr) << tag;
    EXPECT_EQ(rec->v1, -1);
    EXPECT_EQ(rec->err, EROFS) << strerror(rec->err);
  }
}

// No privilege bits leave a run, in the kernel: a chmod with a set-id bit waits for the
// listener (whose answer the caller gets), one without runs in the kernel untrapped.
TEST(SeccompApply, SetidModesReachTheListenerOtherModesDoNot) {
  char dir[] = "/tmp/ward-seccomp-setid.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/f";
  const int made = open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  ASSERT_GE(made, 0);
  close(made);
  const ChildResult r = RunInChild(&Filter(), [&](int fd, int listener) {
    if (listener < 0) {
      return;
    }
    const pid_t child = fork();
    if (child == 0) {
      alarm(30);
      close(listener);
      errno = 0;
      long ret = syscall(SYS_fchmodat, AT_FDCWD, file.c_str(), 0750);
      Report(fd, {kChmodPlain, errno, ret});
      errno = 0;
      ret = syscall(SYS_fchmodat, AT_FDCWD, file.c_str(), 04750);
      Report(fd, {kChmodSetid, errno, ret});
      _exit(0);
    }
    pollfd pfd = {listener, POLLIN, 0};
    if (poll(&pfd, 1, 10000) == 1) {
      seccomp_notif req;
      memset(&req, 0, sizeof(req));
      if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
        Report(fd, {kNotification, 0, static_cast<long>(req.data.nr),
                    static_cast<long>(req.data.args[2])});
        seccomp_notif_resp resp;
        memset(&resp, 0, sizeof(resp));
        resp.id = req.id;
        resp.error = -EROFS;  // the test's answer: nothing was changed
        ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
      }
    }
    waitpid(child, nullptr, 0);
  });
  struct stat st;
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  unlink(file.c_str());
  rmdir(dir);
  ASSERT_EQ(r.Find(kSetupFailed), nullptr);
  const Record* plain = r.Find(kChmodPlain);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->v1, 0) << strerror(plain->err);
  const Record* setid = r.Find(kChmodSetid);
  ASSERT_NE(setid, nullptr);
  EXPECT_EQ(setid->v1, -1);
  EXPECT_EQ(setid->err, EROFS) << strerror(setid->err);
  std::vector<Record> notes;
  for (const Record& rec : r.records) {
    if (rec.tag == kNotification) notes.push_back(rec);
  }
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].v1, NativeSyscallNumber("fchmodat"));
  EXPECT_EQ(notes[0].v2, 04750);
  EXPECT_EQ(st.st_mode & 07777, 0750u);  // the plain chmod ran; the set-id one did nothing
}

}  // namespace
}  // namespace ward::enforce
