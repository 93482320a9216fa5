#include "common/sha256.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <fstream>
#include <random>
#include <string>

namespace ward {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

void AgreesWithOpenSsl() {
  std::mt19937 rng(7);
  for (size_t len = 0; len < 300; ++len) {
    std::string data(len, '\0');
    for (auto& c : data) c = static_cast<char>(rng());
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    ASSERT_EQ(EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr), 1);
    std::string want;
    char hex[3];
    for (unsigned i = 0; i < n; ++i) {
      snprintf(hex, sizeof hex, "%02x", md[i]);
      want += hex;
    }
    EXPECT_EQ(Sha256Hex(data), want) << len;
    // Fed in two pieces.
    Sha256 s;
    size_t cut = len ? rng() % len : 0;
    s.Update(std::string_view(data).substr(0, cut));
    s.Update(std::string_view(data).substr(cut));
    auto d = s.Final();
    EXPECT_EQ(0, memcmp(d.data(), md, 32)) << len << " cut " << cut;
  }
}

TEST(Sha256, AgreesWithOpenSslOnEveryLengthAndSplit) { AgreesWithOpenSsl(); }

// Both block functions: the SHA extensions where the CPU has them, and the portable code.
TEST(Sha256, ThePortableCodeAgreesToo) {
  Sha256::UsePortableForTesting(true);
  EXPECT_FALSE(Sha256::Accelerated());
  AgreesWithOpenSsl();
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  Sha256::UsePortableForTesting(false);
}

// The SHA extensions are used exactly when the kernel reports them (and SSE4.1) for this CPU.
TEST(Sha256, UsesTheShaExtensionsExactlyWhenTheCpuHasThem) {
#if defined(__x86_64__)
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      flags = " " + line.substr(line.find(':') + 1) + " ";
      break;
    }
  }
  ASSERT_FALSE(flags.empty()) << "no flags line in /proc/cpuinfo";
  const bool expected =
      flags.find(" sha_ni ") != std::string::npos && flags.find(" sse4_1 ") != std::string::npos;
  Sha256::UsePortableForTesting(false);
  EXPECT_EQ(Sha256::Accelerated(), expected) << "flags:" << flags;
#else
  EXPECT_FALSE(Sha256::Accelerated());
#endif
}

}  // namespace
}  // namespace ward
