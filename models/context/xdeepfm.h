#pragma once
// xDeepFM (RecBole's xDeepFM): a compressed interaction network (CIN: per layer the outer
// products of the previous hidden maps with E, mixed by a width-1 convolution, ReLU, half kept
// for the next layer unless direct) summed over the embedding axis and projected by a Linear,
// plus an MLP (relu) whose 1-unit output also passes a ReLU, plus the first-order part;
// regulariser reg_weight · (Σ‖MLP weights‖ + Σ‖first-order tables‖ + Σ‖conv weights‖).
#include <vector>

#include "models/context/context_model.h"

namespace recbole::models {

class XDeepFM : public ContextModel {
 public:
  explicit XDeepFM(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;
  torch::Tensor regularizer() override;

 private:
  bool direct_;
  double reg_weight_;
  std::vector<int64_t> sizes_;         // CIN layer widths (even unless direct)
  std::vector<torch::Tensor> conv_w_;  // [h_k, H_{k-1}·F]
  std::vector<torch::Tensor> conv_b_;  // [h_k]
  torch::nn::Linear cin_linear_{nullptr};
  layers::ContextMLP mlp_{nullptr};
};

}  // namespace recbole::models
