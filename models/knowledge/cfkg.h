#pragma once
// CFKG (Ai et al. 2018), as RecBole defines it: users, items and KG entities in one space, the
// purchase a relation like the KG's. Score of (head, relation, tail):
//   inner_product: ⟨h + r, t⟩;   transe: −‖h + r − t‖.
// A recommendation row is (user + buy, item⁺, item⁻) and a KG row (entity_h + relation_r,
// tail⁺, tail⁻); both kinds go into one loss (the KG batch beside each recommendation batch):
//   inner_product: mean over all rows of softplus(−⟨a, p⟩) + softplus(⟨a, n⟩);
//   transe: the triplet margin loss mean(max(0, ‖a − p‖ − ‖a − n‖ + margin)) (PyTorch's pairwise
//   distance, 1e−6 added to each difference).
// The buy relation is an extra row of the relation table (index n_relations), not the dataset's
// [UI-Relation] id, as in RecBole. Tables xavier-normal.
//
// Shapes: full_sort_predict [B, n_items] (every item's entity row; RecBole scores pairs one by
// one through predict, with the same values), predict [B]; float32 on the device.
#include "models/capabilities.h"
#include "models/model.h"

namespace recbole::models {

class CFKG : public Model, public FactorScores {
 public:
  explicit CFKG(const ModelContext& ctx);

  torch::Tensor calculate_loss(const data::Batch& batch) override;
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  torch::Tensor predict(const data::Batch& batch) override;
  bool score_factors(torch::Tensor* users, torch::Tensor* items) const override;

 private:
  torch::Tensor anchors(const torch::Tensor& users) const;  // user + buy: [B, d]

  bool transe_;
  double margin_;
  int64_t buy_;  // the buy relation's row
  torch::Tensor user_embedding_, entity_embedding_, relation_embedding_;
};

}  // namespace recbole::models
