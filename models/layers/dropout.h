#pragma once
// Inverted dropout with a cheap CPU mask. As torch::dropout: in training each element is kept
// with probability 1 − p and scaled by 1 / (1 − p), the rest are 0; outside training (or with
// p = 0) x is returned as it is. On the CPU element i's draw is a 32-bit hash of (key, i), the
// key one word of libtorch's CPU generator per call, so a seed repeats the masks and a resumed
// run (whose checkpoint restores the generator) too. Why: libtorch's CPU Bernoulli kernel draws
// a 64-bit word per element through its generator (~14 % of a SimpleX training step in perf);
// a serial SplitMix64 stream in its place made SimpleX's epoch ~8 % and NGCF's ~12 % shorter,
// yet still cost 16 % of a SASRec epoch; the hash has no serial state and vectorises. On other
// devices: torch::dropout.
//
// A DropoutKeyScope replaces libtorch's generator on its thread: work split over threads (a
// batch's parts, layers::backward_parts) keys each part by a word drawn in order beforehand, so
// the masks do not depend on which thread runs a part or when.
#include <torch/torch.h>

#include <cstdint>
#include <optional>

namespace recbole::models::layers {

// x: any shape, float32 or float64, on any device; p in [0, 1]. Gradient: the same mask.
torch::Tensor dropout(const torch::Tensor& x, double p, bool training);

// The CPU mask that dropout(x, p, true) multiplies x by, for an x of these sizes: float32, each
// element 1 / (1 − p) or 0, drawn as dropout draws it (one key; all zeros and no key when
// p ≥ 1). Undefined when !training or p ≤ 0 (nothing dropped). For fused CPU kernels that apply
// the mask inside their own pass.
torch::Tensor dropout_mask(torch::IntArrayRef sizes, double p, bool training);

// dropout_mask's values written into m[0, count) (float32): the same draw and key. False, with
// nothing written and no key drawn, when nothing is dropped (!training or p ≤ 0). For kernels
// that keep their mask buffers between batches.
bool fill_dropout_mask(float* m, int64_t count, double p, bool training);

// One word of libtorch's default CPU generator (advances it): a key for a DropoutKeyScope.
uint64_t draw_dropout_key();

// While alive, layers::dropout on the constructing thread keys its masks from a SplitMix64
// stream started at `key` (one output per call) instead of libtorch's generator. Nests; must be
// destroyed on the thread that made it.
class DropoutKeyScope {
 public:
  explicit DropoutKeyScope(uint64_t key);
  ~DropoutKeyScope();
  DropoutKeyScope(const DropoutKeyScope&) = delete;
  DropoutKeyScope& operator=(const DropoutKeyScope&) = delete;

 private:
  std::optional<uint64_t> previous_;
};

}  // namespace recbole::models::layers
