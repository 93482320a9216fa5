#include "enforce/syscalls.h"

#include <linux/audit.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <unordered_map>
#include <vector>

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

namespace {

struct Entry {
  int nr;
  const char* name;
};

constexpr Entry kTable[] = {
#include "syscall_table.inc"
};

// Names by number: the C library's table, then the syscalls newer than it. Built once.
const std::vector<const char*>& Names() {
  static const std::vector<const char*> names = [] {
    int end = 0;
    for (const Entry& e : kTable) end = std::max(end, e.nr + 1);
    for (const Extra& e : kExtras) end = std::max(end, e.nr + 1);
    std::vector<const char*> v(static_cast<size_t>(std::min(end, kScanLimit)), nullptr);
    for (const Entry& e : kTable) {
      if (e.nr < kScanLimit) v[e.nr] = e.name;
    }
    for (const Extra& e : kExtras) {
      if (v[e.nr] == nullptr) v[e.nr] = e.name;
    }
    return v;
  }();
  return names;
}

}  // namespace

int NativeSyscallNumber(std::string_view name) {
  static const std::unordered_map<std::string_view, int> numbers = [] {
    std::unordered_map<std::string_view, int> m;
    const std::vector<const char*>& names = Names();
    for (size_t nr = 0; nr < names.size(); ++nr) {
      if (names[nr] != nullptr) m.emplace(names[nr], static_cast<int>(nr));
    }
    return m;
  }();
  auto it = numbers.find(name);
  return it != numbers.end() ? it->second : -1;
}

std::string NativeSyscallName(int nr) {
  const std::vector<const char*>& names = Names();
  if (nr < 0 || static_cast<size_t>(nr) >= names.size() || names[nr] == nullptr) return "";
  return names[nr];
}

int NativeSyscallLimit() { return static_cast<int>(Names().size()); }

}  // namespace ward::enforce
