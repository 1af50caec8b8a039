#pragma once
// AFM (RecBole's AFM): attention-weighted sum of the field-pair products (W bias-free, h and
// the projection p drawn N(0, 1)), dropout, projected on p, plus the first-order part;
// regulariser reg_weight · ‖W‖.
#include <vector>

#include "models/context/context_model.h"

namespace recbole::models {

class AFM : public ContextModel {
 public:
  explicit AFM(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;
  torch::Tensor regularizer() override;

 private:
  double dropout_, reg_weight_;
  torch::Tensor rows_, cols_;  // [P] int64 buffers
  torch::nn::Linear attention_{nullptr};
  torch::Tensor h_, p_;
};

}  // namespace recbole::models
