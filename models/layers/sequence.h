#pragma once
// Layers the sequential models share (RecBole's SequentialRecommender helpers and
// recbole/model/layers.py's TransformerEncoder), on the device of their inputs.
#include <string>

#include <torch/torch.h>

#include "recbole/data/batch.h"

namespace recbole::models::layers {

// The sequential task's batch columns (data::Batch::columns), by RecBole's field names: each
// row's item sequence [B, L] int64, 0-padded on the right, and its length [B] int64 in [1, L].
inline constexpr const char* kItemSeq = "item_id_list";
inline constexpr const char* kItemSeqLen = "item_length";
inline const torch::Tensor& item_seq(const data::Batch& batch) { return batch.column(kItemSeq); }
inline const torch::Tensor& item_seq_len(const data::Batch& batch) {
  return batch.column(kItemSeqLen);
}

// out[b, len[b] − 1, :] for every row: the position of the most recent item.
// out: [B, L, d] float; len: [B] int64 in [1, L] → [B, d].
torch::Tensor gather_last(const torch::Tensor& out, const torch::Tensor& len);

// RecBole's additive attention mask: 0 where key j holds an item (item_seq[b, j] > 0) and, when
// causal, j <= i; −10000 elsewhere (not −inf, as RecBole). item_seq: [B, L] int64 →
// [B, 1, L, L] float32 (causal) or [B, 1, 1, L] (bidirectional).
torch::Tensor attention_mask(const torch::Tensor& item_seq, bool causal);

// An activation by RecBole's name: gelu (exact erf form), relu, swish, tanh, sigmoid.
torch::Tensor activation(const torch::Tensor& x, const std::string& name);

struct TransformerOptions {
  int64_t n_layers = 2, n_heads = 2, hidden_size = 64, inner_size = 256;
  double hidden_dropout = 0.5, attn_dropout = 0.5, layer_norm_eps = 1e-12;
  std::string hidden_act = "gelu";
  // ConfigError unless n_heads divides hidden_size (each head takes hidden_size / n_heads).
  void check_heads() const;
};

// One post-LN transformer layer as RecBole's: multi-head self-attention (scores scaled by
// 1/√d_h, plus the additive mask, softmax over keys, attention dropout), output projection,
// dropout, residual, LayerNorm; then W1 → act → W2, dropout, residual, LayerNorm. The query,
// key and value projections are one [3d, d] Linear (the same function as three d × d ones).
class TransformerLayerImpl : public torch::nn::Module {
 public:
  explicit TransformerLayerImpl(const TransformerOptions& o);
  // x: [B, L, d], mask: [B, 1, L or 1, L] → [B, L, d].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);

 private:
  TransformerOptions o_;
  torch::nn::Linear qkv_{nullptr}, out_{nullptr}, ff1_{nullptr}, ff2_{nullptr};
  torch::nn::LayerNorm ln_attn_{nullptr}, ln_ff_{nullptr};
};
TORCH_MODULE(TransformerLayer);

// n_layers TransformerLayers; forward returns the last layer's output.
class TransformerEncoderImpl : public torch::nn::Module {
 public:
  explicit TransformerEncoderImpl(const TransformerOptions& o);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);

 private:
  std::vector<TransformerLayer> layers_;
};
TORCH_MODULE(TransformerEncoder);

// RecBole's BERT-style initialisation of `module`: every Linear weight N(0, std²) and bias 0,
// every LayerNorm (1, 0).
void init_transformer_weights(torch::nn::Module& module, double std);

}  // namespace recbole::models::layers
