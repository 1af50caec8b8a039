#include "models/cached_factor_model.h"

#include <torch/torch.h>

namespace recbole::models {

void CachedFactorModel::refresh_factors() {
  torch::NoGradGuard no_grad;
  factors_ = evaluation_factors();
}

const std::pair<torch::Tensor, torch::Tensor>& CachedFactorModel::factors() {
  if (!factors_.first.defined()) refresh_factors();
  return factors_;
}

torch::Tensor CachedFactorModel::full_sort_predict(const data::Batch& batch) {
  const auto& [users, items] = factors();
  return torch::matmul(users.index_select(0, batch.users), items.t());
}

torch::Tensor CachedFactorModel::predict(const data::Batch& batch) {
  const auto& [users, items] = factors();
  return (users.index_select(0, batch.users) * items.index_select(0, batch.items)).sum(1);
}

bool CachedFactorModel::score_factors(torch::Tensor* users, torch::Tensor* items) const {
  if (!factors_.first.defined()) return false;
  *users = factors_.first;
  *items = factors_.second;
  return true;
}

}  // namespace recbole::models
