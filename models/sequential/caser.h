#pragma once
// Caser (Tang & Wang 2018) as RecBole defines it, with T = 1 (one target per sample). The items
// of item_seq, all L = MAX_ITEM_LIST_LENGTH positions (padding included), form an image
// X [B, 1, L, d]:
//   vertical:   Conv2d(1 → nv, kernel L × 1) → nv·d values, no activation;
//   horizontal: for every height h = 1 … L, Conv2d(1 → nh, kernel h × d) → ReLU → max over the
//               L − h + 1 positions → nh values; nh·L in all;
//   z = ReLU(fc1(dropout([vertical ; horizontal]))),  h = ReLU(fc2([z ; U[user]])).
// The horizontal part is layers::horizontal_conv_max: one fused node on the CPU (~20× the
// fifty composed convolutions at L = 50).
// Loss: CE (or BPR) + reg_weight · (‖U‖ + ‖E‖ + ‖W_v‖ + ‖W_fc1‖ + ‖W_fc2‖ + Σ_h ‖W_h‖), unsquared
// Frobenius norms of the whole tables and weights (biases left out), as RecBole.
// Init: the user and item tables N(0, (1/d)²), fc1 / fc2 xavier_normal with bias 0, the
// convolutions libtorch's defaults. The user is read, so Caser scores known users only.
#include <vector>

#include "models/sequential/sequential_model.h"

namespace recbole::models {

class Caser : public SequentialModel {
 public:
  explicit Caser(const ModelContext& ctx);
  torch::Tensor encode(const data::Batch& batch) override;
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  bool scores_from_history() const override { return false; }

 private:
  double dropout_, reg_weight_;
  torch::Tensor user_embedding_;
  torch::nn::Conv2d conv_v_{nullptr};
  std::vector<torch::nn::Conv2d> conv_h_;
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};

}  // namespace recbole::models
