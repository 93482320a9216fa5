// For the tests of features that need OpenSSL (the credential broker, the approval webhook):
// each must be refused, naming the library, where it cannot be loaded.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "common/status.h"
#include "libssl/on_use.h"

namespace ward::test {

// Runs `make` in a fresh process (nothing has loaded OpenSSL there: the "threadsafe" death
// test re-executes the binary for this test alone) whose library name points at a file that
// does not exist, and expects kFailedPrecondition with "`what` needs OpenSSL: cannot load
// <that file>". Skips where OpenSSL is linked into the build.
inline void ExpectRefusedWithoutOpenSsl(const std::function<Status()>& make,
                                        const std::string& what) {
#if defined(WARD_LAZY_LIBSSL)
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  constexpr char kMissing[] = "libward-missing-for-test.so.0";
  EXPECT_EXIT(
      {
        libssl::internal::UseLibraryForTest(kMissing);
        const Status st = make();
        const bool named = st.code() == Code::kFailedPrecondition &&
                           st.ToString().find(what + " needs OpenSSL: cannot load " + kMissing) !=
                               std::string::npos;
        std::_Exit(named ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
#else
  (void)make;
  (void)what;
  GTEST_SKIP() << "OpenSSL is linked into this build";
#endif
}

}  // namespace ward::test
