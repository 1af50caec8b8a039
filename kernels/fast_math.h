#pragma once
// e^x and ln(y) for one float32, branch-free, for the BPR loss loop (kernels/bpr_step.h): a
// loop over a chunk of them vectorises inside a RECBOLE_MULTIVERSION function, where glibc's
// expf / logf are scalar calls without -ffast-math. Header-only, no libtorch.
//
// Accuracy, against double precision (tests/kernels/test_fast_math.cpp): relative error below
// 3e-7 (about 2 ulp) for exp_approx over [−87, 88] and for log_approx over the normal floats,
// which covers the loss's 1e−10 + σ in [1e−10, 1].
//
// Not simd::exp: that one clamps its argument itself (softmax's masked −∞ scores) and uses
// Cephes' polynomial; these take an argument the caller has clamped, and their results are
// what the fused BPR path has always computed (changing the polynomial would change the
// trained weights in the last bits).
#include <cstdint>
#include <cstring>

#include "kernels/simd.h"

namespace recbole::kernels {

// e^x for x in [−87, 88] (the caller clamps: outside it 2ⁿ leaves the exponent range).
RECBOLE_INLINE float exp_approx(float x) {
  // n = round(x · log2 e) by the 2^23 trick: adding 2^23 + 127 rounds to an integer and leaves
  // n + 127 (in [1, 254] after the clamp) in the low mantissa bits. No floor and no float → int
  // conversion, which GCC does not vectorise while FP traps are honoured.
  constexpr float kShift = 8388608.f + 127.f;
  const float shifted = x * 1.44269504088896341f + kShift;
  const float n = shifted - kShift;
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;  // x − n·ln 2
  float p = 1.f / 720;
  p = p * r + 1.f / 120;
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  bits = (bits & 0xff) << 23;  // 2^n
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// ln(y) for a positive normal float y (zero, subnormals, infinities and NaN are not handled).
RECBOLE_INLINE float log_approx(float y) {
  int32_t bits;
  std::memcpy(&bits, &y, sizeof bits);
  int32_t e = ((bits >> 23) & 0xff) - 127;
  const int32_t mantissa_bits = (bits & 0x7fffff) | 0x3f800000;
  float m;  // y = m · 2^e, m in [1, 2), then folded into [√½, √2)
  std::memcpy(&m, &mantissa_bits, sizeof m);
  const bool big = m > 1.41421356f;
  const float half = m * 0.5f;  // computed unconditionally: a select, not a branch
  m = big ? half : m;
  e += big ? 1 : 0;
  const float t = (m - 1.f) / (m + 1.f), t2 = t * t;  // ln m = 2 atanh t
  float p = 1.f / 9;
  p = p * t2 + 1.f / 7;
  p = p * t2 + 1.f / 5;
  p = p * t2 + 1.f / 3;
  p = p * t2 + 1.f;
  return 2.f * t * p + static_cast<float>(e) * 0.693147180559945309f;
}

}  // namespace recbole::kernels
