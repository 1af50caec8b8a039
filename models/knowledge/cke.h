#pragma once
// CKE (Zhang et al. 2016), structural knowledge only, as RecBole defines it. An item is
// item_i + entity_i (two tables, the same id); a user is a table row. Pairwise training on
// (u, i⁺, i⁻) with a batch of KG triples (h, r, t⁺, t⁻) beside it:
//   L = BPR(⟨u, v⁺⟩, ⟨u, v⁻⟩)                                           recommendation
//     + BPR(δ⁻, δ⁺),  δ± = ‖ĥ + r̂ − t̂±‖²                                  TransR on the KG
//     + w₀·EmbLoss(u, v⁺, v⁻) + w₁·EmbLoss(ĥ, r̂, t̂⁺, t̂⁻)                  (reg_weights)
// with x̂ = normalise(x · M_r) for entities (M_r: row r of trans_w viewed as d × k) and r̂ =
// normalise(relation_r). The KG regulariser acts on unit rows, so it is nearly constant (as
// RecBole's). Tables xavier-normal over whole tables (trans_w's fan-in is d·k).
//
// Shapes: full_sort_predict [B, n_items] = user · (item + entity[:n_items])ᵀ, predict [B];
// float32 on the device.
#include "models/capabilities.h"
#include "models/model.h"

namespace recbole::models {

class CKE : public Model, public FactorScores {
 public:
  explicit CKE(const ModelContext& ctx);

  // batch: users, items, neg_items and kg_heads, kg_relations, kg_tails, kg_neg_tails.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  torch::Tensor predict(const data::Batch& batch) override;
  bool score_factors(torch::Tensor* users, torch::Tensor* items) const override;

 private:
  torch::Tensor item_vectors() const;  // [n_items, d]: item + entity rows

  int64_t kg_size_;
  double reg_rec_, reg_kg_;
  torch::Tensor user_embedding_, item_embedding_, entity_embedding_, relation_embedding_, trans_w_;
};

}  // namespace recbole::models
