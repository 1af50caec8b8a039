#pragma once
// EulerNet (RecBole's EulerNet): the field embeddings as complex features μ_f · e^{iE_f}
// (r = μ cos E, p = μ sin E; per-field modulus μ, initially 1), through Euler interaction
// layers (widths F → order_list...): an explicit part in polar form, λ = ½ ln(r² + p²),
// θ = atan2(p, r), mixed by an order matrix Ω [n_in, n_out] (λΩ + β_λ, θΩ + β_θ, dropout
// drop_ex before), and an implicit part ReLU(Linear(r)), ReLU(Linear(p)) (one Linear, dropout
// drop_im before); out_r = implicit_r + e^λ' cos θ', out_p = implicit_p + e^λ' sin θ', with
// LayerNorm when apply_norm. Logit: one Linear applied to flatten(out_r) and to flatten(out_p),
// summed. Regulariser reg_weight · Σ‖θ‖ over every parameter except the embeddings (unused
// LayerNorms included, as RecBole). No first-order part. Linear weights keep EulerNet's own
// small normal inits (not xavier), as RecBole.
#include <vector>

#include "models/context/context_model.h"

namespace recbole::models {

class EulerLayerImpl : public torch::nn::Module {
 public:
  EulerLayerImpl(int64_t n_in, int64_t n_out, int64_t width, double drop_ex, double drop_im,
                 bool apply_norm);
  // r, p [B, n_in, d] → [B, n_out, d] each.
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& r, const torch::Tensor& p);

 private:
  int64_t n_out_, width_;
  bool apply_norm_;
  torch::Tensor omega_, bias_lambda_, bias_theta_;  // [n_in, n_out], [1, d, n_out] ×2
  torch::nn::Linear implicit_{nullptr};
  double drop_ex_, drop_im_;
  torch::nn::LayerNorm norm_r_{nullptr}, norm_p_{nullptr};
};
TORCH_MODULE(EulerLayer);

class EulerNet : public ContextModel {
 public:
  explicit EulerNet(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;
  torch::Tensor regularizer() override;

 private:
  double reg_weight_;
  torch::Tensor mu_;  // [1, F, 1]
  std::vector<EulerLayer> layers_;
  torch::nn::Linear output_{nullptr};
};

}  // namespace recbole::models
