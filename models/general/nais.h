#pragma once
// NAIS (He et al. 2018) as RecBole defines it: FISM's item tables p (source) and q (destination)
// with an attention over the user's history. For a pair (u, i), over j ∈ R_u (the user's whole
// training row, the target item included for positive rows, as RecBole):
//   sim_j = p_j·q_i,   l_j = h·ReLU(W(p_j ⊙ q_i) + c)   ('prod'; 'concat': W[p_j ; q_i] + c),
//   a_j = exp(l_j) / (Σ_k exp(l_k))^β,   y = |R_u|^−α Σ_j a_j sim_j + b_i,
// with p, q N(0, 0.01²), b zeros, W xavier-normal (bias 0), h ones [weight_size, 1]. Pointwise
// input. Loss: BCE-with-logits(y, label) + reg₁‖p‖ + reg₂‖q‖ + reg₃‖W‖ (whole tables,
// unsquared). predict and full sort return σ(y).
//
// Exponentials: a_j is computed as exp(l_j − m)·exp(m(1 − β)) / (Σ_k exp(l_k − m))^β with
// m = max_k l_k (an identity for every m, so the gradient is unchanged): the same values as
// RecBole's unstabilised form wherever that one is finite, and finite further.
//
// Memory: a training batch flattens its rows' histories into P = Σ_b |R_{u_b}| (row, history
// item) pairs: a few [P, max(d, weight_size)] float32 tensors (RecBole pads every row to the
// longest history: [B, L_max, d]). A full sort scores one user against blocks of items,
// [n, |R_u|, max(d, weight_size)] with n·|R_u|·max(d, weight_size) ≤ 2¹⁸ floats (1 MiB; one
// item per block when a single item exceeds it), a few such tensors per worker thread, never
// [n_items, |R_u|, d] at once. `split_to` is declared for RecBole's configs and has no effect.
//
// pretrain_path: a FISM checkpoint of this recbole-cpp (recbole/runtime/checkpoint_file.h) whose
// item_src_embedding / item_dst_embedding tables replace p and q (same [n_items, d]); the
// attention keeps its fresh initialisation, as RecBole.
//
// Tensors: ids int64, scores float32, all on the device manager's device.
#include <string>

#include "models/layers/mlp.h"
#include "models/model.h"

namespace recbole::models {

class NAIS : public Model {
 public:
  // reg_weights must have 3 entries; a pretrain_path that is not a readable FISM checkpoint of
  // the same shapes is an error naming the path.
  explicit NAIS(const ModelContext& ctx);

  // batch: users, items, labels (float32 0/1) → BCE-with-logits(y) + regularisers, 0-dim.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users → σ(y) of every item, [B, n_items].
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // batch: users, items → σ(y), [B].
  torch::Tensor predict(const data::Batch& batch) override;

 private:
  // y of (users[b], items[b]) pairs (int64 [B] on the device) → [B], with gradient.
  torch::Tensor logits(const torch::Tensor& users, const torch::Tensor& items);
  // Attention logits l of history rows p ([..., d]) against targets q (broadcastable with p);
  // pq = p ⊙ q, which 'prod' reads (undefined is fine for 'concat').
  torch::Tensor attention(const torch::Tensor& p, const torch::Tensor& q, const torch::Tensor& pq);
  // σ(y) of user u (history `hist`, int64 [L] on the device) against items [i0, i0 + n) → [n].
  torch::Tensor score_block(int64_t u, const torch::Tensor& hist, int64_t i0, int64_t n);

  bool concat_;
  double reg_p_, reg_q_, reg_w_, beta_;
  int64_t dim_, weight_size_;
  torch::Tensor scale_;  // [n_users] |R_u|^−α (|R_u| at least 1)
  torch::Tensor item_src_embedding_, item_dst_embedding_, bias_, weight_layer_;
  layers::MLP mlp_{nullptr};
};

}  // namespace recbole::models
