#include "common/heap.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace ward {

void PopulateHeap(size_t bytes) {
#if defined(__SANITIZE_ADDRESS__)
  (void)bytes;  // AddressSanitizer's allocator does not take memory from the brk heap
  return;
#endif
  // From now on the heap's top grows by the request plus `bytes` at once. Chunks below glibc's
  // mmap threshold are taken from the top until the break is `bytes` past the first one, then
  // freed: they merge back into the top (which a trim keeps at least `bytes` large), and the
  // pages from the first chunk to the break are the heap's free space.
  constexpr size_t kChunk = 64 << 10;
  constexpr int kMaxChunks = 32;
  mallopt(M_TOP_PAD, static_cast<int>(bytes));
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  void* chunks[kMaxChunks];
  int n = 0;
  uintptr_t start = 0;
  while (n < kMaxChunks) {
    void* c = malloc(kChunk);
    if (c == nullptr) break;
    chunks[n++] = c;
    if (start == 0) start = (reinterpret_cast<uintptr_t>(c) + page - 1) & ~(page - 1);
    // Unsigned: a chunk above the break (brk failed and malloc fell back to mmap) also ends
    // the loop, and nothing is populated below.
    if (reinterpret_cast<uintptr_t>(sbrk(0)) - start >= bytes) break;
  }
  while (n > 0) free(chunks[--n]);
  const uintptr_t end = reinterpret_cast<uintptr_t>(sbrk(0));
  if (start != 0 && end > start) {
    madvise(reinterpret_cast<void*>(start), end - start, MADV_POPULATE_WRITE);
  }
}

}  // namespace ward
