#pragma once
// CachedFactorModel: a model whose scores are dot products ⟨user factor, item factor⟩ of
// factors computed from all of its weights at once (graph propagation, SimpleX's history
// aggregation). Evaluation computes the factors once (before_evaluation, or at the first query)
// and scores from them; the next training batch drops them (call drop_factors() in
// calculate_loss), since its step changes the weights. The factors are also offered to the CPU
// evaluator as score factors, which fuses the product with masking and top-K.
#include <utility>

#include "models/capabilities.h"
#include "models/model.h"

namespace recbole::models {

class CachedFactorModel : public Model, public FactorScores {
 public:
  using Model::Model;

  // batch: users → [B, n_items] float32 on the device.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // batch: users, items → [B].
  torch::Tensor predict(const data::Batch& batch) override;
  // The cached factors, when an evaluation has computed them.
  bool score_factors(torch::Tensor* users, torch::Tensor* items) const override;
  void before_evaluation() override { refresh_factors(); }

 protected:
  // The factors of the current weights: users [n_users, d], items [n_items, d], float32 on the
  // device. Called without gradient, in whatever mode the model is in (eval when evaluating).
  virtual std::pair<torch::Tensor, torch::Tensor> evaluation_factors() = 0;
  void drop_factors() { factors_ = {}; }

 private:
  void refresh_factors();
  const std::pair<torch::Tensor, torch::Tensor>& factors();

  std::pair<torch::Tensor, torch::Tensor> factors_;  // undefined while training
};

}  // namespace recbole::models
