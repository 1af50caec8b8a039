#pragma once
// CPU kernels of the full-ranking evaluator: masking a user's history in a row of scores and a
// partial top-K that streams over a row (or over item tiles of a row) without sorting it.
// Plain float arrays in host memory; no libtorch.
//
// Order of the top-K: descending score, ties by ascending item id. Masked items (−inf) and NaN
// never enter it, so a row with fewer than K finite scores yields fewer than K items.
#include <cstdint>

namespace recbole::kernels {

// The K best (value, index) pairs seen so far for one row.
class RowTopK {
 public:
  // vals, idx: caller-owned arrays of k entries.
  RowTopK(int k, float* vals, int32_t* idx) : k_(k), vals_(vals), idx_(idx) {}

  // Offers scores v[0..n) for items base + 0 .. base + n − 1 (items in ascending order across
  // calls, so ties keep the lower id).
  void push(const float* v, int64_t n, int32_t base);

  int size() const { return count_; }
  // Threshold a new score must exceed to enter (−inf until k entries are held).
  float threshold() const { return count_ < k_ ? kNegInf : vals_[k_ - 1]; }

  static constexpr float kNegInf = -__builtin_inff();

 private:
  void insert(float value, int32_t index);

  int k_;
  float* vals_;
  int32_t* idx_;
  int count_ = 0;
};

// Sets row[item − lo] = −inf for every item of the sorted list [hist, hist_end) that lies in
// [lo, hi) and is not in the sorted list [keep, keep_end) (the split's own positives, which are
// never masked). Returns the first history entry ≥ hi, so tiles can be masked in order.
const int32_t* mask_items(float* row, int32_t lo, int32_t hi, const int32_t* hist,
                          const int32_t* hist_end, const int32_t* keep, const int32_t* keep_end);

}  // namespace recbole::kernels
