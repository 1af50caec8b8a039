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
// `tau`: the anchors anchor_table[ids[b]] ([R, d] table, ids [B] int64, repeats allowed) against
// candidates [M, d], the positive of row b being candidate targets[b] ([B] int64 in [0, M), the
// same for every b with the same id); the denominator runs over every candidate, the positive
// included (as RecBole, whose positive is always a candidate: the same row of another view or
// layer, or the row's own centroid). Summed over the B rows.
// Rows are L2-normalised as F.normalize. A repeated id is scored once and weighted by its count
// (an ml-100k batch of 2 048 pairs holds about 670 distinct users and 780 distinct items), and
// the scores go through item_cross_entropy (on the CPU one fused node: the GEMM and one pass
// each way, where the composed form made about eight passes over [B, M]).
torch::Tensor info_nce_sum(const torch::Tensor& anchor_table, const torch::Tensor& ids,
                           const torch::Tensor& candidates, const torch::Tensor& targets,
                           double tau);

// −mean_u Σ_i log_softmax(logits)_ui · x_ui: the multinomial likelihood of the autoencoders;
// logits, x: [B, n_items].
torch::Tensor multinomial_nll(const torch::Tensor& logits, const torch::Tensor& x);

}  // namespace recbole::models::layers
