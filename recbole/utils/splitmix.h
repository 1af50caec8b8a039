#pragma once
// SplitMix64 (Steele, Lea, Flood 2014): the counter-based generator that seeds and keys every
// random stream of recbole-cpp which must not depend on thread count or order — the batcher's
// shuffle, the negative sampler's state, the models' per-(seed, epoch, batch) streams, the
// hyper-parameter search. Header-only, no libtorch.
#include <cstdint>

namespace recbole {

// The golden-ratio increment of the SplitMix64 counter.
inline constexpr uint64_t kSplitMixGamma = 0x9E3779B97F4A7C15ULL;

// SplitMix64's finaliser: a bijection of 64-bit words that spreads every input bit over the
// output (neighbouring inputs give unrelated outputs).
inline uint64_t splitmix64_finalize(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The next output of the generator whose counter is `state` (advanced).
inline uint64_t splitmix64_next(uint64_t& state) {
  state += kSplitMixGamma;
  return splitmix64_finalize(state);
}

// The first output of a generator started at `x`: a hash of x, for keys such as
// (seed, epoch, batch) combined into one word.
inline uint64_t splitmix64_hash(uint64_t x) { return splitmix64_finalize(x + kSplitMixGamma); }

}  // namespace recbole
