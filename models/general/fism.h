#pragma once
// FISM (Kabbur et al. 2013) as RecBole defines it: the score of (u, i) is
// x = |R_u|^−α · Σ_{j ∈ R_u} p_j·q_i + b_u + b_i over the user's whole training row (the target
// item included in its own history, as RecBole), with item tables p, q N(0, 0.01²) and zero
// biases. Pointwise input. Loss: RecBole's BCE-with-logits applied to σ(x) — a second sigmoid,
// kept on purpose (it shapes the training dynamics RecBole's results come from) — plus
// reg₁‖p‖ + reg₂‖q‖ over the whole tables (unsquared). predict and full sort both return x
// (RecBole's predict returns σ(σ(x)) and its full sort x; the ranking is the same).
//
// Σ_j p_j·q_i = (Σ_j p_j)·q_i: a batch sums p over its distinct users' rows once (an embedding
// bag: Σ degrees · d) and a full sort is one [B, d] × [d, n_items] product, where RecBole loops
// over the users building [n_items, |R_u|, d] tensors.
#include "models/model.h"

namespace recbole::models {

class FISM : public Model {
 public:
  explicit FISM(const ModelContext& ctx);

  // batch: users, items, labels.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users → [B, n_items] x.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // batch: users, items → [B] x.
  torch::Tensor predict(const data::Batch& batch) override;

 private:
  // |R_u|^−α Σ_{j ∈ R_u} p_j for `users` (int64 [B] on the device) → [B, d].
  torch::Tensor user_sums(const torch::Tensor& users);

  double reg_p_, reg_q_;
  torch::Tensor scale_;  // [n_users] |R_u|^−α (|R_u| at least 1), on the device
  torch::Tensor item_src_embedding_, item_dst_embedding_, user_bias_, item_bias_;
};

}  // namespace recbole::models
