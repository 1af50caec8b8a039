#include "models/layers/item_cross_entropy.h"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "recbole/utils/error.h"
#include "recbole/utils/simd.h"

namespace recbole::models::layers {

namespace {

// Per row r: l = scale · raw + bias (bias may be null), loss_r = log Σ exp(l) − l[target]; raw
// is overwritten with softmax(l). Returns Σ_r loss_r, summed in double.
RECBOLE_MULTIVERSION RECBOLE_NO_TRAPPING_MATH double forward_rows(float* raw,
                                                                  const float* __restrict bias,
                                                                  const int64_t* targets,
                                                                  float scale, int64_t rows,
                                                                  int64_t n) {
  double total = 0.0;
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
    total += static_cast<double>(top) + std::log(static_cast<double>(sum)) - target;
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < n; ++j) l[j] *= inv;
  }
  return total;
}

// p ← g · (p − onehot(target)), row by row: the gradient at the logits.
RECBOLE_MULTIVERSION void backward_rows(float* p, const int64_t* targets, float g, int64_t rows,
                                        int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = p + r * n;
    row[targets[r]] -= 1.0f;
    for (int64_t j = 0; j < n; ++j) row[j] *= g;
  }
}

struct FusedItemCrossEntropy : public torch::autograd::Function<FusedItemCrossEntropy> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h,
                               const torch::Tensor& items, const torch::Tensor& bias,
                               const torch::Tensor& targets, double scale) {
    const torch::Tensor hc = h.contiguous(), ic = items.contiguous();
    const torch::Tensor t = targets.contiguous();
    const torch::Tensor probs = torch::mm(hc, ic.t());  // raw logits, then softmax in place
    const bool has_bias = bias.numel() > 0;  // apply() takes no undefined tensor: [0] is none
    const torch::Tensor b = bias.contiguous();
    const double total = forward_rows(
        probs.data_ptr<float>(), has_bias ? b.data_ptr<float>() : nullptr, t.data_ptr<int64_t>(),
        static_cast<float>(scale), probs.size(0), probs.size(1));
    ctx->save_for_backward({hc, ic});
    ctx->saved_data["probs"] = probs;
    ctx->saved_data["targets"] = t;
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
    backward_rows(dlogits.data_ptr<float>(), t.data_ptr<int64_t>(), grads[0].item<float>(),
                  dlogits.size(0), dlogits.size(1));
    const torch::Tensor db = ctx->saved_data["bias"].toBool() ? dlogits.sum(0) : torch::Tensor();
    torch::Tensor dh = torch::mm(dlogits, items);
    torch::Tensor ditems = torch::mm(dlogits.t(), h);
    if (scale != 1.0) {
      dh.mul_(scale);
      ditems.mul_(scale);
    }
    return {dh, ditems, db, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor item_cross_entropy(const torch::Tensor& h, const torch::Tensor& items,
                                 const torch::Tensor& bias, const torch::Tensor& targets,
                                 double scale) {
  if (h.dim() != 2 || items.dim() != 2 || h.size(1) != items.size(1) || targets.dim() != 1 ||
      targets.size(0) != h.size(0) || (bias.defined() && bias.sizes() != items.sizes().slice(0, 1)))
    throw Error("item_cross_entropy: expected h [N, d], items [n, d], bias [n] and targets [N]");
  const bool fused = h.is_cpu() && items.is_cpu() && targets.is_cpu() &&
                     h.scalar_type() == torch::kFloat32 && items.scalar_type() == torch::kFloat32 &&
                     targets.scalar_type() == torch::kInt64 &&
                     (!bias.defined() || (bias.is_cpu() && bias.scalar_type() == torch::kFloat32));
  if (!fused || h.size(0) == 0) {
    torch::Tensor logits = torch::matmul(h, items.t());
    if (scale != 1.0) logits = logits * scale;
    if (bias.defined()) logits = logits + bias;
    return torch::nn::functional::cross_entropy(
        logits, targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  }
  if (targets.min().item<int64_t>() < 0 || targets.max().item<int64_t>() >= items.size(0))
    throw Error("item_cross_entropy: a target is outside [0, " + std::to_string(items.size(0)) +
                ")");
  return FusedItemCrossEntropy::apply(
      h, items, bias.defined() ? bias : torch::empty({0}, h.options()), targets, scale);
}

}  // namespace recbole::models::layers
