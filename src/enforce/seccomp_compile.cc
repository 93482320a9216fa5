#include "enforce/seccomp_compile.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

#include "common/unique_fd.h"
#include "enforce/bpf.h"
#include "enforce/syscalls.h"

namespace ward::enforce {
namespace {

struct Denied {
  const char* name;
  int err;
};

// Denied outright. Each group says why; a syscall this architecture lacks is skipped (the
// arch check already kills every non-native ABI).
constexpr Denied kDenied[] = {
    // Other processes' memory, fds and pages (RS05, PI06). ptrace and process_vm_* are added
    // below unless SeccompSpec::allow_ptrace.
    {"process_madvise", EPERM},
    {"pidfd_getfd", EPERM},
    {"kcmp", EPERM},
    {"move_pages", EPERM},
    {"migrate_pages", EPERM},
    // Kernel keyrings are not namespaced and hold host secrets (RS08).
    {"add_key", EPERM},
    {"keyctl", EPERM},
    {"request_key", EPERM},
    // Large kernel surfaces with a record of privilege escalations, needed by no agent (HK04,
    // HK05); io_uring's operations are also invisible to seccomp.
    {"bpf", EPERM},
    {"perf_event_open", EPERM},
    {"userfaultfd", EPERM},
    {"io_uring_setup", EPERM},
    {"io_uring_enter", EPERM},
    {"io_uring_register", EPERM},
    // Extended attributes, refused as on a file system without them (cp -a, rsync -X and tar
    // --xattrs go on without): the filter cannot read the name, and security.capability gives
    // whoever executes the file the capabilities it names. No privilege bits leave a run.
    {"setxattr", EOPNOTSUPP},
    {"lsetxattr", EOPNOTSUPP},
    {"fsetxattr", EOPNOTSUPP},
    {"setxattrat", EOPNOTSUPP},
    // 16-bit segments, only for wine/dosemu; a recurring source of kernel bugs.
    {"modify_ldt", EPERM},
    // Loading kernel code (the last three are gone from modern kernels; kept closed).
    {"kexec_load", EPERM},
    {"kexec_file_load", EPERM},
    {"init_module", EPERM},
    {"finit_module", EPERM},
    {"delete_module", EPERM},
    {"create_module", EPERM},
    {"get_kernel_syms", EPERM},
    {"query_module", EPERM},
    // The mount table: unmasking hidden paths or re-binding read-only ones (HK03).
    // open_tree_attr (6.15) is open_tree with mount attributes.
    {"mount", EPERM},
    {"umount2", EPERM},
    {"fsopen", EPERM},
    {"fsconfig", EPERM},
    {"fsmount", EPERM},
    {"fspick", EPERM},
    {"move_mount", EPERM},
    {"open_tree", EPERM},
    {"open_tree_attr", EPERM},
    {"mount_setattr", EPERM},
    {"pivot_root", EPERM},
    {"chroot", EPERM},
    // New or foreign namespaces (HK01); clone is filtered by its flags below.
    {"unshare", EPERM},
    {"setns", EPERM},
    // Host-wide state: logs, accounting, swap, power, quotas, clocks, names, I/O ports.
    {"syslog", EPERM},
    {"acct", EPERM},
    {"swapon", EPERM},
    {"swapoff", EPERM},
    {"reboot", EPERM},
    {"quotactl", EPERM},
    {"quotactl_fd", EPERM},
    {"lookup_dcookie", EPERM},
    {"nfsservctl", EPERM},
    {"uselib", EPERM},
    {"vhangup", EPERM},
    {"settimeofday", EPERM},
    {"clock_settime", EPERM},
    {"adjtimex", EPERM},
    {"clock_adjtime", EPERM},
    {"sethostname", EPERM},
    {"setdomainname", EPERM},
    {"iopl", EPERM},
    {"ioperm", EPERM},
    {"vm86", EPERM},
    {"vm86old", EPERM},
    // File handles open files by inode, past the mount view and Landlock's path rules (the
    // "shocker" escape); since 6.18 nsfs handles also open namespaces by id.
    {"open_by_handle_at", EPERM},
    {"name_to_handle_at", EPERM},
    // Watching whole mounts and filesystems.
    {"fanotify_init", EPERM},
    // clone3 hides its flags behind a pointer the filter cannot read (HK02); ENOSYS makes libc
    // fall back to clone, whose flags are checked.
    {"clone3", ENOSYS},
    // Secret memory blocks hibernation host-wide while mapped and hides pages from the kernel;
    // ENOSYS is what a kernel without it says, so callers fall back.
    {"memfd_secret", ENOSYS},
};

// clone flags that create namespaces (nested user namespaces reach kernel surfaces open to
// unprivileged root, HK01). CLONE_UNTRACED has no use outside the kernel; the threat model's
// PI07 probe expects it refused (our notifier is inherited regardless, ptrace is denied).
// CLONE_NEWTIME is not here: on clone that bit belongs to the exit signal.
constexpr uint64_t kCloneDenied[] = {CLONE_NEWNS,  CLONE_NEWUTS, CLONE_NEWIPC,    CLONE_NEWUSER,
                                     CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP, CLONE_UNTRACED};

// ioctl commands denied on every fd, compared on the low 32 bits (the kernel truncates the
// command, CVE-2019-10063). TIOCSTI and TIOCLINUX inject input into a terminal (PI01, PI02);
// TIOCSETD switches a tty's line discipline, which reaches rarely used ldisc code with a
// history of use-after-frees (n_hdlc CVE-2017-2636, n_gsm CVE-2023-6546); TIOCCONS redirects
// the console's output.
constexpr uint32_t kIoctlDenied[] = {TIOCSTI, TIOCLINUX, TIOCSETD, TIOCCONS};

// personality values that change nothing a sandbox cares about: PER_LINUX, PER_LINUX32,
// UNAME26 and both, and the 0xffffffff query (HK08; READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE ... no).
constexpr uint32_t kPersonalityAllowed[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};

constexpr uint32_t kSocketFamiliesAllowed[] = {AF_UNIX, AF_INET, AF_INET6};

// landlock_restrict_self's LOG_SAME_EXEC_OFF, LOG_NEW_EXEC_ON and LOG_SUBDOMAINS_OFF (ABI 7):
// a domain that silences the kernel's record of what Landlock denied.
constexpr uint32_t kLandlockLogFlags[] = {1u << 0, 1u << 1, 1u << 2};

// Syscalls that create or rename a directory entry (besides the open family).
constexpr const char* kCreationSyscalls[] = {"mkdir",   "mkdirat",   "mknod",    "mknodat",
                                             "symlink", "symlinkat", "link",     "linkat",
                                             "rename",  "renameat",  "renameat2"};

// Calls that set a file's mode, and the index of that argument (creat's flags are implied).
struct ModeArg {
  const char* name;
  unsigned mode;
};
constexpr ModeArg kModeSetters[] = {{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2}};
// mknod and mknodat make regular files too (trapped whatever their mode with notify_creations).
constexpr ModeArg kModeNodes[] = {{"mknod", 1}, {"mknodat", 2}};
// Opens that create with a mode: the index of their flags and of their mode (creat: always
// O_CREAT, its mode is argument 1; trapped whatever its mode with notify_creations or
// notify_opens, and open and openat with notify_opens).
struct OpenArgs {
  const char* name;
  unsigned flags, mode;
};
constexpr OpenArgs kCreatingOpens[] = {{"open", 1, 2}, {"openat", 2, 3}};
// O_TMPFILE without the O_DIRECTORY glibc folds into it: the bit that makes an unnamed file.
constexpr uint32_t kTmpfileBit = O_TMPFILE & ~O_DIRECTORY;
// Mode bits that make an executable run with its owner's or its group's ids.
constexpr uint32_t kPrivilegeBits[] = {S_ISUID, S_ISGID};

// The native number of a syscall: the C library's headers and ward's own list of newer ones
// (syscalls.cc), then libseccomp's table for a name both lack (a negative answer is its pseudo
// number for a syscall this ABI lacks). -1 when this architecture has no such syscall.
int SyscallNumber(std::string_view name) {
  const int nr = NativeSyscallNumber(name);
  if (nr >= 0) {
    return nr;
  }
  const std::string n(name);
  const int resolved = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, n.c_str());
  return resolved >= 0 ? resolved : -1;
}

using FilterCtx = std::unique_ptr<void, decltype(&seccomp_release)>;

Status RuleAdd(scmp_filter_ctx ctx, uint32_t action, std::string_view name,
               std::initializer_list<scmp_arg_cmp> cmps = {}) {
  const int nr = SyscallNumber(name);
  if (nr < 0) {
    return Ok();  // not on this architecture
  }
  const int rc = seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(cmps.size()),
                                        cmps.size() ? cmps.begin() : nullptr);
  if (rc < 0) {
    return ErrnoError("seccomp rule for " + std::string(name), -rc);
  }
  return Ok();
}

// A masked compare on the low 32 bits only: libseccomp compares the high word against
// (mask >> 32) == 0, which always holds.
scmp_arg_cmp Low32HasBits(unsigned arg, uint32_t bits) {
  return scmp_arg_cmp{arg, SCMP_CMP_MASKED_EQ, bits, bits};
}
scmp_arg_cmp Low32Equals(unsigned arg, uint32_t value) {
  return scmp_arg_cmp{arg, SCMP_CMP_MASKED_EQ, 0xffffffffu, value};
}

Result<std::vector<sock_filter>> ExportBpf(scmp_filter_ctx ctx) {
  // libseccomp 2.5 exports to an fd only.
  UniqueFd fd(memfd_create("ward-seccomp", MFD_CLOEXEC));
  if (!fd) {
    return Errno("memfd_create for the seccomp filter");
  }
  const int rc = seccomp_export_bpf(ctx, fd.get());
  if (rc < 0) {
    return ErrnoError("seccomp_export_bpf", -rc);
  }
  const off_t size = lseek(fd.get(), 0, SEEK_END);
  if (size < 0) {
    return Errno("lseek on the exported seccomp filter");
  }
  if (size == 0 || size % sizeof(sock_filter) != 0 ||
      static_cast<size_t>(size) > kBpfMaxInsns * sizeof(sock_filter)) {
    return Error(Code::kInternal,
                 "libseccomp exported a filter of " + std::to_string(size) + " bytes");
  }
  std::vector<sock_filter> insns(static_cast<size_t>(size) / sizeof(sock_filter));
  auto* out = reinterpret_cast<char*>(insns.data());
  for (off_t done = 0; done < size;) {
    const ssize_t n = pread(fd.get(), out + done, static_cast<size_t>(size - done), done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return Errno("reading the exported seccomp filter");
    }
    if (n == 0) {
      return Error(Code::kInternal, "short read of the exported seccomp filter");
    }
    done += n;
  }
  return insns;
}

// The rules that allow an argument only from a set of values. libseccomp 2.5 refuses two
// comparisons of one argument in a rule, so these few are written by hand and run first; any
// other syscall (and any foreign arch, which the libseccomp part then kills) falls through to
// the libseccomp program appended right after.
Result<std::vector<sock_filter>> BuildValueAllowLists() {
  const int personality = SyscallNumber("personality");
  const int socket = SyscallNumber("socket");
  const int socketpair = SyscallNumber("socketpair");
  if (personality < 0 || socket < 0 || socketpair < 0) {
    return Error(Code::kInternal, "personality/socket/socketpair unknown to libseccomp");
  }
  BpfBuilder b;
  const auto rest = b.NewLabel(), pers = b.NewLabel(), sock = b.NewLabel(), allow = b.NewLabel();
  constexpr auto kNext = BpfBuilder::kNext;
  b.LoadArch();
  b.Jump(BPF_JEQ, NativeAuditArch(), kNext, rest);
  b.LoadNr();
  b.Jump(BPF_JEQ, static_cast<uint32_t>(personality), pers, kNext);
  b.Jump(BPF_JEQ, static_cast<uint32_t>(socket), sock, kNext);
  b.Jump(BPF_JEQ, static_cast<uint32_t>(socketpair), sock, kNext);
  b.Goto(rest);
  // Both take a 32-bit value: the kernel ignores the high word, so only the low one is compared.
  b.Bind(pers);
  b.LoadArgLow(0);
  for (uint32_t v : kPersonalityAllowed) {
    b.Jump(BPF_JEQ, v, allow, kNext);
  }
  b.Ret(SeccompRetErrno(EPERM));
  b.Bind(sock);
  b.LoadArgLow(0);
  for (uint32_t f : kSocketFamiliesAllowed) {
    b.Jump(BPF_JEQ, f, allow, kNext);
  }
  b.Ret(SeccompRetErrno(kSeccompSocketFamilyErrno));
  b.Bind(allow);
  b.Ret(SECCOMP_RET_ALLOW);
  b.Bind(rest);
  return b.Finish();
}

// The rules for one privilege bit (S_ISUID or S_ISGID) in the mode argument of each call that
// sets a mode, except the calls `spec` already traps whatever their arguments.
Status AddPrivilegeBitRule(scmp_filter_ctx ctx, const SeccompSpec& spec, uint32_t action,
                           uint32_t bit) {
  for (const ModeArg& m : kModeSetters) {
    WARD_TRY(RuleAdd(ctx, action, m.name, {Low32HasBits(m.mode, bit)}));
  }
  if (!spec.notify_creations) {
    for (const ModeArg& m : kModeNodes) {
      WARD_TRY(RuleAdd(ctx, action, m.name, {Low32HasBits(m.mode, bit)}));
    }
  }
  if (spec.notify_opens) {
    return Ok();
  }
  for (const OpenArgs& o : kCreatingOpens) {
    if (!spec.notify_creations) {
      WARD_TRY(RuleAdd(ctx, action, o.name,
                       {Low32HasBits(o.flags, O_CREAT), Low32HasBits(o.mode, bit)}));
    }
    WARD_TRY(RuleAdd(ctx, action, o.name,
                     {Low32HasBits(o.flags, kTmpfileBit), Low32HasBits(o.mode, bit)}));
  }
  if (!spec.notify_creations) {
    WARD_TRY(RuleAdd(ctx, action, "creat", {Low32HasBits(1, bit)}));
  }
  return Ok();
}

// No privilege bits leave a run: a call that would set S_ISUID or S_ISGID is trapped (the
// creation guard performs it without them, so copying or extracting a set-id file succeeds and
// leaves a plain one) or, without user notification, refused. Each bit is a masked compare of
// the mode argument, so no other chmod or creation is trapped, and mkdir is not here: the kernel
// keeps only the permission and sticky bits of its mode. Calls already trapped whatever their
// arguments (notify_creations, notify_opens) need no rule of their own.
Status AddPrivilegeBitRules(scmp_filter_ctx ctx, const SeccompSpec& spec) {
  const uint32_t action = spec.no_user_notif ? SCMP_ACT_ERRNO(EPERM) : SCMP_ACT_NOTIFY;
  for (uint32_t bit : kPrivilegeBits) {
    WARD_TRY(AddPrivilegeBitRule(ctx, spec, action, bit));
  }
  // openat2 keeps its flags and mode behind a pointer the filter cannot read: ENOSYS, what a
  // kernel without it says (programs fall back to openat). Trapped instead with every open.
  if (!spec.notify_opens) {
    WARD_TRY(RuleAdd(ctx, SCMP_ACT_ERRNO(ENOSYS), "openat2"));
  }
  return Ok();
}

Result<std::vector<sock_filter>> BuildLibseccompPart(const SeccompSpec& spec) {
  FilterCtx ctx(seccomp_init(SCMP_ACT_ALLOW), &seccomp_release);
  if (!ctx) {
    return Error(Code::kInternal, "seccomp_init failed");
  }
  // A foreign ABI (and, on x86_64, an x32 number: libseccomp checks that as part of the arch)
  // kills the whole process, not just the thread.
  int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc < 0) {
    return ErrnoError("seccomp bad-arch action", -rc);
  }
  // A binary tree over syscall numbers keeps the filter short for every syscall.
  rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2);
  if (rc < 0) {
    return ErrnoError("seccomp filter optimization", -rc);
  }

  for (const Denied& d : kDenied) {
    WARD_TRY(RuleAdd(ctx.get(), SCMP_ACT_ERRNO(d.err), d.name));
  }
  if (!spec.allow_ptrace) {
    for (const char* name : {"ptrace", "process_vm_readv", "process_vm_writev"}) {
      WARD_TRY(RuleAdd(ctx.get(), SCMP_ACT_ERRNO(EPERM), name));
    }
  }
  for (uint64_t flag : kCloneDenied) {
    WARD_TRY(RuleAdd(ctx.get(), SCMP_ACT_ERRNO(EPERM), "clone",
                     {Low32HasBits(0, static_cast<uint32_t>(flag))}));
  }
  for (uint32_t cmd : kIoctlDenied) {
    WARD_TRY(RuleAdd(ctx.get(), SCMP_ACT_ERRNO(EPERM), "ioctl", {Low32Equals(1, cmd)}));
  }

  // Code without a name: memfds are made by the supervisor's guard agent, sealed against
  // execution (notifier.cc); a descriptor is never executed; a nested Landlock domain may not
  // switch off the kernel's denial log.
  WARD_TRY(RuleAdd(ctx.get(), spec.no_user_notif ? SCMP_ACT_ERRNO(ENOSYS) : SCMP_ACT_NOTIFY,
                   "memfd_create"));
  WARD_TRY(RuleAdd(ctx.get(), SCMP_ACT_ERRNO(EPERM), "execveat",
                   {Low32HasBits(4, static_cast<uint32_t>(AT_EMPTY_PATH))}));
  for (uint32_t flag : kLandlockLogFlags) {
    WARD_TRY(RuleAdd(ctx.get(), SCMP_ACT_ERRNO(EPERM), "landlock_restrict_self",
                     {Low32HasBits(1, flag)}));
  }

  if (spec.notify_opens) {
    for (const char* name : {"open", "openat", "openat2", "creat"}) {
      WARD_TRY(RuleAdd(ctx.get(), SCMP_ACT_NOTIFY, name));
    }
  } else if (spec.notify_creations) {
    WARD_TRY(RuleAdd(ctx.get(), SCMP_ACT_NOTIFY, "open", {Low32HasBits(1, O_CREAT)}));
    WARD_TRY(RuleAdd(ctx.get(), SCMP_ACT_NOTIFY, "openat", {Low32HasBits(2, O_CREAT)}));
    WARD_TRY(RuleAdd(ctx.get(), SCMP_ACT_NOTIFY, "creat"));
  }
  if (spec.notify_creations) {
    for (const char* name : kCreationSyscalls) {
      WARD_TRY(RuleAdd(ctx.get(), SCMP_ACT_NOTIFY, name));
    }
  }
  WARD_TRY(AddPrivilegeBitRules(ctx.get(), spec));
  return ExportBpf(ctx.get());
}

}  // namespace

Result<std::vector<sock_filter>> CompileSeccompFilter(const SeccompSpec& spec) {
  WARD_ASSIGN_OR_RETURN(std::vector<sock_filter> program, BuildValueAllowLists());
  WARD_ASSIGN_OR_RETURN(std::vector<sock_filter> tail, BuildLibseccompPart(spec));
  program.insert(program.end(), tail.begin(), tail.end());
  return program;
}

// A field added to SeccompSpec must be added here, and to the table's spelling in
// seccomp_gen.cc.
static_assert(sizeof(SeccompSpec) == 4, "AllSeccompSpecs and seccomp_gen.cc name every field");

std::vector<SeccompSpec> AllSeccompSpecs() {
  std::vector<SeccompSpec> specs;
  for (unsigned bits = 0; bits < 16; ++bits) {
    SeccompSpec s;
    s.allow_ptrace = (bits & 1) != 0;
    s.notify_creations = (bits & 2) != 0;
    s.notify_opens = (bits & 4) != 0;
    s.no_user_notif = (bits & 8) != 0;
    specs.push_back(s);
  }
  return specs;
}

}  // namespace ward::enforce
