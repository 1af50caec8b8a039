#pragma once
// SimpleX (Mao et al. 2021) as RecBole defines it: a user's vector is
// v = γ·e_u + (1−γ)·UI_map(aggregate(H_u)), where H_u are the embeddings of a random subset of at
// most history_len training items of the user (fixed at construction) and aggregate is their
// mean, or an attention-weighted sum (user_attention: logits ⟨tanh(W_k h), e_u⟩;
// self_attention: W_q tanh(W_k h)). Dropout on v in training. Score = cos(v, e_i).
// Pairwise input with K = train_neg_sample_args.sample_num negatives per positive: a batch of
// U·K rows holds U users (its first U rows) and each user's K negatives (row j of tile k is
// user j's k-th negative). Loss: the cosine contrastive loss
// mean_u [relu(1 − cos(v, e⁺)) + negative_weight · mean_k relu(cos(v, e⁻_k) − margin)]
// + reg_weight · EmbLoss(e_u, e⁺, H, E⁻) (squared with require_pow). xavier-normal
// initialisation; item row 0 is zero and, looked up as padding, receives no gradient.
//
// Cost: a batch reads U·(K + 1) item rows and the histories of its distinct users (a sparse product
// for the mean; a [U, L, d] tensor for attention), gathered back to the rows. Evaluation
// aggregates every user once and caches the normalised user and item vectors (score_factors), so a
// full sort is one GEMM; the next calculate_loss clears the cache.
#include "models/cached_factor_model.h"
#include "models/layers/graph.h"
#include "models/layers/history.h"

namespace recbole::models {

class SimpleX : public CachedFactorModel {
 public:
  // A null train_neg_sample_args is a ConfigError (the loss needs negatives).
  explicit SimpleX(const ModelContext& ctx);

  // batch: users, items, neg_items in K tiles.
  torch::Tensor calculate_loss(const data::Batch& batch) override;

 private:
  enum class Aggregator { kMean, kUserAttention, kSelfAttention };
  // The aggregated history a of distinct `users` (int64 [U] on the device; the same ids on the
  // host in users_host), user_e their embeddings: [U, d]. When hist_sq is given, each user's
  // Σ_l ‖h_l‖² ([U]) for the regulariser. The mean is a sparse product over the histories
  // (no [U, L, d] tensor); the attention aggregators need the padded [U, L, d] history.
  torch::Tensor aggregate(const torch::Tensor& users, const torch::Tensor& users_host,
                          const torch::Tensor& user_e, torch::Tensor* hist_sq);
  // The mean aggregator as a sparse operator [U, n_items] over the histories of users_host.
  layers::GraphOperator history_mean(const torch::Tensor& users_host) const;
  // γ·e_u + (1−γ)·UI_map(a).
  torch::Tensor mix(const torch::Tensor& user_e, const torch::Tensor& a);
  // Item rows with row 0 as padding (no gradient to it).
  torch::Tensor item_rows(const torch::Tensor& ids) const;
  std::pair<torch::Tensor, torch::Tensor> evaluation_factors() override;

  int64_t sample_num_;
  double margin_, negative_weight_, gamma_, reg_weight_, dropout_;
  bool require_pow_;
  Aggregator aggregator_;
  torch::Tensor history_ids_, history_len_;  // [n_users, L] int64, [n_users] int64 on the device
  layers::PaddedHistory history_host_;       // the same on the host (bags are built there)
  torch::Tensor user_embedding_, item_embedding_;
  torch::nn::Linear ui_map_{nullptr}, w_k_{nullptr}, w_q_{nullptr};
};

}  // namespace recbole::models
