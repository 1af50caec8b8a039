#pragma once
// FwFM (RecBole's FwFM): field-weighted factorisation machine. The pair (i, j) of field
// embeddings contributes r_ij · (E_i ⊙ E_j); the sum over pairs [B, d] passes dropout and is
// summed over d, plus the first-order part. Every field is its own field (`fields` null). As in
// RecBole, the pair weights r are drawn N(0, 1) and never trained; unlike RecBole they are a
// buffer, so a saved model predicts the same after loading (RecBole draws new ones).
#include "models/context/context_model.h"

namespace recbole::models {

class FwFM : public ContextModel {
 public:
  explicit FwFM(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;

 private:
  torch::Tensor left_, right_;  // [P] int64: the field positions i < j of each pair
  torch::Tensor pair_weights_;  // [F, F] float32, N(0, 1); only r[i][j], i < j, are read
  torch::nn::Dropout dropout_{nullptr};
};

}  // namespace recbole::models
