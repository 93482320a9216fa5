// oci/seccomp_filter.h: config.json's linux.seccomp compiled to BPF, run here with the kernel's
// semantics (enforce::RunSeccompBpf).
#include <errno.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include <cstdint>
#include <string>
#include <vector>

#include "enforce/bpf.h"
#include "enforce/syscalls.h"
#include "oci/config.h"
#include "oci/seccomp_filter.h"

namespace ward::oci {
namespace {

uint32_t Verdict(const std::vector<sock_filter>& prog, int nr, std::vector<uint64_t> args = {},
                 uint32_t arch = enforce::NativeAuditArch()) {
  seccomp_data d = {};
  d.nr = nr;
  d.arch = arch;
  for (size_t i = 0; i < args.size(); ++i) d.args[i] = args[i];
  return enforce::RunSeccompBpf(prog, d);
}

std::vector<sock_filter> Compile(const Seccomp& s) {
  Result<std::vector<sock_filter>> p = CompileContainerSeccomp(s);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : std::vector<sock_filter>{};
}

TEST(ContainerSeccomp, RulesDecideTheirSyscallsAndTheDefaultTheRest) {
  Seccomp s;
  s.default_action = "SCMP_ACT_ERRNO";
  s.default_errno_ret = ENOSYS;
  s.syscalls = {{{"getpid", "no_such_syscall", "getppid"}, "SCMP_ACT_ALLOW", {}, {}},
                {{"mkdir", "mkdirat"}, "SCMP_ACT_ERRNO", EACCES, {}},
                {{"kill"}, "SCMP_ACT_ERRNO", {}, {}},
                {{"ptrace"}, "SCMP_ACT_KILL_PROCESS", {}, {}}};
  const std::vector<sock_filter> p = Compile(s);
  EXPECT_EQ(Verdict(p, SYS_getpid), SECCOMP_RET_ALLOW);
  EXPECT_EQ(Verdict(p, SYS_getppid), SECCOMP_RET_ALLOW);
  EXPECT_EQ(Verdict(p, SYS_mkdirat), SECCOMP_RET_ERRNO | EACCES);
  EXPECT_EQ(Verdict(p, SYS_kill), SECCOMP_RET_ERRNO | EPERM);  // errnoRet's default
  EXPECT_EQ(Verdict(p, SYS_ptrace), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(Verdict(p, SYS_openat), SECCOMP_RET_ERRNO | ENOSYS);  // the default, its errno
  // Another ABI is left to ward's own filter, which refuses it.
  EXPECT_EQ(Verdict(p, SYS_openat, {}, AUDIT_ARCH_I386 + 1), SECCOMP_RET_ALLOW);
}

// Each comparison on the full 64 bits: the high word decides where it differs.
TEST(ContainerSeccomp, ArgumentComparisonsTakeAll64Bits) {
  const uint64_t big = 0x100000005ull;
  struct Case {
    std::string op;
    uint64_t value, value_two;
    std::vector<std::pair<uint64_t, bool>> args;  // argument, whether the rule matches
  };
  const std::vector<Case> cases = {
      {"SCMP_CMP_EQ", big, 0, {{big, true}, {5, false}, {big + 1, false}}},
      {"SCMP_CMP_NE", big, 0, {{big, false}, {5, true}, {0x200000005ull, true}}},
      {"SCMP_CMP_GT",
       big,
       0,
       {{big, false}, {big + 1, true}, {0xffffffffull, false}, {0x200000000ull, true}}},
      {"SCMP_CMP_GE", big, 0, {{big, true}, {big - 1, false}, {0x200000000ull, true}}},
      {"SCMP_CMP_LT",
       big,
       0,
       {{big, false}, {big - 1, true}, {0xffffffffull, true}, {0x200000000ull, false}}},
      {"SCMP_CMP_LE", big, 0, {{big, true}, {big + 1, false}, {7, true}}},
      // (arg & 0x10000000) == 0: clone without CLONE_NEWUSER, as the engines' profiles write it.
      {"SCMP_CMP_MASKED_EQ",
       0x10000000,
       0,
       {{0x11, true}, {0x10000011, false}, {0x100000000ull, true}}},
  };
  for (const Case& c : cases) {
    Seccomp s;
    s.default_action = "SCMP_ACT_ALLOW";
    s.syscalls = {{{"clone"}, "SCMP_ACT_ERRNO", EINVAL, {{1, c.value, c.value_two, c.op}}}};
    const std::vector<sock_filter> p = Compile(s);
    for (const auto& [arg, match] : c.args) {
      EXPECT_EQ(Verdict(p, SYS_clone, {0, arg}),
                match ? SECCOMP_RET_ERRNO | EINVAL : SECCOMP_RET_ALLOW)
          << c.op << " " << c.value << " against " << arg;
    }
  }
}

// All of a rule's comparisons must hold; the first rule that matches decides, and a rule whose
// comparisons fail lets the next one try the same syscall.
TEST(ContainerSeccomp, AllComparisonsHoldAndTheFirstMatchDecides) {
  Seccomp s;
  s.default_action = "SCMP_ACT_ERRNO";
  s.syscalls = {
      {{"kill"}, "SCMP_ACT_ERRNO", EACCES, {{0, 1, 0, "SCMP_CMP_EQ"}, {1, 9, 0, "SCMP_CMP_EQ"}}},
      {{"kill"}, "SCMP_ACT_ALLOW", {}, {}}};
  const std::vector<sock_filter> p = Compile(s);
  EXPECT_EQ(Verdict(p, SYS_kill, {1, 9}), SECCOMP_RET_ERRNO | EACCES);
  EXPECT_EQ(Verdict(p, SYS_kill, {1, 15}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(Verdict(p, SYS_kill, {2, 9}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(Verdict(p, SYS_getpid), SECCOMP_RET_ERRNO | EPERM);
}

// Two comparisons of the same argument are a rule each, as runc reads them: either refuses.
TEST(ContainerSeccomp, TwoComparisonsOfOneArgumentAreEitherOf) {
  Seccomp s;
  s.default_action = "SCMP_ACT_ALLOW";
  s.syscalls = {{{"personality"},
                 "SCMP_ACT_ERRNO",
                 EACCES,
                 {{0, 8, 0, "SCMP_CMP_EQ"}, {0, 0x20000, 0, "SCMP_CMP_EQ"}}}};
  const std::vector<sock_filter> p = Compile(s);
  EXPECT_EQ(Verdict(p, SYS_personality, {8}), SECCOMP_RET_ERRNO | EACCES);
  EXPECT_EQ(Verdict(p, SYS_personality, {0x20000}), SECCOMP_RET_ERRNO | EACCES);
  EXPECT_EQ(Verdict(p, SYS_personality, {0}), SECCOMP_RET_ALLOW);
}

// A profile longer than one program may be is refused, naming the field.
TEST(ContainerSeccomp, AProfileTooLongForOneProgramIsRefused) {
  Seccomp s;
  s.default_action = "SCMP_ACT_ALLOW";
  SeccompRule r{{}, "SCMP_ACT_ERRNO", {}, {{0, 1, 0, "SCMP_CMP_EQ"}}};
  r.names.assign(1000, "getpid");
  s.syscalls = {r};
  Result<std::vector<sock_filter>> p = CompileContainerSeccomp(s);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().ToString().find("config.json: linux.seccomp"), std::string::npos)
      << p.status().ToString();
  // Control: the same rule with fewer names compiles.
  r.names.assign(100, "getpid");
  s.syscalls = {r};
  EXPECT_TRUE(CompileContainerSeccomp(s).ok());
}

}  // namespace
}  // namespace ward::oci
