#include "models/layers/graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/torch.h>

#include "recbole/runtime/fast_path.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models::layers {

SparseMatrix SparseMatrix::from_triplets(int64_t rows, int64_t cols, const std::vector<int64_t>& r,
                                         const std::vector<int64_t>& c,
                                         const std::vector<float>& v) {
  SparseMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.indptr.assign(static_cast<size_t>(rows + 1), 0);
  for (int64_t x : r) ++m.indptr[static_cast<size_t>(x + 1)];
  std::partial_sum(m.indptr.begin(), m.indptr.end(), m.indptr.begin());
  std::vector<int64_t> next(m.indptr.begin(), m.indptr.end() - 1);
  std::vector<int32_t> col(r.size());
  std::vector<float> val(r.size());
  for (size_t k = 0; k < r.size(); ++k) {
    const int64_t at = next[static_cast<size_t>(r[k])]++;
    col[static_cast<size_t>(at)] = static_cast<int32_t>(c[k]);
    val[static_cast<size_t>(at)] = v[k];
  }
  // Sort each row by column and sum duplicates.
  m.indices.reserve(r.size());
  m.values.reserve(r.size());
  std::vector<std::pair<int32_t, float>> row;
  int64_t written = 0;
  for (int64_t i = 0; i < rows; ++i) {
    row.clear();
    for (int64_t k = m.indptr[i]; k < m.indptr[i + 1]; ++k)
      row.emplace_back(col[static_cast<size_t>(k)], val[static_cast<size_t>(k)]);
    std::sort(row.begin(), row.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t k = 0; k < row.size(); ++k) {
      if (k > 0 && row[k].first == row[k - 1].first) {
        m.values.back() += row[k].second;
        continue;
      }
      m.indices.push_back(row[k].first);
      m.values.push_back(row[k].second);
    }
    m.indptr[static_cast<size_t>(i)] = written;
    written = static_cast<int64_t>(m.indices.size());
  }
  m.indptr[static_cast<size_t>(rows)] = written;
  return m;
}

SparseMatrix SparseMatrix::transpose() const {
  SparseMatrix t;
  t.rows = cols;
  t.cols = rows;
  t.indptr.assign(static_cast<size_t>(cols + 1), 0);
  for (int32_t c : indices) ++t.indptr[static_cast<size_t>(c) + 1];
  std::partial_sum(t.indptr.begin(), t.indptr.end(), t.indptr.begin());
  t.indices.resize(indices.size());
  t.values.resize(values.size());
  std::vector<int64_t> next(t.indptr.begin(), t.indptr.end() - 1);
  // Rows visited in order, so every transposed row comes out sorted.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = indptr[r]; k < indptr[r + 1]; ++k) {
      const int64_t at = next[static_cast<size_t>(indices[k])]++;
      t.indices[static_cast<size_t>(at)] = static_cast<int32_t>(r);
      t.values[static_cast<size_t>(at)] = values[static_cast<size_t>(k)];
    }
  return t;
}

SparseMatrix bipartite_adjacency(int64_t n_users, int64_t n_items,
                                 const std::vector<int32_t>& users,
                                 const std::vector<int32_t>& items, bool weighted) {
  const int64_t n = n_users + n_items;
  std::vector<int64_t> r, c;
  std::vector<float> v;
  r.reserve(2 * users.size());
  c.reserve(2 * users.size());
  v.reserve(2 * users.size());
  for (size_t k = 0; k < users.size(); ++k) {
    const int64_t u = users[k], i = n_users + items[k];
    r.push_back(u), c.push_back(i), v.push_back(1.0f);
    r.push_back(i), c.push_back(u), v.push_back(1.0f);
  }
  SparseMatrix a = SparseMatrix::from_triplets(n, n, r, c, v);
  if (!weighted) std::fill(a.values.begin(), a.values.end(), 1.0f);
  return a;
}

SparseMatrix bipartite_adjacency(const data::InteractionMatrix& train) {
  std::vector<int32_t> users, items;
  users.reserve(static_cast<size_t>(train.nnz()));
  items.reserve(static_cast<size_t>(train.nnz()));
  for (int32_t u = 0; u < train.n_users(); ++u)
    for (const int32_t* it = train.row_begin(u); it != train.row_end(u); ++it)
      users.push_back(u), items.push_back(*it);
  return bipartite_adjacency(train.n_users(), train.n_items(), users, items, false);
}

SparseMatrix symmetric_normalized(SparseMatrix a) {
  std::vector<float> inv_sqrt(static_cast<size_t>(a.rows));
  for (int64_t r = 0; r < a.rows; ++r) {
    double deg = 1e-7;
    for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) deg += a.values[static_cast<size_t>(k)];
    inv_sqrt[static_cast<size_t>(r)] = static_cast<float>(1.0 / std::sqrt(deg));
  }
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k)
      a.values[static_cast<size_t>(k)] *=
          inv_sqrt[static_cast<size_t>(r)] * inv_sqrt[static_cast<size_t>(a.indices[k])];
  return a;
}

GraphOperator::GraphOperator(SparseMatrix m, bool symmetric, const DeviceManager& device) {
  auto shared = std::make_shared<const SparseMatrix>(std::move(m));
  m_ = shared;
  mt_ = symmetric ? shared : std::make_shared<const SparseMatrix>(shared->transpose());
  // Off the CPU, and on the reference path, a libtorch sparse tensor (spmm's composed path).
  if (device.is_cuda() || !fast_paths_enabled()) {
    const SparseMatrix& s = *m_;
    std::vector<int64_t> rows(static_cast<size_t>(s.nnz())), cols(rows.size());
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t k = s.indptr[r]; k < s.indptr[r + 1]; ++k)
        rows[static_cast<size_t>(k)] = r, cols[static_cast<size_t>(k)] = s.indices[k];
    torch::Tensor index = torch::stack({torch::tensor(rows), torch::tensor(cols)});
    torch::Tensor values = torch::tensor(s.values);
    // Dense index and value tensors are placed, and the sparse tensor built on the device.
    device_ = torch::sparse_coo_tensor(device.place(index), device.place(values), {s.rows, s.cols})
                  .coalesce();
  }
}

namespace {

// The kernels are compiled for AVX-512, AVX2 and baseline x86-64 and picked at load time
// (target_clones), since the build targets baseline x86-64. d = 64, the usual embedding size,
// keeps a row's sums in registers.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RECBOLE_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RECBOLE_SIMD_CLONES
#endif

// The row's 64 sums in a local array that the loops, of a known trip count, keep in registers
// (8 ymm or 4 zmm), and the source row 8 entries ahead prefetched: the product is bound by the
// latency of its random row reads, not by arithmetic. On this machine, for a random 2,626-row
// product with 160k entries (NGCF's on ml-100k), one thread: 8.9 ms with GCC's generic 64-byte
// vectors (which its AVX2 clone ran through the stack), 3.75 ms with the array, 0.68 ms with
// the prefetch — the same sums in the same order.
RECBOLE_SIMD_CLONES
void spmm_rows_64(const int64_t* indptr, const int32_t* indices, const float* values,
                  const float* __restrict x, float* __restrict out, int64_t first, int64_t last) {
  constexpr int64_t kD = 64, kAhead = 8;
  const int64_t end = indptr[last];
  for (int64_t r = first; r < last; ++r) {
    float acc[kD] = {};
    for (int64_t k = indptr[r]; k < indptr[r + 1]; ++k) {
      if (k + kAhead < end) {
        const float* next = x + static_cast<int64_t>(indices[k + kAhead]) * kD;
        for (int64_t line = 0; line < kD; line += 16) __builtin_prefetch(next + line);
      }
      const float v = values[k];
      const float* __restrict s = x + static_cast<int64_t>(indices[k]) * kD;
      for (int64_t j = 0; j < kD; ++j) acc[j] += v * s[j];
    }
    std::memcpy(out + r * kD, acc, sizeof(acc));
  }
}

RECBOLE_SIMD_CLONES
void spmm_rows_any(const int64_t* indptr, const int32_t* indices, const float* values,
                   const float* __restrict x, float* __restrict out, int64_t d, int64_t first,
                   int64_t last) {
  constexpr int64_t kAhead = 8;  // as spmm_rows_64
  const int64_t end = indptr[last];
  for (int64_t r = first; r < last; ++r) {
    float* __restrict o = out + r * d;
    std::fill(o, o + d, 0.0f);
    for (int64_t k = indptr[r]; k < indptr[r + 1]; ++k) {
      if (k + kAhead < end) {
        const float* next = x + static_cast<int64_t>(indices[k + kAhead]) * d;
        for (int64_t line = 0; line < d; line += 16) __builtin_prefetch(next + line);
      }
      const float v = values[k];
      const float* __restrict s = x + static_cast<int64_t>(indices[k]) * d;
      for (int64_t j = 0; j < d; ++j) o[j] += v * s[j];
    }
  }
}

// Gradient of spmm: Aᵀ · grad.
struct SpmmBackward : public torch::autograd::Node {
  std::shared_ptr<const SparseMatrix> transposed;
  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    return {spmm_host(*transposed, grads[0].contiguous())};
  }
  std::string name() const override { return "SpmmBackward"; }
};

}  // namespace

std::vector<int64_t> balanced_rows(const SparseMatrix& m, int parts) {
  std::vector<int64_t> bounds(static_cast<size_t>(parts) + 1, m.rows);
  bounds[0] = 0;
  const int64_t nnz = m.nnz();
  for (int p = 1; p < parts; ++p) {
    const int64_t target = nnz * p / parts;
    bounds[static_cast<size_t>(p)] =
        std::lower_bound(m.indptr.begin(), m.indptr.end(), target) - m.indptr.begin();
    bounds[static_cast<size_t>(p)] = std::min(
        std::max(bounds[static_cast<size_t>(p)], bounds[static_cast<size_t>(p) - 1]), m.rows);
  }
  return bounds;
}

void spmm_rows(const SparseMatrix& m, const float* x, float* out, int64_t d, int64_t first,
               int64_t last) {
  if (d == 64)
    spmm_rows_64(m.indptr.data(), m.indices.data(), m.values.data(), x, out, first, last);
  else
    spmm_rows_any(m.indptr.data(), m.indices.data(), m.values.data(), x, out, d, first, last);
}

torch::Tensor spmm_host(const SparseMatrix& m, const torch::Tensor& x) {
  if (x.dim() != 2 || x.size(0) != m.cols || x.scalar_type() != torch::kFloat32 || !x.is_cpu())
    throw Error("spmm: expected a [" + std::to_string(m.cols) + ", d] float32 CPU tensor, got " +
                c10::str(x.sizes()));
  const torch::Tensor in = x.contiguous();
  const int64_t d = in.size(1);
  torch::Tensor out = torch::empty({m.rows, d}, torch::kFloat32);
  const float* xp = in.data_ptr<float>();
  float* op = out.data_ptr<float>();
  ThreadPool& pool = ThreadPool::instance();
  // Below ~64k multiply-adds a dispatch costs more than it saves.
  const int parts = m.nnz() * d < (1 << 16) ? 1 : pool.threads();
  if (parts == 1) {
    spmm_rows(m, xp, op, d, 0, m.rows);
    return out;
  }
  const std::vector<int64_t> bounds = balanced_rows(m, parts);
  pool.run_per_worker([&](int w) {
    spmm_rows(m, xp, op, d, bounds[static_cast<size_t>(w)], bounds[static_cast<size_t>(w) + 1]);
  });
  return out;
}

torch::Tensor spmm(const GraphOperator& op, const torch::Tensor& x) {
  if (!op.defined()) throw Error("spmm: the graph operator is not built");
  if (op.device_tensor().defined()) return torch::mm(op.device_tensor(), x);
  torch::Tensor out;
  {
    torch::NoGradGuard no_grad;
    out = spmm_host(op.matrix(), x.detach());
  }
  if (torch::GradMode::is_enabled() && x.requires_grad()) {
    auto node = std::shared_ptr<SpmmBackward>(new SpmmBackward(), torch::autograd::deleteNode);
    node->transposed = op.shared_transposed();
    node->set_next_edges(torch::autograd::collect_next_edges(x));
    torch::autograd::set_history(out, node);
  }
  return out;
}

torch::Tensor mean_propagation(const GraphOperator& adj, const torch::Tensor& ego, int64_t n_layers,
                               std::vector<torch::Tensor>* layers) {
  std::vector<torch::Tensor> all{ego};
  torch::Tensor e = ego;
  for (int64_t l = 0; l < n_layers; ++l) {
    e = spmm(adj, e);
    all.push_back(e);
  }
  torch::Tensor mean = torch::stack(all, 1).mean(1);
  if (layers) *layers = std::move(all);
  return mean;
}

}  // namespace recbole::models::layers
