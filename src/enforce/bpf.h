// Classic BPF as the kernel's seccomp loader sees it: a checker that mirrors the kernel's
// validation, an interpreter for in-process evaluation (tests, `ward explain`), and a tiny
// builder for the few hand-written blocks libseccomp cannot express.
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"

namespace ward::enforce {

// BPF_MAXINSNS: the kernel refuses longer programs.
inline constexpr size_t kBpfMaxInsns = 4096;

// The checks the kernel applies when a seccomp filter is loaded (bpf_check_classic plus
// seccomp_check_filter): length, opcodes seccomp allows, in-range forward jumps, aligned
// in-bounds seccomp_data loads, scratch memory initialised before use, a final return.
// Pure; never crashes on any input.
Status CheckSeccompBpf(std::span<const sock_filter> insns);

// Runs a program on `data` with the kernel's semantics (32-bit A and X, division by a zero X
// returns 0) and returns its SECCOMP_RET_* value. A program that fails CheckSeccompBpf would
// never be loaded; it yields SECCOMP_RET_KILL_PROCESS so a caller fails closed.
uint32_t RunSeccompBpf(std::span<const sock_filter> insns, const seccomp_data& data);

// RunSeccompBpf without the check, for callers that run one checked program many times (the
// summary for `ward explain` runs it once per syscall). `insns` must have passed
// CheckSeccompBpf.
uint32_t RunCheckedSeccompBpf(std::span<const sock_filter> insns, const seccomp_data& data);

// Builds straight-line BPF with forward jumps to labels. Labels are resolved by Finish(),
// which fails if a label is unbound or a conditional jump is farther than 255 instructions.
class BpfBuilder {
 public:
  using Label = int;
  static constexpr Label kNext = -1;  // fall through to the next instruction

  Label NewLabel();
  // Binds `label` to the next instruction emitted (or to the end of the program).
  void Bind(Label label);

  void LoadArch();             // A = seccomp_data.arch
  void LoadNr();               // A = seccomp_data.nr
  void LoadArgLow(int index);   // A = low 32 bits of seccomp_data.args[index] (little endian)
  void LoadArgHigh(int index);  // A = high 32 bits of seccomp_data.args[index]
  void And(uint32_t k);         // A &= k
  void Ret(uint32_t value);
  // if (A <op> k) goto jt; else goto jf.  op is BPF_JEQ, BPF_JGE, BPF_JGT or BPF_JSET.
  void Jump(uint16_t op, uint32_t k, Label jt, Label jf);
  void Goto(Label target);  // BPF_JA

  Result<std::vector<sock_filter>> Finish() const;

 private:
  struct Pending {
    size_t at;
    Label jt, jf;  // for BPF_JA, jt is the target
  };
  std::vector<sock_filter> insns_;
  std::vector<Pending> pending_;
  std::vector<long> labels_;  // instruction index, -1 while unbound
};

}  // namespace ward::enforce
