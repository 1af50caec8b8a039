#include "trainer/gradient_exchange.h"

#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>

#include "recbole/utils/clock.h"
#include "recbole/utils/logging.h"

namespace recbole::trainer {
namespace {

GradientExchangeStats g_stats;
std::mutex g_stats_mutex;  // tests run several ranks as threads of one process

torch::Tensor grad_or_zeros(const torch::Tensor& p) {
  return p.grad().defined() ? p.grad() : torch::zeros_like(p);
}

void set_grad(const torch::Tensor& p, const torch::Tensor& g) {
  torch::Tensor param = p;  // shares the TensorImpl: the parameter's gradient is set
  if (param.grad().defined())
    param.mutable_grad().copy_(g);
  else
    param.mutable_grad() = g.clone();
}

// The parameter's gradient as a contiguous float tensor that is the gradient itself (created as
// zeros when undefined, made contiguous in place when not).
torch::Tensor contiguous_grad(const torch::Tensor& p) {
  torch::Tensor param = p;
  if (!param.grad().defined())
    param.mutable_grad() = torch::zeros_like(p);
  else if (!param.grad().is_contiguous())
    param.mutable_grad() = param.grad().contiguous();
  return param.grad();
}

// The rows of a [rows, d] float32 contiguous gradient that hold a non-zero value.
std::vector<int32_t> nonzero_rows(const torch::Tensor& g) {
  const int64_t n = g.size(0), d = g.size(1);
  const float* p = g.data_ptr<float>();
  std::vector<int32_t> out;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j)
      if (p[i * d + j] != 0.0f) {
        out.push_back(static_cast<int32_t>(i));
        break;
      }
  return out;
}

// The dense exchange of `params`: one flat all-reduce. `counts` (may be empty) rides along:
// each rank writes its own slot, so after the sum every rank holds every rank's counts.
std::vector<int64_t> dense(const std::vector<torch::Tensor>& params,
                           const std::vector<int64_t>& counts, Dist& dist) {
  const int64_t world = dist.world_size(), n_counts = static_cast<int64_t>(counts.size());
  std::vector<torch::Tensor> parts;
  int64_t n = 0;
  for (const auto& p : params) {
    parts.push_back(grad_or_zeros(p).reshape({-1}));
    n += p.numel();
  }
  if (n_counts > 0) {
    // Floats hold the counts exactly: a table of more than 2^24 rows is sent dense (below).
    torch::Tensor c = torch::zeros({world * n_counts});
    for (int64_t k = 0; k < n_counts; ++k)
      c.data_ptr<float>()[dist.rank() * n_counts + k] = static_cast<float>(counts[k]);
    parts.push_back(c);
  }
  if (parts.empty()) return {};
  torch::Tensor flat = torch::cat(parts);
  dist.all_reduce_sum(flat);
  flat.narrow(0, 0, n).div_(world);
  int64_t offset = 0;
  for (const auto& p : params) {
    set_grad(p, flat.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
  }
  std::vector<int64_t> all(world * n_counts);
  for (int64_t i = 0; i < world * n_counts; ++i)
    all[i] = static_cast<int64_t>(flat.data_ptr<float>()[n + i]);
  return all;
}

// Whether the row-sparse exchange of `tables` sends under half the dense bytes, given every
// rank's counts ([W * tables], rank-major). Sparse: each rank sends the largest count (gathers
// are padded to it) of slots of a row index and the row; dense: the ring all-reduce sends
// about twice the table per rank. The second round trip (the counts) is not worth a smaller
// saving on a fast link (docs/benchmarks.md).
bool sparse_pays(const std::vector<torch::Tensor>& tables, const std::vector<int64_t>& all_counts,
                 int64_t world) {
  const int64_t n_tables = static_cast<int64_t>(tables.size());
  if (static_cast<int64_t>(all_counts.size()) != world * n_tables) return false;
  int64_t sparse_words = 0, dense_words = 0;
  for (int64_t k = 0; k < n_tables; ++k) {
    int64_t most = 0;
    for (int64_t r = 0; r < world; ++r) most = std::max(most, all_counts[r * n_tables + k]);
    sparse_words += most * (tables[k].size(1) + 1) * world;
    dense_words += 2 * tables[k].numel();
  }
  return 2 * sparse_words < dense_words;
}

// The row-sparse exchange: every rank gathers every rank's non-zero rows and sums them in rank
// order. all_counts: [W * tables], rank-major.
void sparse_exchange(const std::vector<torch::Tensor>& grads,
                     const std::vector<std::vector<int32_t>>& rows,
                     const std::vector<int64_t>& all_counts, Dist& dist) {
  const int64_t world = dist.world_size(), n_tables = static_cast<int64_t>(grads.size());
  std::vector<int64_t> most(n_tables, 0), slot(n_tables);
  int64_t words = 0;
  for (int64_t k = 0; k < n_tables; ++k) {
    for (int64_t r = 0; r < world; ++r) most[k] = std::max(most[k], all_counts[r * n_tables + k]);
    slot[k] = grads[k].size(1) + 1;
    words += most[k] * slot[k];
  }
  // One int32 buffer per rank: per table, `most` slots of [row, the row's floats as bits].
  torch::Tensor send = torch::full({std::max<int64_t>(words, 1)}, -1, torch::kInt32);
  int32_t* out = send.data_ptr<int32_t>();
  for (int64_t k = 0; k < n_tables; ++k) {
    const int64_t d = grads[k].size(1);
    const float* g = grads[k].data_ptr<float>();
    for (size_t s = 0; s < rows[k].size(); ++s) {
      out[s * slot[k]] = rows[k][s];
      std::memcpy(out + s * slot[k] + 1, g + rows[k][s] * d, d * sizeof(float));
    }
    out += most[k] * slot[k];
  }
  const std::vector<torch::Tensor> got = dist.all_gather(send);
  int64_t off = 0;
  for (int64_t k = 0; k < n_tables; ++k) {
    const int64_t d = grads[k].size(1);
    float* g = grads[k].data_ptr<float>();
    // This rank's rows start from zero (all others are zero already); then every rank's rows
    // are added in rank order, so every rank computes the same sum.
    for (int32_t row : rows[k])
      std::memset(g + static_cast<int64_t>(row) * d, 0, d * sizeof(float));
    std::vector<uint8_t> seen(grads[k].size(0), 0);
    std::vector<int64_t> union_rows;
    for (int64_t r = 0; r < world; ++r) {
      const int32_t* in = got[r].data_ptr<int32_t>() + off;
      for (int64_t s = 0; s < all_counts[r * n_tables + k]; ++s) {
        const int32_t row = in[s * slot[k]];
        float* dst = g + static_cast<int64_t>(row) * d;
        const auto* src = reinterpret_cast<const float*>(in + s * slot[k] + 1);
        for (int64_t j = 0; j < d; ++j) dst[j] += src[j];
        if (!seen[row]) seen[row] = 1, union_rows.push_back(row);
      }
    }
    // The mean with the dense path's own division (rows no rank touched stay zero).
    if (!union_rows.empty()) {
      torch::Tensor idx = torch::from_blob(
          union_rows.data(), {static_cast<int64_t>(union_rows.size())}, torch::kInt64);
      grads[k].index_copy_(0, idx, grads[k].index_select(0, idx).div_(world));
    }
    off += most[k] * slot[k];
  }
}

}  // namespace

void average_gradients(const std::vector<torch::Tensor>& all_params, Dist& dist,
                       GradientExchange mode) {
  if (!dist.active()) return;
  if (mode == GradientExchange::kAuto) {
    const std::string& key = dist.settings().gradient_exchange;
    if (key == "dense") mode = GradientExchange::kDense;
    if (key == "sparse") mode = GradientExchange::kSparse;
  }
  const auto t0 = Clock::now();
  const Dist::Traffic before = dist.traffic();
  std::vector<torch::Tensor> tables, others;  // 2-D float parameters may go row-sparse
  for (const auto& p : all_params) {
    if (!p.requires_grad()) continue;
    (p.dim() == 2 && p.scalar_type() == torch::kFloat32 && p.size(0) <= (int64_t{1} << 24) &&
             mode != GradientExchange::kDense
         ? tables
         : others)
        .push_back(p);
  }
  const int64_t n_tables = static_cast<int64_t>(tables.size());
  std::vector<torch::Tensor> grads;
  std::vector<std::vector<int32_t>> rows(n_tables);
  std::vector<int64_t> counts(n_tables);
  for (int64_t k = 0; k < n_tables; ++k) {
    grads.push_back(contiguous_grad(tables[k]));
    rows[k] = nonzero_rows(grads[k]);
    counts[k] = static_cast<int64_t>(rows[k].size());
  }
  // Auto tries sparse when the previous step's counts (every rank holds them, from the last
  // exchange) say it pays; the counts gathered then decide for this step. Dense steps carry
  // the counts inside their all-reduce, so staying dense costs no extra round trip.
  std::vector<int64_t>& last_counts = dist.exchange_state();
  bool sparse = false;
  if (n_tables > 0 &&
      (mode == GradientExchange::kSparse || sparse_pays(tables, last_counts, dist.world_size()))) {
    torch::Tensor mine = torch::from_blob(counts.data(), {n_tables}, torch::kInt64);
    const std::vector<torch::Tensor> gathered = dist.all_gather(mine);
    std::vector<int64_t> all_counts;
    for (const auto& g : gathered)
      all_counts.insert(all_counts.end(), g.data_ptr<int64_t>(), g.data_ptr<int64_t>() + n_tables);
    last_counts = all_counts;
    sparse =
        mode == GradientExchange::kSparse || sparse_pays(tables, all_counts, dist.world_size());
    if (sparse) sparse_exchange(grads, rows, all_counts, dist);
  }
  if (sparse) {
    dense(others, {}, dist);
  } else if (n_tables > 0) {
    others.insert(others.end(), tables.begin(), tables.end());
    last_counts = dense(others, counts, dist);
  } else {
    dense(others, {}, dist);
  }
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  g_stats.steps += 1;
  g_stats.sparse_steps += sparse ? 1 : 0;
  g_stats.bytes += dist.traffic().bytes - before.bytes;
  g_stats.collective_seconds += dist.traffic().seconds - before.seconds;
  g_stats.seconds += seconds_since(t0);
}

GradientExchangeStats gradient_exchange_stats() {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  return g_stats;
}

void log_gradient_exchange_stats(const Dist& dist, int64_t epochs) {
  GradientExchangeStats s;
  {
    std::lock_guard<std::mutex> lock(g_stats_mutex);
    std::swap(s, g_stats);  // one run's totals: the next run starts from zero
  }
  if (!dist.active() || s.steps == 0 || epochs <= 0) return;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "gradient exchange per epoch (rank %d on host %s): %.3f MB handed to collectives, "
                "%.3f s in the exchange (%.3f s waiting for collectives), %lld steps, %lld "
                "row-sparse",
                dist.rank(), dist.host().c_str(), s.bytes / 1e6 / epochs, s.seconds / epochs,
                s.collective_seconds / epochs, static_cast<long long>(s.steps / epochs),
                static_cast<long long>(s.sparse_steps / epochs));
  log::info(buf);
}

}  // namespace recbole::trainer
