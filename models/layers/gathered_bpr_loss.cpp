#include "models/layers/gathered_bpr_loss.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/simd.h"
#include "models/layers/losses.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models::layers {

namespace {

constexpr int64_t kRowsPerBlock = 256;

// One block's share of the forward sums (double: the batch's sums are combined block by block).
struct BlockSums {
  double loss = 0, users = 0, pos = 0, neg = 0;  // Σ BPR terms, Σ squared row norms
};

// For rows [first, last): x[b] = ⟨T[u_b], T[p_b]⟩ − ⟨T[u_b], T[n_b]⟩, and the block's sums.
RECBOLE_MULTIVERSION void score_rows(const float* t, int64_t d, const int64_t* u, const int64_t* p,
                                     const int64_t* n, float* x, BlockSums* sums, int64_t first,
                                     int64_t last) {
  for (int64_t b = first; b < last; ++b) {
    const float* ur = t + u[b] * d;
    const float* pr = t + p[b] * d;
    const float* nr = t + n[b] * d;
    x[b] = simd::dot(ur, pr, d) - simd::dot(ur, nr, d);
    const float sig = 1.f / (1.f + std::exp(-x[b]));
    sums->loss -= std::log(1e-10f + sig);
    sums->users += simd::dot(ur, ur, d);
    sums->pos += simd::dot(pr, pr, d);
    sums->neg += simd::dot(nr, nr, d);
  }
}

// dst[k] += a·x[k] + c·y[k]
RECBOLE_INLINE void add_scaled(float* __restrict dst, float a, const float* x, float c,
                               const float* y, int64_t d) {
  for (int64_t k = 0; k < d; ++k) dst[k] += a * x[k] + c * y[k];
}

// The gradient rows [lo, hi) of the table: every batch row adds its terms to the rows it read,
// in batch order. coef[b]: ∂loss/∂x_b; r_*: the EmbLoss factor of each gathered tensor.
RECBOLE_MULTIVERSION void scatter_rows(const float* t, int64_t d, const int64_t* u,
                                       const int64_t* p, const int64_t* n, const float* coef,
                                       int64_t batch, float r_users, float r_pos, float r_neg,
                                       float* grad, int64_t lo, int64_t hi) {
  std::vector<float> diff(static_cast<size_t>(d));
  for (int64_t b = 0; b < batch; ++b) {
    const float* ur = t + u[b] * d;
    const float* pr = t + p[b] * d;
    const float* nr = t + n[b] * d;
    if (u[b] >= lo && u[b] < hi) {
      for (int64_t k = 0; k < d; ++k) diff[static_cast<size_t>(k)] = pr[k] - nr[k];
      add_scaled(grad + u[b] * d, coef[b], diff.data(), r_users, ur, d);
    }
    if (p[b] >= lo && p[b] < hi) add_scaled(grad + p[b] * d, coef[b], ur, r_pos, pr, d);
    if (n[b] >= lo && n[b] < hi) add_scaled(grad + n[b] * d, -coef[b], ur, r_neg, nr, d);
  }
}

void check_ids(const torch::Tensor& ids, int64_t rows, const char* what) {
  const int64_t* v = ids.data_ptr<int64_t>();
  for (int64_t b = 0; b < ids.numel(); ++b)
    if (v[b] < 0 || v[b] >= rows)
      throw Error(std::string("gathered_bpr_loss: ") + what + " id " + std::to_string(v[b]) +
                  " is outside the table's " + std::to_string(rows) + " rows");
}

struct FusedGatheredBpr : public torch::autograd::Function<FusedGatheredBpr> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& table_in,
                               const torch::Tensor& users, const torch::Tensor& pos,
                               const torch::Tensor& neg, double reg_weight) {
    const torch::Tensor t = table_in.contiguous();
    const torch::Tensor u = users.contiguous(), p = pos.contiguous(), n = neg.contiguous();
    const int64_t rows = t.size(0), d = t.size(1), batch = u.numel();
    check_ids(u, rows, "user");
    check_ids(p, rows, "positive");
    check_ids(n, rows, "negative");
    const torch::Tensor x = torch::empty({batch}, t.options());
    const int64_t blocks = (batch + kRowsPerBlock - 1) / kRowsPerBlock;
    std::vector<BlockSums> sums(static_cast<size_t>(blocks));
    parallel_for_blocks(batch, kRowsPerBlock, [&](int64_t k, int64_t first, int64_t last) {
      score_rows(t.data_ptr<float>(), d, u.data_ptr<int64_t>(), p.data_ptr<int64_t>(),
                 n.data_ptr<int64_t>(), x.data_ptr<float>(), &sums[static_cast<size_t>(k)], first,
                 last);
    });
    BlockSums all;
    for (const BlockSums& s : sums) {
      all.loss += s.loss;
      all.users += s.users;
      all.pos += s.pos;
      all.neg += s.neg;
    }
    const double norms[3] = {std::sqrt(all.users), std::sqrt(all.pos), std::sqrt(all.neg)};
    ctx->save_for_backward({t, u, p, n, x});
    ctx->saved_data["reg"] = reg_weight;
    ctx->saved_data["norms"] = std::vector<double>(norms, norms + 3);
    const double b = static_cast<double>(batch);
    const double loss = all.loss / b + reg_weight * (norms[0] + norms[1] + norms[2]) / b;
    return torch::full({}, loss, t.options());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &t = saved[0], &u = saved[1], &p = saved[2], &n = saved[3], &x = saved[4];
    const double reg = ctx->saved_data["reg"].toDouble();
    const std::vector<double> norms = ctx->saved_data["norms"].toDoubleVector();
    const int64_t rows = t.size(0), d = t.size(1), batch = u.numel();
    const double g = grads[0].item<double>() / static_cast<double>(batch);
    // ∂/∂x of −log(1e−10 + σ(x)), as autograd differentiates bpr_loss.
    std::vector<float> coef(static_cast<size_t>(batch));
    const float* xs = x.data_ptr<float>();
    for (int64_t b = 0; b < batch; ++b) {
      const float sig = 1.f / (1.f + std::exp(-xs[b]));
      coef[static_cast<size_t>(b)] =
          static_cast<float>(g) * (-(sig * (1.f - sig)) / (1e-10f + sig));
    }
    // ∂‖E‖/∂E = E / ‖E‖ (0 for a zero norm, as libtorch's norm backward).
    auto factor = [&](double norm) { return norm > 0 ? static_cast<float>(g * reg / norm) : 0.f; };
    torch::Tensor grad = torch::zeros({rows, d}, t.options());
    ThreadPool& pool = ThreadPool::instance();
    const int64_t parts = pool.threads();
    pool.run_per_worker([&](int w) {
      const int64_t lo = rows * w / parts, hi = rows * (w + 1) / parts;
      scatter_rows(t.data_ptr<float>(), d, u.data_ptr<int64_t>(), p.data_ptr<int64_t>(),
                   n.data_ptr<int64_t>(), coef.data(), batch, factor(norms[0]), factor(norms[1]),
                   factor(norms[2]), grad.data_ptr<float>(), lo, hi);
    });
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor gathered_bpr_loss_composed(const torch::Tensor& table, const torch::Tensor& users,
                                         const torch::Tensor& pos, const torch::Tensor& neg,
                                         double reg_weight) {
  const torch::Tensor u = table.index_select(0, users);
  const torch::Tensor p = table.index_select(0, pos);
  const torch::Tensor n = table.index_select(0, neg);
  return bpr_loss((u * p).sum(1), (u * n).sum(1)) + reg_weight * emb_loss({u, p, n});
}

torch::Tensor gathered_bpr_loss(const torch::Tensor& table, const torch::Tensor& users,
                                const torch::Tensor& pos, const torch::Tensor& neg,
                                double reg_weight) {
  // The fused function reads raw CPU memory, so anything else takes the composed path, where
  // libtorch reports a mismatch.
  bool fused = fast_paths_enabled() && table.is_cpu() && table.scalar_type() == torch::kFloat32 &&
               table.dim() == 2 && users.numel() > 0 && users.numel() == pos.numel() &&
               users.numel() == neg.numel();
  for (const torch::Tensor* ids : {&users, &pos, &neg})
    fused = fused && ids->is_cpu() && ids->scalar_type() == torch::kInt64;
  if (!fused) return gathered_bpr_loss_composed(table, users, pos, neg, reg_weight);
  return FusedGatheredBpr::apply(table, users, pos, neg, reg_weight);
}

}  // namespace recbole::models::layers
