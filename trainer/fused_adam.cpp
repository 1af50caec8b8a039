#include "trainer/fused_adam.h"

#include <algorithm>
#include <cmath>

#include "kernels/row_optimizers.h"
#include "recbole/utils/thread_pool.h"
#include "recbole/utils/torch_compat.h"

namespace recbole {
namespace {

// Elements per task: large enough that a task outweighs its dispatch, small enough that an
// entity table splits over every worker.
constexpr int64_t kChunk = 1 << 15;

RECBOLE_MULTIVERSION void adam_chunk(float* p, const float* g, float* m, float* v, int64_t n,
                                     const kernels::AdamConsts& c) {
  kernels::adam_row(p, g, m, v, n, c);
}

bool fusable(const torch::Tensor& p, const torch::Tensor& g, bool amsgrad) {
  return !amsgrad && p.device().is_cpu() && p.scalar_type() == torch::kFloat32 &&
         p.is_contiguous() && !g.is_sparse() && g.scalar_type() == torch::kFloat32 &&
         g.is_contiguous() && g.sizes() == p.sizes();
}

// The update of one parameter through tensor operations (torch.optim.Adam's algorithm).
void tensor_update(torch::Tensor p, torch::Tensor grad, torch::optim::AdamParamState& s,
                   const torch::optim::AdamOptions& o, double bc1, double bc2) {
  const auto [b1, b2] = o.betas();
  if (o.weight_decay() != 0) grad = grad.add(p, o.weight_decay());
  s.exp_avg().mul_(b1).add_(grad, 1 - b1);
  s.exp_avg_sq().mul_(b2).addcmul_(grad, grad, 1 - b2);
  torch::Tensor second = s.exp_avg_sq();
  if (o.amsgrad()) {
    torch::max_out(s.max_exp_avg_sq(), s.max_exp_avg_sq(), second);
    second = s.max_exp_avg_sq();
  }
  const torch::Tensor denom = (second.sqrt() / std::sqrt(bc2)).add_(o.eps());
  p.addcdiv_(s.exp_avg(), denom, -o.lr() / bc1);
}

void fused_update(torch::Tensor& p, const torch::Tensor& g, torch::optim::AdamParamState& s,
                  const torch::optim::AdamOptions& o, double bc1, double bc2) {
  const auto [b1, b2] = o.betas();
  kernels::AdamConsts c;
  c.b1 = static_cast<float>(b1);
  c.b2 = static_cast<float>(b2);
  c.eps = static_cast<float>(o.eps());
  c.wd = static_cast<float>(o.weight_decay());
  c.step_size = static_cast<float>(o.lr() / bc1);
  c.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  float* P = p.data_ptr<float>();
  const float* G = g.data_ptr<float>();
  float* M = s.exp_avg().data_ptr<float>();
  float* V = s.exp_avg_sq().data_ptr<float>();
  const int64_t n = p.numel();
  const int64_t tasks = (n + kChunk - 1) / kChunk;
  auto chunk = [&](int64_t t, int) {
    const int64_t lo = t * kChunk;
    adam_chunk(P + lo, G + lo, M + lo, V + lo, std::min(kChunk, n - lo), c);
  };
  if (tasks <= 1)
    chunk(0, 0);
  else
    parallel_for(tasks, chunk);
}

}  // namespace

torch::Tensor FusedAdam::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const torch::Tensor& g = p.grad();
      auto& slot = compat::optimizer_state_slot(state(), p);
      if (!slot) {
        auto fresh = std::make_unique<torch::optim::AdamParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        if (o.amsgrad()) fresh->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& s = static_cast<torch::optim::AdamParamState&>(*slot);
      s.step(s.step() + 1);
      const auto [b1, b2] = o.betas();
      const double bc1 = 1 - std::pow(b1, static_cast<double>(s.step()));
      const double bc2 = 1 - std::pow(b2, static_cast<double>(s.step()));
      if (fusable(p, g, o.amsgrad()) && s.exp_avg().is_contiguous() &&
          s.exp_avg_sq().is_contiguous())
        fused_update(p, g, s, o, bc1, bc2);
      else
        tensor_update(p, g, s, o, bc1, bc2);
    }
  }
  return loss;
}

}  // namespace recbole
