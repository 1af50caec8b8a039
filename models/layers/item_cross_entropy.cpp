#include "models/layers/item_cross_entropy.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/jit_gemm.h"
#include "kernels/simd.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models::layers {

namespace {

// Per row r: l = scale · raw + bias (bias may be null), losses[r] = w_r · (log Σ exp(l) −
// l[target]) (w_r = 1 when weights is null), in double; raw is overwritten with softmax(l).
RECBOLE_MULTIVERSION RECBOLE_NO_TRAPPING_MATH void forward_rows(
    float* raw, const float* __restrict bias, const int64_t* targets, const float* weights,
    float scale, int64_t rows, int64_t n, double* losses) {
  for (int64_t r = 0; r < rows; ++r) {
    float* l = raw + r * n;
    if (bias != nullptr) {
      for (int64_t j = 0; j < n; ++j) l[j] = scale * l[j] + bias[j];
    } else if (scale != 1.0f) {
      for (int64_t j = 0; j < n; ++j) l[j] *= scale;
    }
    const float target = l[targets[r]];
    const float top = simd::max(l, n);
    for (int64_t j = 0; j < n; ++j) l[j] = simd::exp(l[j] - top);
    const float sum = simd::sum(l, n);
    const double loss = static_cast<double>(top) + std::log(static_cast<double>(sum)) - target;
    losses[r] = weights != nullptr ? static_cast<double>(weights[r]) * loss : loss;
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < n; ++j) l[j] *= inv;
  }
}

// p ← g · w_r · (p − onehot(target)), row by row: the gradient at the logits.
RECBOLE_MULTIVERSION void backward_rows(float* p, const int64_t* targets, const float* weights,
                                        float g, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = p + r * n;
    row[targets[r]] -= 1.0f;
    const float gr = weights != nullptr ? g * weights[r] : g;
    for (int64_t j = 0; j < n; ++j) row[j] *= gr;
  }
}

// body(first, count) over [0, rows) in blocks of kBlockRows on the ThreadPool, one BLAS thread
// meanwhile (each block runs its own products). A row's work is the same whatever the pool size,
// so the results are too.
constexpr int64_t kBlockRows = 64;
void on_blocks(int64_t rows, const std::function<void(int64_t, int64_t)>& body) {
  BlasThreadsScope one_blas_thread(1);
  parallel_for_blocks(rows, kBlockRows,
                      [&](int64_t, int64_t first, int64_t last) { body(first, last - first); });
}

struct FusedItemCrossEntropy : public torch::autograd::Function<FusedItemCrossEntropy> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h,
                               const torch::Tensor& items, const torch::Tensor& bias,
                               const torch::Tensor& targets, const torch::Tensor& weights,
                               double scale) {
    const torch::Tensor hc = h.contiguous(), ic = items.contiguous();
    const torch::Tensor t = targets.contiguous();
    const int64_t rows = hc.size(0), n = ic.size(0);
    const torch::Tensor probs = torch::empty({rows, n}, hc.options());  // logits, then softmax
    const torch::Tensor items_t = ic.t().contiguous();                  // [d, n]
    const bool has_bias = bias.numel() > 0;  // apply() takes no undefined tensor: [0] is none
    const torch::Tensor b = bias.contiguous();
    const bool weighted = weights.numel() > 0;  // [0]: every row weighs 1
    const torch::Tensor w = weights.contiguous();
    std::vector<double> losses(static_cast<size_t>(rows));
    on_blocks(rows, [&](int64_t r0, int64_t count) {
      const torch::Tensor block = probs.narrow(0, r0, count);
      kernels::jit_mm_out(block, hc.narrow(0, r0, count), items_t, /*accumulate=*/false);
      forward_rows(block.data_ptr<float>(), has_bias ? b.data_ptr<float>() : nullptr,
                   t.data_ptr<int64_t>() + r0, weighted ? w.data_ptr<float>() + r0 : nullptr,
                   static_cast<float>(scale), count, n, losses.data() + r0);
    });
    double total = 0.0;  // in row order, whatever the pool did
    for (double l : losses) total += l;
    ctx->save_for_backward({hc, ic});
    ctx->saved_data["probs"] = probs;
    ctx->saved_data["targets"] = t;
    ctx->saved_data["weights"] = w;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["bias"] = has_bias;
    return torch::tensor(static_cast<float>(total), hc.options());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    if (ctx->saved_data.count("used"))
      throw std::logic_error("the fused item cross-entropy's backward runs once");
    ctx->saved_data["used"] = true;
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &h = saved[0], &items = saved[1];
    const torch::Tensor dlogits = ctx->saved_data["probs"].toTensor();
    const torch::Tensor t = ctx->saved_data["targets"].toTensor();
    const double scale = ctx->saved_data["scale"].toDouble();
    const torch::Tensor w = ctx->saved_data["weights"].toTensor();
    const float g = grads[0].item<float>();
    const int64_t rows = dlogits.size(0), n = dlogits.size(1);
    // A product whose input needs no gradient (NCL's fixed centroids) is skipped.
    torch::Tensor dh = ctx->needs_input_grad(0) ? torch::empty_like(h) : torch::Tensor();
    torch::Tensor ditems = ctx->needs_input_grad(1) ? torch::empty_like(items) : torch::Tensor();
    // Rows: the gradient at the logits, then dh = dlogits · items; items: ditems = dlogitsᵀ · h.
    on_blocks(rows, [&](int64_t r0, int64_t count) {
      const torch::Tensor block = dlogits.narrow(0, r0, count);
      backward_rows(block.data_ptr<float>(), t.data_ptr<int64_t>() + r0,
                    w.numel() > 0 ? w.data_ptr<float>() + r0 : nullptr, g, count, n);
      if (dh.defined())
        kernels::jit_mm_out(dh.narrow(0, r0, count), block, items, /*accumulate=*/false);
    });
    if (ditems.defined())
      on_blocks(n, [&](int64_t j0, int64_t count) {
        kernels::jit_mm_out(ditems.narrow(0, j0, count), dlogits.narrow(1, j0, count).t(), h,
                            /*accumulate=*/false);
      });
    const torch::Tensor db = ctx->saved_data["bias"].toBool() ? dlogits.sum(0) : torch::Tensor();
    if (scale != 1.0) {
      if (dh.defined()) dh.mul_(scale);
      if (ditems.defined()) ditems.mul_(scale);
    }
    return {dh, ditems, db, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor item_cross_entropy(const torch::Tensor& h, const torch::Tensor& items,
                                 const torch::Tensor& bias, const torch::Tensor& targets,
                                 double scale, const torch::Tensor& weights) {
  if (h.dim() != 2 || items.dim() != 2 || h.size(1) != items.size(1) || targets.dim() != 1 ||
      targets.size(0) != h.size(0) ||
      (bias.defined() && bias.sizes() != items.sizes().slice(0, 1)) ||
      (weights.defined() && weights.sizes() != targets.sizes()))
    throw Error(
        "item_cross_entropy: expected h [N, d], items [n, d], bias [n], targets [N] and weights "
        "[N]");
  const bool fused =
      fast_paths_enabled() && h.is_cpu() && items.is_cpu() && targets.is_cpu() &&
      h.scalar_type() == torch::kFloat32 && items.scalar_type() == torch::kFloat32 &&
      targets.scalar_type() == torch::kInt64 &&
      (!bias.defined() || (bias.is_cpu() && bias.scalar_type() == torch::kFloat32)) &&
      (!weights.defined() || (weights.is_cpu() && weights.scalar_type() == torch::kFloat32));
  if (!fused || h.size(0) == 0) {
    torch::Tensor logits = torch::matmul(h, items.t());
    if (scale != 1.0) logits = logits * scale;
    if (bias.defined()) logits = logits + bias;
    namespace F = torch::nn::functional;
    if (weights.defined())
      return (F::cross_entropy(logits, targets,
                               F::CrossEntropyFuncOptions().reduction(torch::kNone)) *
              weights.detach())
          .sum();
    return F::cross_entropy(logits, targets, F::CrossEntropyFuncOptions().reduction(torch::kSum));
  }
  if (targets.min().item<int64_t>() < 0 || targets.max().item<int64_t>() >= items.size(0))
    throw Error("item_cross_entropy: a target is outside [0, " + std::to_string(items.size(0)) +
                ")");
  const torch::Tensor none = torch::empty({0}, h.options());  // apply() takes no undefined tensor
  return FusedItemCrossEntropy::apply(h, items, bias.defined() ? bias : none, targets,
                                      weights.defined() ? weights.detach() : none, scale);
}

}  // namespace recbole::models::layers
