#include "kernels/cpu_topk.h"

#include <algorithm>

#include "kernels/simd.h"

namespace recbole::kernels {

namespace {

constexpr int64_t kBlock = 32;

// The first block of kBlock scores holding one above t (n_blocks when none): comparisons
// OR-ed as integers, which vectorises (a float max would not, without -ffast-math), so a block
// below the current threshold — nearly all of them once the top-K has filled — costs a few
// vector instructions.
RECBOLE_MULTIVERSION
int64_t first_block_above(const float* v, int64_t n_blocks, float t) {
  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    const float* b = v + blk * kBlock;
    int any = 0;
    for (int64_t j = 0; j < kBlock; ++j) any |= b[j] > t ? 1 : 0;
    if (any) return blk;
  }
  return n_blocks;
}

}  // namespace

void RowTopK::insert(float value, int32_t index) {
  // Sorted by value descending; a new value goes after the equal ones (which have lower ids).
  int pos = count_ < k_ ? count_ : k_ - 1;
  while (pos > 0 && vals_[pos - 1] < value) {
    if (pos < k_) {
      vals_[pos] = vals_[pos - 1];
      idx_[pos] = idx_[pos - 1];
    }
    --pos;
  }
  vals_[pos] = value;
  idx_[pos] = index;
  if (count_ < k_) ++count_;
}

void RowTopK::push(const float* v, int64_t n, int32_t base) {
  if (k_ <= 0) return;
  int64_t j = 0;
  const int64_t full_blocks = n / kBlock;
  while (j < full_blocks * kBlock) {
    const int64_t blk = first_block_above(v + j, full_blocks - j / kBlock, threshold());
    j += blk * kBlock;
    if (j >= full_blocks * kBlock) break;
    for (int64_t e = j; e < j + kBlock; ++e)
      if (v[e] > threshold()) insert(v[e], base + static_cast<int32_t>(e));
    j += kBlock;
  }
  for (; j < n; ++j)
    if (v[j] > threshold()) insert(v[j], base + static_cast<int32_t>(j));
}

const int32_t* mask_items(float* row, int32_t lo, int32_t hi, const int32_t* hist,
                          const int32_t* hist_end, const int32_t* keep, const int32_t* keep_end) {
  const int32_t* it = std::lower_bound(hist, hist_end, lo);
  for (; it != hist_end && *it < hi; ++it)
    if (!std::binary_search(keep, keep_end, *it)) row[*it - lo] = RowTopK::kNegInf;
  return it;
}

}  // namespace recbole::kernels
