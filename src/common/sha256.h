// SHA-256 (FIPS 180-4) without OpenSSL: hashing a profile or an audit record must not pay for
// initialising a crypto library on every `ward run` (OpenSSL stays for TLS only).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ward {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view data);
  std::array<uint8_t, 32> Final();
  std::string FinalHex();  // Final() as lowercase hex
  // Where the CPU has the SHA extensions (x86-64), blocks are hashed with them (~10x faster;
  // an audit trail hashes every record). Tests switch to the portable code to check both.
  static bool Accelerated();
  static void UsePortableForTesting(bool portable);

 private:
  void Blocks(const uint8_t* p, size_t n);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// Lowercase hex digest of `data`.
std::string Sha256Hex(std::string_view data);

}  // namespace ward
