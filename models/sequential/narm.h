#pragma once
// NARM (Li et al. 2017) as RecBole defines it: item embeddings → dropout → a GRU without biases;
// the global encoder is the GRU state at the last item (c_g = g_len), the local one an
// unnormalised attention over the states, α_t = v·(m_t ⊙ σ(A1 g_t + A2 c_g)) with m_t = 1 at
// real items (so 0 at padding), c_l = Σ_t α_t g_t; h = B · dropout([c_l ; c_g]). A1, A2, v, B
// have no biases. Init: the item table and every Linear xavier_normal, the GRU libtorch's
// defaults (as RecBole).
//
// The GRU runs up to the batch's longest sequence only: later positions have m_t = 0 and never
// reach an earlier state. On the CPU it is layers::gru_outputs (models/layers/gru.h), both
// encoders layers::narm_encoder (models/layers/narm_encoder.h).
#include "models/sequential/sequential_model.h"

namespace recbole::models {

class NARM : public SequentialModel {
 public:
  explicit NARM(const ModelContext& ctx);
  torch::Tensor encode(const data::Batch& batch) override;

 private:
  double emb_dropout_, ct_dropout_;
  torch::nn::GRU gru_{nullptr};
  torch::nn::Linear a1_{nullptr}, a2_{nullptr}, v_{nullptr}, b_{nullptr};
};

}  // namespace recbole::models
