// The compiled seccomp program's decisions, evaluated in-process (no kernel, no privileges).
#include "enforce/seccomp.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/sched.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include "enforce/bpf.h"
#include "enforce/seccomp_compile.h"
#include "enforce/syscalls.h"

namespace ward::enforce {
namespace {

using U = std::initializer_list<uint64_t>;

constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kKill = SECCOMP_RET_KILL_PROCESS;
constexpr uint32_t kNotify = SECCOMP_RET_USER_NOTIF;

int Nr(const char* name) {
  const int nr = NativeSyscallNumber(name);
  EXPECT_GE(nr, 0) << name;
  return nr;
}

SeccompProgram Compile(const SeccompSpec& spec) {
  auto p = PrepareSeccomp(spec);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? std::move(p).value() : SeccompProgram{};
}

const SeccompProgram& Default() {
  static const SeccompProgram p = Compile(SeccompSpec{});
  return p;
}

uint32_t Eval(const SeccompProgram& p, int nr, std::initializer_list<uint64_t> args = {},
              uint32_t arch = NativeAuditArch()) {
  seccomp_data d = {};
  d.nr = nr;
  d.arch = arch;
  size_t i = 0;
  for (uint64_t a : args) {
    d.args[i++] = a;
  }
  return EvaluateSeccomp(p, d);
}

uint32_t Eval(const SeccompProgram& p, const char* name,
              std::initializer_list<uint64_t> args = {}) {
  return Eval(p, Nr(name), args);
}

TEST(SeccompProgram, IsValidAndFitsTheKernelLimit) {
  ASSERT_FALSE(Default().insns.empty());
  EXPECT_LE(Default().insns.size(), kBpfMaxInsns);
  EXPECT_TRUE(CheckSeccompBpf(Default().insns).ok());
  EXPECT_TRUE(SeccompNeedsListener(Default()));  // memfd_create is always answered
}

// The table the build compiled (seccomp_programs.inc) holds every SeccompSpec, and each of its
// programs is what libseccomp compiles from today's rules: a stale or mis-indexed table fails.
TEST(SeccompProgram, BuiltInFiltersAreAFreshCompile) {
  const std::vector<SeccompSpec> specs = AllSeccompSpecs();
  ASSERT_EQ(specs.size(), 16u);
  for (size_t i = 0; i < specs.size(); ++i) {
    for (size_t j = i + 1; j < specs.size(); ++j) {
      EXPECT_FALSE(specs[i] == specs[j]) << i << " " << j;
    }
    const SeccompSpec& spec = specs[i];
    SCOPED_TRACE(testing::Message() << "ptrace " << spec.allow_ptrace << " creations "
                                    << spec.notify_creations << " opens " << spec.notify_opens
                                    << " no user notif " << spec.no_user_notif);
    auto built_in = PrepareSeccomp(spec);
    auto fresh = CompileSeccompFilter(spec);
    ASSERT_TRUE(built_in.ok()) << built_in.status().ToString();
    ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
    const std::vector<sock_filter>& a = built_in.value().insns;
    const std::vector<sock_filter>& b = fresh.value();
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k].code, b[k].code) << k;
      EXPECT_EQ(a[k].jt, b[k].jt) << k;
      EXPECT_EQ(a[k].jf, b[k].jf) << k;
      EXPECT_EQ(a[k].k, b[k].k) << k;
    }
  }
  // The specs differ in their programs: each lookup found its own.
  EXPECT_NE(Compile(specs[0]).insns.size(), Compile(specs[7]).insns.size());
}

// The kernel (5.11+) skips the filter for a syscall whose verdict it can prove ALLOW for any
// arguments, by running the program with only the number and the arch known: it gives up at
// the first load of anything else (kernel/seccomp.c, seccomp_is_const_allow). Read there and
// mirrored here, so that a test can see which syscalls pay for the filter on every call.
bool KernelCachesAllow(const std::vector<sock_filter>& insns, uint32_t nr, uint32_t arch) {
  uint32_t a = 0;
  for (size_t pc = 0; pc < insns.size(); ++pc) {
    const sock_filter& insn = insns[pc];
    bool taken = false;
    switch (insn.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        if (insn.k == offsetof(seccomp_data, nr)) {
          a = nr;
        } else if (insn.k == offsetof(seccomp_data, arch)) {
          a = arch;
        } else {
          return false;  // an argument or the instruction pointer
        }
        continue;
      case BPF_RET | BPF_K:
        return insn.k == SECCOMP_RET_ALLOW;
      case BPF_JMP | BPF_JA:
        pc += insn.k;
        continue;
      case BPF_ALU | BPF_AND | BPF_K:
        a &= insn.k;
        continue;
      case BPF_JMP | BPF_JEQ | BPF_K:
        taken = a == insn.k;
        break;
      case BPF_JMP | BPF_JGE | BPF_K:
        taken = a >= insn.k;
        break;
      case BPF_JMP | BPF_JGT | BPF_K:
        taken = a > insn.k;
        break;
      case BPF_JMP | BPF_JSET | BPF_K:
        taken = (a & insn.k) != 0;
        break;
      default:
        return false;
    }
    pc += taken ? insn.jt : insn.jf;
  }
  return false;
}

// Every syscall the filter allows without looking at its arguments is one the kernel lets
// through without running the filter (fcntl, close, getdents64 and fstat make up most of a
// `find`'s calls); the only allowed syscalls that run it are those whose arguments it reads.
TEST(SeccompProgram, KernelSkipsTheFilterForEveryAllowThatIgnoresArguments) {
  for (const SeccompSpec& spec : AllSeccompSpecs()) {
    const SeccompProgram p = Compile(spec);
    // The mode-setting calls read their mode (a set-id bit is trapped): a chmod, an open or a
    // mknod pays for the filter unless a trap takes every one of them anyway.
    std::vector<std::string> read_args = {"clone",
                                          "ioctl",
                                          "personality",
                                          "socket",
                                          "socketpair",
                                          "execveat",
                                          "landlock_restrict_self",
                                          "fchmod",
                                          "fchmodat",
                                          "fchmodat2"};
    if (!spec.notify_opens) read_args.push_back("openat");
    if (!spec.notify_creations) read_args.push_back("mknodat");
#if defined(__x86_64__)
    read_args.push_back("chmod");
    if (!spec.notify_opens) read_args.push_back("open");
    if (!spec.notify_creations) read_args.push_back("mknod");
    if (!spec.notify_creations && !spec.notify_opens) read_args.push_back("creat");
#endif
    std::vector<std::string> uncached;
    for (int nr = 0; nr < NativeSyscallLimit(); ++nr) {
      const std::string name = NativeSyscallName(nr);
      if (name.empty()) {
        continue;
      }
      const uint32_t zero_args = Eval(p, nr);
      const bool reads_args =
          std::find(read_args.begin(), read_args.end(), name) != read_args.end();
      const bool cached = KernelCachesAllow(p.insns, static_cast<uint32_t>(nr), NativeAuditArch());
      if (cached) {
        // Never cached unless allowed whatever the arguments.
        EXPECT_EQ(zero_args, kAllow) << name;
        EXPECT_FALSE(reads_args) << name;
      } else if (zero_args == kAllow || reads_args) {
        uncached.push_back(name);
      }
    }
    std::sort(read_args.begin(), read_args.end());
    std::sort(uncached.begin(), uncached.end());
    EXPECT_EQ(uncached, read_args)
        << "ptrace " << spec.allow_ptrace << " creations " << spec.notify_creations << " opens "
        << spec.notify_opens << " no user notif " << spec.no_user_notif;
    // The same number from a foreign ABI is never cached as allowed: it is killed.
    const uint32_t foreign =
        NativeAuditArch() == AUDIT_ARCH_X86_64 ? AUDIT_ARCH_I386 : AUDIT_ARCH_ARM;
    EXPECT_TRUE(KernelCachesAllow(p.insns, static_cast<uint32_t>(Nr("getpid")), NativeAuditArch()));
    EXPECT_FALSE(KernelCachesAllow(p.insns, static_cast<uint32_t>(Nr("getpid")), foreign));
  }
}

TEST(SeccompDeny, DangerousSyscallsGetEperm) {
  const char* kDenied[] = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "pidfd_getfd",
    "kcmp",
    "add_key",
    "keyctl",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "mount",
    "umount2",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "open_tree_attr",
    "mount_setattr",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "syslog",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "open_by_handle_at",
    "name_to_handle_at",
    "quotactl",
    "quotactl_fd",
    "lookup_dcookie",
    "uselib",
    "nfsservctl",
    "settimeofday",
    "clock_settime",
    "adjtimex",
    "clock_adjtime",
    "sethostname",
    "setdomainname",
    "fanotify_init",
    "modify_ldt",
    "move_pages",
    "migrate_pages",
    "vhangup",
#if defined(__x86_64__)
    "iopl",
    "ioperm",
#endif
  };
  for (const char* name : kDenied) {
    // Whatever the arguments: a bad-pointer form and an all-ones form.
    EXPECT_EQ(Eval(Default(), name), SeccompRetErrno(EPERM)) << name;
    EXPECT_EQ(Eval(Default(), name, {~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull}),
              SeccompRetErrno(EPERM))
        << name;
  }
}

TEST(SeccompDeny, Clone3AndMemfdSecretGetEnosys) {
  EXPECT_EQ(Eval(Default(), "clone3"), SeccompRetErrno(ENOSYS));
  EXPECT_EQ(Eval(Default(), "clone3", {0x7fff0000, sizeof(clone_args)}), SeccompRetErrno(ENOSYS));
  EXPECT_EQ(Eval(Default(), "memfd_secret"), SeccompRetErrno(ENOSYS));
}

TEST(SeccompAllow, HarmlessSyscallsPass) {
  for (const char* name : {"read", "write", "close", "getpid", "execve", "mmap", "futex",
                           "exit_group", "wait4", "kill", "pipe2", "statx", "getdents64", "seccomp",
                           "landlock_restrict_self", "prctl", "rseq"}) {
    EXPECT_EQ(Eval(Default(), name), kAllow) << name;
  }
  EXPECT_EQ(Eval(Default(), "openat", {static_cast<uint64_t>(AT_FDCWD), 0x1000, O_RDONLY}), kAllow);
  EXPECT_EQ(Eval(Default(), "openat", {3, 0x1000, O_WRONLY | O_CREAT | O_TRUNC, 0644}), kAllow);
  EXPECT_EQ(Eval(Default(), "mkdir", {0x1000, 0755}), kAllow);
  EXPECT_EQ(Eval(Default(), "cachestat"), kAllow);  // newer than libseccomp's table
}

TEST(SeccompClone, PlainForksAndThreadsPass) {
  // fork(), pthread_create() and posix_spawn()'s flag sets.
  const uint64_t kThread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                           CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
                           CLONE_CHILD_CLEARTID;
  for (uint64_t flags : U{uint64_t{0}, uint64_t{SIGCHLD},
                          uint64_t{CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD}, kThread,
                          uint64_t{CLONE_VM | CLONE_VFORK | SIGCHLD}}) {
    EXPECT_EQ(Eval(Default(), "clone", {flags}), kAllow) << std::hex << flags;
  }
}

TEST(SeccompClone, NamespaceFlagsGetEperm) {
  for (uint64_t ns : U{CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
                       CLONE_NEWNET, CLONE_NEWCGROUP, CLONE_UNTRACED}) {
    EXPECT_EQ(Eval(Default(), "clone", {ns}), SeccompRetErrno(EPERM)) << std::hex << ns;
    EXPECT_EQ(Eval(Default(), "clone", {ns | SIGCHLD | CLONE_FILES}), SeccompRetErrno(EPERM)) << ns;
    // The kernel reads only the low 32 bits; junk above must not hide the flag.
    EXPECT_EQ(Eval(Default(), "clone", {ns | (0xdeadull << 32)}), SeccompRetErrno(EPERM)) << ns;
  }
  EXPECT_EQ(Eval(Default(), "clone", {CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID}),
            SeccompRetErrno(EPERM));
}

TEST(SeccompArch, ForeignAbisAreKilled) {
  // x32 numbers, the native number of read/personality/socket with the x32 bit.
  for (const char* name : {"read", "getpid", "personality", "socket", "ptrace", "openat"}) {
    EXPECT_EQ(Eval(Default(), Nr(name) | 0x40000000), kKill) << name;
  }
  // i386 via int 0x80 (and other architectures' audit values): killed whatever the number,
  // including numbers the native part treats specially.
  for (uint32_t arch : {uint32_t{AUDIT_ARCH_I386}, uint32_t{AUDIT_ARCH_ARM},
                        uint32_t{AUDIT_ARCH_AARCH64}, uint32_t{AUDIT_ARCH_X86_64}, 0u, ~0u}) {
    if (arch == NativeAuditArch()) {
      continue;
    }
    for (int nr : {0, 1, 11, 20, 26, 102, 136, Nr("personality"), Nr("socket"), Nr("socketpair"),
                   Nr("ioctl")}) {
      EXPECT_EQ(Eval(Default(), nr, {}, arch), kKill) << std::hex << arch << " nr " << nr;
    }
  }
}

TEST(SeccompPersonality, OnlyHarmlessValuesPass) {
  for (uint64_t v : U{0x0ull, 0x8ull, 0x20000ull, 0x20008ull, 0xffffffffull,
                      // the kernel takes an unsigned int: -1 from an int is still the query
                      0xffffffffffffffffull}) {
    EXPECT_EQ(Eval(Default(), "personality", {v}), kAllow) << std::hex << v;
  }
  for (uint64_t v :
       U{uint64_t{READ_IMPLIES_EXEC}, uint64_t{ADDR_NO_RANDOMIZE}, uint64_t{ADDR_COMPAT_LAYOUT},
         uint64_t{MMAP_PAGE_ZERO}, uint64_t{PER_LINUX} | uint64_t{READ_IMPLIES_EXEC},
         uint64_t{PER_BSD}, uint64_t{PER_SVR4}, 0x1ull, 0x7ull, 0x9ull, 0x20001ull, 0xfffffffeull,
         0x20008ull | uint64_t{ADDR_NO_RANDOMIZE}}) {
    EXPECT_EQ(Eval(Default(), "personality", {v}), SeccompRetErrno(EPERM)) << std::hex << v;
  }
}

TEST(SeccompIoctl, TerminalInjectionIsDenied) {
  for (uint64_t cmd :
       U{uint64_t{TIOCSTI}, uint64_t{TIOCLINUX}, uint64_t{TIOCSETD}, uint64_t{TIOCCONS}}) {
    for (uint64_t fd : U{0ull, 1ull, 2ull, 255ull, ~0ull}) {
      EXPECT_EQ(Eval(Default(), "ioctl", {fd, cmd}), SeccompRetErrno(EPERM)) << std::hex << cmd;
    }
    // CVE-2019-10063: bits above 32 must not smuggle the command past the filter.
    EXPECT_EQ(Eval(Default(), "ioctl", {0, cmd | (1ull << 32)}), SeccompRetErrno(EPERM)) << cmd;
    EXPECT_EQ(Eval(Default(), "ioctl", {0, cmd | (0xffffffffull << 32)}), SeccompRetErrno(EPERM))
        << cmd;
  }
  for (uint64_t cmd :
       U{uint64_t{TCGETS}, uint64_t{TCSETS}, uint64_t{TIOCGWINSZ}, uint64_t{TIOCSWINSZ},
         uint64_t{FIONREAD}, uint64_t{FIONBIO}, uint64_t{FIOCLEX}, uint64_t{TIOCSCTTY},
         uint64_t{TIOCSTI} << 32, uint64_t{TIOCSTI + 1}}) {
    EXPECT_EQ(Eval(Default(), "ioctl", {1, cmd}), kAllow) << std::hex << cmd;
  }
}

TEST(SeccompSocket, OnlyUnixAndInetFamilies) {
  for (const char* call : {"socket", "socketpair"}) {
    for (uint64_t f : U{uint64_t{AF_UNIX}, uint64_t{AF_INET}, uint64_t{AF_INET6}}) {
      EXPECT_EQ(Eval(Default(), call, {f, SOCK_STREAM, 0}), kAllow) << call << " " << f;
      EXPECT_EQ(Eval(Default(), call, {f, SOCK_DGRAM | SOCK_CLOEXEC, 0}), kAllow) << call;
      // The kernel takes an int: the high word is ignored by it and by the filter.
      EXPECT_EQ(Eval(Default(), call, {f | (1ull << 32), SOCK_STREAM}), kAllow) << call;
    }
    for (uint64_t f :
         U{uint64_t{AF_UNSPEC}, uint64_t{AF_NETLINK}, uint64_t{AF_PACKET}, uint64_t{AF_VSOCK},
           uint64_t{AF_ALG}, uint64_t{AF_BLUETOOTH}, uint64_t{AF_XDP}, uint64_t{AF_KEY},
           uint64_t{AF_TIPC}, uint64_t{AF_RDS}, uint64_t{AF_CAN}, uint64_t{AF_MAX}, 255ull,
           0xffffffffull, AF_NETLINK | (1ull << 32)}) {
      EXPECT_EQ(Eval(Default(), call, {f, SOCK_RAW, 0}), SeccompRetErrno(kSeccompSocketFamilyErrno))
          << call << " family " << f;
    }
  }
}

// Without the creation and open traps, memfd_create alone is trapped (the supervisor makes the
// memfd sealed against execution).
// Without creation or open traps, memfd_create is trapped, and a mode with a set-id bit.
TEST(SeccompNotify, DisabledTrapsOnlyMemfdCreateAndSetidModes) {
  const std::vector<std::string> mode_setters = {
      "chmod", "fchmod", "fchmodat", "fchmodat2", "open", "openat", "creat", "mknod", "mknodat"};
  for (int nr = 0; nr < NativeSyscallLimit(); ++nr) {
    const std::string name = NativeSyscallName(nr);
    const bool sets_modes =
        std::find(mode_setters.begin(), mode_setters.end(), name) != mode_setters.end();
    for (uint64_t flags : U{uint64_t{0}, uint64_t{O_CREAT}, uint64_t{O_CREAT | 0755}, ~0ull}) {
      const bool trapped =
          (Eval(Default(), nr, {flags, flags, flags, flags}) & SECCOMP_RET_ACTION_FULL) == kNotify;
      EXPECT_EQ(trapped, name == "memfd_create" || (sets_modes && flags == ~0ull))
          << name << " " << std::hex << flags;
    }
  }
}

// Fileless code and a silenced Landlock log: execveat of a descriptor and landlock_restrict_self
// with a log flag are refused; their ordinary forms are not.
TEST(SeccompProgram, RefusesDescriptorExecAndLandlockLogFlags) {
  for (const SeccompSpec& spec : AllSeccompSpecs()) {
    const SeccompProgram p = Compile(spec);
    EXPECT_EQ(Eval(p, "execveat", {3, 0x1000, 0x2000, 0x3000, AT_EMPTY_PATH}),
              SeccompRetErrno(EPERM));
    EXPECT_EQ(Eval(p, "execveat", {3, 0x1000, 0x2000, 0x3000, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW}),
              SeccompRetErrno(EPERM));
    EXPECT_EQ(Eval(p, "execveat", {3, 0x1000, 0x2000, 0x3000, 0}), kAllow);  // control
    for (uint64_t flag : U{1, 2, 4, 7}) {
      EXPECT_EQ(Eval(p, "landlock_restrict_self", {3, flag}), SeccompRetErrno(EPERM)) << flag;
    }
    EXPECT_EQ(Eval(p, "landlock_restrict_self", {3, 0}), kAllow);  // control
    EXPECT_EQ(Eval(p, "landlock_restrict_self", {3, 8}), kAllow);  // TSYNC (ABI 8)
    // Sealed by the guard agent; without user notification (gVisor) not made at all.
    EXPECT_EQ(Eval(p, "memfd_create", {0x1000, 0}),
              spec.no_user_notif ? SeccompRetErrno(ENOSYS) : kNotify);
  }
}

// A kernel without user notification gets a filter that traps nothing (it could not load one
// that does) and still refuses what every filter refuses.
TEST(SeccompProgram, WithoutUserNotificationNothingIsTrapped) {
  SeccompSpec spec;
  spec.no_user_notif = true;
  const SeccompProgram p = Compile(spec);
  EXPECT_FALSE(SeccompNeedsListener(p));
  EXPECT_EQ(Eval(p, "memfd_create", {0x1000, 0}), SeccompRetErrno(ENOSYS));
  EXPECT_EQ(Eval(p, "getpid", {}), kAllow);  // control
  EXPECT_EQ(Eval(p, "execveat", {3, 0x1000, 0x2000, 0x3000, AT_EMPTY_PATH}),
            SeccompRetErrno(EPERM));
}

TEST(SeccompNotify, CreationsTrapOnlyWhenCreating) {
  SeccompSpec spec;
  spec.notify_creations = true;
  const SeccompProgram p = Compile(spec);
  EXPECT_TRUE(SeccompNeedsListener(p));
  const uint64_t cwd = static_cast<uint64_t>(AT_FDCWD);

  EXPECT_EQ(Eval(p, "openat", {cwd, 0x1000, O_CREAT | O_WRONLY, 0600}), kNotify);
  EXPECT_EQ(Eval(p, "openat", {cwd, 0x1000, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC}), kNotify);
  EXPECT_EQ(Eval(p, "openat", {3, 0x1000, O_CREAT | (1ull << 32)}), kNotify);
  for (uint64_t flags :
       U{uint64_t{O_RDONLY}, uint64_t{O_WRONLY | O_TRUNC}, uint64_t{O_RDWR | O_APPEND | O_CLOEXEC},
         uint64_t{O_DIRECTORY}, uint64_t{O_PATH}, uint64_t{O_CREAT} << 32}) {
    EXPECT_EQ(Eval(p, "openat", {cwd, 0x1000, flags}), kAllow) << std::hex << flags;
    // openat's flags are arg 2: O_CREAT in another argument does not matter.
    EXPECT_EQ(Eval(p, "openat", {O_CREAT, O_CREAT, flags, O_CREAT}), kAllow) << flags;
  }
#if defined(__x86_64__)
  EXPECT_EQ(Eval(p, "open", {0x1000, O_CREAT | O_WRONLY, 0600}), kNotify);
  EXPECT_EQ(Eval(p, "open", {0x1000, O_RDONLY, O_CREAT}), kAllow);
  EXPECT_EQ(Eval(p, "creat", {0x1000, 0600}), kNotify);
  for (const char* name : {"mkdir", "mknod", "symlink", "link", "rename"}) {
    EXPECT_EQ(Eval(p, name), kNotify) << name;
  }
#endif
  EXPECT_EQ(Eval(p, "openat2", {cwd, 0x1000, 0x2000, 24}), SeccompRetErrno(ENOSYS));
  for (const char* name : {"mkdirat", "mknodat", "symlinkat", "linkat", "renameat2"}) {
    EXPECT_EQ(Eval(p, name), kNotify) << name;
  }
  // The deny list still holds alongside the traps; reading and metadata calls are untouched.
  EXPECT_EQ(Eval(p, "ptrace"), SeccompRetErrno(EPERM));
  EXPECT_EQ(Eval(p, "socket", {AF_NETLINK}), SeccompRetErrno(kSeccompSocketFamilyErrno));
  for (const char* name : {"read", "unlinkat", "fchmodat", "newfstatat", "getdents64"}) {
    EXPECT_EQ(Eval(p, name), kAllow) << name;
  }
}

TEST(SeccompNotify, OpensTrapEveryOpen) {
  SeccompSpec spec;
  spec.notify_opens = true;
  const SeccompProgram p = Compile(spec);
  EXPECT_TRUE(SeccompNeedsListener(p));
  for (uint64_t flags : U{uint64_t{O_RDONLY}, uint64_t{O_CREAT | O_WRONLY}, uint64_t{O_PATH}}) {
    EXPECT_EQ(Eval(p, "openat", {static_cast<uint64_t>(AT_FDCWD), 0x1000, flags}), kNotify);
  }
  EXPECT_EQ(Eval(p, "openat2"), kNotify);
#if defined(__x86_64__)
  EXPECT_EQ(Eval(p, "open", {0x1000, O_RDONLY}), kNotify);
  EXPECT_EQ(Eval(p, "creat"), kNotify);
#endif
  // Creation traps stay off unless asked for.
  EXPECT_EQ(Eval(p, "mkdirat"), kAllow);

  spec.notify_creations = true;
  const SeccompProgram both = Compile(spec);
  EXPECT_EQ(Eval(both, "openat", {0, 0, O_RDONLY}), kNotify);
  EXPECT_EQ(Eval(both, "mkdirat"), kNotify);
}

// No privilege bits leave a run: in every program a mode with S_ISUID or S_ISGID is trapped
// (refused without user notification), whichever call carries it; any other mode is left to
// the kernel; extended attributes are refused as on a file system without them; openat2,
// whose mode the filter cannot see, answers ENOSYS unless every open is trapped.
TEST(SeccompPrivilegeBits, SetidModesAreTrappedOthersAreNot) {
  const uint64_t cwd = static_cast<uint64_t>(AT_FDCWD);
  const uint64_t tmpfile = O_TMPFILE | O_WRONLY;
  for (const SeccompSpec& spec : AllSeccompSpecs()) {
    SCOPED_TRACE(testing::Message() << "creations " << spec.notify_creations << " opens "
                                    << spec.notify_opens << " no user notif " << spec.no_user_notif);
    const SeccompProgram p = Compile(spec);
    const uint32_t setid = spec.no_user_notif ? SeccompRetErrno(EPERM) : kNotify;
    // What a creation without a set-id bit gets: the creation traps' verdict, or the kernel.
    const uint32_t create = spec.notify_creations || spec.notify_opens ? kNotify : kAllow;
    const uint32_t node = spec.notify_creations ? kNotify : kAllow;
    for (uint64_t mode : U{04755, 02755, 06755, 04000, 02000, (1ull << 32) | 04644}) {
      EXPECT_EQ(Eval(p, "fchmod", {3, mode}), setid) << std::oct << mode;
      EXPECT_EQ(Eval(p, "fchmodat", {cwd, 0x1000, mode}), setid) << std::oct << mode;
      EXPECT_EQ(Eval(p, "fchmodat2", {cwd, 0x1000, mode, AT_SYMLINK_NOFOLLOW}), setid);
      EXPECT_EQ(Eval(p, "mknodat", {cwd, 0x1000, S_IFREG | mode, 0}),
                node == kNotify ? kNotify : setid);
      if (!spec.notify_opens) {
        EXPECT_EQ(Eval(p, "openat", {cwd, 0x1000, O_CREAT | O_WRONLY, mode}),
                  create == kNotify ? kNotify : setid);
        EXPECT_EQ(Eval(p, "openat", {cwd, 0x1000, tmpfile, mode}), setid) << std::oct << mode;
      }
#if defined(__x86_64__)
      EXPECT_EQ(Eval(p, "chmod", {0x1000, mode}), setid) << std::oct << mode;
      EXPECT_EQ(Eval(p, "creat", {0x1000, mode}), create == kNotify ? kNotify : setid);
      EXPECT_EQ(Eval(p, "mknod", {0x1000, S_IFREG | mode, 0}), node == kNotify ? kNotify : setid);
      if (!spec.notify_opens) {
        EXPECT_EQ(Eval(p, "open", {0x1000, O_CREAT | O_WRONLY, mode}),
                  create == kNotify ? kNotify : setid);
        EXPECT_EQ(Eval(p, "open", {0x1000, tmpfile, mode}), setid);
      }
#endif
    }
    // Controls: other modes, and a set-id bit where the mode is not used or in another argument.
    for (uint64_t mode : U{0, 0644, 0755, 01777, 07777 & ~06000u, (1ull << 32) | 0755}) {
      EXPECT_EQ(Eval(p, "fchmod", {3, mode}), kAllow) << std::oct << mode;
      EXPECT_EQ(Eval(p, "fchmodat", {cwd, 0x1000, mode}), kAllow) << std::oct << mode;
      EXPECT_EQ(Eval(p, "fchmodat2", {cwd, 0x1000, mode, 0}), kAllow) << std::oct << mode;
      EXPECT_EQ(Eval(p, "mknodat", {cwd, 0x1000, S_IFREG | mode, 0}), node);
      if (!spec.notify_opens) {
        EXPECT_EQ(Eval(p, "openat", {cwd, 0x1000, tmpfile, mode}), kAllow) << std::oct << mode;
      }
#if defined(__x86_64__)
      EXPECT_EQ(Eval(p, "chmod", {0x1000, mode}), kAllow) << std::oct << mode;
#endif
    }
    EXPECT_EQ(Eval(p, "fchmodat", {04755, 04755, 0644, 04755}), kAllow);
    if (!spec.notify_opens) {
      // Without O_CREAT or O_TMPFILE the mode argument means nothing.
      EXPECT_EQ(Eval(p, "openat", {cwd, 0x1000, O_RDWR, 04755}), kAllow);
      EXPECT_EQ(Eval(p, "openat2", {cwd, 0x1000, 0x2000, 24}), SeccompRetErrno(ENOSYS));
    } else {
      EXPECT_EQ(Eval(p, "openat2", {cwd, 0x1000, 0x2000, 24}), kNotify);
    }
    // mkdir keeps only the permission and sticky bits of its mode: not trapped for them.
    EXPECT_EQ(Eval(p, "mkdirat", {cwd, 0x1000, 06755}), node);
    for (const char* name : {"setxattr", "lsetxattr", "fsetxattr", "setxattrat"}) {
      EXPECT_EQ(Eval(p, name, {0x1000, 0x2000, 0x3000, 20, 0}), SeccompRetErrno(EOPNOTSUPP))
          << name;
    }
    for (const char* name : {"getxattr", "listxattr", "removexattr", "fremovexattr"}) {
      EXPECT_EQ(Eval(p, name, {0x1000, 0x2000, 0x3000, 20}), kAllow) << name;
    }
  }
}

TEST(SeccompPtrace, AllowPtraceIsTheOnlyWidening) {
  SeccompSpec spec;
  spec.allow_ptrace = true;
  const SeccompProgram p = Compile(spec);
  for (const char* name : {"ptrace", "process_vm_readv", "process_vm_writev"}) {
    EXPECT_EQ(Eval(p, name), kAllow) << name;
  }
  // Everything else decides exactly as the default program.
  for (int nr = 0; nr < NativeSyscallLimit(); ++nr) {
    const std::string name = NativeSyscallName(nr);
    if (name == "ptrace" || name == "process_vm_readv" || name == "process_vm_writev") {
      continue;
    }
    for (uint64_t a : U{0ull, 1ull, uint64_t{CLONE_NEWUSER}, uint64_t{TIOCSTI}, ~0ull}) {
      EXPECT_EQ(Eval(p, nr, {a, a, a}), Eval(Default(), nr, {a, a, a})) << name;
    }
  }
}

TEST(SeccompSummary, CountsEveryKnownSyscallOnce) {
  const SeccompSummary s = SummarizeSeccomp(Default());
  int known = 0;
  for (int nr = 0; nr < NativeSyscallLimit(); ++nr) {
    known += !NativeSyscallName(nr).empty();
  }
  EXPECT_EQ(s.allowed + s.denied + s.notified + s.killed, known);
  EXPECT_GT(s.allowed, 250);
  EXPECT_EQ(s.notified, 1);  // memfd_create
  EXPECT_EQ(s.notified_names, std::vector<std::string>{"memfd_create"});
  EXPECT_EQ(s.killed, 0);  // kills are for foreign ABIs only
  EXPECT_EQ(static_cast<int>(s.denied_names.size()), s.denied);
  auto has = [](const std::vector<std::string>& v, const char* n) {
    return std::find(v.begin(), v.end(), n) != v.end();
  };
  for (const char* n : {"ptrace", "bpf", "clone3", "io_uring_setup", "unshare", "mount",
                        "open_tree_attr", "socket" /* AF_UNSPEC with zeroed args */}) {
    EXPECT_TRUE(has(s.denied_names, n)) << n;
  }
  for (const char* n : {"read", "clone", "ioctl", "personality", "openat"}) {
    EXPECT_FALSE(has(s.denied_names, n)) << n;
  }

  SeccompSpec spec;
  spec.notify_creations = true;
  const SeccompSummary t = SummarizeSeccomp(Compile(spec));
  EXPECT_EQ(static_cast<int>(t.notified_names.size()), t.notified);
  EXPECT_TRUE(has(t.notified_names, "mkdirat"));
  EXPECT_FALSE(has(t.notified_names, "openat"));  // zeroed flags: no O_CREAT
  EXPECT_EQ(t.denied, s.denied);
  for (const char* n : {"openat2", "setxattr", "fsetxattr"}) {
    EXPECT_TRUE(has(s.denied_names, n)) << n;
    EXPECT_TRUE(has(t.denied_names, n)) << n;
  }
}

TEST(SeccompSummary, BrokenProgramCountsAsKilled) {
  SeccompProgram broken;
  broken.insns = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0)};  // no return
  const SeccompSummary s = SummarizeSeccomp(broken);
  EXPECT_EQ(s.allowed, 0);
  EXPECT_GT(s.killed, 250);
}

TEST(Syscalls, NamesAndNumbersRoundTrip) {
  EXPECT_EQ(NativeSyscallName(Nr("openat")), "openat");
  EXPECT_EQ(NativeSyscallNumber("no_such_syscall"), -1);
  EXPECT_EQ(NativeSyscallNumber(""), -1);
  EXPECT_EQ(NativeSyscallName(-1), "");
  EXPECT_EQ(NativeSyscallName(1 << 20), "");
  EXPECT_EQ(NativeSyscallNumber("open_tree_attr"), 467);
  EXPECT_EQ(NativeSyscallNumber("listns"), 470);
  EXPECT_GE(NativeSyscallLimit(), 471);
#if defined(__x86_64__)
  EXPECT_EQ(NativeAuditArch(), AUDIT_ARCH_X86_64);
  EXPECT_EQ(NativeSyscallNumber("read"), 0);
  EXPECT_EQ(NativeSyscallNumber("vm86"), -1);        // i386 only
  EXPECT_EQ(NativeSyscallNumber("socketcall"), -1);  // i386 only
  EXPECT_EQ(NativeSyscallNumber("uretprobe"), 335);
#endif
}

}  // namespace
}  // namespace ward::enforce
