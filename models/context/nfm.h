#pragma once
// NFM (RecBole's NFM): Bi-interaction pooling of the field embeddings → BatchNorm → an MLP
// (sigmoid, BatchNorm, dropout) → a bias-free Linear, plus the first-order part.
#include <vector>

#include "models/context/context_model.h"

namespace recbole::models {

class NFM : public ContextModel {
 public:
  explicit NFM(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;

 private:
  torch::nn::BatchNorm1d bn_{nullptr};
  layers::ContextMLP mlp_{nullptr};
  torch::nn::Linear predict_{nullptr};
};

}  // namespace recbole::models
