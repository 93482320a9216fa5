#include "libssl/on_use.h"

#include <dlfcn.h>
#include <openssl/opensslv.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "libssl/functions.h"

#define WARD_LIBSSL_STR2(x) #x
#define WARD_LIBSSL_STR(x) WARD_LIBSSL_STR2(x)

namespace ward::libssl {
namespace {

const char* g_library = "libssl.so." WARD_LIBSSL_STR(OPENSSL_VERSION_MAJOR);

}  // namespace

const char* LibraryName() { return g_library; }

namespace internal {
void UseLibraryForTest(const char* name) { g_library = name; }
}  // namespace internal

}  // namespace ward::libssl

#if defined(WARD_LAZY_LIBSSL)

// One slot per function: where its stub jumps once the library is loaded (null until then).
// Hidden, like the stubs, so that nothing of them reaches the dynamic symbol table: the loaded
// library must bind to its own functions, never to ward's stubs.
extern "C" {
#define WARD_LIBSSL_SLOT(name) \
  __attribute__((visibility("hidden"), used)) void* ward_libssl_slot_##name = nullptr;
WARD_LIBSSL_FUNCTIONS(WARD_LIBSSL_SLOT)
WARD_LIBSSL_CLEANUPS(WARD_LIBSSL_SLOT)
}

// The stubs (x86-64). A loaded stub is two instructions and a jump. Before the load, a
// function's stub passes its slot to ward_libssl_resolve, which keeps every argument register
// (and %rax, the vector count of a variadic call), binds all slots and jumps to the function:
// the caller's arguments, stack and return address are untouched, whatever the function's
// signature. A cleanup's stub (functions.h) returns instead.
// clang-format off
#define WARD_LIBSSL_STUB_UNLESS_LOADED(name, unloaded)  \
  asm(".text\n"                                         \
      ".globl " #name "\n"                              \
      ".hidden " #name "\n"                             \
      ".type " #name ", @function\n"                    \
      ".p2align 4\n"                                    \
      #name ":\n"                                       \
      "  endbr64\n"                                     \
      "  movq ward_libssl_slot_" #name "(%rip), %r11\n" \
      "  testq %r11, %r11\n"                            \
      "  jz 1f\n"                                       \
      "  jmp *%r11\n"                                   \
      "1:\n"                                            \
      unloaded                                          \
      ".size " #name ", .-" #name "\n");
#define WARD_LIBSSL_STUB(name)                                \
  WARD_LIBSSL_STUB_UNLESS_LOADED(name,                        \
      "  leaq ward_libssl_slot_" #name "(%rip), %r11\n"       \
      "  jmp ward_libssl_resolve\n")
#define WARD_LIBSSL_CLEANUP_STUB(name) WARD_LIBSSL_STUB_UNLESS_LOADED(name, "  ret\n")
// clang-format on
WARD_LIBSSL_FUNCTIONS(WARD_LIBSSL_STUB)
WARD_LIBSSL_CLEANUPS(WARD_LIBSSL_CLEANUP_STUB)

// %r11: the slot. Entered by a jump from a stub, so %rsp is 8 off 16-byte alignment, as at any
// function's entry; after %rbp, eight registers and 128 bytes of %xmm0-7 it is aligned again
// for the call.
asm(".text\n"
    ".p2align 4\n"
    ".type ward_libssl_resolve, @function\n"
    "ward_libssl_resolve:\n"
    "  pushq %rbp\n"
    "  movq %rsp, %rbp\n"
    "  pushq %rdi\n"
    "  pushq %rsi\n"
    "  pushq %rdx\n"
    "  pushq %rcx\n"
    "  pushq %r8\n"
    "  pushq %r9\n"
    "  pushq %rax\n"
    "  pushq %r11\n"
    "  subq $128, %rsp\n"
    "  movdqu %xmm0, 0(%rsp)\n"
    "  movdqu %xmm1, 16(%rsp)\n"
    "  movdqu %xmm2, 32(%rsp)\n"
    "  movdqu %xmm3, 48(%rsp)\n"
    "  movdqu %xmm4, 64(%rsp)\n"
    "  movdqu %xmm5, 80(%rsp)\n"
    "  movdqu %xmm6, 96(%rsp)\n"
    "  movdqu %xmm7, 112(%rsp)\n"
    "  movq %r11, %rdi\n"
    "  call ward_libssl_bind\n"
    "  movq %rax, %r11\n"
    "  movdqu 0(%rsp), %xmm0\n"
    "  movdqu 16(%rsp), %xmm1\n"
    "  movdqu 32(%rsp), %xmm2\n"
    "  movdqu 48(%rsp), %xmm3\n"
    "  movdqu 64(%rsp), %xmm4\n"
    "  movdqu 80(%rsp), %xmm5\n"
    "  movdqu 96(%rsp), %xmm6\n"
    "  movdqu 112(%rsp), %xmm7\n"
    "  addq $128, %rsp\n"
    "  popq %r10\n"
    "  popq %rax\n"
    "  popq %r9\n"
    "  popq %r8\n"
    "  popq %rcx\n"
    "  popq %rdx\n"
    "  popq %rsi\n"
    "  popq %rdi\n"
    "  popq %rbp\n"
    "  jmp *%r11\n"
    ".size ward_libssl_resolve, .-ward_libssl_resolve\n");

namespace ward::libssl {
namespace {

struct Entry {
  void** slot;
  const char* name;
};

#define WARD_LIBSSL_ENTRY(name) {&ward_libssl_slot_##name, #name},
constexpr Entry kEntries[] = {WARD_LIBSSL_FUNCTIONS(WARD_LIBSSL_ENTRY)
                                  WARD_LIBSSL_CLEANUPS(WARD_LIBSSL_ENTRY)};
constexpr size_t kCount = sizeof kEntries / sizeof kEntries[0];

std::string LoadNow() {
  // Lazy binding: the library's own calls are bound as they are first made, which halves the
  // time to open it. Local: its symbols serve only the lookups below.
  void* lib = dlopen(g_library, RTLD_LAZY | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return std::string("cannot load ") + g_library +
           " (the Debian package libssl3): " + (why ? why : "unknown error");
  }
  void* found[kCount];
  for (size_t i = 0; i < kCount; ++i) {
    found[i] = dlsym(lib, kEntries[i].name);
    if (found[i] == nullptr) {
      return std::string(g_library) + " has no function " + kEntries[i].name +
             " (an OpenSSL older than the one ward was built with?)";
    }
  }
  // Published only once every function is found: a stub either jumps to its function or binds.
  for (size_t i = 0; i < kCount; ++i)
    __atomic_store_n(kEntries[i].slot, found[i], __ATOMIC_RELEASE);
  return "";
}

}  // namespace

const std::string& Load() {
  static std::once_flag once;
  static std::string* error = new std::string();  // never destroyed: stubs may run during exit
  std::call_once(once, [] { *error = LoadNow(); });
  return *error;
}

}  // namespace ward::libssl

// Called by ward_libssl_resolve with a stub's slot: the function it stands for.
extern "C" __attribute__((visibility("hidden"), used)) void* ward_libssl_bind(void** slot) {
  const std::string& error = ward::libssl::Load();
  void* fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!error.empty() || fn == nullptr) {
    std::fprintf(stderr, "ward: OpenSSL is needed here and could not be loaded: %s\n",
                 error.empty() ? "unresolved function" : error.c_str());
    std::abort();
  }
  return fn;
}

#else  // OpenSSL is linked into the binary: nothing to load.

namespace ward::libssl {
const std::string& Load() {
  static const std::string* none = new std::string();
  return *none;
}
}  // namespace ward::libssl

#endif
