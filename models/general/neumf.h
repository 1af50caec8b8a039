#pragma once
// NeuMF (He et al. 2017) as RecBole defines it: a generalised matrix factorisation branch
// (p_u ⊙ q_i) and an MLP branch (MLPLayers over [p'_u ; q'_i], ReLU after every layer), their
// outputs concatenated into one Linear to a logit. Four embedding tables N(0, 0.01²); the MLP and
// output layers keep libtorch's default initialisation. Pointwise input: the loss is the mean
// binary cross-entropy with logits over the batch's labelled rows. predict = σ(logit).
//
// Evaluation: RecBole has no full sort for NeuMF (every (user, item) pair goes through predict).
// Here full_sort_predict gives the same scores in one batched pass: the first MLP layer's
// input is [p'_u ; q'_i], so W₁[p'_u ; q'_i] + b₁ = W₁ᵤ p'_u + (W₁ᵢ q'_i + b₁) is computed once
// per user and once per item; the remaining layers run on blocks of (user, items) rows on the
// ThreadPool; the MF branch is one product (p_u ⊙ w_mf) q_iᵀ.
//
// Cost: training is two small GEMMs per layer per batch. A full sort costs
// B · n_items · Σ_k h_k h_{k+1} multiply-adds (the MLP past its first layer), the bulk of an
// evaluation.
#include <vector>

#include "models/layers/mlp.h"
#include "models/model.h"

namespace recbole::models {

class NeuMF : public Model {
 public:
  // use_pretrain is a ConfigError (not supported yet); mf_train and mlp_train both false too.
  explicit NeuMF(const ModelContext& ctx);

  // batch: users, items, labels (float32 0/1) → mean BCE-with-logits.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users → σ(logit) of every item, [B, n_items] float32 on the device.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // batch: users, items → σ(logit), [B].
  torch::Tensor predict(const data::Batch& batch) override;

 private:
  // Logits of (users[b], items[b]) pairs: [B].
  torch::Tensor logits(const torch::Tensor& users, const torch::Tensor& items);
  // The MLP branch's contribution to the logits of users × every item, dropout off:
  // [B, n_items], added into `out`.
  void add_mlp_scores(const torch::Tensor& users, torch::Tensor& out) const;

  int64_t mf_dim_, mlp_dim_;
  bool mf_train_, mlp_train_;
  torch::Tensor user_mf_embedding_, item_mf_embedding_;
  torch::Tensor user_mlp_embedding_, item_mlp_embedding_;
  layers::MLP mlp_{nullptr};
  torch::nn::Linear predict_layer_{nullptr};
};

}  // namespace recbole::models
