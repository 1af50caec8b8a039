#pragma once
// Loss terms RecBole's models share (recbole/model/loss.py), as RecBole computes them.
// Every input is on the model's device; every result is a 0-dim float32 tensor there.
#include <vector>

#include <torch/torch.h>

namespace recbole::models::layers {

// −mean_b log(1e−10 + σ(pos_b − neg_b)); pos, neg: [B].
torch::Tensor bpr_loss(const torch::Tensor& pos, const torch::Tensor& neg);

// RecBole's EmbLoss: Σ_j ‖E_j‖ / rows(E_last) with plain (unsquared) Frobenius norms of the
// whole tensors, or, with require_pow, Σ_j ‖E_j‖² / rows(E_last) / 2.
torch::Tensor emb_loss(const std::vector<torch::Tensor>& embeddings, bool require_pow = false);

// Σ_b −log softmax_b: the InfoNCE of SGL and NCL with cosine similarities over temperature
// `tau`: anchors [B, d] against candidates [M, d], the positive of row b being positives[b]
// ([B, d]); the denominator runs over every candidate row (the positive included when it is
// among them, as RecBole). Summed over rows.
torch::Tensor info_nce_sum(const torch::Tensor& anchors, const torch::Tensor& positives,
                           const torch::Tensor& candidates, double tau);

// −mean_u Σ_i log_softmax(logits)_ui · x_ui: the multinomial likelihood of the autoencoders;
// logits, x: [B, n_items].
torch::Tensor multinomial_nll(const torch::Tensor& logits, const torch::Tensor& x);

}  // namespace recbole::models::layers
