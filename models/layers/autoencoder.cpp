#include "models/layers/autoencoder.h"

#include <algorithm>
#include <string>
#include <vector>

#include "models/layers/dropout.h"
#include "recbole/data/dense_rows.h"

namespace recbole::models::layers {

torch::Tensor user_rows(const data::Batch& batch, const data::InteractionMatrix& train,
                        const DeviceManager& device) {
  if (batch.history.defined()) return batch.history;
  const torch::Tensor users = DeviceManager::to_host(batch.users).contiguous();
  const std::vector<int64_t> ids(users.data_ptr<int64_t>(),
                                 users.data_ptr<int64_t>() + users.numel());
  return device.place(data::dense_rows(train, ids));
}

torch::Tensor normalized_dropout(const torch::Tensor& x, double p, bool training) {
  namespace F = torch::nn::functional;
  torch::Tensor h = F::normalize(x, F::NormalizeFuncOptions().dim(1));
  return p > 0 ? layers::dropout(h, p, training) : h;
}

torch::Tensor reparameterize(const torch::Tensor& mu, const torch::Tensor& logvar, double noise_std,
                             bool training) {
  if (!training) return mu;
  const torch::Tensor eps = torch::randn_like(mu) * noise_std;
  return mu + eps * torch::exp(0.5 * logvar);
}

torch::Tensor gaussian_kl(const torch::Tensor& mu, const torch::Tensor& logvar) {
  return -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1).mean();
}

double KlAnneal::next() {
  ++count_;
  if (total_steps_ <= 0) return cap_;
  return std::min(cap_, static_cast<double>(count_) / static_cast<double>(total_steps_));
}

}  // namespace recbole::models::layers
