#pragma once
// SpectralCF (Zheng et al. 2018) as RecBole defines it: the spectral convolution approximated
// with the random-walk operator Â = 2I − D⁻¹A (A: the binary user–item graph, deg + 1e−7), and
// per layer k a filter Θ_k [d, d] drawn N(0.01, 0.02²): E_{k+1} = σ(Â E_k Θ_k) (sigmoid). The
// final embedding concatenates E⁰..E^L (d·(L + 1) = 320 columns with the defaults).
// Loss: BPR (mean) + reg_weight · EmbLoss of the batch rows' final embeddings. Pairwise input.
//
// Shapes: full_sort_predict [B, n_items], predict [B], float32 on the device.
// Cost: every training batch propagates the whole graph: per layer one sparse product (nnz =
// 2·|train| + N; Â is not symmetric, so the backward uses its transpose) and one [N, d] × [d, d]
// product, forward and back. Evaluation propagates once and caches (also as score factors).
#include <vector>

#include "models/cached_factor_model.h"
#include "models/layers/graph.h"

namespace recbole::models {

// 2I − D⁻¹A of the binary bipartite graph of `train` (N × N, N = n_users + n_items).
layers::SparseMatrix random_walk_operator(const data::InteractionMatrix& train);

class SpectralCF : public CachedFactorModel {
 public:
  explicit SpectralCF(const ModelContext& ctx);

  // batch: users, items, neg_items.
  torch::Tensor calculate_loss(const data::Batch& batch) override;

  // Final embeddings: users [n_users, D], items [n_items, D], D = d · (1 + n_layers).
  std::pair<torch::Tensor, torch::Tensor> propagate() const;
  // The same as one [N, D] table of nodes (users, then items).
  torch::Tensor propagate_nodes() const;

 private:
  std::pair<torch::Tensor, torch::Tensor> evaluation_factors() override;

  torch::Tensor user_embedding_, item_embedding_;
  std::vector<torch::Tensor> filters_;
  layers::GraphOperator operator_;
  double reg_weight_;
};

}  // namespace recbole::models
