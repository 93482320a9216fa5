// Sandbox init's own layers (init_confine.h): its seccomp allow list, evaluated and loaded in a
// child, and its Landlock domain. Each denial has a positive control.
#include "enforce/init_confine.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/prctl.h>
#include <linux/sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "enforce/bpf.h"
#include "enforce/landlock.h"
#include "enforce/seccomp.h"
#include "enforce/syscalls.h"

namespace ward::enforce {
namespace {

constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kEperm = SeccompRetErrno(EPERM);

const SeccompProgram& Program() {
  static const SeccompProgram p = [] {
    SeccompProgram out;
    auto insns = InitSeccompProgram();
    EXPECT_TRUE(insns.ok());
    if (insns.ok()) out.insns = std::move(insns).value();
    return out;
  }();
  return p;
}

uint32_t Eval(const char* name, std::initializer_list<uint64_t> args = {},
              uint32_t arch = NativeAuditArch()) {
  seccomp_data d = {};
  d.nr = NativeSyscallNumber(name);
  d.arch = arch;
  size_t i = 0;
  for (uint64_t a : args) d.args[i++] = a;
  return EvaluateSeccomp(Program(), d);
}

TEST(InitSeccomp, IsAValidProgram) {
  EXPECT_TRUE(CheckSeccompBpf(Program().insns).ok());
  EXPECT_FALSE(SeccompNeedsListener(Program()));
}

TEST(InitSeccomp, AllowsInitsLoopForkAndTheGuardAgent) {
  for (const char* name : {"read", "recvmsg", "sendmsg", "kill", "wait4", "getrusage", "exit_group",
                           "openat", "mkdirat", "symlinkat", "linkat", "renameat2", "memfd_create",
                           "fchmod", "fchmodat", "fchmodat2", "close"}) {
    EXPECT_EQ(Eval(name), kAllow) << name;
  }
  // glibc's fork; memory without exec; the two prctl ops used.
  EXPECT_EQ(Eval("clone", {CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD}), kAllow);
  EXPECT_EQ(Eval("mmap", {0, 4096, PROT_READ | PROT_WRITE}), kAllow);
  EXPECT_EQ(Eval("prctl", {PR_SET_NAME}), kAllow);
}

TEST(InitSeccomp, RefusesWhatInitNeverDoes) {
  for (const char* name :
       {"execve", "execveat", "socket", "ioctl", "ptrace", "process_vm_writev", "mount", "setns",
        "unshare", "bpf", "io_uring_setup", "chmod", "fchown", "setuid"}) {
    EXPECT_EQ(Eval(name), kEperm) << name;
  }
  for (uint64_t flag : {CLONE_NEWUSER, CLONE_NEWNS, CLONE_VM, CLONE_THREAD, CLONE_UNTRACED}) {
    EXPECT_EQ(Eval("clone", {flag | SIGCHLD}), kEperm) << flag;
  }
  EXPECT_EQ(Eval("mmap", {0, 4096, PROT_READ | PROT_EXEC}), kEperm);
  EXPECT_EQ(Eval("mprotect", {0, 4096, PROT_EXEC}), kEperm);
  EXPECT_EQ(Eval("prctl", {PR_SET_DUMPABLE, 1}), kEperm);
  EXPECT_EQ(Eval("clone3"), kEperm);
}

TEST(InitSeccomp, KillsForeignAbis) {
#if defined(__x86_64__)
  EXPECT_EQ(Eval("getpid", {}, AUDIT_ARCH_I386), static_cast<uint32_t>(SECCOMP_RET_KILL_PROCESS));
  seccomp_data d = {};
  d.nr = NativeSyscallNumber("getpid") | 0x40000000;
  d.arch = NativeAuditArch();
  EXPECT_EQ(EvaluateSeccomp(Program(), d), static_cast<uint32_t>(SECCOMP_RET_KILL_PROCESS));
#endif
}

// In a child: init's whole confinement (a Landlock domain that allows one directory, then its
// filter). Files outside it, sockets and exec are refused; the directory and fork still work.
TEST(InitConfine, ConfinesAChildLikeSandboxInit) {
  const int abi = LandlockAbi();
  if (abi <= 0) GTEST_SKIP() << "no Landlock";
  char tmpl[] = "/tmp/ward-init-confine.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  LandlockSpec spec;
  spec.abi = abi;
  spec.paths.push_back({dir, true, false, false});
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(30);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(10);
    ChildError err;
    if (!ApplyLandlock(spec, &err) || !LoadInitSeccomp(&err)) _exit(11);
    if (open((dir + "/made").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600) < 0) _exit(12);
    if (open("/etc/hostname", O_RDONLY | O_CLOEXEC) >= 0 || errno != EACCES) _exit(13);
    if (socket(AF_UNIX, SOCK_STREAM, 0) >= 0 || errno != EPERM) _exit(14);
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    execve("/bin/true", argv, environ);
    if (errno != EPERM) _exit(15);
    const pid_t child = fork();
    if (child == 0) _exit(0);
    int st = 0;
    if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st)) _exit(16);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the step that failed: see the _exit codes";
  struct stat st;
  EXPECT_EQ(stat((dir + "/made").c_str(), &st), 0);  // control: the allowed directory worked
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace ward::enforce
