#include "models/layers/horizontal_conv.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "kernels/simd.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/error.h"

// The window dot products are written as a·b + c on vectors; ISO C++ mode keeps GCC from fusing
// them, and an unfused multiply-add is two instructions where one does. Flags only: the
// results differ from the unfused ones by float rounding.
#if defined(__GNUC__) && !defined(__clang__)
#define RECBOLE_FUSED_MULTIPLY_ADD __attribute__((optimize("fp-contract=fast")))
#else
#define RECBOLE_FUSED_MULTIPLY_ADD
#endif

namespace recbole::models::layers {

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

struct FusedHorizontalConvMax : public torch::autograd::Function<FusedHorizontalConvMax> {
  // w_all: every height's [nh, h, d] weights flattened one after the other; b_all: [heights·nh].
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& w_all, const torch::Tensor& b_all,
                               const std::vector<int64_t>& heights) {
    const torch::Tensor xc = x.contiguous();
    const Heights g = geometry(xc, heights, b_all.size(0));
    const int64_t B = xc.size(0), cols = b_all.size(0);
    const torch::Tensor out = torch::empty({B, cols}, xc.options());
    const torch::Tensor arg = torch::empty({B, cols}, xc.options().dtype(torch::kInt32));
    const float* xp = xc.data_ptr<float>();
    for (int64_t b = 0; b < B; ++b)
      forward_sample(xp + b * g.L * g.d, w_all.data_ptr<float>(), b_all.data_ptr<float>(), g,
                     out.data_ptr<float>() + b * cols, arg.data_ptr<int32_t>() + b * cols);
    ctx->save_for_backward({xc, w_all});
    ctx->saved_data["arg"] = arg;
    ctx->saved_data["heights"] = heights;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &w_all = saved[1];
    const torch::Tensor arg = ctx->saved_data["arg"].toTensor();
    const std::vector<int64_t> heights = ctx->saved_data["heights"].toIntVector();
    const torch::Tensor grad = grads[0].contiguous();
    const int64_t B = x.size(0), cols = arg.size(1);
    const Heights g = geometry(x, heights, cols);
    const torch::Tensor dx = torch::zeros_like(x);
    const torch::Tensor dw = torch::zeros_like(w_all);
    const torch::Tensor db = torch::zeros({cols}, x.options());
    for (int64_t b = 0; b < B; ++b)
      backward_sample(x.data_ptr<float>() + b * g.L * g.d, w_all.data_ptr<float>(),
                      grad.data_ptr<float>() + b * cols, arg.data_ptr<int32_t>() + b * cols, g,
                      dx.data_ptr<float>() + b * g.L * g.d, dw.data_ptr<float>(),
                      db.data_ptr<float>());
    return {dx, dw, db, torch::Tensor()};
  }

  static Heights geometry(const torch::Tensor& x, const std::vector<int64_t>& heights,
                          int64_t cols) {
    Heights g;
    g.h = heights;
    g.nh = cols / static_cast<int64_t>(heights.size());
    g.L = x.size(1);
    g.d = x.size(2);
    int64_t at = 0;
    for (const int64_t h : heights) {
      g.offset.push_back(at);
      at += g.nh * h * g.d;
    }
    return g;
  }
};

}  // namespace

torch::Tensor horizontal_conv_max(const torch::Tensor& x, const std::vector<torch::Tensor>& weights,
                                  const std::vector<torch::Tensor>& biases) {
  const auto fail = [](const std::string& what) {
    throw Error("horizontal_conv_max: " + what +
                " (expected x [B, L, d], weights [nh, 1, h, d] with 1 ≤ h ≤ L and biases [nh])");
  };
  if (x.dim() != 3) fail("x has " + std::to_string(x.dim()) + " dimensions");
  if (weights.empty() || weights.size() != biases.size()) fail("no heights, or not one bias each");
  const int64_t nh = weights[0].size(0), L = x.size(1), d = x.size(2);
  bool fused =
      fast_paths_enabled() && x.is_cpu() && x.scalar_type() == torch::kFloat32 && L * d > 0;
  std::vector<int64_t> heights;
  for (size_t i = 0; i < weights.size(); ++i) {
    const torch::Tensor &w = weights[i], &b = biases[i];
    if (w.dim() != 4 || w.size(0) != nh || w.size(1) != 1 || w.size(2) < 1 || w.size(2) > L ||
        w.size(3) != d || b.dim() != 1 || b.size(0) != nh)
      fail("height " + std::to_string(i) + " has weights " + std::to_string(w.dim()) +
           "-dimensional or of another size");
    fused = fused && w.is_cpu() && b.is_cpu() && w.scalar_type() == torch::kFloat32 &&
            b.scalar_type() == torch::kFloat32;
    heights.push_back(w.size(2));
  }
  if (!fused) {
    const torch::Tensor image = x.unsqueeze(1);  // [B, 1, L, d]
    std::vector<torch::Tensor> pooled;
    for (size_t i = 0; i < weights.size(); ++i)  // [B, nh, L − h + 1, 1] → max → [B, nh]
      pooled.push_back(
          std::get<0>(torch::relu(torch::conv2d(image, weights[i], biases[i])).squeeze(3).max(2)));
    return torch::cat(pooled, 1);
  }
  std::vector<torch::Tensor> flat;
  for (const torch::Tensor& w : weights) flat.push_back(w.reshape({-1}));
  return FusedHorizontalConvMax::apply(x, torch::cat(flat), torch::cat(biases), heights);
}

}  // namespace recbole::models::layers
