#pragma once
// The Adam update of a run of float32 elements, as torch.optim.Adam computes it (amsgrad off,
// L2 weight decay added to the gradient), in one pass: what BPR's fused trainer and the fused
// Adam optimizer (trainer/fused_adam.h) share. Header-only, no libtorch; call it from a
// RECBOLE_MULTIVERSION function so that the loop is vectorised for the CPU it runs on.
#include <cmath>
#include <cstdint>

#include "kernels/simd.h"

namespace recbole {

struct AdamConsts {
  float b1, b2, eps, wd;
  float step_size;     // adam: lr / bc1; sparse_adam: lr * sqrt(bc2) / bc1
  float inv_sqrt_bc2;  // adam only
};

// p, m, v: n elements of the parameter and its two moments, updated in place; g: the gradient
// (nullptr: no gradient this step, a zero one). Dim: int64_t or an integral_constant (a row
// length known at compile time).
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

}  // namespace recbole
