#pragma once
// CORE (Hou et al. 2022) as RecBole defines it: the session and the items live in one
// representation space. X = sess_dropout(E[item_seq]); weights α over the positions holding an
// item — `ave`: uniform; `trm`: X + positions → LayerNorm → dropout → a causal transformer →
// Linear(d → 1), softmax in float64 over the non-padding positions —; h = normalize(Σ α_i X_i).
// Scores are cosines over a temperature: h · normalize(E)ᵀ / τ, in training against the
// item-dropped-out table (item_dropout on every entry, then row-normalised); CE only.
// Init: every parameter U(−1/√d, 1/√d), d = embedding_size, as RecBole (the transformer's own
// initializer_range has no effect there either).
// Unlike RecBole, predict (sampled evaluation) scores against the normalised item vectors as
// full ranking does (RecBole's predict skips the normalisation, so its uniN and full rankings
// disagree; docs/models.md).
#include "models/layers/sequence.h"
#include "models/sequential/sequential_model.h"

namespace recbole::models {

class CORE : public SequentialModel {
 public:
  explicit CORE(const ModelContext& ctx);
  // h: [B, d], unit rows.
  torch::Tensor encode(const data::Batch& batch) override;
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // α: [B, L] float32 over item_seq [B, L] (rows sum to 1 over the positions holding an item),
  // from the session-dropped-out item vectors x [B, L, d].
  torch::Tensor weights(const torch::Tensor& item_seq, const torch::Tensor& x);

 protected:
  // Against the normalised item vectors, over the temperature: [B].
  torch::Tensor score_items(const torch::Tensor& h, const torch::Tensor& items) const override;

 private:
  bool transformer_;  // dnn_type trm (else ave)
  double sess_dropout_, item_dropout_, hidden_dropout_, temperature_;
  torch::Tensor position_embedding_;  // [max_len, d], trm only
  torch::nn::LayerNorm layer_norm_{nullptr};
  layers::TransformerEncoder encoder_{nullptr};
  torch::nn::Linear to_logit_{nullptr};
};

}  // namespace recbole::models
