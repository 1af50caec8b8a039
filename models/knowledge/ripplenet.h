#pragma once
// RippleNet (Wang et al. 2018), as RecBole defines it. A user is its ripple set: per hop, M =
// n_memory KG triples (h, r, t) drawn once at construction from the triples whose head is one of
// the user's training items (without replacement when there are M or more, with replacement
// otherwise, M padding triples when none). With `ripple_sets: recbole` (the default), as in
// RecBole, every hop after the first is a copy of hop 0 (its lookup of the previous hop's tails
// never matches, reference §6.5 and §8.2.1), so RecBole's figures are reproduced; with `paper`,
// hop h draws its M triples from those whose head is one of hop h − 1's tails, as the paper
// defines the sets (a hop whose heads start no triple keeps the previous hop's draw). The sets
// are buffers, so a checkpoint evaluates on the same ones.
// For a row (u, i): v⁰ = entity_i; per hop h, with R_m the d × d matrix of relation r_m,
//   p_m = softmax_m((R_m h_m) · vʰ),  oʰ = Σ_m p_m t_m,  vʰ⁺¹ = W(vʰ + oʰ);
//   score = ⟨v^{n_hop}, Σ_h oʰ⟩.
// Pointwise input (labels from sampled negatives):
//   L = BCEWithLogits(score, label) − kg_weight · Σ_h mean σ(h_mᵀ R_m t_m)
//       + reg_weight · (Σ_h EmbLoss(h, t, R) + EmbLoss(W)).
// Tables xavier-normal (the relation table's rows are the flattened d × d matrices).
//
// Shapes: full_sort_predict [B, n_items] (every item through the recursion, users in chunks),
// predict [B]; float32 on the device.
#include "models/model.h"

namespace recbole::models {

class RippleNet : public Model {
 public:
  explicit RippleNet(const ModelContext& ctx);

  torch::Tensor calculate_loss(const data::Batch& batch) override;
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  torch::Tensor predict(const data::Batch& batch) override;

 private:
  // A batch's memories, hop by hop, at its rows: heads, tails [B, M, d], relation ids [B·M],
  // R_m h_m [B, M, d] and, with `with_kge`, h_mᵀ R_m t_m [B·M]. They are computed once per
  // distinct user of the batch and gathered to its rows (a pointwise batch names a user about
  // three times), and once for all hops when the hops repeat hop 0. The relation matrices are
  // never gathered per memory (B·M·d² floats): products with them go through
  // layers::transr_project, one product per relation.
  struct Memories {
    std::vector<torch::Tensor> heads, relation_ids, tails, rh, kge;
  };
  Memories memories(const torch::Tensor& users, bool with_kge) const;
  // Scores of items whose vectors are v [B, N, d] for the users of `m` ([B, N]).
  torch::Tensor scores(const Memories& m, torch::Tensor v);

  int64_t dim_, n_hop_, n_memory_;
  double kg_weight_, reg_weight_;
  bool hops_repeat_;  // ripple_sets: recbole — every hop's memories are hop 0's
  torch::Tensor entity_embedding_, relation_embedding_;
  torch::nn::Linear transform_{nullptr};
  torch::Tensor memory_heads_, memory_relations_, memory_tails_;  // [n_users, n_hop, M] int64
};

}  // namespace recbole::models
