#pragma once
// KTUP (Cao et al. 2019), translation-based user preference (TransH) jointly with the KG, as
// RecBole defines it. Tables (width d): users, items (I rows), preferences P and their normals
// P_n, entities, relations Q and their normals Q_n (a row per relation id each).
//
// Preference induction for a pair (u, i), v = item_i + entity_i:
//   z = (u + v)(P + Q)ᵀ / 2 over the relation ids; use_st_gumbel: w = the one-hot of
//   argmax(z + Gumbel noise), with the gradient of softmax(z + noise) (straight-through);
//   otherwise w = z (raw logits, as RecBole). r = w (P + Q)/2, n = w (P_n + Q_n)/2.
//   score(u, i) = −‖u⊥ + r − v⊥‖² (L1_flag: −‖·‖₁), x⊥ = x − (x·n) n (TransH).
// Losses (pairwise; the trainer walks blocks of train_rec_step recommendation epochs and
// train_kg_step KG epochs, both null: recommendation epochs only):
//   recommendation: BPR(s⁺, s⁻) + Σ_rows (p·p_n)²/‖p‖² over P + align_weight · A(items⁺, items⁻)
//   KG: kg_weight (margin ranking of −‖h⊥ + Q_r − t⊥±‖² + Σ_batch (q·q_n)²/‖q‖²
//       + EmbMarginLoss(h, t⁺, t⁻, Q_r)) + align_weight · A(the batch's ids below n_items)
// with A(ids) = mean ‖item_j − entity_j‖² (squared L2 whatever L1_flag); a KG batch without item
// ids has no align term (RecBole's mean of nothing is NaN, which stops the run). Initialisation:
// xavier-uniform, then every row of every table but the item table L2-normalised (RecBole's item
// table escapes it). The Gumbel noise is drawn at evaluation too, as RecBole's predict draws it
// whatever the mode, so a ranking is a sample. RecBole draws it from the global generator; here a
// pair's noise at evaluation is a hash of (seed, user, item): the same distribution (one
// independent draw per pair), but a user's scores do not depend on the batch, the order or the rank
// they are scored in, and predict agrees with full_sort_predict.
//
// Shapes: full_sort_predict [B, n_items], predict [B]; float32 on the device.
#include "models/capabilities.h"
#include "models/model.h"

namespace recbole::models {

class KTUP : public Model, public MultiPassEpoch {
 public:
  explicit KTUP(const ModelContext& ctx);

  // A recommendation batch (users, items, neg_items) or a KG batch (kg_* columns alone).
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  torch::Tensor predict(const data::Batch& batch) override;
  PassBatches pass_batches(int64_t epoch, int64_t pass) const override;

 private:
  // Scores of the pairs (users[n], items[n]) [N] int64 whose rows are u [N, d] and v [N, d]
  // (v = item + entity rows) → [N].
  torch::Tensor score(const torch::Tensor& users, const torch::Tensor& items,
                      const torch::Tensor& u, const torch::Tensor& v);
  // Evaluation with Gumbel noise: the scores of the pairs whose logits z [N, R] are given; the
  // pair's preference is the argmax of its noisy logits (the one-hot of training's forward
  // value), so r and n are rows of the tables.
  torch::Tensor sampled_scores(const torch::Tensor& users, const torch::Tensor& items,
                               const torch::Tensor& u, const torch::Tensor& v,
                               const torch::Tensor& z) const;
  // The evaluation noise's uniforms of the pairs: [N, n] float32 in [0, 1) on their device.
  torch::Tensor evaluation_uniforms(const torch::Tensor& users, const torch::Tensor& items,
                                    int64_t n) const;
  torch::Tensor item_vectors(const torch::Tensor& ids) const;  // [N, d]
  torch::Tensor align_loss(const torch::Tensor& ids) const;
  torch::Tensor distance(const torch::Tensor& x) const;  // ‖x‖² or ‖x‖₁ per row
  torch::Tensor kg_loss(const data::Batch& batch);

  int64_t rec_step_ = 0, kg_step_ = 0;  // 0: no alternation
  bool gumbel_, l1_;
  double margin_, kg_weight_, align_weight_;
  uint64_t seed_;  // keys the evaluation noise
  torch::Tensor user_embedding_, item_embedding_, pref_embedding_, pref_norm_embedding_,
      entity_embedding_, relation_embedding_, relation_norm_embedding_;
};

}  // namespace recbole::models
