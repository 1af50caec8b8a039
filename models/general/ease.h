#pragma once
// EASE (Steck 2019), as RecBole defines it: G = XᵀX + reg_weight·I over all item columns (the
// padding column included), P = G⁻¹, B = −P / diag(P) column-wise with diag(B) = 0, and scores
// X_u · B.
//
// Memory: B is a dense n_items² float32 buffer on the device (4·n² bytes: 11 MiB for ml-100k,
// 13.4 GiB for 60 000 items). The fit runs on the CPU in float64 and holds at most two n² float64
// matrices at a time (G and its Cholesky factor, then the factor and P = G⁻¹): fit_bytes() =
// 16·n² bytes, checked against the available memory (require_memory) before any allocation.
#include "models/capabilities.h"
#include "models/model.h"

namespace recbole::models {

class EASE : public Model, public ItemWeightScores {
 public:
  explicit EASE(const ModelContext& ctx);

  void fit() override;
  // [B, n_items] float32 on the device.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // Scores are x_u · B.
  bool score_item_weights(ItemWeights* weights) const override {
    weights->dense = b_;
    return b_.size(0) == n_items();
  }

  // [n_items, n_items] float32 on the device (empty before fit()).
  torch::Tensor item_similarity() const { return b_; }

  // Peak bytes the fit needs for n items.
  static double fit_bytes(int64_t n_items);

 private:
  double reg_weight_;
  torch::Tensor b_;  // buffer "item_similarity"
};

}  // namespace recbole::models
