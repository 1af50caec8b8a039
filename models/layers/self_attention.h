#pragma once
// Multi-head self-attention over a batch of short sequences (a context model's fields), with
// the parameters, names and initialisation of libtorch's MultiheadAttention module:
// in_proj_weight [3A, A] (xavier-uniform), in_proj_bias [3A] (zeros), out_proj a Linear(A, A)
// with a zero bias, drawn in libtorch's order. A checkpoint of either loads into the other and
// a seed gives the same initial weights.
//
// Why not libtorch's module: its attention dropout draws from libtorch's generator (the
// Bernoulli kernel), so a model holding one cannot train a batch in parts on the pool
// (layers::backward_parts keys each part's masks) and pays a 64-bit draw per weight. Here the
// weights' dropout is layers::dropout's mask and the attention layers::attention_context (one
// fused node on the CPU in float32).
#include <torch/torch.h>

namespace recbole::models::layers {

class MultiHeadSelfAttentionImpl : public torch::nn::Module {
 public:
  // width A (a multiple of heads); dropout: of the attention weights, in training only.
  MultiHeadSelfAttentionImpl(int64_t width, int64_t heads, double dropout);
  // x: [B, L, A] float (batch first) → [B, L, A]: every position attends to every position.
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor in_proj_weight, in_proj_bias;
  torch::nn::Linear out_proj{nullptr};

 private:
  int64_t heads_;
  double dropout_;
};
TORCH_MODULE(MultiHeadSelfAttention);

}  // namespace recbole::models::layers
