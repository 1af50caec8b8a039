#pragma once
// EASE (Steck 2019), as RecBole defines it: G = XᵀX + reg_weight·I over all item columns (the
// padding column included), P = G⁻¹, B = −P / diag(P) column-wise with diag(B) = 0, and scores
// X_u · B.
//
// Memory: B is a dense n_items² float32 buffer on the device (4·n² bytes: 11 MiB for ml-100k,
// 14.4 GiB for 60 000 items). The fit runs on the CPU in float64 and peaks at G, its Cholesky
// factor and P together: 3 × n_items² float64 = 24·n² bytes, checked against the available
// memory (see require_memory) before anything is allocated.
#include "models/model.h"

namespace recbole::models {

class EASE : public Model {
 public:
  explicit EASE(const ModelContext& ctx);

  ModelKind kind() const override { return ModelKind::kFitOnce; }
  void fit() override;
  // [B, n_items] float32 on the device.
  torch::Tensor full_sort_predict(const torch::Tensor& users) override;

  // [n_items, n_items] float32 on the device (empty before fit()).
  torch::Tensor item_similarity() const { return b_; }

  // Peak bytes the fit needs for n items.
  static double fit_bytes(int64_t n_items);

 private:
  double reg_weight_;
  torch::Tensor b_;  // buffer "item_similarity"
};

}  // namespace recbole::models
