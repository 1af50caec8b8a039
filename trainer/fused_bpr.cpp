#include "trainer/fused_bpr.h"

#include <cmath>

#include <torch/torch.h>

#include "recbole/config/config.h"

namespace recbole::trainer {

bool fused_bpr_applicable(const config::Config& config, const models::Model& model,
                          const DeviceManager& device, int world_size) {
  std::string learner = config.get_string("learner");
  for (auto& c : learner) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return config.get_bool("fast_bpr") && dynamic_cast<const models::BPR*>(&model) != nullptr &&
         !device.is_cuda() && learner == "adam" && config.is_null("clip_grad_norm") &&
         world_size == 1 && !config.get_bool("enable_amp");
}

FusedBprTrainer::FusedBprTrainer(models::BPR& model, double learning_rate, double weight_decay)
    : model_(model), lr_(learning_rate), wd_(weight_decay) {
  dim_ = model.user_embedding().size(1);
  const size_t nu = static_cast<size_t>(model.user_embedding().numel());
  const size_t ni = static_cast<size_t>(model.item_embedding().numel());
  user_grad_.assign(nu, 0.f);
  user_m_.assign(nu, 0.f);
  user_v_.assign(nu, 0.f);
  item_grad_.assign(ni, 0.f);
  item_m_.assign(ni, 0.f);
  item_v_.assign(ni, 0.f);
}

void FusedBprTrainer::adam_step(float* __restrict p, float* __restrict g, float* __restrict m,
                                float* __restrict v, int64_t n) {
  // torch.optim.Adam (amsgrad off), written out: identical up to float rounding order. The
  // restrict-qualified, branch-free loop vectorises (sqrt and division included, since the
  // project builds with -fno-math-errno).
  const float b1 = static_cast<float>(beta1_), b2 = static_cast<float>(beta2_);
  const double bc1 = 1.0 - std::pow(beta1_, static_cast<double>(step_));
  const double bc2 = 1.0 - std::pow(beta2_, static_cast<double>(step_));
  const float step_size = static_cast<float>(lr_ / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const float eps = static_cast<float>(eps_), wd = static_cast<float>(wd_);
  for (int64_t k = 0; k < n; ++k) {
    const float grad = g[k] + wd * p[k];
    const float mk = b1 * m[k] + (1.f - b1) * grad;
    const float vk = b2 * v[k] + (1.f - b2) * grad * grad;
    m[k] = mk;
    v[k] = vk;
    p[k] -= step_size * mk / (std::sqrt(vk) * inv_sqrt_bc2 + eps);
    g[k] = 0.f;
  }
}

namespace {

// ⟨u, a − b⟩ with 8 independent partial sums, so the compiler can vectorise the reduction.
inline float dot_diff(const float* __restrict u, const float* __restrict a,
                      const float* __restrict b, int64_t d) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= d; k += 8)
    for (int j = 0; j < 8; ++j) part[j] += u[k + j] * (a[k + j] - b[k + j]);
  float x = 0;
  for (; k < d; ++k) x += u[k] * (a[k] - b[k]);
  for (int j = 0; j < 8; ++j) x += part[j];
  return x;
}

// Accumulates the gradients of one row; the three targets are distinct rows of two buffers.
inline void add_row_grads(float* __restrict gu, float* __restrict gp, float* __restrict gn,
                          const float* __restrict u, const float* __restrict ip,
                          const float* __restrict in, float dx, int64_t d) {
  for (int64_t k = 0; k < d; ++k) {
    gu[k] += dx * (ip[k] - in[k]);
    gp[k] += dx * u[k];
    gn[k] -= dx * u[k];
  }
}

}  // namespace

double FusedBprTrainer::train_epoch(data::TrainBatcher& batcher) {
  torch::NoGradGuard no_grad;
  float* U = model_.user_embedding().data_ptr<float>();
  float* I = model_.item_embedding().data_ptr<float>();
  const int64_t d = dim_;
  double total = 0;
  data::PairBatch pb;
  while (batcher.next(pb)) {
    const int64_t b = pb.size();
    double batch_loss = 0;
    for (int64_t r = 0; r < b; ++r) {
      const float* u = U + pb.users[r] * d;
      const float* ip = I + pb.pos_items[r] * d;
      const float* in = I + pb.neg_items[r] * d;
      const float x = dot_diff(u, ip, in, d);
      const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
      batch_loss += -std::log(1e-10 + s);
      // d/dx of −log(1e−10 + σ(x)), averaged over the batch.
      const float dx = static_cast<float>(-(s * (1.0 - s)) / (1e-10 + s) / static_cast<double>(b));
      add_row_grads(user_grad_.data() + pb.users[r] * d, item_grad_.data() + pb.pos_items[r] * d,
                    item_grad_.data() + pb.neg_items[r] * d, u, ip, in, dx, d);
    }
    ++step_;
    adam_step(U, user_grad_.data(), user_m_.data(), user_v_.data(),
              static_cast<int64_t>(user_grad_.size()));
    adam_step(I, item_grad_.data(), item_m_.data(), item_v_.data(),
              static_cast<int64_t>(item_grad_.size()));
    total += batch_loss / static_cast<double>(b);
  }
  return total;
}

}  // namespace recbole::trainer
