#pragma once
// NGCF (Wang et al. 2019) as RecBole defines it. Pairwise input.
//
// E⁰ = [users; items] (xavier-normal tables). Per layer k, with S = Â E (Â: the symmetrically
// normalised binary user–item graph, entries dropped at rate node_dropout while training):
//   H = LeakyReLU_0.2(W1_k (E + S) + b1_k + W2_k (S ⊙ E) + b2_k),
//   H = Dropout(message_dropout)(H) (training only),  E = H / max(‖H_row‖₂, 1e−12).
// The final embedding concatenates E⁰ (not normalised) and every layer: d·(1 + layers) columns
// (256 with the defaults). Loss: BPR + reg_weight · EmbLoss of the batch rows' *final*
// embeddings (unsquared, as RecBole).
//
// Shapes: full_sort_predict [B, n_items], predict [B], float32 on the device.
// Cost: every training batch propagates the whole graph: per layer one sparse product (nnz =
// 2·|train|, on the ThreadPool) and one [N, 2d] × [2d, d'] product, forward and back; the rest
// of a layer and the loss are fused CPU passes (layers::ngcf_layer, layers::gathered_bpr_loss).
// Evaluation propagates once and caches the final embeddings (also offered to the evaluator as
// score factors); the next training batch invalidates the cache.
#include <vector>

#include "models/cached_factor_model.h"
#include "models/layers/graph.h"

namespace recbole::models {

class NGCF : public CachedFactorModel {
 public:
  explicit NGCF(const ModelContext& ctx);

  // batch: users, items, neg_items.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // The generic step with single-threaded BLAS: the [N, 64] × [64, 64] products gain little from
  // OpenBLAS's second thread, which then spins between them against the pool's sparse products
  // (measured on the 2-core VM: epochs of 0.70 or 0.97 s by how the threads fell, 0.79–0.86 s
  // with one BLAS thread).
  torch::Tensor train_step(const data::Batch& batch, TrainStep& step) override;

  // Final embeddings: users [n_users, D], items [n_items, D], D = d · (1 + layers).
  std::pair<torch::Tensor, torch::Tensor> propagate() const;
  // The same as one [N, D] table of nodes (users, then items).
  torch::Tensor propagate_nodes() const;

 private:
  // Â with each stored entry kept with probability 1 − node_dropout, survivors scaled by
  // 1 / (1 − node_dropout); one mask per forward, shared by every layer.
  layers::GraphOperator dropped_adjacency() const;
  std::pair<torch::Tensor, torch::Tensor> evaluation_factors() override;

  torch::Tensor user_embedding_, item_embedding_;
  std::vector<torch::nn::Linear> w1_, w2_;  // per layer: the sum term and the product term
  layers::GraphOperator adjacency_;
  double node_dropout_, message_dropout_, reg_weight_;
};

}  // namespace recbole::models
