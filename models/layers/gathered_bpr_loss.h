#pragma once
// BPR over rows gathered from one embedding table, plus RecBole's EmbLoss of the same rows:
//   loss = bpr_loss(⟨T[u_b], T[p_b]⟩, ⟨T[u_b], T[n_b]⟩) + reg_weight · emb_loss({T[u], T[p], T[n]})
// (layers::bpr_loss, layers::emb_loss with unsquared norms), the loss of the graph models that
// score from propagated embeddings (NGCF, SpectralCF).
//
// Why fused: composed from libtorch ops this is three gathers, two products, three norms and
// their backward passes (index_add into zeroed copies of the table, norm backward with its
// masked_fill, gradient sums), ~30 % of an NGCF training step on the 2-core VM. On the CPU
// (float32) it is one autograd function: rows are scored in parallel blocks, and the gradient
// is scattered into the table's dense gradient by destination rows over the ThreadPool, each row
// summing its contributions in batch order (results do not depend on the thread count).
// Elsewhere it is the composed expression. Both agree to float rounding
// (tests/models/test_layers.cpp).
#include <torch/torch.h>

namespace recbole::models::layers {

// table: [N, D] float; users, pos, neg: int64 [B] row ids into table (an item's row is its
// node id, e.g. n_users + item); all on the table's device. → 0-dim, with gradient to table.
torch::Tensor gathered_bpr_loss(const torch::Tensor& table, const torch::Tensor& users,
                                const torch::Tensor& pos, const torch::Tensor& neg,
                                double reg_weight);

// The same loss composed from index_select, bpr_loss and emb_loss (any device; the reference).
torch::Tensor gathered_bpr_loss_composed(const torch::Tensor& table, const torch::Tensor& users,
                                         const torch::Tensor& pos, const torch::Tensor& neg,
                                         double reg_weight);

}  // namespace recbole::models::layers
