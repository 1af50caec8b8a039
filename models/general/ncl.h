#pragma once
// NCL (Lin et al. 2022, neighbourhood-enriched contrastive learning) as RecBole defines it: a
// LightGCN backbone (xavier-uniform tables, binary normalised graph) propagated
// max(n_layers, 2·hyper_layers) layers E⁰..E^M; the final embedding is the mean of
// E⁰..E^{n_layers}. Pairwise input. Loss per batch:
//   BPR(final) + reg_weight · EmbLoss(E⁰ rows of u, i⁺, i⁻)
//   + ssl_reg · (InfoNCE_sum(E^{2h}_u vs E⁰_u over all users' E⁰)
//                + alpha · InfoNCE_sum(E^{2h}_i vs E⁰_i over all items' E⁰))   (structural)
//   + proto_reg · (InfoNCE_sum(E⁰_u vs its centroid over all user centroids) + same for items)
//                                                                              (prototype)
// with cosine similarities over ssl_temp. The prototype term is left out during epochs
// < warm_up_step (RecBole computes and then drops it). Centroids come from the E-step: k-means
// (layers::kmeans, faiss's defaults) on the raw user table and on the raw item table (pad rows
// included), before every epoch e with e % m_step == 0; centroids L2-normalised.
//
// num_clusters larger than a table's rows: RecBole's faiss aborts (issue #1957: the default 1000
// exceeds ml-100k's 944 users); here it is a ConfigError naming the key and the largest value
// the dataset allows, before anything trains.
//
// Shapes: full_sort_predict [B, n_items], predict [B], float32 on the device.
// Cost: per batch one whole-graph propagation (M sparse products forward and back on the
// ThreadPool) and the InfoNCE products [B, n_users], [B, n_items] (and [B, k] twice after the
// warm-up); per E-step 25 k-means iterations over (n_users + n_items) · k · d.
#include <cstdint>
#include <vector>

#include "models/cached_factor_model.h"
#include "models/layers/graph.h"

namespace recbole::models {

class NCL : public CachedFactorModel {
 public:
  explicit NCL(const ModelContext& ctx);

  // batch: users, items, neg_items.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // The E-step when epoch % m_step == 0; remembers the epoch for the warm-up rule.
  void on_epoch_start(int64_t epoch) override;

  // k-means on the current tables (the E-step).
  void e_step();
  // The clusters per table (num_clusters).
  int64_t user_clusters() const { return user_k_; }
  int64_t item_clusters() const { return item_k_; }
  // The E-step's normalised centroids [k, d] and each row's cluster [rows] (undefined before).
  const torch::Tensor& user_centroids() const { return user_centroids_; }
  const torch::Tensor& item_centroids() const { return item_centroids_; }
  const torch::Tensor& user_cluster() const { return user_cluster_; }
  const torch::Tensor& item_cluster() const { return item_cluster_; }

  // The epoch and its E-step (centroids and assignments).
  void save_training_state(torch::serialize::OutputArchive& archive) const override;
  void load_training_state(torch::serialize::InputArchive& archive) override;

 private:
  // E⁰..E^M, each [N, d].
  std::vector<torch::Tensor> propagate_layers() const;
  // The mean of E⁰..E^{n_layers}, split into users and items.
  std::pair<torch::Tensor, torch::Tensor> final_embeddings(
      const std::vector<torch::Tensor>& all) const;
  std::pair<torch::Tensor, torch::Tensor> evaluation_factors() override;

  torch::Tensor user_embedding_, item_embedding_;
  layers::GraphOperator adjacency_;
  int64_t n_layers_, hyper_layers_, m_step_, warm_up_step_, user_k_, item_k_;
  double reg_weight_, ssl_temp_, ssl_reg_, alpha_, proto_reg_;
  uint64_t seed_;
  int64_t epoch_ = 0;
  // E-step results on the device: normalised centroids [k, d] and each row's cluster [rows].
  torch::Tensor user_centroids_, item_centroids_, user_cluster_, item_cluster_;
};

}  // namespace recbole::models
