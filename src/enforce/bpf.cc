#include "enforce/bpf.h"

#include <cstddef>
#include <cstring>
#include <string>

namespace ward::enforce {
namespace {

constexpr uint32_t kMemWords = 16;  // BPF_MEMWORDS

bool IsCondJump(uint16_t code) {
  switch (code) {
    case BPF_JMP | BPF_JEQ | BPF_K:
    case BPF_JMP | BPF_JEQ | BPF_X:
    case BPF_JMP | BPF_JGE | BPF_K:
    case BPF_JMP | BPF_JGE | BPF_X:
    case BPF_JMP | BPF_JGT | BPF_K:
    case BPF_JMP | BPF_JGT | BPF_X:
    case BPF_JMP | BPF_JSET | BPF_K:
    case BPF_JMP | BPF_JSET | BPF_X:
      return true;
    default:
      return false;
  }
}

// The opcodes seccomp_check_filter lets through (after rewriting the two LEN loads).
bool IsSeccompOpcode(uint16_t code) {
  if (IsCondJump(code)) {
    return true;
  }
  switch (code) {
    case BPF_LD | BPF_W | BPF_ABS:
    case BPF_LD | BPF_W | BPF_LEN:
    case BPF_LDX | BPF_W | BPF_LEN:
    case BPF_RET | BPF_K:
    case BPF_RET | BPF_A:
    case BPF_ALU | BPF_ADD | BPF_K:
    case BPF_ALU | BPF_ADD | BPF_X:
    case BPF_ALU | BPF_SUB | BPF_K:
    case BPF_ALU | BPF_SUB | BPF_X:
    case BPF_ALU | BPF_MUL | BPF_K:
    case BPF_ALU | BPF_MUL | BPF_X:
    case BPF_ALU | BPF_DIV | BPF_K:
    case BPF_ALU | BPF_DIV | BPF_X:
    case BPF_ALU | BPF_AND | BPF_K:
    case BPF_ALU | BPF_AND | BPF_X:
    case BPF_ALU | BPF_OR | BPF_K:
    case BPF_ALU | BPF_OR | BPF_X:
    case BPF_ALU | BPF_XOR | BPF_K:
    case BPF_ALU | BPF_XOR | BPF_X:
    case BPF_ALU | BPF_LSH | BPF_K:
    case BPF_ALU | BPF_LSH | BPF_X:
    case BPF_ALU | BPF_RSH | BPF_K:
    case BPF_ALU | BPF_RSH | BPF_X:
    case BPF_ALU | BPF_NEG:
    case BPF_LD | BPF_IMM:
    case BPF_LDX | BPF_IMM:
    case BPF_MISC | BPF_TAX:
    case BPF_MISC | BPF_TXA:
    case BPF_LD | BPF_MEM:
    case BPF_LDX | BPF_MEM:
    case BPF_ST:
    case BPF_STX:
    case BPF_JMP | BPF_JA:
      return true;
    default:
      return false;
  }
}

Status Bad(size_t pc, const char* what) {
  return InvalidArgument("bpf instruction " + std::to_string(pc) + ": " + what);
}

// The accumulator after the load `f` (class BPF_LD) from `data` or scratch memory.
uint32_t LoadA(const sock_filter& f, uint32_t a, const uint32_t* mem, const seccomp_data& data) {
  switch (BPF_MODE(f.code)) {
    case BPF_ABS:
      std::memcpy(&a, reinterpret_cast<const unsigned char*>(&data) + f.k, sizeof(a));
      break;
    case BPF_LEN:
      a = sizeof(seccomp_data);
      break;
    case BPF_IMM:
      a = f.k;
      break;
    case BPF_MEM:
      a = mem[f.k];
      break;
  }
  return a;
}

// The index register after the load `f` (class BPF_LDX).
uint32_t LoadX(const sock_filter& f, uint32_t x, const uint32_t* mem) {
  switch (BPF_MODE(f.code)) {
    case BPF_LEN:
      x = sizeof(seccomp_data);
      break;
    case BPF_IMM:
      x = f.k;
      break;
    case BPF_MEM:
      x = mem[f.k];
      break;
  }
  return x;
}

// Applies the operation `code` (class BPF_ALU) with `src` to the accumulator. False on a
// division by zero, which ends the program.
bool RunAlu(uint16_t code, uint32_t src, uint32_t* a) {
  switch (BPF_OP(code)) {
    case BPF_ADD:
      *a += src;
      break;
    case BPF_SUB:
      *a -= src;
      break;
    case BPF_MUL:
      *a *= src;
      break;
    case BPF_DIV:
      if (src == 0) {
        return false;
      }
      *a /= src;
      break;
    case BPF_AND:
      *a &= src;
      break;
    case BPF_OR:
      *a |= src;
      break;
    case BPF_XOR:
      *a ^= src;
      break;
    case BPF_LSH:
      *a <<= (src & 31);  // 32-bit shifts use the low five bits, as the kernel does
      break;
    case BPF_RSH:
      *a >>= (src & 31);
      break;
    case BPF_NEG:
      *a = 0u - *a;
      break;
  }
  return true;
}

// How many instructions the jump `f` (class BPF_JMP) skips, comparing the accumulator with `src`.
uint32_t JumpOffset(const sock_filter& f, uint32_t a, uint32_t src) {
  bool taken = false;
  switch (BPF_OP(f.code)) {
    case BPF_JA:
      return f.k;
    case BPF_JEQ:
      taken = a == src;
      break;
    case BPF_JGE:
      taken = a >= src;
      break;
    case BPF_JGT:
      taken = a > src;
      break;
    case BPF_JSET:
      taken = (a & src) != 0;
      break;
  }
  return taken ? f.jt : f.jf;
}

}  // namespace

Status CheckSeccompBpf(std::span<const sock_filter> insns) {
  const size_t n = insns.size();
  if (n == 0) {
    return InvalidArgument("bpf program is empty");
  }
  if (n > kBpfMaxInsns) {
    return InvalidArgument("bpf program longer than 4096 instructions");
  }

  for (size_t pc = 0; pc < n; ++pc) {
    const sock_filter& f = insns[pc];
    if (!IsSeccompOpcode(f.code)) {
      return Bad(pc, "opcode not allowed in seccomp");
    }
    switch (f.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        if (f.k >= sizeof(seccomp_data) || (f.k & 3) != 0) {
          return Bad(pc, "load outside seccomp_data or unaligned");
        }
        break;
      case BPF_ALU | BPF_DIV | BPF_K:
        if (f.k == 0) {
          return Bad(pc, "division by constant zero");
        }
        break;
      case BPF_ALU | BPF_LSH | BPF_K:
      case BPF_ALU | BPF_RSH | BPF_K:
        if (f.k >= 32) {
          return Bad(pc, "shift by 32 or more");
        }
        break;
      case BPF_LD | BPF_MEM:
      case BPF_LDX | BPF_MEM:
      case BPF_ST:
      case BPF_STX:
        if (f.k >= kMemWords) {
          return Bad(pc, "scratch memory index out of range");
        }
        break;
      case BPF_JMP | BPF_JA:
        if (f.k >= n - pc - 1) {
          return Bad(pc, "jump out of range");
        }
        break;
      default:
        if (IsCondJump(f.code) && (pc + f.jt + 1 >= n || pc + f.jf + 1 >= n)) {
          return Bad(pc, "jump out of range");
        }
        break;
    }
  }
  const uint16_t last = insns[n - 1].code;
  if (last != (BPF_RET | BPF_K) && last != (BPF_RET | BPF_A)) {
    return InvalidArgument("bpf program does not end with a return");
  }

  // Scratch memory must be written on every path before it is read (the kernel's
  // check_load_and_stores; jumps are forward only, so one pass suffices).
  std::vector<uint16_t> masks(n, 0xffff);
  uint16_t valid = 0;
  for (size_t pc = 0; pc < n; ++pc) {
    const sock_filter& f = insns[pc];
    valid &= masks[pc];
    switch (f.code) {
      case BPF_ST:
      case BPF_STX:
        valid |= static_cast<uint16_t>(1u << f.k);
        break;
      case BPF_LD | BPF_MEM:
      case BPF_LDX | BPF_MEM:
        if (!(valid & (1u << f.k))) {
          return Bad(pc, "scratch memory read before written");
        }
        break;
      case BPF_JMP | BPF_JA:
        masks[pc + 1 + f.k] &= valid;
        valid = 0xffff;
        break;
      default:
        if (IsCondJump(f.code)) {
          masks[pc + 1 + f.jt] &= valid;
          masks[pc + 1 + f.jf] &= valid;
          valid = 0xffff;
        }
        break;
    }
  }
  return Ok();
}

uint32_t RunSeccompBpf(std::span<const sock_filter> insns, const seccomp_data& data) {
  if (!CheckSeccompBpf(insns).ok()) {
    return SECCOMP_RET_KILL_PROCESS;
  }
  return RunCheckedSeccompBpf(insns, data);
}

uint32_t RunCheckedSeccompBpf(std::span<const sock_filter> insns, const seccomp_data& data) {
  uint32_t a = 0, x = 0;
  uint32_t mem[kMemWords] = {};
  // Every jump is forward and in range (checked), so this terminates within n steps and
  // never indexes outside the program.
  for (size_t pc = 0; pc < insns.size(); ++pc) {
    const sock_filter& f = insns[pc];
    const uint32_t src = BPF_SRC(f.code) == BPF_X ? x : f.k;
    switch (BPF_CLASS(f.code)) {
      case BPF_LD:
        a = LoadA(f, a, mem, data);
        break;
      case BPF_LDX:
        x = LoadX(f, x, mem);
        break;
      case BPF_ST:
        mem[f.k] = a;
        break;
      case BPF_STX:
        mem[f.k] = x;
        break;
      case BPF_ALU:
        if (!RunAlu(f.code, src, &a)) {
          return 0;  // the kernel ends the program with 0 (KILL_THREAD)
        }
        break;
      case BPF_JMP:
        pc += JumpOffset(f, a, src);
        break;
      case BPF_RET:
        return BPF_RVAL(f.code) == BPF_A ? a : f.k;
      case BPF_MISC:
        if (BPF_MISCOP(f.code) == BPF_TAX) {
          x = a;
        } else {
          a = x;
        }
        break;
    }
  }
  return SECCOMP_RET_KILL_PROCESS;  // unreachable: a checked program ends with a return
}

BpfBuilder::Label BpfBuilder::NewLabel() {
  labels_.push_back(-1);
  return static_cast<Label>(labels_.size() - 1);
}

void BpfBuilder::Bind(Label label) {
  WARD_CHECK(label >= 0 && static_cast<size_t>(label) < labels_.size());
  WARD_CHECK(labels_[label] == -1);
  labels_[label] = static_cast<long>(insns_.size());
}

void BpfBuilder::LoadArch() {
  insns_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
}

void BpfBuilder::LoadNr() {
  insns_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
}

void BpfBuilder::LoadArgLow(int index) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the low word is the first one");
  WARD_CHECK(index >= 0 && index < 6);
  insns_.push_back(BPF_STMT(
      BPF_LD | BPF_W | BPF_ABS,
      static_cast<uint32_t>(offsetof(seccomp_data, args) + 8 * static_cast<size_t>(index))));
}

void BpfBuilder::LoadArgHigh(int index) {
  WARD_CHECK(index >= 0 && index < 6);
  insns_.push_back(BPF_STMT(
      BPF_LD | BPF_W | BPF_ABS,
      static_cast<uint32_t>(offsetof(seccomp_data, args) + 8 * static_cast<size_t>(index) + 4)));
}

void BpfBuilder::And(uint32_t k) { insns_.push_back(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, k)); }

void BpfBuilder::Ret(uint32_t value) { insns_.push_back(BPF_STMT(BPF_RET | BPF_K, value)); }

void BpfBuilder::Jump(uint16_t op, uint32_t k, Label jt, Label jf) {
  WARD_CHECK(op == BPF_JEQ || op == BPF_JGE || op == BPF_JGT || op == BPF_JSET);
  pending_.push_back(Pending{insns_.size(), jt, jf});
  insns_.push_back(BPF_JUMP(BPF_JMP | op | BPF_K, k, 0, 0));
}

void BpfBuilder::Goto(Label target) {
  pending_.push_back(Pending{insns_.size(), target, kNext});
  insns_.push_back(BPF_STMT(BPF_JMP | BPF_JA, 0));
}

Result<std::vector<sock_filter>> BpfBuilder::Finish() const {
  std::vector<sock_filter> out = insns_;
  // Offset from the instruction after `at` to `label`; kNext is 0.
  auto offset = [&](size_t at, Label label) -> long {
    if (label == kNext) {
      return 0;
    }
    if (label < 0 || static_cast<size_t>(label) >= labels_.size() || labels_[label] < 0) {
      return -1;
    }
    return labels_[label] - static_cast<long>(at) - 1;
  };
  for (const Pending& p : pending_) {
    sock_filter& f = out[p.at];
    const long jt = offset(p.at, p.jt);
    if (f.code == (BPF_JMP | BPF_JA)) {
      if (jt < 0) {
        return Error(Code::kInternal, "bpf builder: bad jump target");
      }
      f.k = static_cast<uint32_t>(jt);
      continue;
    }
    const long jf = offset(p.at, p.jf);
    if (jt < 0 || jf < 0) {
      return Error(Code::kInternal, "bpf builder: bad jump target");
    }
    if (jt > 255 || jf > 255) {
      return Error(Code::kInternal, "bpf builder: jump too far");
    }
    f.jt = static_cast<uint8_t>(jt);
    f.jf = static_cast<uint8_t>(jf);
  }
  return out;
}

}  // namespace ward::enforce
