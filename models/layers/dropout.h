#pragma once
// Inverted dropout with a cheap CPU mask. As torch::dropout: in training each element is kept
// with probability 1 − p and scaled by 1 / (1 − p), the rest are 0; outside training (or with
// p = 0) x is returned as it is. On the CPU the mask comes from a SplitMix64 stream keyed by one
// word of libtorch's CPU generator, so a seed repeats the masks and a resumed run (whose
// checkpoint restores the generator) too. Why: libtorch's CPU Bernoulli kernel draws a 64-bit
// word per element through its generator (~14 % of a SimpleX training step in perf); this
// stream takes one 32-bit half of a SplitMix64 output per element, and SimpleX's epoch became
// ~8 % shorter (4 alternating runs), NGCF's ~12 %. On other devices: torch::dropout.
#include <torch/torch.h>

namespace recbole::models::layers {

// x: any shape, float32 or float64, on any device; p in [0, 1]. Gradient: the same mask.
torch::Tensor dropout(const torch::Tensor& x, double p, bool training);

}  // namespace recbole::models::layers
