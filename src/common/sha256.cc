#include "common/sha256.h"

#include <atomic>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace ward {
namespace {

constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

}  // namespace

Sha256::Sha256()
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

namespace {

void BlockPortable(uint32_t* h_, const uint8_t* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) {
    w[i] = (uint32_t(p[4 * i]) << 24) | (uint32_t(p[4 * i + 1]) << 16) |
           (uint32_t(p[4 * i + 2]) << 8) | uint32_t(p[4 * i + 3]);
  }
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t s1 = Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = h + s1 + ch + kK[i] + w[i];
    uint32_t s0 = Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = s0 + maj;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h_[0] += a;
  h_[1] += b;
  h_[2] += c;
  h_[3] += d;
  h_[4] += e;
  h_[5] += f;
  h_[6] += g;
  h_[7] += h;
}

#if defined(__x86_64__)
// The SHA extensions keep the state as two vectors, (a, b, e, f) and (c, d, g, h), in lanes
// 3..0; each sha256rnds2 does two rounds, sha256msg1/msg2 extend the message schedule.
__attribute__((target("sha,sse4.1"))) void BlocksShaNi(uint32_t* h, const uint8_t* p, size_t n) {
  const __m128i kByteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i abcd = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h));
  __m128i efgh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4));
  abcd = _mm_shuffle_epi32(abcd, 0xB1);              // lanes (from 3): c d a b
  efgh = _mm_shuffle_epi32(efgh, 0x1B);              // e f g h
  __m128i abef = _mm_alignr_epi8(abcd, efgh, 8);     // a b e f
  __m128i cdgh = _mm_blend_epi16(efgh, abcd, 0xF0);  // c d g h
  for (; n > 0; --n, p += 64) {
    const __m128i abef_in = abef, cdgh_in = cdgh;
    __m128i w[4];
    for (int i = 0; i < 4; ++i) {
      w[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i)),
                              kByteSwap);
    }
    for (int r = 0; r < 16; ++r) {
      __m128i cur = w[r & 3];
      if (r >= 4) {
        // W[t] = W[t-16] + s0(W[t-15]) + W[t-7] + s1(W[t-2]), four at a time.
        __m128i x = _mm_sha256msg1_epu32(w[r & 3], w[(r + 1) & 3]);
        x = _mm_add_epi32(x, _mm_alignr_epi8(w[(r + 3) & 3], w[(r + 2) & 3], 4));
        cur = w[r & 3] = _mm_sha256msg2_epu32(x, w[(r + 3) & 3]);
      }
      __m128i msg =
          _mm_add_epi32(cur, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kK + 4 * r)));
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, msg);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(msg, 0x0E));
    }
    abef = _mm_add_epi32(abef, abef_in);
    cdgh = _mm_add_epi32(cdgh, cdgh_in);
  }
  __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm_blend_epi16(feba, dchg, 0xF0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), _mm_alignr_epi8(dchg, feba, 8));
}

// CPUID asked directly, when ward first hashes: __builtin_cpu_supports would link libgcc's
// CPU-model constructor, which runs a dozen CPUID instructions at every start of ward, and
// each one traps to the hypervisor in a VM (~7 us here).
bool CpuHasSha() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1)) return false;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b & bit_SHA) != 0;
}
#else
bool CpuHasSha() { return false; }
#endif

std::atomic<bool> force_portable{false};

}  // namespace

bool Sha256::Accelerated() {
  static const bool has = CpuHasSha();
  return has && !force_portable.load(std::memory_order_relaxed);
}

void Sha256::UsePortableForTesting(bool portable) { force_portable.store(portable); }

void Sha256::Blocks(const uint8_t* p, size_t n) {
#if defined(__x86_64__)
  if (Accelerated()) {
    BlocksShaNi(h_, p, n);
    return;
  }
#endif
  for (; n > 0; --n, p += 64) BlockPortable(h_, p);
}

void Sha256::Update(std::string_view data) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t n = data.size();
  total_ += n;
  if (buf_len_ > 0) {
    size_t take = std::min(n, sizeof buf_ - buf_len_);
    std::memcpy(buf_ + buf_len_, p, take);
    buf_len_ += take;
    p += take;
    n -= take;
    if (buf_len_ == sizeof buf_) {
      Blocks(buf_, 1);
      buf_len_ = 0;
    }
  }
  if (n >= 64) {
    Blocks(p, n / 64);
    p += n / 64 * 64;
    n %= 64;
  }
  if (n > 0) {
    std::memcpy(buf_, p, n);
    buf_len_ = n;
  }
}

std::array<uint8_t, 32> Sha256::Final() {
  uint64_t bits = total_ * 8;
  uint8_t pad = 0x80;
  Update(std::string_view(reinterpret_cast<const char*>(&pad), 1));
  uint8_t zero = 0;
  while (buf_len_ != 56) Update(std::string_view(reinterpret_cast<const char*>(&zero), 1));
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  Update(std::string_view(reinterpret_cast<const char*>(len), 8));
  std::array<uint8_t, 32> out;
  for (int i = 0; i < 8; ++i) {
    out[4 * i] = static_cast<uint8_t>(h_[i] >> 24);
    out[4 * i + 1] = static_cast<uint8_t>(h_[i] >> 16);
    out[4 * i + 2] = static_cast<uint8_t>(h_[i] >> 8);
    out[4 * i + 3] = static_cast<uint8_t>(h_[i]);
  }
  return out;
}

std::string Sha256::FinalHex() {
  const std::array<uint8_t, 32> d = Final();
  static const char kHex[] = "0123456789abcdef";
  std::string out(64, '0');
  for (int i = 0; i < 32; ++i) {
    out[2 * i] = kHex[d[i] >> 4];
    out[2 * i + 1] = kHex[d[i] & 15];
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  Sha256 s;
  s.Update(data);
  return s.FinalHex();
}

}  // namespace ward
