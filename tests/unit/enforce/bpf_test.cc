// The classic-BPF checker, interpreter and builder behind EvaluateSeccomp: kernel semantics,
// hostile programs, and agreement with the kernel's own loader on what it refuses.
#include "enforce/bpf.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <random>
#include <vector>

namespace ward::enforce {
namespace {

using Prog = std::vector<sock_filter>;

constexpr uint32_t kOffNr = offsetof(seccomp_data, nr);
constexpr uint32_t kOffArch = offsetof(seccomp_data, arch);
constexpr uint32_t kOffArg0 = offsetof(seccomp_data, args);

sock_filter Stmt(uint16_t code, uint32_t k) { return BPF_STMT(code, k); }
sock_filter Jmp(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return BPF_JUMP(code, k, jt, jf);
}
sock_filter Ret(uint32_t k) { return BPF_STMT(BPF_RET | BPF_K, k); }

seccomp_data Data(int nr, uint32_t arch = 0, uint64_t a0 = 0, uint64_t a1 = 0) {
  seccomp_data d = {};
  d.nr = nr;
  d.arch = arch;
  d.args[0] = a0;
  d.args[1] = a1;
  return d;
}

// Runs "A = <value>; <op>; return A" and gives the result.
uint32_t Alu(uint16_t op, uint32_t a, uint32_t k, bool use_x = false) {
  Prog p = {Stmt(BPF_LD | BPF_IMM, a)};
  if (use_x) {
    p.push_back(Stmt(BPF_LDX | BPF_IMM, k));
    p.push_back(Stmt(BPF_ALU | op | BPF_X, 0));
  } else {
    p.push_back(Stmt(BPF_ALU | op | BPF_K, k));
  }
  p.push_back(Stmt(BPF_RET | BPF_A, 0));
  EXPECT_TRUE(CheckSeccompBpf(p).ok()) << CheckSeccompBpf(p).ToString();
  return RunSeccompBpf(p, Data(0));
}

TEST(BpfRun, LoadsSeccompDataFields) {
  const Prog p = {Stmt(BPF_LD | BPF_W | BPF_ABS, kOffNr), Stmt(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(RunSeccompBpf(p, Data(42)), 42u);
  const Prog arch = {Stmt(BPF_LD | BPF_W | BPF_ABS, kOffArch), Stmt(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(RunSeccompBpf(arch, Data(0, 0xc000003e)), 0xc000003eu);
  // Argument words: low half first on little-endian machines.
  const Prog lo = {Stmt(BPF_LD | BPF_W | BPF_ABS, kOffArg0), Stmt(BPF_RET | BPF_A, 0)};
  const Prog hi = {Stmt(BPF_LD | BPF_W | BPF_ABS, kOffArg0 + 4), Stmt(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(RunSeccompBpf(lo, Data(0, 0, 0x1122334455667788ull)), 0x55667788u);
  EXPECT_EQ(RunSeccompBpf(hi, Data(0, 0, 0x1122334455667788ull)), 0x11223344u);
  // The LEN loads give sizeof(seccomp_data).
  const Prog len = {Stmt(BPF_LD | BPF_W | BPF_LEN, 0), Stmt(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(RunSeccompBpf(len, Data(0)), sizeof(seccomp_data));
  const Prog xlen = {Stmt(BPF_LDX | BPF_W | BPF_LEN, 0), Stmt(BPF_MISC | BPF_TXA, 0),
                     Stmt(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(RunSeccompBpf(xlen, Data(0)), sizeof(seccomp_data));
}

TEST(BpfRun, AluIs32BitWithKernelEdgeCases) {
  EXPECT_EQ(Alu(BPF_ADD, 0xffffffff, 2), 1u);  // wraps at 32 bits
  EXPECT_EQ(Alu(BPF_SUB, 1, 2), 0xffffffffu);
  EXPECT_EQ(Alu(BPF_MUL, 0x10000, 0x10000), 0u);
  EXPECT_EQ(Alu(BPF_DIV, 7, 2), 3u);
  EXPECT_EQ(Alu(BPF_AND, 0xf0f0, 0xff00), 0xf000u);
  EXPECT_EQ(Alu(BPF_OR, 0xf0, 0x0f), 0xffu);
  EXPECT_EQ(Alu(BPF_XOR, 0xff, 0x0f), 0xf0u);
  EXPECT_EQ(Alu(BPF_LSH, 1, 31), 0x80000000u);
  EXPECT_EQ(Alu(BPF_RSH, 0x80000000, 31), 1u);
  EXPECT_EQ(Alu(BPF_ADD, 5, 6, /*use_x=*/true), 11u);
  // Shifts by X use the low five bits; division by a zero X ends the program with 0.
  EXPECT_EQ(Alu(BPF_LSH, 1, 33, /*use_x=*/true), 2u);
  EXPECT_EQ(Alu(BPF_DIV, 7, 0, /*use_x=*/true), 0u);
  const Prog neg = {Stmt(BPF_LD | BPF_IMM, 1), Stmt(BPF_ALU | BPF_NEG, 0),
                    Stmt(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(RunSeccompBpf(neg, Data(0)), 0xffffffffu);
}

TEST(BpfRun, JumpsAndScratchMemory) {
  // if (nr == 5) return 1; if (nr > 9) return 2; if (nr >= 9) return 3; if (nr & 1) return 4;
  // return 5.
  const Prog p = {Stmt(BPF_LD | BPF_W | BPF_ABS, kOffNr),
                  Jmp(BPF_JMP | BPF_JEQ | BPF_K, 5, 0, 1),
                  Ret(1),
                  Jmp(BPF_JMP | BPF_JGT | BPF_K, 9, 0, 1),
                  Ret(2),
                  Jmp(BPF_JMP | BPF_JGE | BPF_K, 9, 0, 1),
                  Ret(3),
                  Jmp(BPF_JMP | BPF_JSET | BPF_K, 1, 0, 1),
                  Ret(4),
                  Ret(5)};
  ASSERT_TRUE(CheckSeccompBpf(p).ok());
  EXPECT_EQ(RunSeccompBpf(p, Data(5)), 1u);
  EXPECT_EQ(RunSeccompBpf(p, Data(10)), 2u);
  EXPECT_EQ(RunSeccompBpf(p, Data(9)), 3u);
  EXPECT_EQ(RunSeccompBpf(p, Data(7)), 4u);
  EXPECT_EQ(RunSeccompBpf(p, Data(8)), 5u);
  EXPECT_EQ(RunSeccompBpf(p, Data(-1)), 2u);  // unsigned compare

  // X-register compares, JA, ST/LD MEM, TAX.
  const Prog q = {Stmt(BPF_LD | BPF_W | BPF_ABS, kOffNr),
                  Stmt(BPF_ST, 3),
                  Stmt(BPF_LDX | BPF_IMM, 4),
                  Jmp(BPF_JMP | BPF_JEQ | BPF_X, 0, 0, 1),
                  Stmt(BPF_JMP | BPF_JA, 1),
                  Ret(99),
                  Stmt(BPF_LD | BPF_MEM, 3),
                  Stmt(BPF_MISC | BPF_TAX, 0),
                  Stmt(BPF_STX, 15),
                  Stmt(BPF_LDX | BPF_MEM, 15),
                  Stmt(BPF_MISC | BPF_TXA, 0),
                  Stmt(BPF_ALU | BPF_ADD | BPF_K, 100),
                  Stmt(BPF_RET | BPF_A, 0)};
  ASSERT_TRUE(CheckSeccompBpf(q).ok()) << CheckSeccompBpf(q).ToString();
  EXPECT_EQ(RunSeccompBpf(q, Data(4)), 104u);
  EXPECT_EQ(RunSeccompBpf(q, Data(5)), 99u);
}

// Programs the kernel refuses to load, each with the reason.
struct BadProgram {
  const char* why;
  Prog prog;
};

std::vector<BadProgram> BadPrograms() {
  std::vector<BadProgram> bad = {
      {"empty", {}},
      {"no final return", {Stmt(BPF_LD | BPF_W | BPF_ABS, kOffNr)}},
      {"byte load (not allowed in seccomp)",
       {Stmt(BPF_LD | BPF_B | BPF_ABS, kOffNr), Ret(SECCOMP_RET_ALLOW)}},
      {"half-word load", {Stmt(BPF_LD | BPF_H | BPF_ABS, kOffNr), Ret(SECCOMP_RET_ALLOW)}},
      {"indirect load", {Stmt(BPF_LD | BPF_W | BPF_IND, 0), Ret(SECCOMP_RET_ALLOW)}},
      {"unaligned load", {Stmt(BPF_LD | BPF_W | BPF_ABS, 2), Ret(SECCOMP_RET_ALLOW)}},
      {"load past seccomp_data",
       {Stmt(BPF_LD | BPF_W | BPF_ABS, sizeof(seccomp_data)), Ret(SECCOMP_RET_ALLOW)}},
      {"huge load offset", {Stmt(BPF_LD | BPF_W | BPF_ABS, 0xfffffffc), Ret(SECCOMP_RET_ALLOW)}},
      {"return X", {Stmt(BPF_RET | BPF_X, 0)}},
      {"modulo (not allowed in seccomp)",
       {Stmt(BPF_ALU | BPF_MOD | BPF_K, 3), Stmt(BPF_RET | BPF_A, 0)}},
      {"division by constant zero", {Stmt(BPF_ALU | BPF_DIV | BPF_K, 0), Stmt(BPF_RET | BPF_A, 0)}},
      {"shift by 32", {Stmt(BPF_ALU | BPF_LSH | BPF_K, 32), Stmt(BPF_RET | BPF_A, 0)}},
      {"scratch index 16", {Stmt(BPF_ST, 16), Stmt(BPF_RET | BPF_A, 0)}},
      {"scratch read before write", {Stmt(BPF_LD | BPF_MEM, 0), Stmt(BPF_RET | BPF_A, 0)}},
      {"scratch written on one path only",
       {Stmt(BPF_LD | BPF_W | BPF_ABS, kOffNr), Jmp(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1),
        Stmt(BPF_ST, 0), Stmt(BPF_LDX | BPF_MEM, 0), Stmt(BPF_RET | BPF_A, 0)}},
      {"conditional jump past the end",
       {Stmt(BPF_LD | BPF_W | BPF_ABS, kOffNr), Jmp(BPF_JMP | BPF_JEQ | BPF_K, 1, 5, 0),
        Ret(SECCOMP_RET_ALLOW)}},
      {"false branch past the end",
       {Jmp(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1), Ret(SECCOMP_RET_ALLOW)}},
      {"ja past the end", {Stmt(BPF_JMP | BPF_JA, 1), Ret(SECCOMP_RET_ALLOW)}},
      {"ja wrapping around", {Stmt(BPF_JMP | BPF_JA, 0xffffffff), Ret(SECCOMP_RET_ALLOW)}},
      {"unknown opcode", {Stmt(0xffff, 0), Ret(SECCOMP_RET_ALLOW)}},
  };
  Prog too_long(kBpfMaxInsns + 1, Ret(SECCOMP_RET_ALLOW));
  bad.push_back({"4097 instructions", too_long});
  return bad;
}

TEST(BpfCheck, RefusesMalformedPrograms) {
  for (const BadProgram& b : BadPrograms()) {
    EXPECT_FALSE(CheckSeccompBpf(b.prog).ok()) << b.why;
    // Evaluating what the kernel would never load fails closed.
    EXPECT_EQ(RunSeccompBpf(b.prog, Data(1)), SECCOMP_RET_KILL_PROCESS) << b.why;
  }
}

TEST(BpfCheck, AcceptsTheLongestAllowedProgram) {
  Prog p(kBpfMaxInsns, Ret(SECCOMP_RET_ERRNO | 7));
  EXPECT_TRUE(CheckSeccompBpf(p).ok());
  EXPECT_EQ(RunSeccompBpf(p, Data(0)), SECCOMP_RET_ERRNO | 7u);
}

// Loads `prog` in a forked child (no_new_privs set) and returns 0 or the errno of seccomp().
int KernelLoadErrno(const Prog& prog) {
  int fds[2];
  if (pipe(fds) != 0) {
    return -1;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    int err = 0;
    sock_fprog fprog = {static_cast<unsigned short>(prog.size()),
                        const_cast<sock_filter*>(prog.data())};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
      err = -errno;
    } else if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
      err = errno;
    }
    // write() stays allowed by every program below that loads (they return ALLOW or ERRNO
    // for nr 1000 only).
    (void)!write(fds[1], &err, sizeof(err));
    _exit(0);
  }
  close(fds[1]);
  int err = -1;
  if (read(fds[0], &err, sizeof(err)) != sizeof(err)) {
    err = -1;
  }
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return err;
}

TEST(BpfCheck, KernelRefusesWhatTheCheckerRefuses) {
  for (const BadProgram& b : BadPrograms()) {
    if (b.prog.size() > 0xffff) {
      continue;  // sock_fprog.len cannot even say it
    }
    EXPECT_EQ(KernelLoadErrno(b.prog), EINVAL) << b.why;
  }
  // And accepts a valid program that uses every feature the checker tracks.
  const Prog ok = {Stmt(BPF_LD | BPF_W | BPF_ABS, kOffNr),
                   Stmt(BPF_ST, 0),
                   Jmp(BPF_JMP | BPF_JEQ | BPF_K, 1000, 0, 2),
                   Stmt(BPF_LDX | BPF_MEM, 0),
                   Ret(SECCOMP_RET_ERRNO | 1),
                   Ret(SECCOMP_RET_ALLOW)};
  ASSERT_TRUE(CheckSeccompBpf(ok).ok());
  EXPECT_EQ(KernelLoadErrno(ok), 0);
}

TEST(BpfCheck, RandomProgramsNeverCrash) {
  // Random opcodes from the allowed set plus garbage, random operands: the checker and the
  // interpreter must stay in bounds whatever they are fed (run under ASan in CI).
  static constexpr uint16_t kCodes[] = {BPF_LD | BPF_W | BPF_ABS,
                                        BPF_LD | BPF_W | BPF_LEN,
                                        BPF_LDX | BPF_W | BPF_LEN,
                                        BPF_RET | BPF_K,
                                        BPF_RET | BPF_A,
                                        BPF_ALU | BPF_ADD | BPF_K,
                                        BPF_ALU | BPF_SUB | BPF_X,
                                        BPF_ALU | BPF_DIV | BPF_X,
                                        BPF_ALU | BPF_DIV | BPF_K,
                                        BPF_ALU | BPF_LSH | BPF_X,
                                        BPF_ALU | BPF_RSH | BPF_K,
                                        BPF_ALU | BPF_NEG,
                                        BPF_LD | BPF_IMM,
                                        BPF_LDX | BPF_IMM,
                                        BPF_MISC | BPF_TAX,
                                        BPF_MISC | BPF_TXA,
                                        BPF_LD | BPF_MEM,
                                        BPF_LDX | BPF_MEM,
                                        BPF_ST,
                                        BPF_STX,
                                        BPF_JMP | BPF_JA,
                                        BPF_JMP | BPF_JEQ | BPF_K,
                                        BPF_JMP | BPF_JGT | BPF_X,
                                        BPF_JMP | BPF_JSET | BPF_K,
                                        BPF_JMP | BPF_JGE | BPF_K,
                                        0xffff,
                                        BPF_LD | BPF_B | BPF_ABS};
  std::mt19937 rng(20240601);
  int valid = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    Prog p(1 + rng() % 12);
    for (sock_filter& f : p) {
      f.code = kCodes[rng() % std::size(kCodes)];
      f.jt = static_cast<uint8_t>(rng() % 4);
      f.jf = static_cast<uint8_t>(rng() % 4);
      f.k = rng() % 3 == 0 ? static_cast<uint32_t>(rng()) : static_cast<uint32_t>(rng() % 68);
    }
    const bool ok = CheckSeccompBpf(p).ok();
    valid += ok;
    for (int nr : {0, 1, 60, -1}) {
      const uint32_t r = RunSeccompBpf(p, Data(nr, 0xc000003e, rng(), rng()));
      if (!ok) {
        ASSERT_EQ(r, SECCOMP_RET_KILL_PROCESS);
      }
    }
  }
  EXPECT_GT(valid, 100);  // the generator does reach the interpreter's body
}

TEST(BpfBuilder, ResolvesForwardLabels) {
  BpfBuilder b;
  const auto yes = b.NewLabel(), no = b.NewLabel();
  b.LoadNr();
  b.Jump(BPF_JEQ, 7, yes, BpfBuilder::kNext);
  b.LoadArgLow(1);
  b.Jump(BPF_JSET, 0x40, yes, no);
  b.Bind(yes);
  b.Ret(SECCOMP_RET_ERRNO | 1);
  b.Bind(no);
  b.Ret(SECCOMP_RET_ALLOW);
  auto p = b.Finish();
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(CheckSeccompBpf(*p).ok());
  EXPECT_EQ(RunSeccompBpf(*p, Data(7)), SECCOMP_RET_ERRNO | 1u);
  EXPECT_EQ(RunSeccompBpf(*p, Data(8, 0, 0, 0x40)), SECCOMP_RET_ERRNO | 1u);
  EXPECT_EQ(RunSeccompBpf(*p, Data(8, 0, 0, 0x40ull << 32)), SECCOMP_RET_ALLOW);
  EXPECT_EQ(RunSeccompBpf(*p, Data(8)), SECCOMP_RET_ALLOW);
}

TEST(BpfBuilder, GotoReachesFarLabels) {
  BpfBuilder b;
  const auto end = b.NewLabel();
  b.Goto(end);
  for (int i = 0; i < 300; ++i) {
    b.Ret(SECCOMP_RET_KILL_PROCESS);
  }
  b.Bind(end);
  b.Ret(SECCOMP_RET_ALLOW);
  auto p = b.Finish();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(RunSeccompBpf(*p, Data(0)), SECCOMP_RET_ALLOW);
}

TEST(BpfBuilder, RefusesUnboundAndTooFarJumps) {
  {
    BpfBuilder b;
    const auto nowhere = b.NewLabel();
    b.LoadNr();
    b.Jump(BPF_JEQ, 1, nowhere, BpfBuilder::kNext);
    b.Ret(SECCOMP_RET_ALLOW);
    EXPECT_FALSE(b.Finish().ok());
  }
  {
    BpfBuilder b;
    const auto far = b.NewLabel();
    b.LoadNr();
    b.Jump(BPF_JEQ, 1, far, BpfBuilder::kNext);
    for (int i = 0; i < 256; ++i) {
      b.Ret(SECCOMP_RET_ALLOW);
    }
    b.Bind(far);
    b.Ret(SECCOMP_RET_KILL_PROCESS);
    auto p = b.Finish();
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), Code::kInternal);
  }
}

}  // namespace
}  // namespace ward::enforce
