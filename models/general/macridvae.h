#pragma once
// MacridVAE (Ma et al. 2019, disentangled VAE) as RecBole defines it. Items and kfac concept
// prototypes have embeddings (embedding_size); T and C are their row-normalised tables. Each
// item's concept assignment is softmax(T Cᵀ / tau) over the prototypes — in training (nogb
// false) a soft Gumbel-softmax sample of those logits instead. For each concept k the user's row
// (L2-normalised, dropped out in training) weighted by the items' assignment to k goes through
// the encoder MLP n_items → encoder_hidden_size… → 2·embedding_size (tanh between layers);
// μ_k = normalize(first half), logvar_k = second half; z_k = normalize(μ_k + ε ⊙ e^{logvar_k/2})
// with ε ~ N(0, std²) in training, normalize(μ_k) otherwise. Scores: logits =
// log Σ_k exp(z_k Tᵀ / tau) ⊙ assignment_k. Loss: multinomial NLL (mean over rows) + anneal ·
// Σ_k −½ mean_u Σ (1 + logvar_k − e^{logvar_k}) (no μ² term: μ_k is unit-norm), annealed per
// training batch as MultiVAE; + reg_weights[0] · (‖items‖ + ‖prototypes‖) + reg_weights[1] ·
// Σ ‖encoder weights‖ when a weight is non-zero. Xavier-normal tables and Linear weights.
// Input type: user rows (the pad user 0 included).
//
// Cost: kfac encoder passes over the [B, n_items] rows and kfac [B, d] × [d, n_items] products
// per batch, forward and back; evaluation the same without the backward.
#include <vector>

#include "models/capabilities.h"
#include "models/layers/autoencoder.h"
#include "models/layers/mlp.h"
#include "models/model.h"

namespace recbole::models {

class MacridVAE : public Model, public HistoryScores {
 public:
  explicit MacridVAE(const ModelContext& ctx);

  // batch: users, history → scalar loss.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users → [B, n_items] logits.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  bool scores_from_history() const override { return true; }

  // rows [B, n_items] → logits [B, n_items] and per concept μ_k, logvar_k [B, d].
  struct Output {
    torch::Tensor logits;
    std::vector<torch::Tensor> mu, logvar;
  };
  Output forward(const torch::Tensor& rows);
  // The items' concept assignment [n_items, kfac] (sampled in training unless nogb).
  torch::Tensor assignments(const torch::Tensor& items_normed) const;

  // The KL annealing counter.
  void save_training_state(torch::serialize::OutputArchive& archive) const override;
  void load_training_state(torch::serialize::InputArchive& archive) override;

 private:
  torch::Tensor item_embedding_, k_embedding_;
  layers::MLP encoder_{nullptr};
  int64_t d_, kfac_;
  double dropout_prob_, tau_, std_;
  bool nogb_;
  std::vector<double> reg_weights_;
  layers::KlAnneal anneal_;
};

}  // namespace recbole::models
