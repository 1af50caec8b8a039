#pragma once
// Pieces the user-rows autoencoders share (MultiVAE, MultiDAE, RecVAE, MacridVAE, CDAE): the
// training rows of a batch, RecBole's input normalisation, the Gaussian reparameterisation and
// KL term, the per-batch KL annealing counter.
// Tensors live on the model's device; rows are [B, n_items] float32 0/1.
#include <cstdint>

#include <torch/torch.h>

#include "recbole/config/key_decl.h"
#include "recbole/data/batch.h"
#include "recbole/data/interaction_matrix.h"
#include "recbole/runtime/device_manager.h"

namespace recbole::models::layers {

// The training rows of the batch's users: batch.history when the source filled it (training),
// else densified from `train` (evaluation batches carry users only) and placed on the device.
torch::Tensor user_rows(const data::Batch& batch, const data::InteractionMatrix& train,
                        const DeviceManager& device);

// x / max(‖x_u‖₂, 1e−12) per row (F.normalize), then inverted dropout p when training.
torch::Tensor normalized_dropout(const torch::Tensor& x, double p, bool training);

// Training: μ + ε ⊙ exp(logvar / 2) with ε ~ N(0, noise_std²) (RecBole's VAEs use 0.01, not 1);
// otherwise μ.
torch::Tensor reparameterize(const torch::Tensor& mu, const torch::Tensor& logvar, double noise_std,
                             bool training);

// −½ · mean_u Σ_k (1 + logvar − μ² − e^logvar): KL(N(μ, e^logvar) ‖ N(0, 1)) averaged over rows.
torch::Tensor gaussian_kl(const torch::Tensor& mu, const torch::Tensor& logvar);

// RecBole's annealing of the KL weight: the counter advances once per training batch, before
// use; weight = min(cap, count / total_steps), or cap when total_steps is 0. A plain counter:
// not in the model's checkpoint (as RecBole), but in a resume checkpoint's training state.
class KlAnneal {
 public:
  KlAnneal(double cap, int64_t total_steps) : cap_(cap), total_steps_(total_steps) {}
  double next();
  int64_t count() const { return count_; }
  void set_count(int64_t count) { count_ = count; }

 private:
  double cap_;
  int64_t total_steps_;
  int64_t count_ = 0;
};

}  // namespace recbole::models::layers
