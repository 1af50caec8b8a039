#include "models/layers/dropout.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/simd.h"
#include "recbole/utils/splitmix.h"

namespace recbole::models::layers {

namespace {
// The stream of the innermost DropoutKeyScope on this thread, if any.
thread_local std::optional<uint64_t> t_key_stream;

uint64_t next_mask_key() {
  if (t_key_stream) return splitmix64_next(*t_key_stream);
  return draw_dropout_key();
}

// murmur3's 32-bit finaliser: a bijection that spreads every input bit over the output.
RECBOLE_INLINE uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6BU;
  h ^= h >> 13;
  h *= 0xC2B2AE35U;
  h ^= h >> 16;
  return h;
}

// m[i] = scale where element i's draw is below `threshold`, else 0. Element i's draw is a hash
// of (key, i) — two finaliser rounds in 32-bit lanes, with no state carried from one element to
// the next, so the loop vectorises (a serial 64-bit stream cost 16 % of a SASRec epoch).
RECBOLE_MULTIVERSION void fill_mask(float* m, int64_t n, uint64_t key, uint32_t threshold,
                                    float scale) {
  constexpr int64_t kSpan = int64_t{1} << 32;  // indices are 32-bit; each span has its own key
  for (int64_t start = 0; start < n; start += kSpan) {
    const int64_t len = std::min(n - start, kSpan);
    const auto k0 = static_cast<uint32_t>(key);
    const auto k1 = static_cast<uint32_t>(key >> 32) + static_cast<uint32_t>(start >> 32);
    float* out = m + start;
    for (int64_t i = 0; i < len; ++i)
      out[i] = fmix32(fmix32(static_cast<uint32_t>(i) ^ k0) + k1) < threshold ? scale : 0.0f;
  }
}
}  // namespace

uint64_t draw_dropout_key() {
  return static_cast<uint64_t>(
      torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kInt64).item<int64_t>());
}

DropoutKeyScope::DropoutKeyScope(uint64_t key) : previous_(t_key_stream) { t_key_stream = key; }

DropoutKeyScope::~DropoutKeyScope() { t_key_stream = previous_; }

bool fill_dropout_mask(float* m, int64_t count, double p, bool training) {
  if (!training || p <= 0.0) return false;
  if (p >= 1.0) {
    std::fill(m, m + count, 0.0f);
    return true;
  }
  // Element k is kept when its 32-bit draw is below (1 − p)·2³² (truncated: below 2³²).
  const auto threshold = static_cast<uint32_t>(std::min((1.0 - p) * 4294967296.0, 4294967295.0));
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  fill_mask(m, count, next_mask_key(), threshold, scale);
  return true;
}

torch::Tensor dropout_mask(torch::IntArrayRef sizes, double p, bool training) {
  if (!training || p <= 0.0) return {};
  torch::Tensor mask = torch::empty(sizes, torch::kFloat32);
  fill_dropout_mask(mask.data_ptr<float>(), mask.numel(), p, training);
  return mask;
}

torch::Tensor dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0.0) return x;
  if (!x.device().is_cpu()) return torch::dropout(x, p, training);
  if (p >= 1.0) return x * 0;
  return x * dropout_mask(x.sizes(), p, training).to(x.scalar_type());
}

}  // namespace recbole::models::layers
