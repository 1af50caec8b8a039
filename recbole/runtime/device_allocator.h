#pragma once
// The CPU allocator libtorch's tensors come from: huge pages for large buffers, and large
// buffers kept for reuse instead of being unmapped.
//
// libtorch takes a CPU tensor's memory from glibc, which maps buffers of 32 MiB and more
// afresh (mmap) and unmaps them when freed. A training step whose autograd intermediates are
// that large (NAIS: ~330k (row, history item) pairs × 64 floats, ~84 MB each, a dozen per
// batch) faults every 4 KiB page of each one in again at every batch: on ml-100k that was
// 27.5 M page faults and 72 s of system time in a 61 s NAIS epoch. Faulted in as 2 MiB
// transparent huge pages the same buffers take 512× fewer faults (measured with glibc's own
// `glibc.malloc.hugetlb=1`: the epoch took 25 s, peak RSS unchanged), but the kernel still
// zeroes every fresh page: ~25 s of system time an epoch. So freed large buffers are kept (the
// trainer: within a batch) and handed to the next request of about their size, already faulted
// in, never zeroed again.
//
// The pages are advisory only: where the kernel has no transparent huge pages, or none are
// free, they come as ordinary pages. No libtorch header here: the allocator is a detail of
// device_allocator.cpp.
#include <cstddef>
#include <cstdint>

namespace recbole {

// Buffers at least this large are mapped afresh by glibc (its mmap threshold never exceeds
// 32 MiB on 64-bit), so they are untouched when libtorch receives them.
constexpr size_t kHugePageTensorBytes = size_t{32} << 20;

// From this call on, libtorch's CPU allocations go through a thin wrapper of the CPU allocator
// installed at the time. A buffer of at least kHugePageTensorBytes gets a capacity rounded up
// to whole 2 MiB pages; when freed it is kept, and a later request of at least 2/3 of its
// capacity takes it back. A fresh one is advised MADV_HUGEPAGE before anything touches it.
// The kept buffers never raise the large buffers' footprint: live plus kept stay within the
// most that was live at once since the last release_kept_large_cpu_buffers() (a request that
// finds no fit first frees kept buffers, smallest first). Smaller buffers, and their
// frees, are unchanged. Idempotent and thread-safe; tensors allocated before the call keep
// their own deleter and are freed as before. A reused buffer holds old contents, as malloc's.
void use_huge_pages_for_large_cpu_tensors();

// Frees the kept large buffers, and restarts the high-water mark from the live ones. Called
// between phases (each training batch, each evaluation), so that one phase's kept buffers do not
// sit beside another's small allocations. A no-op before the wrapper is installed.
void release_kept_large_cpu_buffers();

// Whether libtorch's current CPU allocator is that wrapper.
bool huge_pages_for_large_cpu_tensors_in_use();

// The wrapper's large buffers (bytes are capacities; all zero before it is installed).
struct LargeCpuBufferStats {
  size_t live_bytes = 0;        // held by tensors now
  size_t kept_bytes = 0;        // freed, kept for reuse
  size_t high_water_bytes = 0;  // the most live at once since the last release: live + kept
                                // never exceeds it
  uint64_t reused = 0;          // requests served from the kept buffers
  uint64_t fresh = 0;           // requests that allocated a new buffer
};
LargeCpuBufferStats large_cpu_buffer_stats();

}  // namespace recbole
