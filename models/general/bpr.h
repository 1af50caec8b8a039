#pragma once
// BPR (Rendle et al. 2009) as RecBole defines it: user and item embeddings of embedding_size
// (default 64), xavier-normal initialisation, loss −mean(log(1e−10 + σ(⟨u,i⁺⟩ − ⟨u,i⁻⟩))), no
// regularisation term (only the optimizer's weight_decay). Scores are dot products.
// Pairwise input. On the CPU in one process it trains through its fused epoch (bpr_fused.h).
#include "models/capabilities.h"
#include "models/model.h"

namespace recbole::models {

class BPR : public Model, public FactorScores, public OwnEpoch {
 public:
  explicit BPR(const ModelContext& ctx);

  // batch: users, items, neg_items.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users → [B, n_items].
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // batch: users, items → [B].
  torch::Tensor predict(const data::Batch& batch) override;
  bool score_factors(torch::Tensor* users, torch::Tensor* items) const override {
    *users = user_embedding_;
    *items = item_embedding_;
    return true;
  }
  // The fused CPU epoch when fused_bpr_applicable() and the source samples negatives.
  std::unique_ptr<FastEpoch> fast_epoch(const TrainingEnv& env) override;

  // [n_users, d] and [n_items, d] float32 on the device.
  torch::Tensor user_embedding() const { return user_embedding_; }
  torch::Tensor item_embedding() const { return item_embedding_; }

 private:
  torch::Tensor user_embedding_;
  torch::Tensor item_embedding_;
};

}  // namespace recbole::models
