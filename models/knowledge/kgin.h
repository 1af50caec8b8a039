#pragma once
// KGIN (Wang et al. 2021, "Learning Intents behind Interactions with Knowledge Graph"), as
// RecBole 1.2.1 defines it. Users and entities propagate over two structures of the training
// split and the KG (models/layers/knowledge.h): the user → item mean matrix M [n_users ×
// n_entities] and the directed KG edges (messages flow tail → head). Per hop, from (eˡ, uˡ):
//   e^{l+1}_h = mean over h's sampled edges (h, r, t) of eˡ_t ⊙ Q_r   (0 without one);
//   m = M eˡ;  β = softmax_F(uˡ Cᵀ);  c = softmax_R(A) Q;  u^{l+1} = (β c) ⊙ m + m;
// then message dropout (training) and row L2 normalisation of both; E* = e⁰ + Σ_l eˡ and
// U* = u⁰ + Σ_l uˡ. C [F, d] are the intents (attention only), A [F, R] the intents' logits over
// relations, Q [R, d] every relation row (pad and [UI-Relation] included).
// Loss: BPR(⟨U*_u, E*_i⁺⟩, ⟨U*_u, E*_i⁻⟩) + reg_weight · EmbLoss(U*_u, E*_i⁺, E*_i⁻)
//       + sim_regularity · independence(A) (ind: cosine, distance or mi; see kgin_independence).
//
// Randomness, as RecBole: every forward keeps a fresh floor(#edges · node_dropout_rate) edges
// (also at evaluation); M's sparse dropout uses mess_dropout_rate (RecBole's mix-up), training
// only. Ours draws each training forward's sample from a seed taken from torch's seeded
// generator and stores that seed in a buffer; an evaluation samples its edges from a stream
// derived from the buffer. So an evaluation is a function of the weights and the buffer: the
// best checkpoint, reloaded for the test, evaluates on the sample its validation used, and
// predict, full_sort_predict and a reloaded model agree (RecBole resamples at each uncached
// forward and reuses the last validation's cache for the test: docs/models.md).
//
// Shapes: full_sort_predict [B, n_items] (item ids 0..n_items − 1 only) from (U*, E*[:n_items])
// cached for the evaluation; float32 on the device.
#include <string>

#include "models/cached_factor_model.h"
#include "models/layers/knowledge.h"

namespace recbole::models {

// The independence loss of the intents' logits A [F, R] (rows a_f, float32, any device):
//   cosine:   Σ_{f<g} cos²(a_f, a_g);
//   distance: Σ_{f<g} dCor(a_f, a_g), the R entries as samples (RecBole's DistanceCorrelation:
//             distances √(max(x_i² − 2x_i x_j + x_j², 0) + 1e−8), double centring,
//             dCov = √(max(mean(A∘B), 0) + 1e−8), dCor = dCov_AB / √(dCov_AA · dCov_BB + 1e−8));
//   mi:       −Σ_f log softmax_g(cos(a_f, a_g) / temperature)_f.
// → 0-dim float32.
torch::Tensor kgin_independence(const torch::Tensor& att, const std::string& mode,
                                double temperature);

class KGIN : public CachedFactorModel {
 public:
  explicit KGIN(const ModelContext& ctx);

  torch::Tensor calculate_loss(const data::Batch& batch) override;
  void load(torch::serialize::InputArchive& archive) override;

  // Propagated (U* [n_users, d], E* [n_entities, d]) with the edge sample of `seed`.
  std::pair<torch::Tensor, torch::Tensor> propagate(uint64_t seed);
  // The seed an evaluation samples its edges with (from the buffer).
  uint64_t evaluation_seed() const;

 protected:
  std::pair<torch::Tensor, torch::Tensor> evaluation_factors() override;

 private:
  int64_t n_entities_, hops_;
  double node_rate_, mess_rate_, reg_weight_, sim_regularity_, temperature_;
  std::string ind_;
  torch::Tensor user_embedding_, entity_embedding_, latent_embedding_, relation_embedding_;
  torch::Tensor disen_att_;  // A: [F, R]
  torch::Tensor edge_seed_;  // buffer [1] int64: the last training forward's sample seed
  layers::SparseMatrix inter_;
  layers::GraphOperator inter_op_;
  layers::KgEdges edges_;
};

}  // namespace recbole::models
