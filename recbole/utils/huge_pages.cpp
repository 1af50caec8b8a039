#include "recbole/utils/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace recbole {

namespace {

// The whole huge pages inside [data, data + bytes): [begin, end), empty when there are none.
void huge_interior(void* data, size_t bytes, uintptr_t& begin, uintptr_t& end) {
  constexpr uintptr_t kMask = kHugePageBytes - 1;
  begin = (reinterpret_cast<uintptr_t>(data) + kMask) & ~kMask;
  end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~kMask;
}

}  // namespace

void advise_huge_pages(void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  uintptr_t begin, end;
  huge_interior(data, bytes, begin, end);
  if (begin < end) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

void collapse_to_huge_pages(void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  uintptr_t begin, end;
  huge_interior(data, bytes, begin, end);
  if (begin >= end) return;
  madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  constexpr int kCollapse = 25;  // MADV_COLLAPSE; older headers lack the name
  madvise(reinterpret_cast<void*>(begin), end - begin, kCollapse);  // EINVAL before 6.1: fine
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace recbole
