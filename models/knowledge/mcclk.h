#pragma once
// MCCLK (Zou et al. 2022, multi-level cross-view contrastive learning), as RecBole 1.2.1 defines
// it. Three views of users and entities from the training split and the KG
// (models/layers/knowledge.h), all recomputed by every forward:
//   structural (E_g, U_g): n_hops of attentive KG aggregation over a fresh edge sample: per
//     sampled edge (h, r, t) the message e_t ⊙ Q_r with weight softmax over h's edges of
//     (‖e_h ⊙ Q_r‖ · ‖e_t ⊙ Q_r‖)², e'_h = the MEAN of the weighted messages; users
//     u' = m + (softmax_R(u Qᵀ) Q) ⊙ m with m = M e; message dropout (training), row
//     normalisation; the mean over [ego, hop 1, …];
//   semantic (E_s): the mean over [e, S e, …] (item_agg_layer products) with the kNN entity
//     graph S = (1 − λ) · kNN(X_b) + λ · kNN(entity ego), X_b the non-attentive aggregation
//     over a second edge sample (build_graph_separately; otherwise X_b = E_g); kNN(X) keeps
//     each row's k largest cosine similarities over all n_entities rows, D^{-1/2} S D^{-1/2}
//     (built for the item rows alone when item_agg_layer is 1: E_s is read at items only);
//   collaborative (U_c, E_c): LightGCN (mean over layers 0..lightgcn_layer) on the row-normalised
//     user + entity interaction graph.
// The kNN graphs' VALUES CARRY NO GRADIENT: each forward builds them as a constant sparse matrix
// from detached rows (an exact blocked top-k, never the dense n_entities² similarities), and
// gradients reach the entity rows only through the products S e.
// Loss (items = [i⁺; i⁻]): L_rec (BPR, or BCE-with-logits on [s⁺; s⁻] vs [1; 0]) on
//   ⟨[U_g ‖ U_c]_u, [E_g ‖ E_s + E_c]_i⟩, + reg_weight · EmbLoss(user, pos, neg vectors)
//   + beta · (alpha · local + (1 − alpha) · global), local = NCE(fc1(E_s), fc1(E_c)) on items,
//   global = ½[NCE + reversed] of fc2(U_g) vs fc2(U_c) on users plus the same of fc3(E_g) vs
//   fc3(E_s + E_c) on items (mcclk_nce).
// Randomness: the edge samples (also at evaluation) and the evaluation cache as in KGIN
// (kgin.h): a training forward's seed comes from torch's seeded generator and is kept in a
// buffer from which an evaluation derives its samples. M's dropout uses mess_dropout_rate
// (RecBole's mix-up), training only.
//
// Shapes: full_sort_predict [B, n_items] (item ids only; σ applied under loss_type BCE) from the
// concatenated vectors cached for the evaluation; float32 on the device.
#include <string>

#include "models/cached_factor_model.h"
#include "models/layers/knowledge.h"

namespace recbole::models {

// RecBole's MCCLK contrastive term, mean over rows a of a [n, d], b [n, d]:
//   −log( e^{cos(a_a, b_a)/τ} / (Σ_j e^{cos(a_a, a_j)/τ} + Σ_j e^{cos(a_a, b_j)/τ}
//                                − e^{cos(a_a, a_a)/τ}) ). → 0-dim float32.
// Computed and differentiated in chunks of rows (its own backward): memory O(chunk · n), not
// the n × n similarity matrices RecBole keeps.
torch::Tensor mcclk_nce(const torch::Tensor& a, const torch::Tensor& b, double temperature);

class MCCLK : public CachedFactorModel {
 public:
  explicit MCCLK(const ModelContext& ctx);

  torch::Tensor calculate_loss(const data::Batch& batch) override;
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  torch::Tensor predict(const data::Batch& batch) override;
  void load(torch::serialize::InputArchive& archive) override;

  // The three views of one forward with the edge samples of `seed`: [n_users, d] /
  // [n_entities, d] float32 on the device, but entity_s [n_items, d]: the semantic view is read
  // at the items alone, so only their rows are computed.
  struct Views {
    torch::Tensor user_g, entity_g, entity_s, user_c, entity_c;
  };
  Views views(uint64_t seed);

 protected:
  std::pair<torch::Tensor, torch::Tensor> evaluation_factors() override;

 private:
  std::pair<torch::Tensor, torch::Tensor> structural(const layers::KgEdges& edges,
                                                     const layers::GraphOperator& inter);
  torch::Tensor item_aggregation(const layers::KgEdges& edges);  // X_b, no gradient
  layers::KgEdges sampled_edges(uint64_t seed) const;
  torch::Tensor head(torch::nn::Sequential& fc, const torch::Tensor& x) { return fc->forward(x); }

  int64_t n_entities_, hops_, lightgcn_layers_, item_agg_layers_, k_;
  double node_rate_, mess_rate_, reg_weight_, alpha_, beta_, lambda_, temperature_;
  bool separately_, bce_;
  torch::Tensor user_embedding_, entity_embedding_, relation_embedding_;
  torch::nn::Sequential fc1_{nullptr}, fc2_{nullptr}, fc3_{nullptr};
  torch::Tensor edge_seed_;  // buffer [1] int64: the last training forward's sample seed
  layers::SparseMatrix inter_;
  layers::GraphOperator inter_op_, graph_op_;
  layers::KgEdges edges_;
};

}  // namespace recbole::models
