#pragma once
// GC-SAN (Xu et al. 2019) as RecBole defines it: each sequence's session graph and `step` gated
// GNN steps without the extra edge biases (models/layers/session_graph.h) give the states of the
// positions G [B, l, d]; h_t = G at the last item; G goes straight into the causal post-LN
// transformer (no position embedding, no input LayerNorm or dropout), a_t = its last layer at
// the last item, and h = weight · a_t + (1 − weight) · h_t.
// Loss: CE (or BPR) + reg_weight · ‖E‖ / n_items (the unsquared Frobenius norm of the item table
// over its rows, RecBole's EmbLoss).
// Init: the GNN's w_ih, w_hh, b_ih, b_hh U(−1/√d, 1/√d); every Linear (the GNN's edge Linears
// among them) and the item table N(0, initializer_range²), biases 0; LayerNorm (1, 0).
//
// The graphs and the encoder run up to the batch's longest sequence: the causal mask and the
// edgeless padding nodes keep later columns out of every read position.
#include "models/layers/sequence.h"
#include "models/layers/session_graph.h"
#include "models/sequential/sequential_model.h"

namespace recbole::models {

class GCSAN : public SequentialModel {
 public:
  explicit GCSAN(const ModelContext& ctx);
  torch::Tensor encode(const data::Batch& batch) override;
  torch::Tensor calculate_loss(const data::Batch& batch) override;

 private:
  double weight_, reg_weight_;
  layers::GatedGraph gnn_{nullptr};
  layers::TransformerEncoder encoder_{nullptr};
};

}  // namespace recbole::models
