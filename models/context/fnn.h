#pragma once
// FNN (RecBole's FNN): an MLP (tanh, dropout) over the flattened field embeddings; no
// first-order part and no FM pre-training.
#include <vector>

#include "models/context/context_model.h"

namespace recbole::models {

class FNN : public ContextModel {
 public:
  explicit FNN(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;

 private:
  layers::ContextMLP mlp_{nullptr};
  torch::nn::Linear predict_{nullptr};
};

}  // namespace recbole::models
