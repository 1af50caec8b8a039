#pragma once
// The CPU allocator libtorch's tensors come from, with huge pages for large buffers.
//
// libtorch takes a CPU tensor's memory from glibc, which maps buffers of 32 MiB and more
// afresh (mmap) and unmaps them when freed. A training step whose autograd intermediates are
// that large (NAIS: ~330k (row, history item) pairs × 64 floats, ~84 MB each, a dozen per
// batch) faults every 4 KiB page of each one in again at every batch: on ml-100k that was
// 27.5 M page faults and 72 s of system time in a 61 s NAIS epoch. Faulted in as 2 MiB
// transparent huge pages the same buffers take 512× fewer faults (measured with glibc's own
// `glibc.malloc.hugetlb=1`: the epoch took 25 s, peak RSS unchanged).
//
// Advisory only: where the kernel has no transparent huge pages, or none are free, the pages
// come as before. No libtorch header here: the allocator is a detail of device_allocator.cpp.
#include <cstddef>

namespace recbole {

// Buffers at least this large are mapped afresh by glibc (its mmap threshold never exceeds
// 32 MiB on 64-bit), so they are untouched when libtorch receives them.
constexpr size_t kHugePageTensorBytes = size_t{32} << 20;

// From this call on, libtorch's CPU allocations go through a thin wrapper of the CPU allocator
// installed at the time: a buffer of at least kHugePageTensorBytes is advised MADV_HUGEPAGE
// before anything touches it; smaller ones, and every free, are unchanged. Idempotent and
// thread-safe; tensors allocated before the call keep their own deleter and are freed as before.
void use_huge_pages_for_large_cpu_tensors();

// Whether libtorch's current CPU allocator is that wrapper.
bool huge_pages_for_large_cpu_tensors_in_use();

}  // namespace recbole
