#pragma once
// DiffRec (Wang et al. 2023) as RecBole defines it: a user's training row x₀ ([n_items] 0/1) is
// noised by a short Gaussian diffusion (layers::DiffusionSchedule, `steps` steps) and a denoiser
// learns to recover it. Denoiser: the sinusoidal embedding of t (embedding_size wide, cos then
// sin, max period 10 000) through a Linear; x (L2-normalised when `norm`) dropped out at 0.5 in
// training, concatenated with it, and an MLP n_items + embedding_size → dims_dnn… → n_items with
// mlp_act_func between layers and none after the last; xavier-normal weights, zero biases.
//
// Training (user rows, the pad user 0 included): t uniform over 0 … steps − 1 until every step
// has history_num_per_term recorded losses, then drawn ∝ √mean(L_t²) mixed with 0.1% uniform
// (importance sampling, p_t times steps); x_t = √ᾱ_t x₀ + √(1 − ᾱ_t) ε; the target is x₀
// (mean_type x0) or ε (eps); per row mse = mean over items; with `reweight` weighted by
// SNR(t − 1) − SNR(t) (x0) or RecBole's ε weight, 1 at t = 0; loss = mean(weight · mse / p_t).
// noise_scale 0 turns the diffusion off: x_t = x₀, no reweighting.
// Scores (full ranking): from the history row (or, sampling_steps > 0, that row noised to step
// sampling_steps − 1), the reverse chain t = steps − 1 … 0 taking the posterior mean of the
// denoiser's x₀ each step (plus noise when sampling_noise, none at t = 0); with noise_scale 0
// the denoiser applied `steps` times. Cost: `steps` denoiser passes ([B, n_items] products) per
// evaluation batch.
//
// time-aware (RecBole's T-DiffRec): a user's training interactions, taken in time order
// (stable), weigh w_min … w_max evenly spaced instead of 1, in the rows trained on and scored
// from; the weights are buffers (a checkpoint carries them to serving). A history given at
// serving time (user 0) is taken as given.
//
// The recorded per-step losses are training state (in a resume checkpoint; RecBole keeps them
// out of every checkpoint). All tensors on the model's device except that record (CPU float64).
#include <string>
#include <utility>
#include <vector>

#include "models/capabilities.h"
#include "models/layers/diffusion.h"
#include "models/layers/mlp.h"
#include "models/model.h"

namespace recbole::models {

class DiffRec : public Model, public HistoryScores {
 public:
  explicit DiffRec(const ModelContext& ctx);
  // The keys of the diffusion, the denoiser and the time-aware rows (LDiffRec's too).
  static std::vector<config::KeyDecl> diffusion_keys();

  // batch: users, history → scalar loss.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users (or a history) → [B, n_items] scores: the reverse chain's last x.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  bool scores_from_history() const override { return true; }
  void save_training_state(torch::serialize::OutputArchive& archive) const override;
  void load_training_state(torch::serialize::InputArchive& archive) override;

  // x: [B, n_items] float32, t: [B] int64 → the denoiser's output [B, n_items].
  torch::Tensor denoise(const torch::Tensor& x, const torch::Tensor& t);
  // x_t = √ᾱ_t x₀ + √(1 − ᾱ_t) ε, row by row for t: [B] int64. Needs noise_scale > 0.
  torch::Tensor diffuse(const torch::Tensor& x0, const torch::Tensor& t,
                        const torch::Tensor& noise) const;
  // The timesteps of a training batch of `rows` and their probabilities times `steps`
  // ([rows] int64, [rows] float32, on the model's device); see the header comment.
  std::pair<torch::Tensor, torch::Tensor> sample_timesteps(int64_t rows);
  // Records each row's weighted loss under its step (the last history_num_per_term per step).
  void record_losses(const torch::Tensor& t, const torch::Tensor& losses);
  // Null when noise_scale is 0 (no diffusion).
  const layers::DiffusionSchedule* schedule() const { return schedule_.get(); }
  // The weight of a row's loss at each step (1 everywhere without reweighting).
  const std::vector<double>& step_weights() const { return step_weights_; }

  // The rows x₀ of the batch's users ([B, n_items] float32 on the device): 0/1, or
  // time-weighted.
  torch::Tensor rows(const data::Batch& batch) const;

 protected:
  // A diffusion over vectors of `width` (DiffRec: the rows; LDiffRec: their latent codes),
  // errors naming `name`.
  DiffRec(const ModelContext& ctx, const std::string& name, int64_t width);

  struct DiffusionLoss {
    torch::Tensor loss;    // scalar: mean(weight · error / p_t)
    torch::Tensor x0_hat;  // [B, width]: the denoiser's x₀ (from ε when mean_type is eps)
  };
  // One training draw for the clean vectors x0 ([B, width]; gradients flow into x0 too):
  // timesteps, noise, the denoiser, the weighted loss (its per-row terms recorded).
  DiffusionLoss diffusion_loss(const torch::Tensor& x0);
  // The reverse chain from x ([B, width]) down to step 0 (see the header comment).
  torch::Tensor reverse_chain(torch::Tensor x);

 private:
  // time-aware: the weighted rows (CSR buffers) from ctx's training interactions and times.
  void build_time_weights(const ModelContext& ctx);
  // coefficient[t] per row of t: [B] int64 on the device → [B, 1] float32 there.
  torch::Tensor per_row(const std::vector<double>& coefficient, const torch::Tensor& t) const;

  torch::nn::Linear time_layer_{nullptr};
  layers::MLP mlp_{nullptr};
  std::unique_ptr<layers::DiffusionSchedule> schedule_;
  std::vector<double> step_weights_;
  int64_t steps_, time_width_, sampling_steps_, history_per_step_;
  bool predicts_x0_, normalise_input_, sampling_noise_, reweight_ = false, time_aware_;
  // time-aware: CSR rows of the weights ([n_users + 1] int64, [nnz] int64, [nnz] float32).
  torch::Tensor time_indptr_, time_items_, time_weights_;
  torch::Tensor loss_history_;  // [steps, history_num_per_term] float64, CPU
  torch::Tensor loss_count_;    // [steps] int64, CPU
};

}  // namespace recbole::models
