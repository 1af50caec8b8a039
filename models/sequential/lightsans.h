#pragma once
// LightSANs (Fan et al. 2021) as RecBole defines it: X = dropout(LayerNorm(E[item_seq])) with no
// positions added and no attention mask (padding positions take part; the input holds only the
// history). Each layer, with h heads of width d_h:
//   Q, K, V = Linear(X) each;  K̃ = softmax_L(K·θ_K)ᵀ·K,  Ṽ = softmax_L(V·θ_V)ᵀ·V   [B, k, d]
//     (θ [d, k]: the L positions pooled into k_interests interests)
//   C_item = softmax over the query axis L of (Q·K̃ᵀ / √d_h), attention dropout, · Ṽ
//   P̂ = LayerNorm(P) (P [L, d] the position table, shared by the layers);
//   C_pos = softmax over the query axis of (Qp·Kpᵀ / √d_h) · V, Qp = (P̂·Wpq + b)/√(2·d_h),
//     Kp = P̂·Wpk + b (per head; no dropout)
//   a = LayerNorm(dropout((C_item + C_pos)·Wo + bo) + X); out = LayerNorm(dropout(FF(a)) + a)
// (both softmaxes run over the query axis, as RecBole's). h = the last item's state, scored
// against the item table. Init: Linears, items and positions N(0, initializer_range²), biases
// 0, LayerNorms (1, 0); θ_K, θ_V N(0, 1), drawn once and copied into every layer (RecBole's
// layers are deep copies of one).
#include <vector>

#include "models/layers/sequence.h"
#include "models/sequential/sequential_model.h"

namespace recbole::models {

class LightSANsLayerImpl : public torch::nn::Module {
 public:
  LightSANsLayerImpl(const layers::TransformerOptions& o, const torch::Tensor& theta_k,
                     const torch::Tensor& theta_v);
  // x: [B, L, d], positions: [L, d] → [B, L, d].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& positions);

 private:
  // [B, L, d] → [B, h, L, d_h]
  torch::Tensor heads(const torch::Tensor& t) const;

  layers::TransformerOptions o_;
  torch::nn::Linear query_{nullptr}, key_{nullptr}, value_{nullptr}, out_{nullptr};
  torch::nn::Linear pos_query_{nullptr}, pos_key_{nullptr}, ff1_{nullptr}, ff2_{nullptr};
  torch::nn::LayerNorm ln_pos_{nullptr}, ln_attn_{nullptr}, ln_ff_{nullptr};
  torch::Tensor theta_k_, theta_v_;  // [d, k]
};
TORCH_MODULE(LightSANsLayer);

class LightSANs : public SequentialModel {
 public:
  explicit LightSANs(const ModelContext& ctx);
  torch::Tensor encode(const data::Batch& batch) override;

 private:
  double dropout_;
  torch::Tensor position_embedding_;  // [max_len, d]
  torch::nn::LayerNorm layer_norm_{nullptr};
  std::vector<LightSANsLayer> layers_;
};

}  // namespace recbole::models
