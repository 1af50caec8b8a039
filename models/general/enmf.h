#pragma once
// ENMF (Chen et al. 2020, efficient neural matrix factorisation) as RecBole defines it: user
// table P, item table Q (embedding_size) and a weight vector h; s(u, i) = h · (p_u ⊙ q_i).
// Non-sampling loss over a batch of users, a sum (c₀ = negative_weight):
//   Σ_u Σ_{slots l of u's padded history} [(1 − c₀) r_ul² − 2 r_ul],
//       r_ul = h · (dropout(p_u) ⊙ q_{hist[u, l]})
//   + c₀ Σ_{a,b} (Qᵀ Q)_{ab} (P_Bᵀ P_B)_{ab} (hᵀ h)_{ab}   (= c₀ Σ_{u∈B} Σ_{every item} s(u,i)²,
//       undropped users, all items including the pad item)
//   + reg_weight · (‖P‖ + ‖Q‖) (plain Frobenius norms of the whole tables).
// RecBole's pad-slot quirk is reproduced on purpose: the padded history matrix
// (layers::padded_history, width L = longest training row) is used without a mask, so each of
// the L − |u| padded slots of a user counts as a positive of the pad item 0, whose embedding is
// a non-zero random vector. As RecBole's padding_idx lookups, those slots send gradient to h and
// p_u but not to q_0, and the pad user's p_0 gets no gradient from lookups; q_0 is still trained
// by the whole-data term. pad_slots_as_positives false (not a RecBole key) masks the padded
// slots instead. Xavier-normal init of both tables (row 0 included) and h.
// Input type: user rows (every user id once per epoch, the pad user 0 included).
//
// Cost: the positive part is computed as one [B, d] × [d, n_items] product masked by the batch
// rows, plus the pad-slot count per user (equivalent to RecBole's [B, L, d] gather, whose L is
// the longest history); the whole-data part is three d × d Gram matrices, O((n_items + B) d²).
// Scoring is a dot product, offered to the evaluator as factors (P ⊙ h, Q).
#include "models/capabilities.h"
#include "models/model.h"

namespace recbole::models {

class ENMF : public Model, public FactorScores {
 public:
  explicit ENMF(const ModelContext& ctx);

  // batch: users, history → scalar loss (a sum over the batch, as RecBole).
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users → [B, n_items] h · (p_u ⊙ q_i).
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // users: P ⊙ h [n_users, d]; items: Q [n_items, d] (detached).
  bool score_factors(torch::Tensor* users, torch::Tensor* items) const override;

 private:
  torch::Tensor user_embedding_, item_embedding_;
  torch::nn::Linear h_{nullptr};
  torch::Tensor pad_slots_;  // [n_users] float32 on the device: L − |u|, the padded slots
  double dropout_prob_, reg_weight_, negative_weight_;
};

}  // namespace recbole::models
