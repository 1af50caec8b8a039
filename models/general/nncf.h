#pragma once
// NNCF (Bai et al. 2017) as RecBole defines it, with 'random' neighbourhoods: each user's
// neighbourhood is neigh_num items drawn with replacement from its training items (zeros when
// it has none), each item's neigh_num users from its training users, fixed at construction.
// A pair's input is [e_u ⊙ e_i ; conv(user's neighbours) ; conv(item's neighbours)], where
// conv = Conv1d(neigh_embedding_size → num_conv_kernel, conv_kernel_size) → MaxPool1d →
// ReLU over the neighbours' embeddings, flattened; then MLPLayers (dropout, ReLU after every
// layer) and a Linear to the logit. Embeddings N(0, 0.01²); conv and linear layers keep
// libtorch's defaults. Pointwise input: mean BCE-with-logits; predict = σ(logit).
//
// Cost: the convolutions dominate training (2 · num_conv_kernel · neigh_embedding_size ·
// conv_kernel_size · conved positions per distinct user and item of a batch). RecBole has no
// full sort (every pair through the network); here the convolution features of every user and
// item are computed once per evaluation, the first MLP layer is split into per-user and
// per-item parts (the GMF part as a per-user [d, h₁] matrix), and the remaining layers run on
// blocks of (user, items) rows on the ThreadPool.
#include "models/layers/mlp.h"
#include "models/model.h"

namespace recbole::models {

class NNCF : public Model {
 public:
  // neigh_info_method 'knn' / 'louvain' and sizes that leave no pooled position are
  // ConfigErrors.
  explicit NNCF(const ModelContext& ctx);

  // batch: users, items, labels → mean BCE-with-logits.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users → [B, n_items] σ(logit).
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // batch: users, items → [B].
  torch::Tensor predict(const data::Batch& batch) override;
  void before_evaluation() override;

 private:
  torch::Tensor logits(const torch::Tensor& users, const torch::Tensor& items);
  // Convolution features of `ids` (int64 [B] on the device) → [B, conv features].
  torch::Tensor user_features(const torch::Tensor& users);
  torch::Tensor item_features(const torch::Tensor& items);

  int64_t d_;
  torch::Tensor user_neighbours_, item_neighbours_;  // [n_users, n], [n_items, n] int64
  torch::Tensor user_embedding_, item_embedding_;
  torch::Tensor user_neigh_embedding_, item_neigh_embedding_;
  torch::nn::Conv1d user_conv_{nullptr}, item_conv_{nullptr};
  int64_t pool_;
  layers::MLP mlp_{nullptr};
  torch::nn::Linear out_layer_{nullptr};
  torch::Tensor user_cache_, item_cache_;  // conv features of every user / item at evaluation
};

}  // namespace recbole::models
