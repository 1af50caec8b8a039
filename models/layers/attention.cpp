#include "models/layers/attention.h"

#include <dlfcn.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/simd.h"
#include "models/layers/dropout.h"
#include "recbole/runtime/fast_path.h"

namespace recbole::models::layers {

namespace {

// Geometry of a fused call: rows of `cols` keys; row r = ((b·heads + h)·q_len + i) takes mask
// row b·mask_rows + (mask_rows == 1 ? 0 : i).
struct Rows {
  int64_t batch, heads, q_len, cols, mask_rows;
  const float* mask_row(const float* mask, int64_t b, int64_t i) const {
    return mask + (b * mask_rows + (mask_rows == 1 ? 0 : i)) * cols;
  }
};

// Forward of every row: x = s·scale + m; y = softmax(x) (max subtracted, as torch::softmax);
// out = y ⊙ drop where drop is given, else out may alias y; y may alias s.
RECBOLE_MULTIVERSION RECBOLE_NO_TRAPPING_MATH void softmax_forward(const float* s,
                                                                   const float* __restrict mask,
                                                                   const float* __restrict drop,
                                                                   float* y, float* out,
                                                                   const Rows& g, float scale) {
  const int64_t n = g.cols;
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t h = 0; h < g.heads; ++h)
      for (int64_t i = 0; i < g.q_len; ++i) {
        const int64_t off = ((b * g.heads + h) * g.q_len + i) * n;
        const float* sr = s + off;
        const float* mr = g.mask_row(mask, b, i);
        float* yr = y + off;
        for (int64_t j = 0; j < n; ++j) yr[j] = sr[j] * scale + mr[j];
        const float top = simd::max(yr, n);
        for (int64_t j = 0; j < n; ++j) yr[j] = simd::exp(yr[j] - top);
        const float inv = 1.0f / simd::sum(yr, n);
        for (int64_t k = 0; k < n; ++k) yr[k] *= inv;
        if (drop != nullptr) {
          const float* dr = drop + off;
          float* outr = out + off;
          for (int64_t k = 0; k < n; ++k) outr[k] = yr[k] * dr[k];
        }
      }
}

// Backward of every row: with dy = dout ⊙ drop (or dout), ds = scale · y ⊙ (dy − Σ dy ⊙ y).
RECBOLE_MULTIVERSION void softmax_backward(const float* __restrict dout, const float* __restrict y,
                                           const float* __restrict drop, float* __restrict ds,
                                           int64_t rows, int64_t n, float scale) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* gr = dout + r * n;
    const float* yr = y + r * n;
    float* dr = ds + r * n;
    if (drop != nullptr) {
      const float* mr = drop + r * n;
      for (int64_t k = 0; k < n; ++k) dr[k] = gr[k] * mr[k];
    } else {
      for (int64_t k = 0; k < n; ++k) dr[k] = gr[k];
    }
    const float dot = simd::dot(dr, yr, n);
    for (int64_t k = 0; k < n; ++k) dr[k] = scale * yr[k] * (dr[k] - dot);
  }
}

struct FusedAttentionWeights : public torch::autograd::Function<FusedAttentionWeights> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& scores,
                               const torch::Tensor& mask, double scale, double p, bool training) {
    const torch::Tensor s = scores.contiguous(), m = mask.contiguous();
    const Rows g{s.size(0), s.size(1), s.size(2), s.size(3), m.size(2)};
    const torch::Tensor drop = dropout_mask(s.sizes(), p, training);  // undefined: none dropped
    const torch::Tensor y = torch::empty_like(s);
    const torch::Tensor out = drop.defined() ? torch::empty_like(s) : y;
    softmax_forward(s.data_ptr<float>(), m.data_ptr<float>(),
                    drop.defined() ? drop.data_ptr<float>() : nullptr, y.data_ptr<float>(),
                    out.data_ptr<float>(), g, static_cast<float>(scale));
    ctx->save_for_backward({y, drop});
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &y = saved[0], &drop = saved[1];
    const torch::Tensor dout = grads[0].contiguous();
    const torch::Tensor ds = torch::empty_like(y);
    softmax_backward(dout.data_ptr<float>(), y.data_ptr<float>(),
                     drop.defined() ? drop.data_ptr<float>() : nullptr, ds.data_ptr<float>(),
                     y.numel() / y.size(3), y.size(3),
                     static_cast<float>(ctx->saved_data["scale"].toDouble()));
    return {ds, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// cblas_sgemm of the BLAS libtorch loaded (OpenBLAS behind libblas.so.3 with
// tools/install_deps.sh), or null where that BLAS does not export it (the libtorch composition
// runs then).
using Sgemm = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                       const float* a, int lda, const float* b, int ldb, float beta, float* c,
                       int ldc);
Sgemm blas_sgemm() {
  static const auto fn = reinterpret_cast<Sgemm>(dlsym(RTLD_DEFAULT, "cblas_sgemm"));
  return fn;
}
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

// C[m × n] = op(A)·op(B), row-major with leading dimensions: one small product.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float* c, int64_t ldc) {
  blas_sgemm()(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, int(m), int(n), int(k),
               1.0f, a, int(lda), b, int(ldb), 0.0f, c, int(ldc));
}

// The attention of every (row, head) straight from the projection qkv [B, L, 3d] (q | k | v,
// head h at columns h·d_h of each) into ctx [B, L, d], one small GEMM per head and product:
// no copies of q, k, v or of the context into [B, heads, L, d_h] and back, and none of
// libtorch's per-matrix tensor selects inside its CPU bmm (which ran these 50 × 32 products at
// half the rate of plain sgemm calls).
struct FusedAttentionContext : public torch::autograd::Function<FusedAttentionContext> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv,
                               const torch::Tensor& mask, int64_t heads, double scale, double p,
                               bool training) {
    const torch::Tensor x = qkv.contiguous(), m = mask.contiguous();
    const int64_t B = x.size(0), L = x.size(1), d = x.size(2) / 3, dh = d / heads;
    const int64_t mask_rows = m.size(2);
    const torch::Tensor drop = dropout_mask({B, heads, L, L}, p, training);
    const torch::Tensor y = torch::empty({B, heads, L, L}, x.options());
    const torch::Tensor probs = drop.defined() ? torch::empty_like(y) : y;
    const torch::Tensor out = torch::empty({B, L, d}, x.options());
    const float* xp = x.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    float* pp = probs.data_ptr<float>();
    const float* dp = drop.defined() ? drop.data_ptr<float>() : nullptr;
    const Rows block{1, 1, L, L, mask_rows};
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < heads; ++h) {
        const float* q = xp + b * L * 3 * d + h * dh;
        const int64_t off = (b * heads + h) * L * L;
        gemm(false, true, L, L, dh, q, 3 * d, q + d, 3 * d, yp + off, L);  // q·kᵀ
        softmax_forward(yp + off, m.data_ptr<float>() + b * mask_rows * L,
                        dp != nullptr ? dp + off : nullptr, yp + off, pp + off, block,
                        static_cast<float>(scale));
        gemm(false, false, L, dh, L, pp + off, L, q + 2 * d, 3 * d,
             out.data_ptr<float>() + b * L * d + h * dh, d);  // A·v
      }
    ctx->save_for_backward({x, y, probs, drop});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &y = saved[1], &probs = saved[2], &drop = saved[3];
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const auto scale = static_cast<float>(ctx->saved_data["scale"].toDouble());
    const torch::Tensor dout = grads[0].contiguous();
    const int64_t B = x.size(0), L = x.size(1), d = x.size(2) / 3, dh = d / heads;
    const torch::Tensor dx = torch::empty_like(x);
    std::vector<float> dprobs(L * L), dscores(L * L);
    const float* xp = x.data_ptr<float>();
    float* dxp = dx.data_ptr<float>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t off = (b * heads + h) * L * L, col = b * L * 3 * d + h * dh;
        const float* q = xp + col;
        const float* g = dout.data_ptr<float>() + b * L * d + h * dh;
        const float* pr = probs.data_ptr<float>() + off;
        gemm(false, true, L, L, dh, g, d, q + 2 * d, 3 * d, dprobs.data(), L);  // dA = g·vᵀ
        gemm(true, false, L, dh, L, pr, L, g, d, dxp + col + 2 * d, 3 * d);     // dv = Aᵀ·g
        softmax_backward(dprobs.data(), y.data_ptr<float>() + off,
                         drop.defined() ? drop.data_ptr<float>() + off : nullptr, dscores.data(), L,
                         L, scale);
        gemm(false, false, L, dh, L, dscores.data(), L, q + d, 3 * d, dxp + col, 3 * d);  // dq
        gemm(true, false, L, dh, L, dscores.data(), L, q, 3 * d, dxp + col + d, 3 * d);   // dk
      }
    return {
        dx, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// A CPU float32 mask of the fused kernels' shape, [B, 1, Lq or 1, Lk].
bool mask_fits(const torch::Tensor& mask, int64_t batch, int64_t q_len, int64_t k_len) {
  if (mask.dim() != 4 || !mask.is_cpu() || mask.scalar_type() != torch::kFloat32) return false;
  const int64_t mask_rows = mask.size(2);
  return mask.size(0) == batch && mask.size(1) == 1 && (mask_rows == 1 || mask_rows == q_len) &&
         mask.size(3) == k_len;
}

bool fusable(const torch::Tensor& scores, const torch::Tensor& mask) {
  return fast_paths_enabled() && scores.dim() == 4 && scores.is_cpu() &&
         scores.scalar_type() == torch::kFloat32 &&
         mask_fits(mask, scores.size(0), scores.size(2), scores.size(3));
}

}  // namespace

torch::Tensor attention_weights(const torch::Tensor& scores, const torch::Tensor& mask,
                                double scale, double p, bool training) {
  if (!fusable(scores, mask))
    return layers::dropout(torch::softmax(scores * scale + mask, -1), p, training);
  return FusedAttentionWeights::apply(scores, mask, scale, p, training);
}

}  // namespace recbole::models::layers

namespace recbole::models::layers {

torch::Tensor attention_context(const torch::Tensor& qkv, const torch::Tensor& mask, int64_t heads,
                                double scale, double p, bool training) {
  const int64_t B = qkv.size(0), L = qkv.size(1), d = qkv.size(2) / 3, dh = d / heads;
  const bool fused = fast_paths_enabled() && blas_sgemm() != nullptr && qkv.dim() == 3 &&
                     qkv.is_cpu() && qkv.scalar_type() == torch::kFloat32 && qkv.size(2) == 3 * d &&
                     d % heads == 0 && mask_fits(mask, B, L, L);
  if (fused) return FusedAttentionContext::apply(qkv, mask, heads, scale, p, training);
  // [B, L, 3, heads, d_h] → three [B, heads, L, d_h]
  const torch::Tensor parts = qkv.view({B, L, 3, heads, dh}).permute({2, 0, 3, 1, 4});
  const torch::Tensor q = parts[0], k = parts[1], v = parts[2];
  const torch::Tensor weights =
      attention_weights(torch::matmul(q, k.transpose(-1, -2)), mask, scale, p, training);
  return torch::matmul(weights, v).transpose(1, 2).reshape({B, L, d});
}

}  // namespace recbole::models::layers
