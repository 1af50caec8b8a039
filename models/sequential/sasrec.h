#pragma once
// SASRec (Kang & McAuley 2018) as RecBole defines it: item embeddings plus learned absolute
// positions (index 0 = the oldest slot) → LayerNorm → dropout → a post-LN transformer encoder
// with the causal mask (and padding keys masked) → the state at the last real item; scores
// against the same item table (tied). Init: every Linear, the item and position tables
// N(0, initializer_range²), biases 0, LayerNorms (1, 0).
#include "models/layers/sequence.h"
#include "models/sequential/sequential_model.h"

#include <vector>

#include "recbole/config/key_decl.h"

namespace recbole::config {
class Config;
}

namespace recbole::models {

// The transformer keys of RecBole's SASRec-like models (n_layers, n_heads, hidden_size,
// inner_size, the dropouts, hidden_act, layer_norm_eps, initializer_range, loss_type) and the
// encoder options they give (the width read from `width_key`).
std::vector<config::KeyDecl> transformer_keys();
layers::TransformerOptions transformer_options(const config::Config& config,
                                               const char* width_key = "hidden_size");

class SASRec : public SequentialModel {
 public:
  explicit SASRec(const ModelContext& ctx);
  torch::Tensor encode(const data::Batch& batch) override;
  // The last layer's output at every position: [B, L, d] (the causality test reads it).
  torch::Tensor encode_all(const torch::Tensor& item_seq);

 private:
  double dropout_;
  torch::Tensor position_embedding_;
  torch::nn::LayerNorm layer_norm_{nullptr};
  layers::TransformerEncoder encoder_{nullptr};
};

}  // namespace recbole::models
