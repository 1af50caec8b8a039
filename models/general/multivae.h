#pragma once
// MultiVAE (Liang et al. 2018) as RecBole defines it. A user's training row x ([n_items] 0/1)
// is L2-normalised, dropped out (training only, dropout_prob), and encoded by an MLP
// n_items → mlp_hidden_size… → latent_dimension (tanh between layers, none after the last); the
// first half of the code is μ, the second logvar, so the latent size is latent_dimension / 2.
// Training samples z = μ + ε ⊙ e^{logvar/2} with ε ~ N(0, 0.01²); evaluation uses z = μ. The
// decoder MLP latent/2 → reversed hidden sizes → n_items gives the logits, which are the scores.
// Loss: multinomial NLL (mean over the batch rows) + anneal · KL, anneal = min(anneal_cap,
// batches seen / total_anneal_steps), counted per training batch. Xavier-normal weights, zero
// biases. Input type: user rows (every user id once per epoch, the pad user 0 included).
//
// Cost: per batch two dense products with the [B, n_items] rows (encoder input, decoder
// output) — O(B · n_items · hidden); evaluation recomputes them per query batch (no cache).
#include "models/capabilities.h"
#include "models/layers/autoencoder.h"
#include "models/layers/mlp.h"
#include "models/model.h"

namespace recbole::models {

class MultiVAE : public Model, public HistoryScores {
 public:
  explicit MultiVAE(const ModelContext& ctx);

  // batch: users, history → scalar loss.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users → [B, n_items] decoder logits at z = μ.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  bool scores_from_history() const override { return true; }

  // rows: [B, n_items] → logits [B, n_items], μ and logvar [B, latent/2].
  struct Output {
    torch::Tensor logits, mu, logvar;
  };
  Output forward(const torch::Tensor& rows);

  // The KL annealing counter.
  void save_training_state(torch::serialize::OutputArchive& archive) const override;
  void load_training_state(torch::serialize::InputArchive& archive) override;

 private:
  layers::MLP encoder_{nullptr}, decoder_{nullptr};
  int64_t latent_;
  double dropout_prob_;
  layers::KlAnneal anneal_;
};

}  // namespace recbole::models
