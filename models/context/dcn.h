#pragma once
// DCN (RecBole's DCN): a cross network x_{l+1} = x0 · (x_l · w_l) + b_l + x_l (w_l drawn
// N(0, 1)) beside an MLP (relu, BatchNorm, dropout) on x0 = flatten(E), joined by one Linear;
// regulariser reg_weight · Σ‖w_l‖. No first-order part.
#include <vector>

#include "models/context/context_model.h"

namespace recbole::models {

class DCN : public ContextModel {
 public:
  explicit DCN(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;
  torch::Tensor regularizer() override;

 private:
  double reg_weight_;
  std::vector<torch::Tensor> w_, b_;
  layers::ContextMLP mlp_{nullptr};
  torch::nn::Linear predict_{nullptr};
};

}  // namespace recbole::models
