#pragma once
// FwFM (RecBole's FwFM): field-weighted factorisation machine. The pair (i, j) of field
// embeddings contributes r[F_i][F_j] · (E_i ⊙ E_j), F the field of a position under the
// `fields` map (null: every feature its own field); the sum over pairs [B, d] passes dropout
// and is summed over d, plus the first-order part. As in
// RecBole, the pair weights r are drawn N(0, 1) and never trained; unlike RecBole they are a
// buffer, so a saved model predicts the same after loading (RecBole draws new ones).
#include "models/context/context_model.h"

namespace recbole::models {

class FwFM : public ContextModel {
 public:
  explicit FwFM(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;

 private:
  torch::Tensor left_, right_;              // [P] int64: the E positions i < j of each pair
  torch::Tensor left_field_, right_field_;  // [P] int64: their fields F_i, F_j
  torch::Tensor pair_weights_;              // [K, K] float32, N(0, 1), K fields
  double dropout_;                          // on the pooled pair products
};

}  // namespace recbole::models
