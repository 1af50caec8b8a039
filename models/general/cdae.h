#pragma once
// CDAE (Wu et al. 2016) as RecBole defines it: a user's training row x ([n_items] 0/1) is
// corrupted by inverted dropout (corruption_ratio, training only), then
// h = hid_act(W x̃ + b + V_u) with W: n_items → embedding_size and V a user table, and
// out = Linear(embedding_size → n_items)(h). Scores are out_act(out). Loss (x uncorrupted):
// BCE-with-logits summed over the batch's rows and items (loss_type BCE) or the summed squared
// error of out_act(out) (MSE), + reg_weight_1 · (Σ|V| + Σ|W|) + reg_weight_2 · (‖V‖ + ‖W‖)
// (plain Frobenius norms of the whole tables; the output layer is not regularised).
// Xavier-normal weights (V included), zero biases. Input type: user rows (the pad user 0
// included).
//
// Cost: two dense products with the [B, n_items] rows per batch (O(B · n_items · d)) plus the
// full-table norms; evaluation recomputes per query batch.
#include <string>

#include "models/model.h"

namespace recbole::models {

class CDAE : public Model {
 public:
  explicit CDAE(const ModelContext& ctx);

  // batch: users, history → scalar loss (a sum over the batch, as RecBole).
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users → [B, n_items] out_act(logits).
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // rows [B, n_items], users [B] → output-layer logits [B, n_items].
  torch::Tensor forward(const torch::Tensor& rows, const torch::Tensor& users);

 private:
  torch::Tensor user_embedding_;
  torch::nn::Linear h_item_{nullptr}, out_layer_{nullptr};
  std::string loss_type_, hid_activation_, out_activation_;
  double corruption_ratio_, reg_weight_1_, reg_weight_2_;
};

}  // namespace recbole::models
