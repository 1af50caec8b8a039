#pragma once
// WideDeep (RecBole's WideDeep): the first-order part (the wide side, no cross products) plus
// an MLP (relu, dropout) over the flattened field embeddings.
#include <vector>

#include "models/context/context_model.h"

namespace recbole::models {

class WideDeep : public ContextModel {
 public:
  explicit WideDeep(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;

 private:
  layers::ContextMLP mlp_{nullptr};
  torch::nn::Linear predict_{nullptr};
};

}  // namespace recbole::models
