#pragma once
// The per-row updates of torch's optimizers on runs of float32 elements, each in one pass: what
// the fused Adam optimizer (trainer/fused_adam.h) and BPR's fused step (kernels/bpr_step.h)
// share. Header-only, no libtorch; call them from a RECBOLE_MULTIVERSION function so that the
// loop is vectorised for the CPU it runs on.
//
// Every function: p (and m, v) n elements, updated in place, element by element (no sum, so no
// summation order); g the gradient, n elements, never aliasing p, m or v. Dim: int64_t or an
// integral_constant (a row length known at compile time: std::integral_constant<int64_t, 64>
// unrolls a 64-float embedding row completely). The float expressions are fixed: the trained
// weights are the same on every CPU the clones target (tests/kernels/test_row_optimizers.cpp
// checks them against torch::optim).
#include <cmath>
#include <cstdint>

#include "kernels/simd.h"

namespace recbole::kernels {

struct AdamConsts {
  float b1, b2, eps, wd;
  float step_size;     // adam: lr / bc1; sparse_adam: lr * sqrt(bc2) / bc1
  float inv_sqrt_bc2;  // adam only
};

// torch.optim.Adam (amsgrad off, L2 weight decay added to the gradient): m, v its two moments;
// g may be null (no gradient this step: a zero one, so the moments decay and the row moves).
template <typename Dim>
RECBOLE_INLINE void adam_row(float* __restrict p, const float* __restrict g, float* __restrict m,
                             float* __restrict v, Dim n, const AdamConsts& c) {
  const int64_t d = n;
  for (int64_t k = 0; k < d; ++k) {
    const float grad = (g ? g[k] : 0.f) + c.wd * p[k];
    const float mk = c.b1 * m[k] + (1.f - c.b1) * grad;
    const float vk = c.b2 * v[k] + (1.f - c.b2) * grad * grad;
    m[k] = mk;
    v[k] = vk;
    p[k] -= c.step_size * mk / (std::sqrt(vk) * c.inv_sqrt_bc2 + c.eps);
  }
}

// torch.optim.SparseAdam on one row with a gradient (g not null): lazy Adam, bias correction by
// the global step folded into c.step_size; c.wd and c.inv_sqrt_bc2 are not read.
template <typename Dim>
RECBOLE_INLINE void sparse_adam_row(float* __restrict p, const float* __restrict g,
                                    float* __restrict m, float* __restrict v, Dim n,
                                    const AdamConsts& c) {
  const int64_t d = n;
  for (int64_t k = 0; k < d; ++k) {
    const float mk = m[k] + (g[k] - m[k]) * (1.f - c.b1);
    const float vk = v[k] + (g[k] * g[k] - v[k]) * (1.f - c.b2);
    m[k] = mk;
    v[k] = vk;
    p[k] -= c.step_size * (mk / (std::sqrt(vk) + c.eps));
  }
}

// torch.optim.SGD without momentum, with weight decay: p −= lr · (g + wd · p); g may be null (no
// gradient this step: the row only decays).
template <typename Dim>
RECBOLE_INLINE void sgd_decay_row(float* __restrict p, const float* __restrict g, Dim n, float lr,
                                  float wd) {
  const int64_t d = n;
  for (int64_t k = 0; k < d; ++k) p[k] -= lr * ((g ? g[k] : 0.f) + wd * p[k]);
}

// torch.optim.SGD without momentum and weight decay on one row with a gradient: p −= lr · g.
template <typename Dim>
RECBOLE_INLINE void sgd_row(float* __restrict p, const float* __restrict g, Dim n, float lr) {
  const int64_t d = n;
  for (int64_t k = 0; k < d; ++k) p[k] -= lr * g[k];
}

}  // namespace recbole::kernels
