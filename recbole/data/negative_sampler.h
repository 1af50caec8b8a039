#pragma once
// Negative sampling for training, as RecBole's sampler does it: for a user, draw an item id in
// [1, n_items) that the user does not hold in `exclude` (a draw inside it is redrawn until none
// collides), uniformly over every real item or by popularity^alpha over the items with a
// positive count, with replacement (a batch may repeat a negative).
//
// Deliberate differences from RecBole: popularity is counted on the training split only
// (RecBole counts train+valid+test, leaking held-out popularity into training); the random
// stream is this object's own (seeded), not a global one.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "recbole/data/interaction_matrix.h"

namespace recbole::data {

// A fast 64-bit generator (splitmix64-seeded xoshiro256**): every random stream in training is
// one of these, seeded from the config's seed, so a run repeats exactly on the CPU.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  // Uniform in [0, n) by multiply-shift (bias below n / 2^64).
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  double uniform() { return (next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t s_[4];
};

class NegativeSampler {
 public:
  // distribution: "uniform" or "popularity"; item_counts: [n_items] (popularity only).
  // Throws DataError when some user already holds every item (nothing left to sample).
  // bitmap_limit_bytes: the largest dense user × item bitmap to build (tests set 0 to take the
  // per-row filter path that large datasets use; both draw the same negatives).
  NegativeSampler(const InteractionMatrix& exclude, const std::string& distribution, double alpha,
                  const std::vector<int64_t>& item_counts,
                  uint64_t bitmap_limit_bytes = uint64_t(64) << 20);

  // One negative item for `user`, never in the user's excluded row.
  int32_t sample(int32_t user, Rng& rng) const;

  // Prefetches what sample() will read for `user`, in two stages for a software pipeline (the
  // second reads what the first fetched): its row bounds, then its row filter (or its row of
  // the dense bitmap). A loop drawing for many users calls them some rows ahead of the draws,
  // so that their cache misses overlap instead of being waited for one after another. Change
  // nothing else.
  void prefetch_bounds(int64_t user) const {
    if (bits_.empty()) __builtin_prefetch(exclude_->indptr().data() + user);
  }
  void prefetch_filter(int64_t user) const;

 private:
  int32_t draw(Rng& rng) const;
  void build_filter();
  bool excluded(int32_t user, int32_t item) const {
    if (bits_.empty()) return maybe_in_row(user, item) && exclude_->contains(user, item);
    const uint64_t k = static_cast<uint64_t>(user) * static_cast<uint64_t>(n_items_) + item;
    return (bits_[k >> 6] >> (k & 63)) & 1;
  }
  // The row filter's two bit positions for `item` in a row filter of `bits` bits.
  static void filter_positions(int32_t item, uint64_t bits, uint64_t& a, uint64_t& b) {
    const uint32_t x = static_cast<uint32_t>(item);
    a = (static_cast<uint64_t>(x * 0x9E3779B1u) * bits) >> 32;
    b = (static_cast<uint64_t>(x * 0x85EBCA77u + 0x165667B1u) * bits) >> 32;
  }
  // False when `item` is certainly not in the user's row (the filter has a clear bit for it).
  bool maybe_in_row(int32_t user, int32_t item) const {
    const uint64_t first = static_cast<uint64_t>(exclude_->indptr()[user]) * kFilterBitsPerItem;
    const uint64_t bits = static_cast<uint64_t>(exclude_->row_size(user)) * kFilterBitsPerItem;
    if (bits == 0) return false;
    uint64_t a, b;
    filter_positions(item, bits, a, b);
    a += first;
    b += first;
    return ((filter_[a >> 6] >> (a & 63)) & (filter_[b >> 6] >> (b & 63)) & 1) != 0;
  }

  const InteractionMatrix* exclude_;
  // A dense user × item bitmap of `exclude` when it is small (≤ 64 MiB): O(1) rejection tests
  // instead of a binary search per draw. Empty for large datasets.
  std::vector<uint64_t> bits_;
  // Otherwise a Bloom filter per row (two hashes, kFilterBitsPerItem bits per item of the row,
  // row u's bits at [indptr[u], indptr[u + 1]) · kFilterBitsPerItem): a draw the filter rules
  // out (~98.6% of draws) is accepted without the binary search in the row, and the filter of a
  // typical row is a few cache lines that can be prefetched before the draw.
  static constexpr uint64_t kFilterBitsPerItem = 16;
  std::vector<uint64_t> filter_;
  bool popularity_ = false;
  int64_t n_items_ = 0;
  // Vose alias table over item ids (popularity only).
  std::vector<double> prob_;
  std::vector<int32_t> alias_;
};

}  // namespace recbole::data
