#pragma once
// PNN (RecBole's PNN): [flattened E, inner products of the field pairs, optional per-pair
// outer-product kernels] → MLP (relu) → Linear; regulariser reg_weight · Σ‖W‖ over the MLP's
// Linear weights. No first-order part.
#include <vector>

#include "models/context/context_model.h"

namespace recbole::models {

class PNN : public ContextModel {
 public:
  explicit PNN(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;
  torch::Tensor regularizer() override;

 private:
  bool use_inner_, use_outer_;
  double reg_weight_;
  torch::Tensor rows_, cols_;  // [P] int64 buffers: the field pairs i < j, row-major
  torch::Tensor kernel_;       // [d, P, d] (use_outer)
  layers::ContextMLP mlp_{nullptr};
  torch::nn::Linear predict_{nullptr};
};

}  // namespace recbole::models
