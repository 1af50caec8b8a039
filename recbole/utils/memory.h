#pragma once
// Process memory readings for benchmarks and logs (Linux: /proc/self/status, else getrusage).
#include <cstdint>

namespace recbole::memory {

// Peak resident set size of this process so far, in bytes (VmHWM; ru_maxrss as a fallback).
int64_t peak_rss_bytes();

// Current resident set size in bytes (VmRSS); 0 where it cannot be read.
int64_t current_rss_bytes();

// For training loops that free and allocate activation-sized buffers (0.1–30 MB) at every op,
// as libtorch's autograd does: glibc serves the first ones with mmap and gives trimmed memory
// back, so each reuse faults its pages in again (~20% of an NGCF epoch on ml-100k). After this
// call buffers up to 32 MB (glibc's own dynamic ceiling) come from the heap, and up to 128 MB of
// freed heap stays mapped. A no-op outside glibc. Larger buffers:
// recbole/runtime/device_allocator.h.
void keep_freed_buffers_mapped();

}  // namespace recbole::memory
