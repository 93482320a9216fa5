#include "enforce/seccomp.h"

#include <linux/audit.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <span>
#include <string>

#include "enforce/bpf.h"
#include "enforce/syscalls.h"

#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif

namespace ward::enforce {
namespace {

// One program of the table the build compiled (seccomp_compile.h): a SeccompSpec and its filter.
struct PrecompiledSeccomp {
  SeccompSpec spec;
  std::span<const sock_filter> insns;
};

// kPrecompiledSeccomp[], one entry per SeccompSpec; written by ward_seccomp_gen at build time.
#include "seccomp_programs.inc"

#if defined(__x86_64__)
constexpr uint32_t kX32SyscallBit = 0x40000000;
constexpr uint32_t kForeignArch = AUDIT_ARCH_I386;
#else
constexpr uint32_t kForeignArch = AUDIT_ARCH_ARM;
#endif

// glibc has no wrapper; async-signal-safe.
int LoadFilter(unsigned flags, sock_fprog* prog) {
  return static_cast<int>(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, prog));
}

seccomp_data Call(int nr, uint32_t arch = NativeAuditArch()) {
  seccomp_data d = {};
  d.nr = nr;
  d.arch = arch;
  return d;
}

seccomp_data Fchmodat(uint64_t mode) {
  seccomp_data d = Call(NativeSyscallNumber("fchmodat"));
  d.args[2] = mode;
  return d;
}

// Verdicts that must hold for any spec: a wrong build fails in the parent, never open.
// `p` has passed CheckSeccompBpf.
Status SelfCheck(const SeccompProgram& p, const SeccompSpec& spec) {
  auto expect = [&](const seccomp_data& d, uint32_t want, const char* what) -> Status {
    const uint32_t got = RunCheckedSeccompBpf(p.insns, d);
    if (got == want) {
      return Ok();
    }
    return Error(Code::kInternal, std::string("seccomp self-check failed: ") + what);
  };
  const int getpid = NativeSyscallNumber("getpid");
  WARD_TRY(expect(Call(getpid), SECCOMP_RET_ALLOW, "getpid allowed"));
  WARD_TRY(expect(Call(getpid, kForeignArch), SECCOMP_RET_KILL_PROCESS, "foreign arch killed"));
#if defined(__x86_64__)
  WARD_TRY(expect(Call(getpid | kX32SyscallBit), SECCOMP_RET_KILL_PROCESS, "x32 killed"));
#endif
  WARD_TRY(expect(Call(NativeSyscallNumber("clone3")), SeccompRetErrno(ENOSYS), "clone3 ENOSYS"));
  WARD_TRY(expect(Call(NativeSyscallNumber("bpf")), SeccompRetErrno(EPERM), "bpf denied"));
  if (!spec.allow_ptrace) {
    WARD_TRY(expect(Call(NativeSyscallNumber("ptrace")), SeccompRetErrno(EPERM), "ptrace denied"));
  }
  // No privilege bits leave a run: a set-id mode is trapped (or refused), another one is not.
  const uint32_t setid = spec.no_user_notif ? SeccompRetErrno(EPERM) : SECCOMP_RET_USER_NOTIF;
  WARD_TRY(expect(Fchmodat(04755), setid, "setuid chmod trapped"));
  WARD_TRY(expect(Fchmodat(02755), setid, "setgid chmod trapped"));
  WARD_TRY(expect(Fchmodat(01777), SECCOMP_RET_ALLOW, "other chmod allowed"));
  return Ok();
}

}  // namespace

Result<SeccompProgram> PrepareSeccomp(const SeccompSpec& spec) {
  for (const PrecompiledSeccomp& entry : kPrecompiledSeccomp) {
    if (!(entry.spec == spec)) {
      continue;
    }
    SeccompProgram program;
    program.insns.assign(entry.insns.begin(), entry.insns.end());
    if (Status st = CheckSeccompBpf(program.insns); !st.ok()) {
      return Error(Code::kInternal, "built-in seccomp filter is invalid: " + st.message());
    }
    WARD_TRY(SelfCheck(program, spec));
    return program;
  }
  return Error(Code::kInternal, "no built-in seccomp filter for this combination of options");
}

bool SeccompNeedsListener(const SeccompProgram& program) {
  for (const sock_filter& f : program.insns) {
    if (f.code == (BPF_RET | BPF_A)) {
      return true;  // unknown at build time: be ready
    }
    if (f.code == (BPF_RET | BPF_K) && (f.k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_USER_NOTIF) {
      return true;
    }
  }
  return false;
}

int ApplyFurtherSeccomp(const std::vector<struct sock_filter>& insns) {
  if (insns.empty() || insns.size() > kBpfMaxInsns) return -EINVAL;
  sock_fprog prog = {static_cast<unsigned short>(insns.size()),
                     const_cast<sock_filter*>(insns.data())};
  return LoadFilter(0, &prog) == 0 ? 0 : -errno;
}

int ApplySeccomp(const SeccompProgram& program, int* listener) {
  if (listener != nullptr) {
    *listener = -1;
  }
  const size_t n = program.insns.size();
  if (n == 0 || n > kBpfMaxInsns) {
    return -EINVAL;
  }
  sock_fprog prog = {};
  prog.len = static_cast<unsigned short>(n);
  prog.filter = const_cast<sock_filter*>(program.insns.data());  // the kernel only reads it

  if (!SeccompNeedsListener(program)) {
    return LoadFilter(0, &prog) == 0 ? 0 : -errno;
  }
  if (listener == nullptr) {
    return -EINVAL;
  }
  int fd =
      LoadFilter(SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
  if (fd < 0 && errno == EINVAL) {  // before 5.19
    fd = LoadFilter(SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  }
  if (fd < 0) {
    return -errno;
  }
  *listener = fd;
  return 0;
}

uint32_t EvaluateSeccomp(const SeccompProgram& program, const struct seccomp_data& data) {
  return RunSeccompBpf(program.insns, data);
}

SeccompSummary SummarizeSeccomp(const SeccompProgram& program) {
  SeccompSummary s;
  // Checked once here, not once per syscall.
  const bool valid = CheckSeccompBpf(program.insns).ok();
  const int limit = NativeSyscallLimit();
  for (int nr = 0; nr < limit; ++nr) {
    std::string name = NativeSyscallName(nr);
    if (name.empty()) {
      continue;
    }
    const uint32_t action =
        (valid ? RunCheckedSeccompBpf(program.insns, Call(nr)) : SECCOMP_RET_KILL_PROCESS) &
        SECCOMP_RET_ACTION_FULL;
    switch (action) {
      case SECCOMP_RET_ALLOW:
      case SECCOMP_RET_LOG:
        ++s.allowed;
        break;
      case SECCOMP_RET_ERRNO:
      case SECCOMP_RET_TRACE:
        ++s.denied;
        s.denied_names.push_back(std::move(name));
        break;
      case SECCOMP_RET_USER_NOTIF:
        ++s.notified;
        s.notified_names.push_back(std::move(name));
        break;
      default:  // KILL_PROCESS, KILL_THREAD, TRAP and unknown actions (the kernel kills)
        ++s.killed;
        break;
    }
  }
  return s;
}

}  // namespace ward::enforce
