#include "models/layers/backward_parts.h"

#include <algorithm>
#include <optional>

#include "models/layers/dropout.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models::layers {

namespace {

// Whether this thread is running a part's forward on the CPU (gather_rows's sparse gradient).
thread_local bool in_cpu_part = false;

// Marks the forward of a part on the CPU for the scope's lifetime.
class CpuPartScope {
 public:
  CpuPartScope() : previous_(in_cpu_part) { in_cpu_part = true; }
  ~CpuPartScope() { in_cpu_part = previous_; }
  CpuPartScope(const CpuPartScope&) = delete;
  CpuPartScope& operator=(const CpuPartScope&) = delete;

 private:
  bool previous_;
};

bool all_on_cpu(const std::vector<torch::Tensor>& params) {
  return std::all_of(params.begin(), params.end(),
                     [](const torch::Tensor& p) { return p.device().is_cpu(); });
}

void zero_grads(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& p : params)
    if (p.grad().defined()) p.mutable_grad().zero_();
}

// One part after another on this thread, each backward() accumulating into grad() (zeroed
// first); with keys, part k's dropout keyed by keys[k] as on the pool (the reference path).
torch::Tensor backward_in_turn(const std::vector<torch::Tensor>& params, int64_t parts,
                               const std::function<torch::Tensor(int64_t)>& loss_of,
                               const std::function<void(const torch::Tensor&)>& check,
                               const std::vector<uint64_t>* keys = nullptr) {
  zero_grads(params);
  torch::Tensor total;
  for (int64_t k = 0; k < parts; ++k) {
    std::optional<DropoutKeyScope> key;
    if (keys) key.emplace((*keys)[static_cast<size_t>(k)]);
    torch::Tensor loss = loss_of(k);
    check(loss);
    loss.backward();
    total = total.defined() ? total + loss.detach() : loss.detach();
  }
  return total;
}

std::vector<torch::Tensor> trainable_of(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> trainable;
  for (const torch::Tensor& p : params)
    if (p.requires_grad()) trainable.push_back(p);
  return trainable;
}

// dense[ids[r]] += rows[r] for the rows of a sparse COO gradient (gather_rows's), in order.
void add_rows(torch::Tensor& dense, const torch::Tensor& sparse) {
  const torch::Tensor ids = sparse._indices().select(0, 0).contiguous();
  const torch::Tensor rows = sparse._values().contiguous().view({ids.size(0), -1});
  const int64_t width = rows.size(1), n = ids.size(0);
  TORCH_CHECK(dense.scalar_type() == torch::kFloat && rows.scalar_type() == torch::kFloat &&
                  dense.is_contiguous() && dense.numel() == dense.size(0) * width,
              "backward_parts: a sparse gradient must be of a float32 [rows, d] table");
  const int64_t* id = ids.data_ptr<int64_t>();
  const float* src = rows.data_ptr<float>();
  float* dst = dense.data_ptr<float>();
  for (int64_t r = 0; r < n; ++r) {
    float* out = dst + id[r] * width;
    const float* in = src + r * width;
    for (int64_t c = 0; c < width; ++c) out[c] += in[c];
  }
}

// grads[k][i] is part k's gradient of trainable[i] (undefined where the part does not reach
// it; sparse COO from gather_rows); each parameter's grad() becomes their sum in part order.
void store_sums(const std::vector<torch::Tensor>& trainable,
                const std::vector<std::vector<torch::Tensor>>& grads) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < trainable.size(); ++i) {
    torch::Tensor sum;
    for (const std::vector<torch::Tensor>& part : grads) {
      const torch::Tensor& g = part[i];
      if (!g.defined()) continue;
      if (g.is_sparse()) {
        if (!sum.defined()) sum = torch::zeros_like(trainable[i], at::MemoryFormat::Contiguous);
        add_rows(sum, g);
        continue;
      }
      // The first is copied unless it is a tensor (and storage) that only this list holds:
      // autograd may hand the same tensor to two parameters (the gradient of a sum), or a
      // broadcast view. (A dense embedding-table gradient is worth not copying.)
      if (sum.defined())
        sum.add_(g);
      else if (!g.is_view() && g.is_contiguous() && g.use_count() == 1 &&
               g.storage().use_count() == 1)
        sum = g;
      else
        sum = g.clone(at::MemoryFormat::Contiguous);
    }
    if (sum.defined())
      trainable[i].mutable_grad() = sum;
    else if (trainable[i].grad().defined())
      trainable[i].mutable_grad().zero_();  // as zero_grad() and then backward() leave it
  }
}

torch::Tensor sum_in_order(const std::vector<torch::Tensor>& losses) {
  torch::Tensor total = losses[0];
  for (size_t k = 1; k < losses.size(); ++k) total = total + losses[k];
  return total;
}

std::vector<torch::Tensor> grad_of(const std::vector<torch::Tensor>& outputs,
                                   const std::vector<torch::Tensor>& trainable,
                                   const std::vector<torch::Tensor>& grad_outputs) {
  return torch::autograd::grad(outputs, trainable, grad_outputs, /*retain_graph=*/false,
                               /*create_graph=*/false, /*allow_unused=*/true);
}

}  // namespace

std::vector<uint64_t> draw_part_keys(int64_t parts) {
  std::vector<uint64_t> keys(static_cast<size_t>(parts));
  for (uint64_t& key : keys) key = draw_dropout_key();
  return keys;
}

void on_pool(int64_t parts, const std::function<void(size_t)>& body) {
  std::optional<BlasThreadsScope> one_blas_thread;
  if (ThreadPool::instance().threads() > 1) one_blas_thread.emplace(1);
  parallel_for(parts, [&](int64_t k, int /*worker*/) { body(static_cast<size_t>(k)); });
}

torch::Tensor backward_parts(const std::vector<torch::Tensor>& params, int64_t parts,
                             const std::function<torch::Tensor(int64_t)>& loss_of,
                             const std::function<void(const torch::Tensor&)>& check) {
  TORCH_CHECK(parts >= 1, "backward_parts: parts must be at least 1, got ", parts);
  const std::vector<torch::Tensor> trainable = trainable_of(params);
  if (trainable.empty() || !all_on_cpu(params))
    return backward_in_turn(params, parts, loss_of, check);
  const std::vector<uint64_t> keys = draw_part_keys(parts);
  // The reference path: the same parts and dropout keys, one after another, the gradients
  // accumulated by autograd.
  if (!fast_paths_enabled()) return backward_in_turn(params, parts, loss_of, check, &keys);
  std::vector<torch::Tensor> losses(static_cast<size_t>(parts));
  std::vector<std::vector<torch::Tensor>> grads(static_cast<size_t>(parts));
  on_pool(parts, [&](size_t k) {
    DropoutKeyScope key(keys[k]);
    CpuPartScope part;
    torch::Tensor loss = loss_of(static_cast<int64_t>(k));
    check(loss);
    grads[k] = grad_of({loss}, trainable, {});
    losses[k] = loss.detach();
  });
  store_sums(trainable, grads);
  return sum_in_order(losses);
}

torch::Tensor backward_parts_coupled(
    const std::vector<torch::Tensor>& params, int64_t parts,
    const std::function<PartForward(int64_t)>& forward_of,
    const std::function<torch::Tensor(const std::vector<std::vector<torch::Tensor>>&)>& coupling,
    const std::function<void(const torch::Tensor&)>& check) {
  TORCH_CHECK(parts >= 1, "backward_parts_coupled: parts must be at least 1, got ", parts);
  const std::vector<torch::Tensor> trainable = trainable_of(params);
  const std::vector<uint64_t> keys = draw_part_keys(parts);
  std::vector<PartForward> forward(static_cast<size_t>(parts));
  const auto run_forward = [&](size_t k) {
    DropoutKeyScope key(keys[k]);
    forward[k] = forward_of(static_cast<int64_t>(k));
    check(forward[k].loss);
  };
  if (trainable.empty() || !all_on_cpu(params)) {
    zero_grads(params);
    std::vector<std::vector<torch::Tensor>> z;
    std::vector<torch::Tensor> losses;
    for (size_t k = 0; k < forward.size(); ++k) {
      run_forward(k);
      z.push_back(forward[k].coupled);
      losses.push_back(forward[k].loss);
    }
    const torch::Tensor total = sum_in_order(losses) + coupling(z);
    check(total);
    if (total.requires_grad()) total.backward();
    return total.detach();
  }

  on_pool(parts, [&](size_t k) {
    CpuPartScope part;
    run_forward(k);
  });
  // The coupling's gradient with respect to each part's tensors, from detached copies.
  std::vector<std::vector<torch::Tensor>> z(forward.size());
  std::vector<torch::Tensor> leaves;
  for (size_t k = 0; k < forward.size(); ++k)
    for (const torch::Tensor& t : forward[k].coupled) {
      z[k].push_back(t.detach().requires_grad_(t.requires_grad()));
      if (t.requires_grad()) leaves.push_back(z[k].back());
    }
  const torch::Tensor c = coupling(z);
  check(c);
  std::vector<torch::Tensor> dz;
  if (c.requires_grad() && !leaves.empty()) dz = grad_of({c}, leaves, {});

  std::vector<std::vector<torch::Tensor>> grads(forward.size());
  std::vector<std::vector<torch::Tensor>> outputs(forward.size()), grad_outputs(forward.size());
  for (size_t k = 0, next = 0; k < forward.size(); ++k) {
    outputs[k] = {forward[k].loss};
    grad_outputs[k] = {torch::ones_like(forward[k].loss)};
    for (const torch::Tensor& t : forward[k].coupled) {
      if (!t.requires_grad() || dz.empty()) continue;
      const torch::Tensor& g = dz[next++];
      if (!g.defined()) continue;
      outputs[k].push_back(t);
      grad_outputs[k].push_back(g);
    }
  }
  on_pool(parts, [&](size_t k) { grads[k] = grad_of(outputs[k], trainable, grad_outputs[k]); });
  store_sums(trainable, grads);
  std::vector<torch::Tensor> losses;
  for (PartForward& f : forward) losses.push_back(f.loss.detach());
  return sum_in_order(losses) + c.detach();
}

torch::Tensor gather_rows(const torch::Tensor& table, const torch::Tensor& ids) {
  if (!in_cpu_part || !table.requires_grad() || !torch::GradMode::is_enabled())
    return table.index_select(0, ids);
  return torch::embedding(table, ids, /*padding_idx=*/-1, /*scale_grad_by_freq=*/false,
                          /*sparse=*/true);
}

}  // namespace recbole::models::layers
