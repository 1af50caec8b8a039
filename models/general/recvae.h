#pragma once
// RecVAE (Shenbin et al. 2020) as RecBole defines it, with RecBole's RecVAETrainer schedule.
//
// Encoder: the row x ([n_items] 0/1) L2-normalised, dropped out (p), then five dense layers
// with residual sums, h_k = LayerNorm_k(swish(fc_k(h_{k−1}) + h_1 + … + h_{k−1})) (eps 0.1),
// heads μ and logvar of latent_dimension. Decoder: one Linear latent → n_items (with bias); its
// logits at z = μ are the scores. Training samples z = μ + ε ⊙ e^{logvar/2}, ε ~ N(0, 0.01²).
// Composite prior: log p(z) = logsumexp of log w_k + log N(z; m_k, v_k) over N(0, 1),
// N(μ_old, e^{logvar_old}) from the frozen "old" encoder on the undropped row, and
// N(0, e^{10}), with mixture_weights w. Loss = −(mean_u Σ_i log_softmax(logits)·x −
// mean_u w_u Σ_dims (log N(z; μ, logvar) − log p(z))), w_u = gamma · |x_u| (beta when gamma is
// 0). Xavier-normal Linear weights (both encoders, independently: the old encoder is a separate
// random network until the first update_prior), LayerNorm γ = 1, β = 0.
//
// Training: two optimizers (optimizer_groups: 0 = encoder, 1 = decoder). One epoch is
// n_enc_epochs passes over the user rows training the encoder with dropout p = dropout_prob,
// then the old encoder takes the encoder's weights, then n_dec_epochs passes training the
// decoder with p = 0 (z still sampled). As RecBole's trainer, only the decoder passes' loss is
// reported: train_step returns a zero loss during encoder passes. calculate_loss outside the
// trainer (no pass started) uses the encoder phase. Input type: user rows (the pad user 0
// included).
//
// Cost: per batch the encoder (n_items × hidden, then four hidden × hidden layers) runs twice
// (the current and the old encoder) and the decoder once; evaluation runs encoder + decoder.
#include <vector>

#include "models/capabilities.h"
#include "models/model.h"

namespace recbole::models {

// RecVAE's encoder: [B, n_items] rows → μ, logvar [B, latent].
class RecVaeEncoderImpl : public torch::nn::Module {
 public:
  RecVaeEncoderImpl(int64_t n_items, int64_t hidden, int64_t latent);
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& rows, double dropout);

 private:
  std::vector<torch::nn::Linear> fc_;
  std::vector<torch::nn::LayerNorm> ln_;
  torch::nn::Linear fc_mu_{nullptr}, fc_logvar_{nullptr};
};
TORCH_MODULE(RecVaeEncoder);

class RecVAE : public Model, public HistoryScores, public MultiPassEpoch {
 public:
  explicit RecVAE(const ModelContext& ctx);

  // batch: users, history → scalar loss of the current phase (encoder outside the trainer).
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users → [B, n_items] decoder logits at z = μ.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  bool scores_from_history() const override { return true; }

  int64_t passes_per_epoch() const override { return n_enc_epochs_ + n_dec_epochs_; }
  void on_pass_start(int64_t pass) override;
  std::vector<std::vector<torch::Tensor>> optimizer_groups() override;
  torch::Tensor train_step(const data::Batch& batch, TrainStep& step) override;

  // Copies the encoder's weights into the old encoder of the composite prior.
  void update_prior();
  // log p(z) per row and dimension: z [B, latent], rows [B, n_items] → [B, latent].
  torch::Tensor log_prior(const torch::Tensor& rows, const torch::Tensor& z);

  // Whether the epoch is in its encoder passes (the prior is a module).
  void save_training_state(torch::serialize::OutputArchive& archive) const override;
  void load_training_state(torch::serialize::InputArchive& archive) override;

 private:
  bool encoder_phase_ = true;
  RecVaeEncoder encoder_{nullptr}, encoder_old_{nullptr};
  torch::nn::Linear decoder_{nullptr};
  double dropout_prob_, beta_, gamma_;
  std::vector<double> mixture_weights_;
  int64_t n_enc_epochs_, n_dec_epochs_;
};

}  // namespace recbole::models
