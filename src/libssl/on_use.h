// OpenSSL, loaded when a run first needs it. Only TLS interception (the credential broker) and
// approval webhooks use OpenSSL; linked into the binary, its tables cost every start of ward,
// `ward run -- true` included, copy-on-write page faults while the dynamic loader relocates
// them. So ward calls OpenSSL through small stubs (one per function in functions.h), and the
// first call, or Load(), opens the system's libssl and resolves every stub at once.
//
// What the loader guarantees (x86-64, WARD_LAZY_LIBSSL):
// - Nothing of OpenSSL is mapped before Load() or the first call of a stub; a cleanup stub
//   (functions.h) called before that returns without loading.
// - A stub called first keeps its call intact: arguments, variadic ones included, reach the
//   function as if it had been called directly.
// - All or nothing: the stubs are bound only once every function of functions.h is found.
// - The library stays local (RTLD_LOCAL) and the stubs hidden: neither binds the other's calls.
//
// A missing function: one ward calls but functions.h lacks fails the link ("undefined
// reference"); one the system's library lacks fails the whole load, and Load() names it.
// Fail closed: a feature that needs OpenSSL calls Load() first and refuses with its message when
// the load failed. A stub reached without a successful load prints what failed and aborts (a
// supervisor that cannot do TLS must not carry on as if it could).
//
// Elsewhere (WARD_LAZY_LIBSSL off) OpenSSL is linked in and Load() always succeeds.
#pragma once

#include <string>

namespace ward::libssl {

// Loads libssl (and with it libcrypto) and resolves every function ward calls. Once per
// process, thread-safe; later calls return the first outcome. "" when loaded, else what failed
// (naming the library or the missing function).
const std::string& Load();

// The library's file name (the SONAME, e.g. "libssl.so.3").
const char* LibraryName();

namespace internal {
// Tests only, before the first Load(): load this file instead (to see a missing library refused).
void UseLibraryForTest(const char* name);
}  // namespace internal

}  // namespace ward::libssl
