#include "common/heap.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace ward {
namespace {

// How many of the pages of [addr, addr + len) are present (mincore).
size_t PresentPages(const void* addr, size_t len) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> present(len / page);
  if (mincore(const_cast<void*>(addr), len, present.data()) != 0) return SIZE_MAX;
  size_t n = 0;
  for (unsigned char p : present) n += p & 1;
  return n;
}

TEST(HeapTest, TheHeapsFreeSpaceIsPresentAfterPopulating) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator does not take memory from the brk heap";
#endif
  constexpr size_t kBytes = 256 << 10;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Control: an anonymous mapping nothing touched has no page present, one that was written has
  // them all, so mincore tells the two apart here.
  void* fresh = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(fresh, MAP_FAILED);
  EXPECT_EQ(PresentPages(fresh, kBytes), 0u);
  static_cast<char*>(fresh)[0] = 1;
  EXPECT_EQ(PresentPages(fresh, kBytes), 1u);
  munmap(fresh, kBytes);

  PopulateHeap(kBytes);
  const uintptr_t brk = reinterpret_cast<uintptr_t>(sbrk(0));
  EXPECT_EQ(PresentPages(reinterpret_cast<void*>(brk - kBytes), kBytes), kBytes / page);
  // That space is what the next allocations get: they stay below the break, which has not moved.
  std::vector<void*> blocks;
  for (size_t i = 0; i < kBytes / 2 / 4096; ++i) blocks.push_back(malloc(4000));
  for (void* b : blocks) {
    ASSERT_NE(b, nullptr);
    EXPECT_LT(reinterpret_cast<uintptr_t>(b), brk);
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(sbrk(0)), brk);
  for (void* b : blocks) free(b);
}

}  // namespace
}  // namespace ward
