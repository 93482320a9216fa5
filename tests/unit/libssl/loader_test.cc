// The OpenSSL loader (src/libssl/on_use.h). Loading happens once per process: each case that
// needs a process where nothing has loaded the library yet runs in a fresh one (a death test in
// the "threadsafe" style re-executes this binary for that case alone).
#include "libssl/on_use.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <openssl/conf.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace ward::libssl {
namespace {

constexpr char kMissing[] = "libward-missing-for-test.so.0";

class LibsslFreshProcessTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

bool LibraryMapped() {
  void* h = dlopen(LibraryName(), RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return false;
  dlclose(h);
  return true;
}

// Lazy or linked in, OpenSSL works.
TEST(LibsslLoaderTest, LoadsAndServesCalls) {
  EXPECT_EQ(Load(), "");
  EXPECT_EQ(Load(), "");  // once; the same outcome again
  unsigned char b[16] = {};
  EXPECT_EQ(RAND_bytes(b, sizeof b), 1);
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());
  ASSERT_NE(ctx, nullptr);
  SSL_CTX_free(ctx);
}

#if defined(WARD_LAZY_LIBSSL)
// The first call of any stub binds them all: its arguments must reach the function intact.
TEST_F(LibsslFreshProcessTest, FirstCallKeepsItsArguments) {
  EXPECT_EXIT(
      {
        if (LibraryMapped()) std::_Exit(2);
        char buf[300];
        std::memset(buf, 'x', sizeof buf);
        // The code in hex, NUL-terminated, nothing written past the length given.
        ERR_error_string_n(ERR_PACK(ERR_LIB_SSL, 0, 0), buf, 256);
        const bool ok = std::strncmp(buf, "error:0A000000:", 15) == 0 && std::strlen(buf) < 256 &&
                        buf[256] == 'x';
        std::_Exit(ok && LibraryMapped() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(LibsslFreshProcessTest, FirstCallMayBeVariadic) {
  EXPECT_EXIT(
      {
        if (LibraryMapped()) std::_Exit(2);
        EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
        std::_Exit(key != nullptr && EVP_PKEY_get_bits(key) == 256 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(LibsslFreshProcessTest, NothingLoadsUntilNeeded) {
  EXPECT_EXIT(
      {
        // A cleanup before any use (asio calls this at every exit) does not load the library.
        CONF_modules_unload(1);
        std::_Exit(LibraryMapped() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(LibsslFreshProcessTest, StubsStayOutOfTheGlobalScope) {
  EXPECT_EXIT(
      {
        if (!Load().empty()) std::_Exit(2);
        // The library is local to ward: neither its functions nor ward's stubs are visible by
        // name, so the library's own calls bind inside it.
        std::_Exit(dlsym(RTLD_DEFAULT, "SSL_CTX_new") == nullptr ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(LibsslFreshProcessTest, AMissingLibraryIsNamed) {
  EXPECT_EXIT(
      {
        internal::UseLibraryForTest(kMissing);
        const std::string& e = Load();
        const bool named = e.find(std::string("cannot load ") + kMissing) != std::string::npos;
        std::_Exit(named && e == Load() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// A library that lacks one of the functions fails the whole load, naming the function, and binds
// nothing: a stub then aborts rather than call into half a library.
TEST_F(LibsslFreshProcessTest, ALibraryMissingAFunctionFailsTheWholeLoad) {
  EXPECT_DEATH(
      {
        internal::UseLibraryForTest("libc.so.6");  // loads, and has none of OpenSSL's functions
        if (Load().find("libc.so.6 has no function ") == std::string::npos) std::_Exit(1);
        unsigned char b[8];
        (void)RAND_bytes(b, sizeof b);
        std::_Exit(0);
      },
      "OpenSSL is needed here and could not be loaded: libc.so.6 has no function ");
}

TEST_F(LibsslFreshProcessTest, AStubWithoutTheLibraryAbortsSayingWhy) {
  EXPECT_DEATH(
      {
        internal::UseLibraryForTest(kMissing);
        unsigned char b[8];
        (void)RAND_bytes(b, sizeof b);
      },
      "OpenSSL is needed here and could not be loaded: cannot load libward-missing-for-test");
}
#endif  // WARD_LAZY_LIBSSL

}  // namespace
}  // namespace ward::libssl
