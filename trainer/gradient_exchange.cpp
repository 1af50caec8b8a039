#include "trainer/gradient_exchange.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "recbole/utils/logging.h"

namespace recbole::trainer {
namespace {

GradientExchangeStats g_stats;
std::mutex g_stats_mutex;  // tests run several ranks as threads of one process

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

torch::Tensor grad_or_zeros(const torch::Tensor& p) {
  return p.grad().defined() ? p.grad() : torch::zeros_like(p);
}

void set_grad(const torch::Tensor& p, const torch::Tensor& g) {
  torch::Tensor param = p;  // shares the TensorImpl: the parameter's gradient is set
  if (param.grad().defined()) param.mutable_grad().copy_(g);
  else param.mutable_grad() = g.clone();
}

// The dense exchange of `params`: one flat all-reduce.
void dense(const std::vector<torch::Tensor>& params, Dist& dist) {
  if (params.empty()) return;
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) grads.push_back(grad_or_zeros(p).reshape({-1}));
  torch::Tensor flat = torch::cat(grads);
  dist.all_reduce_sum(flat);
  flat.div_(dist.world_size());
  int64_t offset = 0;
  for (const auto& p : params) {
    set_grad(p, flat.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
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
    (p.dim() == 2 && p.scalar_type() == torch::kFloat32 && mode != GradientExchange::kDense
         ? tables : others).push_back(p);
  }
  bool sparse = false;
  std::vector<torch::Tensor> rows;  // per table: int64 indices of its non-zero gradient rows
  if (!tables.empty()) {
    // Each rank's count of non-zero rows per table, gathered: every rank decides alike.
    torch::Tensor counts = torch::empty({static_cast<int64_t>(tables.size())}, torch::kInt64);
    for (size_t k = 0; k < tables.size(); ++k) {
      const torch::Tensor g = grad_or_zeros(tables[k]);
      rows.push_back(g.ne(0).any(1).nonzero().reshape({-1}));
      counts[k] = rows.back().numel();
    }
    const std::vector<torch::Tensor> all_counts = dist.all_gather(counts);
    // Sparse payload per rank: the largest count (gathers are padded to it) times (row + 1
    // index word); dense: the ring all-reduce sends about twice the table per rank.
    int64_t sparse_words = 0, dense_words = 0;
    for (size_t k = 0; k < tables.size(); ++k) {
      int64_t most = 0;
      for (const auto& c : all_counts) most = std::max(most, c[k].item<int64_t>());
      sparse_words += most * (tables[k].size(1) + 1) * dist.world_size();
      dense_words += 2 * tables[k].numel();
    }
    sparse = mode == GradientExchange::kSparse || sparse_words < dense_words;
    if (sparse) {
      // One int32 buffer per rank: for each table, `most` slots of [row, values as float bits],
      // unused slots with row -1.
      std::vector<int64_t> most(tables.size(), 0), slot_words(tables.size());
      int64_t words = 0;
      for (size_t k = 0; k < tables.size(); ++k) {
        for (const auto& c : all_counts) most[k] = std::max(most[k], c[k].item<int64_t>());
        slot_words[k] = tables[k].size(1) + 1;
        words += most[k] * slot_words[k];
      }
      torch::Tensor send = torch::full({std::max<int64_t>(words, 1)}, -1, torch::kInt32);
      int64_t at = 0;
      for (size_t k = 0; k < tables.size(); ++k) {
        const int64_t n = rows[k].numel(), d = tables[k].size(1);
        torch::Tensor block = send.narrow(0, at, most[k] * slot_words[k]).view({most[k], d + 1});
        if (n > 0) {
          block.narrow(0, 0, n).select(1, 0).copy_(rows[k].to(torch::kInt32));
          torch::Tensor vals = grad_or_zeros(tables[k]).index_select(0, rows[k]).contiguous();
          block.narrow(0, 0, n).narrow(1, 1, d).copy_(vals.view(torch::kInt32));
        }
        at += most[k] * slot_words[k];
      }
      const std::vector<torch::Tensor> got = dist.all_gather(send);
      for (size_t k = 0, off = 0; k < tables.size(); off += most[k] * slot_words[k], ++k) {
        const int64_t d = tables[k].size(1);
        torch::Tensor sum = torch::zeros_like(tables[k]);
        for (int r = 0; r < dist.world_size(); ++r) {  // rank order: the same sum on every rank
          const int64_t n = all_counts[r][k].item<int64_t>();
          if (n == 0) continue;
          torch::Tensor block = got[r].narrow(0, off, most[k] * slot_words[k]).view({most[k], d + 1}).narrow(0, 0, n);
          torch::Tensor idx = block.select(1, 0).to(torch::kInt64);
          torch::Tensor vals = block.narrow(1, 1, d).contiguous().view(torch::kFloat32);
          sum.index_add_(0, idx, vals);
        }
        sum.div_(dist.world_size());
        set_grad(tables[k], sum);
      }
    } else {
      others.insert(others.end(), tables.begin(), tables.end());
    }
  }
  dense(others, dist);
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  g_stats.steps += 1;
  g_stats.sparse_steps += sparse ? 1 : 0;
  g_stats.bytes += dist.traffic().bytes - before.bytes;
  g_stats.collective_seconds += dist.traffic().seconds - before.seconds;
  g_stats.seconds += since(t0);
}

GradientExchangeStats gradient_exchange_stats() {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  return g_stats;
}

void log_gradient_exchange_stats(const Dist& dist, int64_t epochs) {
  const GradientExchangeStats s = gradient_exchange_stats();
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
