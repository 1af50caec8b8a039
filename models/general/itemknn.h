#pragma once
// ItemKNN (RecBole's ItemKNN, `knn_method` item | user): cosine similarity with shrink between
// the columns (item mode) or rows (user mode) of the binary training matrix X,
//   sim(a, b) = (x_a · x_b) / (‖x_a‖ ‖x_b‖ + shrink + 1e-6),  sim(a, a) = 0,
// computed in float32 as RecBole does. For every target b only its `k` largest similarities are
// kept (ties broken by the smaller id; zeros dropped) as W[a, b] (item mode) or W[b, a] (user
// mode). Scores: X_u · W (item mode) or W_u · X (user mode).
//
// Memory: W holds at most k entries per item (per user in user mode), kept as three CSR buffers
// (indptr int64, indices int64, values float32: 12 bytes per entry); the fit needs O(n) scratch
// per target beyond X and Xᵀ.
#include "models/capabilities.h"
#include "models/model.h"

namespace recbole::models {

class ItemKNN : public Model, public ItemWeightScores {
 public:
  explicit ItemKNN(const ModelContext& ctx);

  void fit() override;
  // [B, n_items] float32 on the device.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // Item mode: scores are x_u · W, W's CSR rows as held. User mode scores from the user's
  // neighbours, so a user the model never saw cannot be scored: none.
  bool score_item_weights(ItemWeights* weights) const override {
    if (user_mode_) return false;
    weights->indptr = w_indptr_;
    weights->indices = w_indices_;
    weights->values = w_values_;
    return true;
  }

  bool user_mode() const { return user_mode_; }
  // W as a dense [n, n] float32 CPU tensor (n = n_items, or n_users in user mode); for tests.
  torch::Tensor dense_weights() const;

 private:
  bool user_mode_;
  int64_t k_;
  double shrink_;
  // CSR buffers of W, rows = neighbour item (item mode) or target user (user mode).
  torch::Tensor w_indptr_, w_indices_, w_values_;
};

}  // namespace recbole::models
