#pragma once
// DMF (Xue et al. 2017) as RecBole defines it: a user tower over the user's training row and an
// item tower over the item's training column. user_linear (n_items → d_u, no bias) applied to
// the 0/1 row R_u· is the sum of the weight's columns over the user's items; then MLPLayers with
// ReLU after every layer, the last included. The item side mirrors it over R_·i. Logit =
// ⟨y_u, y_i⟩; every Linear N(0, 0.01²), biases 0. Pointwise input: mean BCE-with-logits against
// the label ('01' matrix; max_rating is 1). predict = σ(logit).
//
// The two first layers are held as tables (user_item_weight [n_items, d_u] = user_linear's
// weight transposed, item_user_weight [n_users, d_i]) so that a row × weight product is an
// embedding bag over the row's ids: a batch costs Σ (degrees of its distinct users and items) ·
// d, never a dense [B, n_items] row. Evaluation caches the item tower for every item (filled
// by before_evaluation or the first full sort, cleared by the next calculate_loss).
#include "models/layers/mlp.h"
#include "models/model.h"

namespace recbole::models {

class DMF : public Model {
 public:
  // inter_matrix_type 'rating' and towers whose last sizes differ are ConfigErrors.
  explicit DMF(const ModelContext& ctx);

  // batch: users, items, labels → mean BCE-with-logits.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users → [B, n_items] σ(⟨y_u, y_i⟩).
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // batch: users, items → [B].
  torch::Tensor predict(const data::Batch& batch) override;
  void before_evaluation() override;

 private:
  // Tower outputs of ids (any device, int64 [B]) → [B, d].
  torch::Tensor user_vectors(const torch::Tensor& users);
  torch::Tensor item_vectors(const torch::Tensor& items);
  const torch::Tensor& item_cache();

  data::InteractionMatrix item_users_;  // items → users (the training matrix transposed)
  torch::Tensor user_item_weight_, item_user_weight_;
  layers::MLP user_tower_{nullptr}, item_tower_{nullptr};
  torch::Tensor item_cache_;  // [n_items, d], undefined while training
};

}  // namespace recbole::models
