#include "models/layers/backward_parts.h"

#include <algorithm>
#include <optional>

#include "models/layers/dropout.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models::layers {

namespace {

bool all_on_cpu(const std::vector<torch::Tensor>& params) {
  return std::all_of(params.begin(), params.end(),
                     [](const torch::Tensor& p) { return p.device().is_cpu(); });
}

// One part after another on this thread, each backward() accumulating into grad().
torch::Tensor backward_in_turn(int64_t parts, const std::function<torch::Tensor(int64_t)>& loss_of,
                               const std::function<void(const torch::Tensor&)>& check) {
  torch::Tensor total;
  for (int64_t k = 0; k < parts; ++k) {
    torch::Tensor loss = loss_of(k);
    check(loss);
    loss.backward();
    total = total.defined() ? total + loss.detach() : loss.detach();
  }
  return total;
}

}  // namespace

torch::Tensor backward_parts(const std::vector<torch::Tensor>& params, int64_t parts,
                             const std::function<torch::Tensor(int64_t)>& loss_of,
                             const std::function<void(const torch::Tensor&)>& check) {
  TORCH_CHECK(parts >= 1, "backward_parts: parts must be at least 1, got ", parts);
  std::vector<torch::Tensor> trainable;
  for (const torch::Tensor& p : params)
    if (p.requires_grad()) trainable.push_back(p);
  if (trainable.empty() || !all_on_cpu(params)) return backward_in_turn(parts, loss_of, check);
  std::vector<uint64_t> keys(static_cast<size_t>(parts));
  for (uint64_t& key : keys) key = draw_dropout_key();

  std::vector<torch::Tensor> losses(static_cast<size_t>(parts));
  std::vector<std::vector<torch::Tensor>> grads(static_cast<size_t>(parts));
  {
    std::optional<BlasThreadsScope> one_blas_thread;
    if (ThreadPool::instance().threads() > 1) one_blas_thread.emplace(1);
    parallel_for(parts, [&](int64_t k, int /*worker*/) {
      DropoutKeyScope key(keys[static_cast<size_t>(k)]);
      torch::Tensor loss = loss_of(k);
      check(loss);
      grads[static_cast<size_t>(k)] = torch::autograd::grad({loss}, trainable, /*grad_outputs=*/{},
                                                            /*retain_graph=*/false,
                                                            /*create_graph=*/false,
                                                            /*allow_unused=*/true);
      losses[static_cast<size_t>(k)] = loss.detach();
    });
  }

  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < trainable.size(); ++i) {
    torch::Tensor sum;
    for (int64_t k = 0; k < parts; ++k) {
      const torch::Tensor& g = grads[static_cast<size_t>(k)][i];
      if (!g.defined()) continue;
      // The first is copied: autograd may hand the same tensor to two parameters (the
      // gradient of a sum), or a broadcast view.
      if (sum.defined())
        sum.add_(g);
      else
        sum = g.clone(at::MemoryFormat::Contiguous);
    }
    if (sum.defined()) trainable[i].mutable_grad() = sum;
  }
  torch::Tensor total = losses[0];
  for (int64_t k = 1; k < parts; ++k) total = total + losses[static_cast<size_t>(k)];
  return total;
}

}  // namespace recbole::models::layers
