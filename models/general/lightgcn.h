#pragma once
// LightGCN (He et al. 2020) as RecBole defines it: user and item embeddings (xavier-uniform),
// propagated n_layers times over the symmetrically normalised user–item graph with no weights
// and no nonlinearity; the final embedding is the mean of layers 0..n_layers. Loss: BPR on the
// final embeddings + reg_weight · EmbLoss of the batch rows' layer-0 embeddings (squared with
// require_pow). Pairwise input.
//
// Cost: every training batch propagates the whole graph (n_layers sparse products forward and
// back, on the ThreadPool); evaluation propagates once and caches the final embeddings, which
// the next training batch invalidates.
#include "models/cached_factor_model.h"
#include "models/layers/graph.h"

namespace recbole::models {

class LightGCN : public CachedFactorModel {
 public:
  explicit LightGCN(const ModelContext& ctx);

  // batch: users, items, neg_items.
  torch::Tensor calculate_loss(const data::Batch& batch) override;

 private:
  // Final embeddings: users [n_users, d], items [n_items, d].
  std::pair<torch::Tensor, torch::Tensor> propagate() const;
  std::pair<torch::Tensor, torch::Tensor> evaluation_factors() override;

  torch::Tensor user_embedding_, item_embedding_;
  layers::GraphOperator adjacency_;
  int64_t n_layers_;
  double reg_weight_;
  bool require_pow_;
};

}  // namespace recbole::models
