#include "recbole/utils/device_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <cstring>
#include <mutex>

#include "recbole/utils/huge_pages.h"

namespace recbole {
namespace {

// Wraps the allocator that was installed (libtorch's default, or a profiling one): it allocates
// and frees exactly as before, and only advises the kernel on large buffers before their first
// touch.
class HugePageCPUAllocator final : public c10::Allocator {
 public:
  explicit HugePageCPUAllocator(c10::Allocator* base) : base_(base) {}

  // libtorch 1.13 declares allocate() const and later versions non-const, and only versions
  // from 2.3 on have copy_data(): each declaration overrides the base's where the base has it
  // and is a plain member where it does not, so the class builds against both.
  c10::DataPtr allocate(size_t bytes) const { return advised(base_->allocate(bytes), bytes); }
  c10::DataPtr allocate(size_t bytes) { return advised(base_->allocate(bytes), bytes); }
  void copy_data(void* dest, const void* src, size_t count) const { std::memcpy(dest, src, count); }
  c10::DeleterFnPtr raw_deleter() const override { return base_->raw_deleter(); }

 private:
  static c10::DataPtr advised(c10::DataPtr data, size_t bytes) {
    if (bytes >= kHugePageTensorBytes && data.get() != nullptr)
      advise_huge_pages(data.get(), bytes);
    return data;
  }

  c10::Allocator* base_;
};

HugePageCPUAllocator* installed = nullptr;

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

}  // namespace recbole
