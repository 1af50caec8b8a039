#pragma once
// Negative sampling for training (RecBole §4.1): for a user, draw an item id in [1, n_items)
// that the user does not hold in `exclude`, uniformly or by popularity^alpha, with replacement.
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
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }
  double uniform() { return (next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t s_[4];
};

class NegativeSampler {
 public:
  // distribution: "uniform" or "popularity"; item_counts: [n_items] (popularity only).
  // Throws DataError when some user already holds every item (nothing left to sample).
  NegativeSampler(const InteractionMatrix& exclude, const std::string& distribution, double alpha,
                  const std::vector<int64_t>& item_counts);

  // One negative item for `user`, never in the user's excluded row.
  int32_t sample(int32_t user, Rng& rng) const;

  // Prefetches what sample() will read for these users (their row bounds, then the first
  // probes of the binary search in their rows), so that a chunk of draws waits for its cache
  // misses together rather than one after another. Changes nothing else.
  void prefetch(const int64_t* users, int64_t n) const;

 private:
  int32_t draw(Rng& rng) const;
  bool excluded(int32_t user, int32_t item) const {
    if (bits_.empty()) return exclude_->contains(user, item);
    const uint64_t k = static_cast<uint64_t>(user) * static_cast<uint64_t>(n_items_) + item;
    return (bits_[k >> 6] >> (k & 63)) & 1;
  }

  const InteractionMatrix* exclude_;
  // A dense user × item bitmap of `exclude` when it is small (≤ 64 MiB): O(1) rejection tests
  // instead of a binary search per draw. Empty for large datasets.
  std::vector<uint64_t> bits_;
  bool popularity_ = false;
  int64_t n_items_ = 0;
  // Vose alias table over item ids (popularity only).
  std::vector<double> prob_;
  std::vector<int32_t> alias_;
};

}  // namespace recbole::data
