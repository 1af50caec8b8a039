#include "models/layers/dropout.h"

#include <cstdint>
#include <limits>

#include "recbole/utils/splitmix.h"

namespace recbole::models::layers {

namespace {
// The stream of the innermost DropoutKeyScope on this thread, if any.
thread_local std::optional<uint64_t> t_key_stream;

uint64_t next_mask_key() {
  if (t_key_stream) return splitmix64_next(*t_key_stream);
  return draw_dropout_key();
}
}  // namespace

uint64_t draw_dropout_key() {
  return static_cast<uint64_t>(
      torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kInt64).item<int64_t>());
}

DropoutKeyScope::DropoutKeyScope(uint64_t key) : previous_(t_key_stream) { t_key_stream = key; }

DropoutKeyScope::~DropoutKeyScope() { t_key_stream = previous_; }

torch::Tensor dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0.0) return x;
  if (!x.device().is_cpu()) return torch::dropout(x, p, training);
  if (p >= 1.0) return x * 0;
  uint64_t state = next_mask_key();
  // Element k is kept when its 32-bit draw is below (1 − p)·2³².
  const auto threshold = static_cast<uint64_t>((1.0 - p) * 4294967296.0);
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  torch::Tensor mask = torch::empty(x.sizes(), x.options().dtype(torch::kFloat32));
  float* m = mask.data_ptr<float>();
  const int64_t n = mask.numel();
  for (int64_t k = 0; k < n; k += 2) {
    const uint64_t word = splitmix64_next(state);
    m[k] = (word & 0xFFFFFFFFULL) < threshold ? scale : 0.0f;
    if (k + 1 < n) m[k + 1] = (word >> 32) < threshold ? scale : 0.0f;
  }
  return x * mask.to(x.scalar_type());
}

}  // namespace recbole::models::layers
