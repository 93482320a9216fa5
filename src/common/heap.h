// The heap's pages, made present in one call rather than one page fault at a time.
#pragma once

#include <cstddef>

namespace ward {

// Grows the main malloc heap so that at least `bytes` of free space follow what is in use, and
// makes those pages present and writable now with one madvise(MADV_POPULATE_WRITE) (Linux 5.14;
// a no-op before). A short-lived process that is about to allocate that much saves a page fault
// per page, which on a virtual machine costs 10-60 µs each; populating costs little more than
// zeroing the pages. Later growth of the heap keeps that much slack (M_TOP_PAD), unpopulated.
// Best effort.
void PopulateHeap(size_t bytes);

}  // namespace ward
