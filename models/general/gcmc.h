#pragma once
// GCMC (van den Berg et al. 2017) as RecBole defines it for implicit feedback: one support, the
// symmetrically normalised user–item graph Â (binary, layers/graph.h), and one-hot node features.
//
// Encoder (the whole graph, every training batch):
//   H = mask ⊙ W         W [N, gcn_output_dim] shared by users and items (N = n_users + n_items;
//                        the one-hot features make X·W a row lookup); in training, node dropout
//                        keeps each row with probability 1 − dropout_prob and scales it by
//                        1/(1 − dropout_prob) (RecBole's sparse_dropout of the feature entries)
//   Z = dropout(ReLU(Â H)) · Dᵀ    D [embedding_size, gcn_output_dim], no bias; → [N, d]
//   users = Z[0, n_users), items = Z[n_users, N)
// Decoder: t_s = u Q_s vᵀ for the num_basis_functions bases Q_s [d, d]; logits = C · t with
// C [class_num, num_basis_functions] (no bias). Loss: cross-entropy over the 2B rows (u, i⁺) →
// class 1, (u, i⁻) → class 0, averaged. Pairwise input.
// Score = the class-1 logit, as RecBole (not a probability: it ranks differently).
//
// Evaluation: the class-1 logit is a bilinear form, u (Σ_s C[1, s] Q_s) vᵀ, so it is computed
// once per evaluation as a dot product of cached factors (users · M, items), which the next
// training batch drops; RecBole re-runs the encoder for every evaluation batch. predict gathers
// from full_sort_predict, so both return the same number for a pair.
// Initialisation: W, D, C uniform ±√(2 / (fan_in + fan_out)) (RecBole's with one support); Q_s
// orthogonal with gain 1.1. Shapes: full_sort_predict [B, n_items], predict [B], float32 on the
// device.
// Cost per training batch: one sparse product Â·[N, gcn_output_dim] forward and back (on the
// ThreadPool), one [N, gcn_output_dim] × [gcn_output_dim, d] GEMM, and the decoder over 2B rows.
#include "models/cached_factor_model.h"
#include "models/layers/graph.h"

namespace recbole::models {

class GCMC : public CachedFactorModel {
 public:
  explicit GCMC(const ModelContext& ctx);

  // batch: users, items, neg_items.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users, items → [B]: column `items` of full_sort_predict.
  torch::Tensor predict(const data::Batch& batch) override { return Model::predict(batch); }

  // The encoder's outputs: users [n_users, d], items [n_items, d] (node dropout and dropout
  // when training).
  std::pair<torch::Tensor, torch::Tensor> encode() const;
  // The decoder's logits of the rows' (users, items) pairs from encoded tables → [B, class_num].
  torch::Tensor logits(const torch::Tensor& user_table, const torch::Tensor& item_table,
                       const torch::Tensor& users, const torch::Tensor& items) const;

 private:
  std::pair<torch::Tensor, torch::Tensor> evaluation_factors() override;

  layers::GraphOperator adjacency_;
  torch::Tensor encoder_weight_;  // W [N, gcn_output_dim]
  torch::Tensor dense_weight_;    // D [d, gcn_output_dim]
  torch::Tensor basis_;           // Q [num_basis_functions, d, d]
  torch::Tensor classifier_;      // C [class_num, num_basis_functions]
  double dropout_prob_;
};

}  // namespace recbole::models
