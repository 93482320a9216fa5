// The native architecture's syscall numbers and names, for building the seccomp filter and for
// `ward explain`. The table comes from the C library's headers (generated at configure time);
// the few syscalls newer than those headers are filled in here, so the filter can name (and
// deny) them too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ward::enforce {

// The only ABI the filter lets through (AUDIT_ARCH_X86_64 or AUDIT_ARCH_AARCH64).
uint32_t NativeAuditArch();

// The syscall's number on the native ABI, or -1 when this architecture has no such syscall (or
// neither the headers nor the list of newer ones in syscalls.cc know it; the filter's compile
// also asks libseccomp, seccomp_compile.cc).
int NativeSyscallNumber(std::string_view name);

// The syscall's name, or "" when the number is not a known native syscall.
std::string NativeSyscallName(int nr);

// One past the highest known native syscall number.
int NativeSyscallLimit();

}  // namespace ward::enforce
