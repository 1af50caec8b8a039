#pragma once
// SGL (Wu et al. 2021) as RecBole defines it: LightGCN on the user–item graph (duplicate pairs
// summed, weighted degrees), plus a self-supervised task between two perturbed views of the
// graph. Pairwise input.
//
// Views (type): ED drops a drop_ratio share of the training pairs (one graph per view); ND drops
// a drop_ratio share of the user ids and of the item ids with their edges; RW draws an ED graph
// per layer. Both views are rebuilt at the start of every epoch (RecBole rebuilds them in
// train(), once per epoch), from a stream seeded by the config's seed and the epoch, so a run
// repeats exactly.
// Loss per batch = Σ_b −log σ(s⁺ − s⁻) (a sum, as RecBole) on the main graph
//   + reg_weight · EmbLoss(layer-0 rows of u, i⁺, i⁻)
//   + ssl_weight · (InfoNCE_sum(view1 users, view2 users over all view-2 users)
//                   + InfoNCE_sum(view1 items, view2 items over all view-2 items)),
// cosine similarities over ssl_tau, the positive inside its denominator.
//
// Shapes: full_sort_predict [B, n_items], predict [B], float32 on the device.
// Cost: three whole-graph propagations per batch (main and both views: 3·n_layers sparse
// products forward and back on the ThreadPool) and two InfoNCE products [B, n_users] and
// [B, n_items]; the views' construction once per epoch (O(|train|) on the host). Evaluation
// propagates the main graph once and caches it.
#include <cstdint>
#include <vector>

#include "models/cached_factor_model.h"
#include "models/layers/graph.h"

namespace recbole::models {

class SGL : public CachedFactorModel {
 public:
  enum class Augment { kEdgeDrop, kNodeDrop, kRandomWalk };

  explicit SGL(const ModelContext& ctx);

  // batch: users, items, neg_items.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // Rebuilds both views for this epoch.
  void on_epoch_start(int64_t epoch) override { build_views(epoch); }

  // The graphs of view `view` (1 or 2) for `epoch`: one, or n_layers for RW. Normalised, on the
  // host. Deterministic in (config seed, epoch, view).
  std::vector<layers::SparseMatrix> view_graphs(int64_t epoch, int view) const;

  // The epoch of the augmented views (rebuilt from (seed, epoch) on load).
  void save_training_state(torch::serialize::OutputArchive& archive) const override;
  void load_training_state(torch::serialize::InputArchive& archive) override;

 private:
  // LightGCN propagation where layer l uses graphs[min(l, size − 1)]: users [n_users, d],
  // items [n_items, d].
  std::pair<torch::Tensor, torch::Tensor> propagate(
      const std::vector<layers::GraphOperator>& graphs) const;
  void build_views(int64_t epoch);
  std::pair<torch::Tensor, torch::Tensor> evaluation_factors() override;

  torch::Tensor user_embedding_, item_embedding_;
  std::vector<int32_t> pair_users_, pair_items_;  // the training pairs
  std::vector<layers::GraphOperator> main_, view1_, view2_;
  int64_t views_epoch_ = -1;
  Augment augment_;
  int64_t n_layers_;
  double drop_ratio_, ssl_tau_, reg_weight_, ssl_weight_;
  uint64_t seed_;
};

}  // namespace recbole::models
