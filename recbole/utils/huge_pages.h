#pragma once
// Transparent huge pages (2 MiB) for the big arrays read and written in random order: the
// training tables, the shuffled training pairs, the split's scratch arrays. With 4 KiB pages
// nearly every random access to an array of hundreds of MiB also misses the TLB, and in a VM
// each miss is a two-level page walk: measured here, a random 256-byte read-modify-write over
// 1 GiB took 58 ns per row on 4 KiB pages and 32 ns on huge pages (2 threads).
//
// Everything here is advisory: where the kernel has no transparent huge pages (or they are
// switched off), the same memory is used on ordinary pages and only the speed differs.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

namespace recbole {

constexpr size_t kHugePageBytes = size_t{2} << 20;

// bytes rounded up to whole huge pages.
constexpr size_t whole_huge_pages(size_t bytes) {
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

// Asks for huge pages on the whole 2 MiB pages inside [data, data + bytes), for memory not yet
// touched (pages faulted in later come as huge pages).
void advise_huge_pages(void* data, size_t bytes);

// The same for memory already written: also asks the kernel to collapse the pages now
// (MADV_COLLAPSE, Linux 6.1+; older kernels leave it to khugepaged, in the background).
// Contents are unchanged. Not while another thread uses the memory.
void collapse_to_huge_pages(void* data, size_t bytes);

// v.resize(size) (value-initialised elements) of an empty vector, on huge pages where possible.
template <class T>
void resize_on_huge_pages(std::vector<T>& v, size_t size) {
  v.reserve(size);
  advise_huge_pages(v.data(), size * sizeof(T));
  v.resize(size);
}

// An uninitialised array of n T (trivial types) on huge pages where possible: no zeroing pass,
// unlike a std::vector.
template <class T>
class HugeArray {
 public:
  HugeArray() = default;
  explicit HugeArray(size_t n) { reset(n); }
  ~HugeArray() { std::free(data_); }
  HugeArray(const HugeArray&) = delete;
  HugeArray& operator=(const HugeArray&) = delete;
  HugeArray(HugeArray&& o) noexcept : data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
  }
  HugeArray& operator=(HugeArray&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }

  // Replaces the contents with n uninitialised elements.
  void reset(size_t n) {
    std::free(data_);
    data_ = nullptr;
    size_ = n;
    const size_t bytes = std::max<size_t>(n * sizeof(T), 1);
    if (bytes < kHugePageBytes) {
      data_ = static_cast<T*>(std::malloc(bytes));
    } else {
      const size_t rounded = whole_huge_pages(bytes);
      data_ = static_cast<T*>(std::aligned_alloc(kHugePageBytes, rounded));
      if (data_ != nullptr) advise_huge_pages(data_, rounded);
    }
    if (data_ == nullptr) throw std::bad_alloc();
  }
  void release() {
    std::free(data_);
    data_ = nullptr;
    size_ = 0;
  }

  T* data() const { return data_; }
  size_t size() const { return size_; }
  T& operator[](size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace recbole
