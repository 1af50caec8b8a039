#pragma once
// SR-GNN (Wu et al. 2019) as RecBole defines it: each sequence's session graph and `step` gated
// GNN steps with the extra edge biases (models/layers/session_graph.h), the node states
// initialised with the items' vectors; g_i is the state of position i's node and, with h_t = g at
// the last item,
//   α_i = w3 · σ(W1 h_t + b1 + W2 g_i + b2),  a = Σ_i α_i [s_i > 0] g_i,  h = W_t [a ; h_t] + b_t.
// Init: every parameter, the item table included, U(−1/√d, 1/√d).
//
// The graphs are as wide as the batch's longest sequence (the same states as RecBole's L-wide
// ones), and positions past a row's length are masked out of the readout.
#include "models/layers/session_graph.h"
#include "models/sequential/sequential_model.h"

namespace recbole::models {

class SRGNN : public SequentialModel {
 public:
  explicit SRGNN(const ModelContext& ctx);
  torch::Tensor encode(const data::Batch& batch) override;

 private:
  layers::GatedGraph gnn_{nullptr};
  torch::nn::Linear w1_{nullptr}, w2_{nullptr}, w3_{nullptr}, transform_{nullptr};
};

}  // namespace recbole::models
