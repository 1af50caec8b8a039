#include "models/layers/attention.h"

#include <cstdint>
#include <limits>

#include "models/layers/dropout.h"
#include "recbole/utils/simd.h"

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

// max_k x[k] and Σ_k x[k] in eight running lanes combined in a fixed order: a single running
// value is a serial chain (the max loop was 60 % of the fused forward before).
RECBOLE_INLINE float row_max(const float* x, int64_t n) {
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

RECBOLE_INLINE float row_sum(const float* x, int64_t n) {
  float lanes[8] = {};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l) lanes[l] += x[k + l];
  float sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
              ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  for (; k < n; ++k) sum += x[k];
  return sum;
}

// Forward of every row: x = s·scale + m; y = softmax(x) (max subtracted, as torch::softmax);
// out = y ⊙ drop where drop is given, else out may alias y.
RECBOLE_MULTIVERSION RECBOLE_NO_TRAPPING_MATH void softmax_forward(const float* __restrict s,
                                                                   const float* __restrict mask,
                                                                   const float* __restrict drop,
                                                                   float* __restrict y, float* out,
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
        const float top = row_max(yr, n);
        for (int64_t j = 0; j < n; ++j) yr[j] = simd::exp(yr[j] - top);
        const float inv = 1.0f / row_sum(yr, n);
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

bool fusable(const torch::Tensor& scores, const torch::Tensor& mask) {
  if (scores.dim() != 4 || mask.dim() != 4) return false;
  if (!scores.is_cpu() || !mask.is_cpu() || scores.scalar_type() != torch::kFloat32 ||
      mask.scalar_type() != torch::kFloat32)
    return false;
  const int64_t mask_rows = mask.size(2);
  return mask.size(0) == scores.size(0) && mask.size(1) == 1 &&
         (mask_rows == 1 || mask_rows == scores.size(2)) && mask.size(3) == scores.size(3);
}

}  // namespace

torch::Tensor attention_weights(const torch::Tensor& scores, const torch::Tensor& mask,
                                double scale, double p, bool training) {
  if (!fusable(scores, mask))
    return layers::dropout(torch::softmax(scores * scale + mask, -1), p, training);
  return FusedAttentionWeights::apply(scores, mask, scale, p, training);
}

}  // namespace recbole::models::layers
