#pragma once
// FiGNN (RecBole's FiGNN): the fields as nodes of a fully connected graph. Node states
// H0 = ReLU(self-attention(Dropout(Linear(E))) + Linear_res(E)) [B, F, A]; edge weights
// G = softmax_j(LeakyReLU(w·[H0_i ; H0_j])) with no self-loops; n_layers − 1 propagation steps,
// each m_j = W_out[j] h_j, a_i = W_in[i] Σ_j G_ij m_j + b, h_i = GRUCell(a_i, h_i) (one cell for
// every step and field), then h += H0; logit Σ_i ω_i (w₁·h_i) with ω = Linear(flatten h). No
// first-order part. Init as RecBole: xavier on the Linears and on W_in/W_out, the GRUCell and
// the attention's input projection keep their defaults.
#include <vector>

#include "models/context/context_model.h"
#include "models/layers/self_attention.h"

namespace recbole::models {

class FiGNN : public ContextModel {
 public:
  explicit FiGNN(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;

 private:
  int64_t attention_size_;
  torch::nn::Linear att_embedding_{nullptr}, residual_{nullptr};
  double hidden_dropout_;
  layers::MultiHeadSelfAttention attention_{nullptr};
  torch::nn::Linear edge_{nullptr};                 // 2A → 1, no bias
  std::vector<torch::Tensor> w_in_, w_out_, bias_;  // per step: [F, A, A], [F, A, A], [A]
  torch::nn::GRUCell gru_{nullptr};
  torch::nn::Linear node_score_{nullptr}, node_weight_{nullptr};  // A → 1, F·A → F (no bias)
};

}  // namespace recbole::models
