#pragma once
// Pop: every user gets the items ranked by training popularity, score = count / max_count.
// The count of an item is its number of distinct training users (the training matrix collapses
// repeated (user, item) pairs; ml-100k has none). Unlike RecBole, the count is taken once from
// the training split in fit(): it depends neither on the batch size nor on sampled negatives.
#include "models/capabilities.h"
#include "models/model.h"

namespace recbole::models {

class Pop : public Model, public HistoryScores {
 public:
  explicit Pop(const ModelContext& ctx);

  void fit() override;
  // [B, n_items] float32 on the device; every row the same.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  bool scores_from_history() const override { return true; }

  // [n_items] int64 on the device.
  torch::Tensor item_count() const { return item_count_; }

 private:
  torch::Tensor item_count_;  // buffer
};

}  // namespace recbole::models
