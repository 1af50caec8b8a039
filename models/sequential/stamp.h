#pragma once
// STAMP (Liu et al. 2018) as RecBole defines it. With x_i the item vectors of all L positions of
// item_seq (padding included), x_t the last item's and m_s = Σ_i x_i / len (the sum runs over all
// L positions, the padding item's vector among them, as RecBole):
//   α_i = w0 · σ(W1 x_i + W2 x_t + W3 m_s + b_a)   (no mask, no softmax)
//   m_a = Σ_i α_i x_i + m_s
//   h   = tanh(MLP_a m_a) ⊙ tanh(MLP_b x_t)
// W1–W3 [d, d] and w0 [1, d] without bias, b_a a zero-initialised vector, MLP_a / MLP_b with
// bias. Init: the item table N(0, 0.002²), every Linear N(0, 0.05²) with bias 0.
//
// Because the padding positions take part, the whole MAX_ITEM_LIST_LENGTH width is read.
#include "models/sequential/sequential_model.h"

namespace recbole::models {

class STAMP : public SequentialModel {
 public:
  explicit STAMP(const ModelContext& ctx);
  torch::Tensor encode(const data::Batch& batch) override;

 private:
  torch::nn::Linear w1_{nullptr}, w2_{nullptr}, w3_{nullptr}, w0_{nullptr};
  torch::nn::Linear mlp_a_{nullptr}, mlp_b_{nullptr};
  torch::Tensor b_a_;
};

}  // namespace recbole::models
