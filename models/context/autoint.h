#pragma once
// AutoInt (RecBole's AutoInt): the field embeddings projected to attention_size, n_layers of
// multi-head self-attention over the fields (no residual unless has_residual, no LayerNorm),
// ReLU, a Linear over the flattened result; plus an MLP (relu) over the flattened embeddings
// and the first-order part. dropout_probs[0] is the attention dropout, [1] the MLP's, [2] unused
// (as in RecBole).
#include <vector>

#include "models/context/context_model.h"
#include "models/layers/self_attention.h"

namespace recbole::models {

class AutoInt : public ContextModel {
 public:
  explicit AutoInt(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;

 private:
  torch::nn::Linear att_embedding_{nullptr}, residual_{nullptr}, att_output_{nullptr};
  std::vector<layers::MultiHeadSelfAttention> attention_;
  layers::ContextMLP mlp_{nullptr};
  torch::nn::Linear deep_output_{nullptr};
};

}  // namespace recbole::models
