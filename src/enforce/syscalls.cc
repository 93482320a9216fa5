#include "enforce/syscalls.h"

#include <linux/audit.h>
#include <seccomp.h>

#include <cstdlib>
#include <memory>

namespace ward::enforce {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#else
#error "ward supports x86_64 and aarch64 only"
#endif

struct Extra {
  int nr;
  const char* name;
};

// Syscalls newer than the libseccomp 2.5.4 table (Linux 6.8 .. 6.18). Since 5.1 new syscalls
// get the same number on every architecture; uretprobe (6.11) is x86_64 only.
constexpr Extra kExtras[] = {
#if defined(__x86_64__)
    {335, "uretprobe"},
#endif
    {451, "cachestat"},         {452, "fchmodat2"},        {453, "map_shadow_stack"},
    {454, "futex_wake"},        {455, "futex_wait"},       {456, "futex_requeue"},
    {457, "statmount"},         {458, "listmount"},        {459, "lsm_get_self_attr"},
    {460, "lsm_set_self_attr"}, {461, "lsm_list_modules"}, {462, "mseal"},
    {463, "setxattrat"},        {464, "getxattrat"},       {465, "listxattrat"},
    {466, "removexattrat"},     {467, "open_tree_attr"},   {468, "file_getattr"},
    {469, "file_setattr"},      {470, "listns"},
};

// Far above any syscall number in use; the scan for the table's end stops here.
constexpr int kScanLimit = 1024;

}  // namespace

uint32_t NativeAuditArch() { return kNativeArch; }

int NativeSyscallNumber(std::string_view name) {
  const std::string n(name);
  // Negative answers are libseccomp's pseudo numbers for syscalls this ABI lacks.
  const int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, n.c_str());
  if (nr >= 0) {
    return nr;
  }
  for (const Extra& e : kExtras) {
    if (name == e.name) {
      return e.nr;
    }
  }
  return -1;
}

std::string NativeSyscallName(int nr) {
  if (nr < 0 || nr >= kScanLimit) {
    return "";
  }
  std::unique_ptr<char, decltype(&std::free)> name(
      seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr), &std::free);
  if (name) {
    return name.get();
  }
  for (const Extra& e : kExtras) {
    if (e.nr == nr) {
      return e.name;
    }
  }
  return "";
}

int NativeSyscallLimit() {
  static const int limit = [] {
    int end = 0;
    for (int nr = 0; nr < kScanLimit; ++nr) {
      if (!NativeSyscallName(nr).empty()) {
        end = nr + 1;
      }
    }
    return end;
  }();
  return limit;
}

}  // namespace ward::enforce
