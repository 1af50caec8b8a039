// The huge-page wrapper of libtorch's CPU allocator: tensors of every size keep what is written
// to them and are freed as before; a large buffer's pages come as huge pages where the kernel
// offers them on request (transparent_hugepage "always" or "madvise").
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include "recbole/runtime/device_allocator.h"
#include "recbole/utils/huge_pages.h"

namespace {

// The kernel's THP mode: the bracketed word of /sys/kernel/mm/transparent_hugepage/enabled.
std::string thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  const size_t open = line.find('['), close = line.find(']');
  return open == std::string::npos || close == std::string::npos
             ? ""
             : line.substr(open + 1, close - open - 1);
}

// AnonHugePages (kB) of the mapping of /proc/self/smaps that contains `address`; -1 if none.
int64_t anon_huge_kb_at(const void* address) {
  std::ifstream in("/proc/self/smaps");
  const auto a = reinterpret_cast<uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    unsigned long long begin = 0, end = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %4s", &begin, &end, perms) == 3) {  // a mapping
      inside = a >= begin && a < end;
      continue;
    }
    long long kb = 0;
    if (inside && std::sscanf(line.c_str(), "AnonHugePages: %lld kB", &kb) == 1) return kb;
  }
  return -1;
}

}  // namespace

TEST_CASE("the huge-page CPU allocator keeps tensors intact and backs large ones by huge pages",
          "[utils]") {
  recbole::use_huge_pages_for_large_cpu_tensors();
  recbole::use_huge_pages_for_large_cpu_tensors();  // idempotent
  REQUIRE(recbole::huge_pages_for_large_cpu_tensors_in_use());

  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{48} << 18}) {  // to 48 MiB
    torch::Tensor t = torch::arange(n, torch::kInt32);
    REQUIRE(t.numel() == n);
    if (n > 0) REQUIRE(t[n - 1].item<int32_t>() == n - 1);
    REQUIRE(t.sum().item<int64_t>() == n * (n - 1) / 2);
  }
  // 64 MiB written once: each huge page found in its mapping was granted at the first touch.
  torch::Tensor big = torch::ones({int64_t{16} << 20}, torch::kFloat32);
  REQUIRE(big.sum().item<double>() == static_cast<double>(int64_t{16} << 20));
  const std::string mode = thp_mode();
  if (mode != "always" && mode != "madvise") {
    WARN("transparent huge pages are '" << mode << "' here: huge-page backing not checked");
    return;
  }
  // The advice covers the whole 2 MiB pages inside the buffer, a mapping of its own: look there.
  const uintptr_t mask = recbole::kHugePageBytes - 1;
  const uintptr_t first_whole = (reinterpret_cast<uintptr_t>(big.data_ptr()) + mask) & ~mask;
  CHECK(anon_huge_kb_at(reinterpret_cast<const void*>(first_whole)) > 0);
}

namespace {

// live + kept large buffers never exceed the most that was live at once.
bool footprint_within_high_water() {
  const recbole::LargeCpuBufferStats s = recbole::large_cpu_buffer_stats();
  return s.live_bytes + s.kept_bytes <= s.high_water_bytes;
}

torch::Tensor large_floats(int64_t mib) { return torch::empty({mib << 18}, torch::kFloat32); }

}  // namespace

TEST_CASE("the CPU allocator reuses freed large buffers without raising the footprint", "[utils]") {
  recbole::use_huge_pages_for_large_cpu_tensors();
  const recbole::LargeCpuBufferStats before = recbole::large_cpu_buffer_stats();

  void* first = nullptr;
  {
    torch::Tensor a = large_floats(40);
    first = a.data_ptr();
    CHECK(recbole::large_cpu_buffer_stats().live_bytes >= before.live_bytes + (size_t{40} << 20));
  }
  CHECK(recbole::large_cpu_buffer_stats().kept_bytes >= size_t{40} << 20);
  // A request of about the same size takes the kept buffer back, already mapped.
  const uint64_t reused = recbole::large_cpu_buffer_stats().reused;
  torch::Tensor b = large_floats(36);
  CHECK(b.data_ptr() == first);
  CHECK(recbole::large_cpu_buffer_stats().reused == reused + 1);

  // Buffers live at the same time never share memory, and keep what is written to them.
  torch::Tensor c = large_floats(36);
  torch::Tensor d = large_floats(48);
  CHECK(c.data_ptr() != b.data_ptr());
  b.fill_(1.0f);
  c.fill_(2.0f);
  d.fill_(3.0f);
  CHECK(b.sum().item<double>() == static_cast<double>(b.numel()));
  CHECK(c.sum().item<double>() == 2.0 * static_cast<double>(c.numel()));
  CHECK(d.sum().item<double>() == 3.0 * static_cast<double>(d.numel()));
  CHECK(footprint_within_high_water());

  // Sizes that wander, as a batch's intermediates do: the footprint stays bounded.
  b = c = d = torch::Tensor();
  std::vector<torch::Tensor> held;
  for (int step = 0; step < 40; ++step) {
    const int64_t mib = 32 + (step * 37) % 90;  // 32 … 121 MiB
    held.push_back(large_floats(mib));
    held.back()[0] = static_cast<float>(step);
    if (held.size() > 3) held.erase(held.begin() + (step % 3));
    CHECK(footprint_within_high_water());
  }
  for (const torch::Tensor& t : held) CHECK(t.numel() >= int64_t{32} << 18);
  held.clear();
  CHECK(footprint_within_high_water());

  // A kept buffer much larger than a request is left for a larger one.
  torch::Tensor huge = large_floats(120);
  void* huge_data = huge.data_ptr();
  huge = torch::Tensor();
  torch::Tensor small = large_floats(33);
  CHECK(small.data_ptr() != huge_data);

  // raw_allocate / raw_deallocate of either size go back where they came from.
  c10::Allocator* allocator = c10::GetCPUAllocator();
  for (size_t bytes : {size_t{4096}, size_t{40} << 20}) {
    void* raw = allocator->raw_allocate(bytes);
    REQUIRE(raw != nullptr);
    std::memset(raw, 7, bytes);
    allocator->raw_deallocate(raw);
  }
  CHECK(footprint_within_high_water());

  // Between phases the kept buffers are freed, and the mark restarts from the live ones.
  recbole::release_kept_large_cpu_buffers();
  const recbole::LargeCpuBufferStats released = recbole::large_cpu_buffer_stats();
  CHECK(released.kept_bytes == 0);
  CHECK(released.high_water_bytes == released.live_bytes);
  const uint64_t fresh = released.fresh;
  { torch::Tensor again = large_floats(40); }
  CHECK(recbole::large_cpu_buffer_stats().fresh == fresh + 1);
}
