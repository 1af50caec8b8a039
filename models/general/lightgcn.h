#pragma once
// LightGCN (He et al. 2020) as RecBole defines it: user and item embeddings (xavier-uniform),
// propagated n_layers times over the symmetrically normalised user–item graph with no weights
// and no nonlinearity; the final embedding is the mean of layers 0..n_layers. Loss: BPR on the
// final embeddings + reg_weight · EmbLoss of the batch rows' layer-0 embeddings (squared with
// require_pow). Pairwise input.
//
// Cost: every training batch propagates the whole graph (n_layers sparse products forward and
// back, on the ThreadPool); evaluation propagates once and caches the final embeddings, which
// the next training batch invalidates. On the CPU a training step runs without autograd
// (direct_backward): the model is linear in its tables, so the gradient is the BPR terms'
// scattered rows propagated back through the same products.
#include <vector>

#include "models/cached_factor_model.h"
#include "models/layers/graph.h"

namespace recbole::models {

class LightGCN : public CachedFactorModel {
 public:
  explicit LightGCN(const ModelContext& ctx);

  // batch: users, items, neg_items.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // direct_backward's step when it applies, autograd's otherwise; the same loss and gradients.
  torch::Tensor train_step(const data::Batch& batch, TrainStep& step) override;

  // Whether direct_backward applies: the graph and float32 tables on the CPU.
  bool direct_step_applies() const;
  // calculate_loss(batch) (detached, a 0-dim float32 tensor) with both tables' gradients
  // written by hand, as autograd's backward would leave them after a zero_grad: final =
  // mean_l Â^l E, G = ∂loss/∂final (nonzero on the batch rows), ∂loss/∂E = mean_l (Âᵀ)^l G
  // (Horner: n_layers products) plus the norm term's gradient on the batch rows.
  torch::Tensor direct_backward(const data::Batch& batch);

 private:
  // Final embeddings: users [n_users, d], items [n_items, d].
  std::pair<torch::Tensor, torch::Tensor> propagate() const;
  std::pair<torch::Tensor, torch::Tensor> evaluation_factors() override;

  torch::Tensor user_embedding_, item_embedding_;
  layers::GraphOperator adjacency_;
  int64_t n_layers_;
  double reg_weight_;
  bool require_pow_;
  // direct_backward's [N, d] rows (N = n_users + n_items), its per-row terms ([B]: dloss/dx;
  // [B, 4]: the row's BPR loss and its three layer-0 rows' squared norms), and the tables'
  // gradients it hands the optimizer; kept between batches.
  std::vector<float> ego_, layer_, next_, mean_, grad_mean_, row_dx_, row_terms_;
  torch::Tensor user_grad_, item_grad_;
};

}  // namespace recbole::models
