// The huge-page wrapper of libtorch's CPU allocator: tensors of every size keep what is written
// to them and are freed as before; a large buffer's pages come as huge pages where the kernel
// offers them on request (transparent_hugepage "always" or "madvise").
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include <torch/torch.h>

#include "recbole/utils/device_allocator.h"
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
