#pragma once
// MultiDAE (Liang et al. 2018) as RecBole defines it: a user's training row x ([n_items] 0/1)
// is L2-normalised, dropped out (training only, dropout_prob) and passed through an encoder
// MLP n_items → mlp_hidden_size… → latent_dimension with tanh after every layer (the code
// too), then a decoder MLP latent_dimension → reversed hidden sizes → n_items with tanh between
// layers and none after the last. The decoder logits are the scores. Loss: multinomial NLL,
// mean over the batch rows; no regulariser. Xavier-normal weights, zero biases. Input type: user
// rows (every user id once per epoch, the pad user 0 included).
//
// Cost: as MultiVAE, two dense products with the [B, n_items] rows per batch; evaluation
// recomputes them per query batch.
#include "models/capabilities.h"
#include "models/layers/mlp.h"
#include "models/model.h"

namespace recbole::models {

class MultiDAE : public Model, public HistoryScores {
 public:
  explicit MultiDAE(const ModelContext& ctx);

  // batch: users, history → scalar loss.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users → [B, n_items] decoder logits.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  bool scores_from_history() const override { return true; }
  // rows: [B, n_items] → logits [B, n_items].
  torch::Tensor forward(const torch::Tensor& rows);

 private:
  layers::MLP encoder_{nullptr}, decoder_{nullptr};
  double dropout_prob_;
};

}  // namespace recbole::models
