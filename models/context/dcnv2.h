#pragma once
// DCNV2 (RecBole's DCNV2): a matrix cross network x_{l+1} = x0 ⊙ (W_l x_l + b_l) + x_l, or a
// mixture of low-rank experts (mixed: true), stacked under or parallel to an MLP (relu,
// BatchNorm, dropout); the output is a probability (σ inside the model) trained with BCE whose
// logs are clamped at -100; regulariser reg_weight · Σ‖cross weights‖. Cross weights N(0, 1).
#include <string>
#include <vector>

#include "models/context/context_model.h"

namespace recbole::models {

class DCNV2 : public ContextModel {
 public:
  explicit DCNV2(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;
  torch::Tensor regularizer() override;
  bool probability_output() const override { return true; }

 private:
  torch::Tensor cross(const torch::Tensor& x0);
  bool mixed_, stacked_;
  double reg_weight_;
  int64_t layers_;
  std::vector<torch::Tensor> w_, b_, u_, v_, c_;  // per layer; u/v [E, D, r], c [E, r, r]
  std::vector<torch::nn::Linear> gates_;          // E gates shared by every layer
  layers::ContextMLP mlp_{nullptr};
  torch::nn::Linear predict_{nullptr};
};

}  // namespace recbole::models
