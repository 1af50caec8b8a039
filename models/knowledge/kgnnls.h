#pragma once
// KGNNLS (Wang et al. 2019): KGCN plus label smoothness, as RecBole defines it. The item
// vectors, scores and ranking are KGCN's (kgcn.h); training adds a label-propagation term over
// the same receptive field and the same user-specific neighbour weights:
//   each field entity gets its label for the row's user (1 for a training interaction, 0 for a
//   drawn negative pair, 0.5 when unknown); the row's own item and the item level are held out;
//   per iteration, a labelled entity keeps its label and any other takes Σ_k a_k ℓ_k / K;
//   the item level's result ŷ ∈ [0, 1/K] enters BCEWithLogits(ŷ, target) as a logit, as in
//   RecBole.
//   L = BCE(scores) + ls_weight · BCE(ŷ) + reg_weight · EmbLoss(users, item vectors) over the 2B
//   rows (positives, then negatives).
// The label table: every training pair → 1, then as many drawn (user in [0, n_users], item in
// [0, n_items], ends included, as RecBole) → 0 unless the pair is a training one; drawn once at
// construction from the config's seed. Deliberate differences (robustness, reference §9.7): keys
// are 64-bit (RecBole's int32 keys overflow for large user ids), and a lookup never inserts.
#include <unordered_map>

#include "models/knowledge/kgcn.h"

namespace recbole::models {

class KGNNLS : public KGCN {
 public:
  explicit KGNNLS(const ModelContext& ctx);

 protected:
  // KGCN's part plus the label-smoothness BCE; the EmbLoss reads {u, v} of the 2n rows.
  layers::PartForward loss_part(const data::Batch& part, int64_t batch_rows) override;

 private:
  // ŷ for rows (users, items) with their field and logits: [B].
  torch::Tensor smoothed_labels(const torch::Tensor& users, const torch::Tensor& items,
                                const Field& field, const torch::Tensor& logits);

  double ls_weight_;
  int64_t n_entities_;
  std::unordered_map<int64_t, float> labels_;  // user · n_entities + entity → label
};

}  // namespace recbole::models
