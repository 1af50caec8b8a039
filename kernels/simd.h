#pragma once
// RECBOLE_MULTIVERSION: compiles a hot loop for AVX-512, AVX2 and baseline x86-64 and picks the
// best at load time (GCC target_clones), so the build stays portable (no -march=native) while a
// 64-float embedding row is 4 AVX-512 vectors. Helpers called from such a function should be
// RECBOLE_INLINE so that they are compiled into each clone.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RECBOLE_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RECBOLE_MULTIVERSION
#endif
#define RECBOLE_INLINE inline __attribute__((always_inline))
// For a RECBOLE_MULTIVERSION loop that selects before it divides (simd::tanh's clamp): GCC keeps
// such a loop scalar under the default trapping-math (the division may not be speculated past
// the selects). Flags only, never values: IEEE results are the same.
#if defined(__GNUC__) && !defined(__clang__)
#define RECBOLE_NO_TRAPPING_MATH __attribute__((optimize("no-trapping-math")))
#else
#define RECBOLE_NO_TRAPPING_MATH
#endif

#include <cstdint>
#include <cstring>
#include <limits>

namespace recbole::simd {

// tanh of a float in a form a RECBOLE_MULTIVERSION RECBOLE_NO_TRAPPING_MATH loop vectorises
// (no branch, no libm call): the clamped rational approximation x·p(x²)/q(x²) with the
// coefficients Eigen uses for float tanh (generic_fast_tanh_float in
// Eigen/src/Core/MathFunctionsImpl.h, MPL-2.0). Eigen's own
// tanh fixes its SIMD width when compiled — SSE in this portable build — while a clone here
// runs it 8 or 16 wide. Beyond ±7.905 tanh is ±1 in float. Eigen returns x itself below 4e-4,
// where the quotient is x·(1 − 1.3e-7); that select is left out, as it kept GCC from
// vectorising the loop (a division it may not speculate). Absolute error below 1e-6 against
// std::tanh, relative below 1e-6 near 0 (tests/kernels/test_simd.cpp).
RECBOLE_INLINE float tanh(float v) {
  constexpr float kClamp = 7.90531110763549805f;
  // Selects, not std::min/max: those are not inlined into a RECBOLE_NO_TRAPPING_MATH function.
  float x = v < -kClamp ? -kClamp : v;
  x = x > kClamp ? kClamp : x;
  const float x2 = x * x;
  float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
  p = x2 * p + -8.60467152213735e-11f;
  p = x2 * p + 5.12229709037114e-08f;
  p = x2 * p + 1.48572235717979e-05f;
  p = x2 * p + 6.37261928875436e-04f;
  p = x2 * p + 4.89352455891786e-03f;
  float q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = x2 * q + 2.26843463243900e-03f;
  q = x2 * q + 4.89352518554385e-03f;
  return x * p / q;
}

// e^v in a form a RECBOLE_MULTIVERSION RECBOLE_NO_TRAPPING_MATH loop vectorises (no branch, no
// libm call), for softmax: v = n·ln 2 + r with n rounded by adding 1.5·2²³, e^r by Cephes' expf
// polynomial on |r| ≤ ln2/2, 2ⁿ built in the exponent bits. Below −87.3 (where e^v nears the
// smallest normal float) it returns 0; above 88.3 it returns e^88.3. Relative error below 2e-7
// against std::exp (tests/kernels/test_simd.cpp).
RECBOLE_INLINE float exp(float v) {
  constexpr float kLow = -87.3f, kHigh = 88.3f, kRound = 12582912.0f;  // 1.5·2²³
  float x = v < kLow ? kLow : v;
  x = x > kHigh ? kHigh : x;
  const float t = x * 1.44269504088896341f + kRound;  // n + 1.5·2²³, n = round(x / ln 2)
  const float n = t - kRound;
  float r = x - n * 0.693359375f;  // ln 2 in two parts, so that r is exact
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  int32_t bits;
  std::memcpy(&bits, &t, sizeof bits);
  const int32_t scale_bits = (bits - 0x4B400000 + 127) << 23;  // 2ⁿ
  float scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return v < kLow ? 0.0f : p * scale;
}

// erf of a float in a form a RECBOLE_MULTIVERSION RECBOLE_NO_TRAPPING_MATH loop vectorises (for the
// exact GELU): the clamped rational approximation x·p(x²)/q(x²) with the coefficients Eigen uses
// for float erf (generic_fast_erf_float, MPL-2.0). Beyond ±4 erf is ±1 to float precision.
// Absolute error below 1e-6 against std::erf (tests/kernels/test_simd.cpp).
RECBOLE_INLINE float erf(float v) {
  float x = v < -4.0f ? -4.0f : v;
  x = x > 4.0f ? 4.0f : x;
  const float x2 = x * x;
  float p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
  p = x2 * p + -2.10102402082508e-06f;
  p = x2 * p + -5.69250639462346e-05f;
  p = x2 * p + -7.34990630326855e-04f;
  p = x2 * p + -2.95459980854025e-03f;
  p = x2 * p + -1.60960333262415e-02f;
  float q = x2 * -1.45660718464996e-05f + -2.13374055278905e-04f;
  q = x2 * q + -1.68282697438203e-03f;
  q = x2 * q + -7.37332916720468e-03f;
  q = x2 * q + -1.42647390514189e-02f;
  return x * p / q;
}

// max_k x[k] (−∞ when n = 0) in eight running lanes combined in a fixed order: a single running
// value is a serial chain.
RECBOLE_INLINE float max(const float* x, int64_t n) {
  float lanes[8];
  for (int l = 0; l < 8; ++l) lanes[l] = -std::numeric_limits<float>::infinity();
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l) lanes[l] = x[k + l] > lanes[l] ? x[k + l] : lanes[l];
  for (; k < n; ++k) lanes[0] = x[k] > lanes[0] ? x[k] : lanes[0];
  float top = lanes[0];
  for (int l = 1; l < 8; ++l) top = lanes[l] > top ? lanes[l] : top;
  return top;
}

// Σ_k x[k] in eight running sums combined in a fixed order, as dot.
RECBOLE_INLINE float sum(const float* x, int64_t n) {
  float acc[8] = {};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l) acc[l] += x[k + l];
  float total = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; k < n; ++k) total += x[k];
  return total;
}

// Σ_k a[k]·b[k] in eight running sums combined in a fixed order: vectorised inside a
// RECBOLE_MULTIVERSION loop (a single float sum stays scalar without reassociation), and the
// same on every thread count.
RECBOLE_INLINE float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[k + l] * b[k + l];
  float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; k < n; ++k) sum += a[k] * b[k];
  return sum;
}

}  // namespace recbole::simd
