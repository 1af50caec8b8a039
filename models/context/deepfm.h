#pragma once
// DeepFM (RecBole's DeepFM): first-order part + FM term + an MLP (relu, dropout) over the
// flattened field embeddings, the FM and the MLP sharing E.
#include "models/context/context_model.h"

namespace recbole::models {

class DeepFM : public ContextModel {
 public:
  explicit DeepFM(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;

 private:
  layers::ContextMLP mlp_{nullptr};
  torch::nn::Linear predict_{nullptr};
};

}  // namespace recbole::models
