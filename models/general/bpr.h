#pragma once
// BPR (Rendle et al. 2009) as RecBole defines it: user and item embeddings of embedding_size
// (default 64), xavier-normal initialisation, loss −mean(log(1e−10 + σ(⟨u,i⁺⟩ − ⟨u,i⁻⟩))), no
// regularisation term (only the optimizer's weight_decay). Scores are dot products.
#include "models/model.h"

namespace recbole::models {

class BPR : public Model {
 public:
  explicit BPR(const ModelContext& ctx);

  ModelKind kind() const override { return ModelKind::kGradient; }
  torch::Tensor calculate_loss(const TrainBatch& batch) override;
  torch::Tensor full_sort_predict(const torch::Tensor& users) override;
  bool score_factors(torch::Tensor* users, torch::Tensor* items) const override {
    *users = user_embedding_;
    *items = item_embedding_;
    return true;
  }
  torch::Tensor predict(const torch::Tensor& users, const torch::Tensor& items) override;

  // [n_users, d] and [n_items, d] float32 on the device.
  torch::Tensor user_embedding() const { return user_embedding_; }
  torch::Tensor item_embedding() const { return item_embedding_; }

 private:
  torch::Tensor user_embedding_;
  torch::Tensor item_embedding_;
};

}  // namespace recbole::models
