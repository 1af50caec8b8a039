#include "kernels/horizontal_conv.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/simd.h"

// The window dot products are written as a·b + c on vectors; ISO C++ mode keeps GCC from fusing
// them, and an unfused multiply-add is two instructions where one does. Flags only: the
// results differ from the unfused ones by float rounding.
#if defined(__GNUC__) && !defined(__clang__)
#define RECBOLE_FUSED_MULTIPLY_ADD __attribute__((optimize("fp-contract=fast")))
#else
#define RECBOLE_FUSED_MULTIPLY_ADD
#endif

namespace recbole::kernels {

namespace {

// 16 floats: a zmm register in the AVX-512 clone, two ymm in the AVX2 one.
typedef float Floats16 __attribute__((vector_size(64)));
typedef float Floats8 __attribute__((vector_size(32)));

// By reference: a vector passed or returned by value has another ABI in each clone.
RECBOLE_INLINE void load16(Floats16& v, const float* p) { std::memcpy(&v, p, sizeof v); }

RECBOLE_INLINE float lane_sum(const Floats16& v) {
  Floats8 lo, hi;
  std::memcpy(&lo, &v, sizeof lo);
  std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof lo, sizeof hi);
  const Floats8 s = lo + hi;
  return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

// s[a·NF + c] = ⟨x + a·d, w + c·K⟩ over K floats, for NP windows (rows a·d apart: consecutive
// windows overlap in all but one row) and NF filters (K apart). The NP·NF sums run in registers.
template <int NP, int NF>
RECBOLE_INLINE void window_dots(const float* x, int64_t d, const float* w, int64_t K, float* s) {
  Floats16 acc[NP][NF] = {};
  int64_t j = 0;
  for (; j + 16 <= K; j += 16) {
    Floats16 xv[NP], wv[NF];
    for (int a = 0; a < NP; ++a) load16(xv[a], x + a * d + j);
    for (int c = 0; c < NF; ++c) load16(wv[c], w + c * K + j);
    for (int a = 0; a < NP; ++a)
      for (int c = 0; c < NF; ++c) acc[a][c] += xv[a] * wv[c];
  }
  for (int a = 0; a < NP; ++a)
    for (int c = 0; c < NF; ++c) s[a * NF + c] = lane_sum(acc[a][c]);
  for (; j < K; ++j)
    for (int a = 0; a < NP; ++a)
      for (int c = 0; c < NF; ++c) s[a * NF + c] += x[a * d + j] * w[c * K + j];
}

template <int NP>
RECBOLE_INLINE void window_dots(int64_t nf, const float* x, int64_t d, const float* w, int64_t K,
                                float* s) {
  switch (nf) {
    case 4:
      window_dots<NP, 4>(x, d, w, K, s);
      break;
    case 3:
      window_dots<NP, 3>(x, d, w, K, s);
      break;
    case 2:
      window_dots<NP, 2>(x, d, w, K, s);
      break;
    default:
      window_dots<NP, 1>(x, d, w, K, s);
      break;
  }
}

RECBOLE_INLINE void window_dots(int64_t np, int64_t nf, const float* x, int64_t d, const float* w,
                                int64_t K, float* s) {
  switch (np) {
    case 4:
      window_dots<4>(nf, x, d, w, K, s);
      break;
    case 3:
      window_dots<3>(nf, x, d, w, K, s);
      break;
    case 2:
      window_dots<2>(nf, x, d, w, K, s);
      break;
    default:
      window_dots<1>(nf, x, d, w, K, s);
      break;
  }
}

// Where the heights' filters lie in the flat weights: height i's [nh, h·d] block at offset[i].
struct Heights {
  std::vector<int64_t> h, offset;
  int64_t nh = 0, L = 0, d = 0;
};

// One sample x [L, d]: out[i·nh + f] = max(0, max_p (b[i·nh + f] + ⟨x[p ..], W_if⟩)) and
// arg[i·nh + f] = the first p that reaches the max, or −1 where the max is ≤ 0 (ReLU cuts it).
RECBOLE_MULTIVERSION RECBOLE_FUSED_MULTIPLY_ADD void forward_sample(const float* x, const float* w,
                                                                    const float* b,
                                                                    const Heights& g, float* out,
                                                                    int32_t* arg) {
  float s[16];
  for (size_t i = 0; i < g.h.size(); ++i) {
    const int64_t K = g.h[i] * g.d, windows = g.L - g.h[i] + 1;
    for (int64_t f0 = 0; f0 < g.nh; f0 += 4) {
      const int64_t nf = g.nh - f0 < 4 ? g.nh - f0 : 4;
      const float* wf = w + g.offset[i] + f0 * K;
      const float* bf = b + static_cast<int64_t>(i) * g.nh + f0;
      float best[4];
      int32_t where[4] = {};
      for (int c = 0; c < 4; ++c) best[c] = -std::numeric_limits<float>::infinity();
      for (int64_t p0 = 0; p0 < windows; p0 += 4) {
        const int64_t np = windows - p0 < 4 ? windows - p0 : 4;
        window_dots(np, nf, x + p0 * g.d, g.d, wf, K, s);
        for (int64_t a = 0; a < np; ++a)
          for (int64_t c = 0; c < nf; ++c) {
            const float v = s[a * nf + c] + bf[c];
            if (v > best[c]) {
              best[c] = v;
              where[c] = static_cast<int32_t>(p0 + a);
            }
          }
      }
      const int64_t col = static_cast<int64_t>(i) * g.nh + f0;
      for (int64_t c = 0; c < nf; ++c) {
        const bool kept = best[c] > 0.0f;
        out[col + c] = kept ? best[c] : 0.0f;
        arg[col + c] = kept ? where[c] : -1;
      }
    }
  }
}

// One sample: each output the ReLU kept passes its gradient to its window only.
RECBOLE_MULTIVERSION RECBOLE_FUSED_MULTIPLY_ADD void backward_sample(const float* x, const float* w,
                                                                     const float* grad,
                                                                     const int32_t* arg,
                                                                     const Heights& g, float* dx,
                                                                     float* dw, float* db) {
  for (size_t i = 0; i < g.h.size(); ++i) {
    const int64_t K = g.h[i] * g.d;
    for (int64_t f = 0; f < g.nh; ++f) {
      const int64_t col = static_cast<int64_t>(i) * g.nh + f;
      const float gv = grad[col];
      if (arg[col] < 0) continue;
      const int64_t at = static_cast<int64_t>(arg[col]) * g.d;
      const float* __restrict xw = x + at;
      float* __restrict dxw = dx + at;
      const float* __restrict wf = w + g.offset[i] + f * K;
      float* __restrict dwf = dw + g.offset[i] + f * K;
      for (int64_t j = 0; j < K; ++j) {
        dwf[j] += gv * xw[j];
        dxw[j] += gv * wf[j];
      }
      db[col] += gv;
    }
  }
}

Heights geometry(const HorizontalConvShape& shape) {
  Heights g;
  g.h = shape.heights;
  g.nh = shape.filters;
  g.L = shape.length;
  g.d = shape.dim;
  int64_t at = 0;
  for (const int64_t h : shape.heights) {
    g.offset.push_back(at);
    at += g.nh * h * g.d;
  }
  return g;
}

}  // namespace

void horizontal_conv_max_forward(const HorizontalConvShape& shape, const float* x,
                                 const float* weights, const float* biases, float* out,
                                 int32_t* arg) {
  const Heights g = geometry(shape);
  const int64_t cols = g.nh * static_cast<int64_t>(g.h.size());
  for (int64_t b = 0; b < shape.batch; ++b)
    forward_sample(x + b * g.L * g.d, weights, biases, g, out + b * cols, arg + b * cols);
}

void horizontal_conv_max_backward(const HorizontalConvShape& shape, const float* x,
                                  const float* weights, const float* grad, const int32_t* arg,
                                  float* dx, float* dweights, float* dbiases) {
  const Heights g = geometry(shape);
  const int64_t cols = g.nh * static_cast<int64_t>(g.h.size());
  int64_t weight_count = 0;
  for (const int64_t h : g.h) weight_count += g.nh * h * g.d;
  std::fill(dx, dx + shape.batch * g.L * g.d, 0.0f);
  std::fill(dweights, dweights + weight_count, 0.0f);
  std::fill(dbiases, dbiases + cols, 0.0f);
  for (int64_t b = 0; b < shape.batch; ++b)
    backward_sample(x + b * g.L * g.d, weights, grad + b * cols, arg + b * cols, g,
                    dx + b * g.L * g.d, dweights, dbiases);
}

}  // namespace recbole::kernels
