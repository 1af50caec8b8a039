#pragma once
// MKR (Wang et al. 2019), multi-task learning of recommendation and KG embedding, as RecBole
// defines it. Item id i and entity id i are the same object; the "item" table has a row per
// entity (the KG task indexes it by head ids). L cross & compress units, shared by both tasks,
// mix an item-table row v with the entity row e of the same id:
//   v' = v (eᵀw_vv) + e (vᵀw_ev) + b_vv + b_ev,   e' = v (eᵀw_ve) + e (vᵀw_ee) + b_ve + b_ee
// (w: [d] vectors, b: scalars). Recommendation (pointwise, every epoch):
//   s = ⟨user_mlp(u), v'_i⟩ (or, use_inner_product false, σ(rs_pred(rs_mlp([u' ‖ v']))), whose
//   σ output serves as the logit, as RecBole)
//   L_rs = BCEWithLogits(s, label) + reg_weight (‖u'‖² + ‖v'‖²)/2   (sums over the batch)
// KG (a pass of triples every kge_interval-th epoch, from epoch 0; negative tails unused):
//   t̂ = σ(kge_pred(kge_mlp([e'_h ‖ relation_r])))  (a second σ over the MLP's, as RecBole)
//   L_kg = −Σ_b σ(⟨tail_mlp(e_t), t̂⟩) + B reg_weight (‖e'_h‖² + ‖t'‖²)/2  (RecBole's batch factor)
// kg_embedding_size is accepted and unused: every table is embedding_size wide (as RecBole).
//
// Shapes: full_sort_predict [B, n_items] (every item's v' once, then one product; the scores
// equal predict's), predict [B] logits; float32 on the device.
#include "models/capabilities.h"
#include "models/layers/mlp.h"
#include "models/model.h"

namespace recbole::models {

class MKR : public Model, public MultiPassEpoch {
 public:
  explicit MKR(const ModelContext& ctx);

  // A recommendation batch (users, items, labels) or a KG batch (kg_* columns alone).
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  torch::Tensor predict(const data::Batch& batch) override;
  // Pass 0: the recommendation batches; pass 1: the KG triples, in epochs 0, k, 2k, …
  int64_t passes_per_epoch() const override { return 2; }
  PassBatches pass_batches(int64_t epoch, int64_t pass) const override;

 private:
  struct CrossUnit {
    torch::nn::Linear vv{nullptr}, ev{nullptr}, ve{nullptr}, ee{nullptr};  // d → 1, no bias
    torch::Tensor b_vv, b_ev, b_ve, b_ee;                                  // [1]
  };
  // The L units over item-table and entity rows of the same ids ([N, d] each) → (v', e').
  std::pair<torch::Tensor, torch::Tensor> cross_compress(torch::Tensor v, torch::Tensor e);
  // Scores of users [B, d] (after user_mlp) against items [B, d] (v'), row by row → [B].
  torch::Tensor pair_scores(const torch::Tensor& users, const torch::Tensor& items);
  torch::Tensor kg_loss(const data::Batch& batch);

  int64_t kge_interval_;
  double reg_weight_;
  bool inner_product_;
  torch::Tensor user_embedding_, item_embedding_, entity_embedding_, relation_embedding_;
  std::vector<CrossUnit> units_;
  layers::MLP user_mlp_{nullptr}, tail_mlp_{nullptr}, kge_mlp_{nullptr}, rs_mlp_{nullptr};
  torch::nn::Linear kge_pred_{nullptr}, rs_pred_{nullptr};
};

}  // namespace recbole::models
