#include "recbole/runtime/device_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "recbole/utils/huge_pages.h"

namespace recbole {
namespace {

// The large buffers: those held by tensors (by address) and those freed and kept (by
// capacity). Each is the base allocator's own DataPtr, so releasing one frees it as the base
// would have.
class LargeBuffers {
 public:
  explicit LargeBuffers(c10::Allocator* base) : base_(base) {}

  // The data of a buffer of at least `bytes` (>= kHugePageTensorBytes), held until give_back.
  void* take(size_t bytes) {
    const size_t capacity = whole_huge_pages(bytes);
    std::vector<c10::DataPtr> released;  // unmapped after the lock is dropped
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest kept buffer that fits, unless it would waste more than a third of itself.
    auto fit = kept_.lower_bound(capacity);
    if (fit != kept_.end() && fit->first <= capacity + capacity / 2) {
      void* data = fit->second.get();
      stats_.kept_bytes -= fit->first;
      hold(data, fit->first, std::move(fit->second));
      kept_.erase(fit);
      ++stats_.reused;
      return data;
    }
    // Live + kept + this one may not exceed what plain allocation would reach now.
    const size_t ceiling = std::max(stats_.high_water_bytes, stats_.live_bytes + capacity);
    while (!kept_.empty() && stats_.live_bytes + stats_.kept_bytes + capacity > ceiling) {
      stats_.kept_bytes -= kept_.begin()->first;
      released.push_back(std::move(kept_.begin()->second));
      kept_.erase(kept_.begin());
    }
    c10::DataPtr fresh = base_->allocate(capacity);
    void* data = fresh.get();
    advise_huge_pages(data, capacity);  // before the first touch
    hold(data, capacity, std::move(fresh));
    ++stats_.fresh;
    return data;
  }

  // Keeps a buffer that take() handed out; false for any other address.
  bool give_back(void* data) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(data);
    if (it == live_.end()) return false;
    const size_t capacity = it->second.capacity;
    stats_.live_bytes -= capacity;
    stats_.kept_bytes += capacity;
    kept_.emplace(capacity, std::move(it->second.buffer));
    live_.erase(it);
    return true;
  }

  // Frees the kept buffers; the high-water mark restarts from what is live now.
  void release_kept() {
    std::multimap<size_t, c10::DataPtr> released;  // unmapped after the lock is dropped
    std::lock_guard<std::mutex> lock(mutex_);
    released.swap(kept_);
    stats_.kept_bytes = 0;
    stats_.high_water_bytes = stats_.live_bytes;
  }

  LargeCpuBufferStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  struct Held {
    c10::DataPtr buffer;
    size_t capacity;
  };

  void hold(void* data, size_t capacity, c10::DataPtr buffer) {
    live_.emplace(data, Held{std::move(buffer), capacity});
    stats_.live_bytes += capacity;
    stats_.high_water_bytes = std::max(stats_.high_water_bytes, stats_.live_bytes);
  }

  c10::Allocator* base_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Held> live_;
  std::multimap<size_t, c10::DataPtr> kept_;
  LargeCpuBufferStats stats_;
};

// Wraps the allocator that was installed (libtorch's default, or a profiling one): small
// buffers come from it and go back to it unchanged; large ones go through LargeBuffers.
class HugePageCPUAllocator final : public c10::Allocator {
 public:
  explicit HugePageCPUAllocator(c10::Allocator* base) : base_(base), large_(base) {}

  // libtorch 1.13 declares allocate() const and later versions non-const, and only versions
  // from 2.3 on have copy_data(): each declaration overrides the base's where the base has it
  // and is a plain member where it does not, so the class builds against both.
  c10::DataPtr allocate(size_t bytes) const { return allocated(bytes); }
  c10::DataPtr allocate(size_t bytes) { return allocated(bytes); }
  void copy_data(void* dest, const void* src, size_t count) const { std::memcpy(dest, src, count); }
  // raw_allocate() hands out a DataPtr's context: either kind comes back through release().
  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  LargeCpuBufferStats stats() const { return large_.stats(); }
  void release_kept() const { large_.release_kept(); }

 private:
  c10::DataPtr allocated(size_t bytes) const {
    if (bytes < kHugePageTensorBytes) return base_->allocate(bytes);
    void* data = large_.take(bytes);
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }

  static void release(void* data);

  c10::Allocator* base_;
  mutable LargeBuffers large_;
};

HugePageCPUAllocator* installed = nullptr;

void HugePageCPUAllocator::release(void* data) {
  if (data == nullptr || installed->large_.give_back(data)) return;
  if (c10::DeleterFnPtr base_delete = installed->base_->raw_deleter()) base_delete(data);
}

}  // namespace

void use_huge_pages_for_large_cpu_tensors() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Never freed: tensors alive at exit may still reach it through their storage.
    installed = new HugePageCPUAllocator(c10::GetCPUAllocator());
    // Above the default's priority 0, so a later registration at 0 does not undo it.
    c10::SetCPUAllocator(installed, /*priority=*/1);
  });
}

bool huge_pages_for_large_cpu_tensors_in_use() {
  return installed != nullptr && c10::GetCPUAllocator() == installed;
}

void release_kept_large_cpu_buffers() {
  if (installed != nullptr) installed->release_kept();
}

LargeCpuBufferStats large_cpu_buffer_stats() {
  return installed == nullptr ? LargeCpuBufferStats{} : installed->stats();
}

}  // namespace recbole
