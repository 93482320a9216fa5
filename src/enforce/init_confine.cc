#include "enforce/init_confine.h"

#include <linux/prctl.h>
#include <linux/sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

#include "enforce/bpf.h"
#include "enforce/seccomp.h"
#include "enforce/syscalls.h"

namespace ward::enforce {
namespace {

// What init's loop makes (signalfd reads, the control socket, kill, wait, the rusage of its
// children, trace marks on stderr), what glibc's fork and allocator make, and what the guard
// agent makes (the directory-entry calls it performs for the guard, the memfds it creates
// sealed against exec, and the modes it sets without set-id bits). A syscall this architecture
// lacks is skipped.
constexpr const char* kInitAllowed[] = {
    // init's loop
    "poll", "ppoll", "read", "write", "recvfrom", "recvmsg", "sendto", "sendmsg", "close", "kill",
    "wait4", "waitid", "getrusage", "exit", "exit_group", "rt_sigreturn", "restart_syscall",
    "rt_sigprocmask", "clock_gettime", "clock_nanosleep", "getpid", "gettid", "futex",
    // fork and the allocator (clone, mmap, mprotect and prctl are checked below)
    "set_robust_list", "rseq", "brk", "munmap", "madvise", "mremap",
    // the guard agent
    "openat", "mkdirat", "mknodat", "symlinkat", "linkat", "renameat2", "memfd_create",
    "newfstatat", "fstat", "statx", "fcntl", "umask", "close_range", "fchmod", "fchmodat",
    "fchmodat2"};

// clone as glibc's fork makes it; every other flag (namespaces, threads, shared memory, untraced)
// is refused.
constexpr uint32_t kForkCloneFlags = CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | CSIGNAL;

constexpr uint32_t kPrctlAllowed[] = {PR_SET_NAME, PR_SET_PDEATHSIG};

#if defined(__x86_64__)
constexpr uint32_t kX32SyscallBit = 0x40000000;
#endif

}  // namespace

namespace {

// A syscall number and where the filter goes for it.
struct Route {
  uint32_t nr;
  BpfBuilder::Label to;
};

// A balanced search over the sorted routes: a few comparisons for any syscall number, both when
// the filter runs and when the kernel, loading it, works out which syscalls it always allows.
void EmitSearch(BpfBuilder* b, const std::vector<Route>& r, size_t lo, size_t hi,
                BpfBuilder::Label miss) {
  constexpr auto kNext = BpfBuilder::kNext;
  if (hi - lo <= 3) {
    for (size_t i = lo; i < hi; ++i) b->Jump(BPF_JEQ, r[i].nr, r[i].to, kNext);
    b->Goto(miss);
    return;
  }
  const size_t mid = lo + (hi - lo) / 2;
  const BpfBuilder::Label upper = b->NewLabel();
  b->Jump(BPF_JGE, r[mid].nr, upper, kNext);
  EmitSearch(b, r, lo, mid, miss);
  b->Bind(upper);
  EmitSearch(b, r, mid, hi, miss);
}

}  // namespace

Result<std::vector<sock_filter>> InitSeccompProgram() {
  BpfBuilder b;
  const auto kill = b.NewLabel(), allow = b.NewLabel(), deny = b.NewLabel();
  const auto clone = b.NewLabel(), prot = b.NewLabel(), prctl = b.NewLabel();
  constexpr auto kNext = BpfBuilder::kNext;
  std::vector<Route> routes;
  for (const char* name : kInitAllowed) {
    const int nr = NativeSyscallNumber(name);
    if (nr >= 0) routes.push_back({static_cast<uint32_t>(nr), allow});
  }
  for (auto [name, to] : {std::pair{"clone", clone}, std::pair{"mmap", prot},
                          std::pair{"mprotect", prot}, std::pair{"prctl", prctl}}) {
    const int nr = NativeSyscallNumber(name);
    if (nr >= 0) routes.push_back({static_cast<uint32_t>(nr), to});
  }
  std::sort(routes.begin(), routes.end(),
            [](const Route& a, const Route& c) { return a.nr < c.nr; });

  b.LoadArch();
  b.Jump(BPF_JEQ, NativeAuditArch(), kNext, kill);
  b.LoadNr();
#if defined(__x86_64__)
  b.Jump(BPF_JGE, kX32SyscallBit, kill, kNext);
#endif
  EmitSearch(&b, routes, 0, routes.size(), deny);

  b.Bind(clone);
  b.LoadArgLow(0);
  b.Jump(BPF_JSET, ~kForkCloneFlags, deny, allow);
  b.Bind(prot);
  b.LoadArgLow(2);
  b.Jump(BPF_JSET, PROT_EXEC, deny, allow);
  b.Bind(prctl);
  b.LoadArgLow(0);
  for (uint32_t op : kPrctlAllowed) b.Jump(BPF_JEQ, op, allow, kNext);
  b.Goto(deny);

  b.Bind(deny);
  b.Ret(SeccompRetErrno(EPERM));
  b.Bind(kill);
  b.Ret(SECCOMP_RET_KILL_PROCESS);
  b.Bind(allow);
  b.Ret(SECCOMP_RET_ALLOW);
  return b.Finish();
}

bool LoadInitSeccomp(ChildError* error) {
  Result<std::vector<sock_filter>> insns = InitSeccompProgram();
  if (!insns.ok()) return error->Set("init seccomp", EINVAL, "building the filter");
  SeccompProgram program;
  program.insns = std::move(insns).value();
  if (int rc = ApplySeccomp(program, nullptr); rc != 0) {
    return error->Set("init seccomp", -rc, "loading the filter");
  }
  return true;
}

}  // namespace ward::enforce
