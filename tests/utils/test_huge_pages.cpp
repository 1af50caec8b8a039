// Huge-page helpers: advisory only, so what is tested is that memory handed to them keeps its
// contents and sizes, small and large, whatever the kernel decides.
#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>
#include <vector>

#include "recbole/utils/huge_pages.h"

using recbole::HugeArray;

TEST_CASE("collapse_to_huge_pages keeps the contents of memory already written", "[utils]") {
  // 9 MiB + a few bytes, at whatever alignment malloc gives: the whole huge pages inside are
  // collapsed, the ragged ends left alone.
  std::vector<uint32_t> v((size_t{9} << 20) / 4 + 3);
  std::iota(v.begin(), v.end(), 7u);
  recbole::collapse_to_huge_pages(v.data(), v.size() * sizeof(uint32_t));
  for (size_t i = 0; i < v.size(); i += 4099) REQUIRE(v[i] == 7u + i);
  REQUIRE(v.back() == 7u + (v.size() - 1));
  std::vector<uint32_t> small(10, 5);
  recbole::collapse_to_huge_pages(small.data(), small.size() * sizeof(uint32_t));  // no page inside
  REQUIRE(small == std::vector<uint32_t>(10, 5));
}

TEST_CASE("resize_on_huge_pages value-initialises, HugeArray holds what is written", "[utils]") {
  std::vector<double> v;
  recbole::resize_on_huge_pages(v, size_t{3} << 20);
  REQUIRE(v.size() == size_t{3} << 20);
  REQUIRE(v.front() == 0.0);
  REQUIRE(v.back() == 0.0);

  for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{5} << 20}) {
    HugeArray<int64_t> a(n);
    REQUIRE(a.size() == n);
    for (size_t i = 0; i < n; ++i) a[i] = static_cast<int64_t>(i) * 3;
    for (size_t i = 0; i < n; i += 997) REQUIRE(a[i] == static_cast<int64_t>(i) * 3);
    HugeArray<int64_t> moved(std::move(a));
    REQUIRE(moved.size() == n);
    if (n > 0) REQUIRE(moved[n - 1] == static_cast<int64_t>(n - 1) * 3);
  }
}
