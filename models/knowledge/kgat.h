#pragma once
// KGAT (Wang et al. 2019), as RecBole defines it. Users and entities are the N = n_users +
// n_entities nodes of the collaborative knowledge graph (CKG) of the training split: user → item
// and item → user for every training pair (both with the [UI-Relation] id), head → tail for every
// KG triple. Propagation runs over the whole CKG with a matrix A (N × N, rows = sources):
//   at construction  A[s, t] = Σ_{r: s→t} 1 / outdeg_r(s)   (per-relation row normalisation);
//   after each epoch A[s, ·] = softmax over s's out-edges of π(s, t) = Σ_r (x_t M_r) ·
//                    tanh(x_s M_r + e_r), on the ego rows x (the scores of a pair linked by
//                    several relations are summed, as PyTorch's coalescing sparse softmax).
// Per layer: S = A X; bi: X' = LeakyReLU(W1(X + S)) + LeakyReLU(W2(X ⊙ S)) (gcn: LeakyReLU(W(X +
// S)); graphsage: LeakyReLU(W([X ‖ S]))), message dropout, the next layer reads X' and the
// output keeps normalize(X'). F = [X⁰ ‖ normalised outputs].
// Two passes per epoch (RecBole's KGATTrainer): the recommendation batches
//   L = BPR(⟨F_u, F_i⁺⟩, ⟨F_u, F_i⁻⟩) + reg_weight · EmbLoss(F_u, F_i⁺, F_i⁻),
// then the KG triples alone (TransR on the ego rows, not normalised)
//   L = mean softplus(δ⁺ − δ⁻) + reg_weight · EmbLoss(h', r, t'⁺, t'⁻), δ = ‖h' + r − t'‖²,
// then the attention refresh. A's values are a buffer, so a checkpoint (the best model, a resume
// point) restores the attention it was evaluated with; the sparsity pattern is the CKG's.
//
// Only F's user and item rows are read, so the last layer is computed at those rows alone, and a
// bi layer's W2 term only at the rows with out-edges (elsewhere it is W2's bias).
//
// Shapes: full_sort_predict [B, n_items] from F cached for the evaluation; float32 on the
// device.
#include "models/cached_factor_model.h"
#include "models/capabilities.h"
#include "models/layers/graph.h"

namespace recbole::models {

class KGAT : public CachedFactorModel, public MultiPassEpoch {
 public:
  explicit KGAT(const ModelContext& ctx);

  // A recommendation batch (users, items, neg_items) or a KG batch (kg_* columns alone).
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  int64_t passes_per_epoch() const override { return 2; }
  PassBatches pass_batches(int64_t epoch, int64_t pass) const override {
    (void)epoch;
    return pass == 0 ? PassBatches::kMain : PassBatches::kAuxiliary;
  }
  void on_epoch_end(int64_t epoch) override;
  void load(torch::serialize::InputArchive& archive) override;

 protected:
  std::pair<torch::Tensor, torch::Tensor> evaluation_factors() override;

 private:
  torch::Tensor propagate();  // F: [n_users + n_items, d + Σ layers], the rows a loss reads
  // One layer's output before dropout, [x rows, out]: x [rows, in], s = (A X)[those rows];
  // `linked`: the ids among those rows with out-edges (int64, ascending, on the device).
  torch::Tensor aggregate(size_t l, const torch::Tensor& x, const torch::Tensor& s,
                          const torch::Tensor& linked);
  void rebuild_operator();  // A from its pattern and the values buffer
  void update_attention();

  int64_t n_entities_, kg_size_;
  std::string aggregator_;
  double dropout_, reg_weight_;
  torch::Tensor user_embedding_, entity_embedding_, relation_embedding_, trans_w_;
  std::vector<torch::nn::Linear> w1_, w2_;
  // The CKG's edges (source node, target node, relation), [n_edges] int64 on the device, and
  // the pattern of A: for each edge, its entry (coalesced (source, target) pairs, CSR order).
  torch::Tensor edge_source_, edge_target_, edge_relation_;
  std::vector<int64_t> edge_entry_;
  layers::SparseMatrix pattern_;  // A's rows and columns; values replaced from the buffer
  torch::Tensor attention_;       // [nnz(A)] float32 buffer: A's values
  layers::GraphOperator adjacency_;
  layers::GraphOperator read_adjacency_;          // A's first n_users + n_items rows
  torch::Tensor linked_rows_, linked_read_rows_;  // rows of A with out-edges: all, < read rows
};

}  // namespace recbole::models
