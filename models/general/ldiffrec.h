#pragma once
// LDiffRec (Wang et al. 2023's L-DiffRec) as RecBole defines it with n_cate 1: DiffRec's
// diffusion run on a VAE's latent code of the user row instead of the row itself.
//   Encoder: the row (time-weighted under time-aware) dropped out at 0.1 in training, an MLP
//   n_items → reversed in_dims… → 2·latent with ae_act_func after every layer (the last too),
//   μ the first latent half, logvar the second; the code is μ + ε·e^{logvar/2} (ε ~ N(0, 1)) in
//   training with `reparam`, else μ. Decoder: latent → out_dims… → n_items, ae_act_func between
//   layers. latent = in_dims' first entry. xavier-normal weights, zero biases.
//   Loss: λ · the diffusion loss of the code (DiffRec's, gradients reaching the encoder) +
//   multinomial NLL of decoder(denoised code) against the dropped-out row (as RecBole) +
//   anneal · KL; λ = max((1 − u / anneal_steps) · lamda, anneal_cap) (max(lamda, anneal_cap)
//   when anneal_steps is 0), anneal = min(vae_anneal_cap, u / vae_anneal_steps)
//   (vae_anneal_cap when 0), u the training batches before this one.
//   Scores: decoder(reverse chain(μ)).
// n_cate > 1 (items clustered by k-means over an item_emb.npy beside the dataset, one VAE per
// cluster) is refused as not supported yet. Tensors on the model's device.
#include "models/general/diffrec.h"
#include "models/layers/mlp.h"

namespace recbole::models {

class LDiffRec : public DiffRec {
 public:
  explicit LDiffRec(const ModelContext& ctx);

  // batch: users, history → scalar loss.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users (or a history) → [B, n_items] decoder outputs.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  void save_training_state(torch::serialize::OutputArchive& archive) const override;
  void load_training_state(torch::serialize::InputArchive& archive) override;

  struct Code {
    torch::Tensor input;   // [B, n_items]: the rows as encoded (dropped out in training)
    torch::Tensor latent;  // [B, latent]
    torch::Tensor kl;      // scalar: mean over rows of KL(N(μ, e^logvar) ‖ N(0, 1))
  };
  Code encode(const torch::Tensor& rows);
  // latent: [B, latent] → [B, n_items].
  torch::Tensor decode(const torch::Tensor& latent);
  // The weights of the next batch's diffusion and KL terms (u = batches trained so far).
  double diffusion_weight() const;
  double kl_weight() const;

 private:
  layers::MLP encoder_{nullptr}, decoder_{nullptr};
  int64_t latent_;
  bool reparam_;
  double lamda_, anneal_cap_, vae_anneal_cap_;
  int64_t anneal_steps_, vae_anneal_steps_;
  int64_t updates_ = 0;
};

}  // namespace recbole::models
