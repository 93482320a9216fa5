#include "oci/seccomp_filter.h"

#include <errno.h>
#include <linux/seccomp.h>

#include "enforce/bpf.h"
#include "enforce/syscalls.h"

namespace ward::oci {
namespace {

using enforce::BpfBuilder;
using Label = BpfBuilder::Label;

uint32_t Verdict(const std::string& action, std::optional<uint32_t> errno_ret) {
  const uint32_t data = errno_ret.value_or(EPERM) & SECCOMP_RET_DATA;
  if (action == "SCMP_ACT_ALLOW") return SECCOMP_RET_ALLOW;
  if (action == "SCMP_ACT_ERRNO") return SECCOMP_RET_ERRNO | data;
  if (action == "SCMP_ACT_TRACE") return SECCOMP_RET_TRACE | data;
  if (action == "SCMP_ACT_LOG") return SECCOMP_RET_LOG;
  if (action == "SCMP_ACT_TRAP") return SECCOMP_RET_TRAP;
  if (action == "SCMP_ACT_KILL_PROCESS") return SECCOMP_RET_KILL_PROCESS;
  return SECCOMP_RET_KILL_THREAD;  // SCMP_ACT_KILL, SCMP_ACT_KILL_THREAD (ParseConfig checked)
}

uint32_t High(uint64_t v) { return static_cast<uint32_t>(v >> 32); }
uint32_t Low(uint64_t v) { return static_cast<uint32_t>(v); }

// Goes on when `arg`'s comparison holds, to `fail` when it does not. Each compares the 64-bit
// argument as two 32-bit words, high word first.
void Compare(BpfBuilder& b, const SeccompArg& arg, Label fail) {
  const int i = static_cast<int>(arg.index);
  const uint64_t v = arg.value;
  Label ok = b.NewLabel();
  if (arg.op == "SCMP_CMP_MASKED_EQ") {  // (arg & value) == valueTwo
    b.LoadArgHigh(i);
    b.And(High(v));
    b.Jump(BPF_JEQ, High(arg.value_two), BpfBuilder::kNext, fail);
    b.LoadArgLow(i);
    b.And(Low(v));
    b.Jump(BPF_JEQ, Low(arg.value_two), ok, fail);
  } else if (arg.op == "SCMP_CMP_EQ") {
    b.LoadArgHigh(i);
    b.Jump(BPF_JEQ, High(v), BpfBuilder::kNext, fail);
    b.LoadArgLow(i);
    b.Jump(BPF_JEQ, Low(v), ok, fail);
  } else if (arg.op == "SCMP_CMP_NE") {
    b.LoadArgHigh(i);
    b.Jump(BPF_JEQ, High(v), BpfBuilder::kNext, ok);
    b.LoadArgLow(i);
    b.Jump(BPF_JEQ, Low(v), fail, ok);
  } else if (arg.op == "SCMP_CMP_GT" || arg.op == "SCMP_CMP_GE") {
    b.LoadArgHigh(i);
    b.Jump(BPF_JGT, High(v), ok, BpfBuilder::kNext);
    b.Jump(BPF_JEQ, High(v), BpfBuilder::kNext, fail);
    b.LoadArgLow(i);
    b.Jump(arg.op == "SCMP_CMP_GT" ? BPF_JGT : BPF_JGE, Low(v), ok, fail);
  } else {  // SCMP_CMP_LT, SCMP_CMP_LE: not GE, not GT
    b.LoadArgHigh(i);
    b.Jump(BPF_JGT, High(v), fail, BpfBuilder::kNext);
    b.Jump(BPF_JEQ, High(v), BpfBuilder::kNext, ok);
    b.LoadArgLow(i);
    b.Jump(arg.op == "SCMP_CMP_LT" ? BPF_JGE : BPF_JGT, Low(v), fail, ok);
  }
  b.Bind(ok);
}

// The sets of comparisons of which one must hold entirely. As runc reads a rule: all of its
// comparisons together, unless two compare the same argument, when each is a rule of its own.
std::vector<std::vector<SeccompArg>> Alternatives(const SeccompRule& rule) {
  bool repeated = false;
  for (size_t i = 0; i < rule.args.size(); ++i) {
    for (size_t j = 0; j < i; ++j) repeated = repeated || rule.args[i].index == rule.args[j].index;
  }
  if (!repeated) return {rule.args};
  std::vector<std::vector<SeccompArg>> each;
  for (const SeccompArg& a : rule.args) each.push_back({a});
  return each;
}

}  // namespace

Result<std::vector<sock_filter>> CompileContainerSeccomp(const Seccomp& profile) {
  BpfBuilder b;
  Label native = b.NewLabel();
  b.LoadArch();
  b.Jump(BPF_JEQ, enforce::NativeAuditArch(), native, BpfBuilder::kNext);
  b.Ret(SECCOMP_RET_ALLOW);  // another ABI: ward's own filter refuses it
  b.Bind(native);
  bool a_is_nr = false;  // A still holds the number: no comparison loaded an argument since
  for (const SeccompRule& rule : profile.syscalls) {
    for (const std::string& name : rule.names) {
      const int nr = enforce::NativeSyscallNumber(name);
      if (nr < 0) continue;
      for (const std::vector<SeccompArg>& all_of : Alternatives(rule)) {
        Label next = b.NewLabel();
        if (!a_is_nr) b.LoadNr();
        a_is_nr = all_of.empty();
        b.Jump(BPF_JEQ, static_cast<uint32_t>(nr), BpfBuilder::kNext, next);
        for (const SeccompArg& arg : all_of) Compare(b, arg, next);
        b.Ret(Verdict(rule.action, rule.errno_ret));
        b.Bind(next);
      }
    }
  }
  b.Ret(Verdict(profile.default_action, profile.default_errno_ret));
  Result<std::vector<sock_filter>> program = b.Finish();
  if (!program.ok()) return program;
  if (program->size() > enforce::kBpfMaxInsns) {
    return InvalidArgument("config.json: linux.seccomp: its " + std::to_string(program->size()) +
                           " instructions are more than one filter may have (" +
                           std::to_string(enforce::kBpfMaxInsns) + ")");
  }
  WARD_TRY(enforce::CheckSeccompBpf(*program));
  return program;
}

}  // namespace ward::oci
