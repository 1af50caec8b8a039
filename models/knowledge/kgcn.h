#pragma once
// KGCN (Wang et al. 2019), as RecBole defines it. Every entity has K = neighbor_sample_size
// neighbours with their relations, sampled once at construction from the KG taken as an
// undirected multigraph (layers::sample_neighbors) and kept as buffers, so that a checkpoint
// evaluates on the same neighbourhoods. An item's vector depends on the user: its receptive
// field (K neighbours per hop, n_iter hops) is aggregated n_iter times with user-specific
// neighbour weights
//   a_k = softmax_k(⟨u, relation_{r_k}⟩ / d)      (RecBole's mean over dimensions)
//   agg = Σ_k a_k e_k / K                          (RecBole's mean of the weighted vectors)
//   e  ← act(W_i(e + agg)) | act(W_i(agg)) | act(W_i([e ‖ agg]))   (aggregator sum | neighbor |
//                                                                   concat)
// with tanh at the last iteration and ReLU before. Score = ⟨u, item vector⟩. Pairwise input
// (the KG batches are not used):
//   L = BCEWithLogits([s⁺; s⁻], [1; 0]) + reg_weight · EmbLoss(u, item⁺, item⁻).
//
// Shapes: full_sort_predict [B, n_items] (every user–item pair through the aggregation, in
// chunks of users), predict [B]; float32 on the device.
#include "models/layers/backward_parts.h"
#include "models/model.h"

namespace recbole::models {

// KGCN's config keys (KGNNLS declares them too).
std::vector<config::KeyDecl> kgcn_keys();

class KGCN : public Model {
 public:
  explicit KGCN(const ModelContext& ctx, const std::string& name = "KGCN");

  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // On the CPU the batch's parts of kPartRows rows run forward and backward on the pool
  // (layers::backward_parts_coupled); the EmbLoss, a norm over every row of the batch, is the
  // coupling term. The gradient is calculate_loss's up to the summation order.
  torch::Tensor train_step(const data::Batch& batch, TrainStep& step) override;
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  torch::Tensor predict(const data::Batch& batch) override;

 protected:
  static constexpr int64_t kPartRows = 1024;
  // A part of a batch of `batch_rows` rows: its share of the losses that are means over the
  // batch's rows, and the rows the EmbLoss reads ({u, item⁺, item⁻} vectors here).
  virtual layers::PartForward loss_part(const data::Batch& part, int64_t batch_rows);
  // reg_weight · EmbLoss over the parts' rows, each tensor j concatenated over the parts.
  torch::Tensor coupled_loss(const std::vector<std::vector<torch::Tensor>>& parts) const;

  // The receptive field of items [B]: entities and relations of hops 0..n_iter, [B, K^j] each
  // (relations[0] undefined).
  struct Field {
    std::vector<torch::Tensor> entities, relations;
  };
  Field receptive_field(const torch::Tensor& items) const;
  // The neighbour weights of hop j+1's entities around hop j's: a [B, K^j, K] (softmax over K of
  // the logits of their relations).
  torch::Tensor neighbor_weights(const torch::Tensor& logits, const Field& field, int64_t j) const;
  // Item vectors [B, d] of items [B] as seen by the users whose attention logits over the
  // relations are `logits` [B, n_relations + 1] (⟨u, relation⟩ / d).
  torch::Tensor item_vectors(const torch::Tensor& logits, const torch::Tensor& items);
  torch::Tensor item_vectors(const torch::Tensor& logits, const Field& field);
  // full_sort_predict with n_iter = 1: users u [B, d], their logits → [B, n_items].
  torch::Tensor one_hop_scores(const torch::Tensor& u, const torch::Tensor& logits);
  // one_hop_scores on the CPU, from the mapped rows: self_part [n_items, d] (bias included),
  // neigh_part [n_items, K, d], adj_relation [n_items, K] int64.
  torch::Tensor one_hop_scores_cpu(const torch::Tensor& u, const torch::Tensor& logits,
                                   const torch::Tensor& self_part, const torch::Tensor& neigh_part,
                                   const torch::Tensor& adj_relation) const;
  // ⟨u, relation⟩ / d for users u [B, d] → [B, n_relations + 1].
  torch::Tensor relation_logits(const torch::Tensor& users) const;

  int64_t dim_, n_iter_, k_;
  std::string aggregator_;
  double reg_weight_;
  torch::Tensor user_embedding_, entity_embedding_, relation_embedding_;
  torch::Tensor adj_entity_, adj_relation_;  // [n_entities, K] int64 buffers
  std::vector<torch::nn::Linear> linears_;
};

}  // namespace recbole::models
